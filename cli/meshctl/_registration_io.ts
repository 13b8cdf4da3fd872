/**
 * Orchestrator access of `meshctl register` and `deregister`: Services and Endpoints of one
 * namespace through the client library, with API errors turned into one-line Errors.
 * @module
 */
import {
  apiErrorStatus,
  currentNamespace,
  kubeClient,
  loadKubeConfig,
} from "../../lib/kube/mod.ts";
import { type ModelSchema, schemaByType } from "../../lib/model/mod.ts";
import { checkKubeconfigExists } from "./_config_io.ts";

/** A Service as register reads it. */
export interface KubeService {
  metadata?: Record<string, unknown>;
  spec?: { ports?: { name?: string; port?: number }[]; selector?: Record<string, string> };
}

/** An Endpoints object as register edits it. */
export interface KubeEndpoints {
  metadata?: Record<string, unknown> & { name?: string };
  subsets?: unknown[];
  [k: string]: unknown;
}

/** The Services and Endpoints of one namespace. */
export interface CoreAccess {
  /** `-n`, else the current context's namespace. */
  readonly namespace: string;
  getService(name: string): Promise<KubeService | undefined>;
  createService(body: Record<string, unknown>): Promise<void>;
  getEndpoints(name: string): Promise<KubeEndpoints | undefined>;
  createEndpoints(body: Record<string, unknown>): Promise<void>;
  /** Replaces (optimistic concurrency on the read resourceVersion). */
  replaceEndpoints(body: KubeEndpoints): Promise<void>;
  deleteEndpoints(name: string): Promise<void>;
}

/** A stale write: the caller reads again and retries. */
export class StaleWrite extends Error {
  override name = "StaleWrite";
}

function failure(what: string, err: unknown): Error {
  const st = apiErrorStatus(err);
  if (st?.code === 409) return new StaleWrite(`${what}: ${st.message}`);
  const reason = st ? `${st.message} (HTTP ${st.code})` : (err as Error).message ?? String(err);
  return new Error(`cannot ${what}: ${reason.split("\n")[0]}`);
}

/** Opens the orchestrator of `kubeconfig` for Services and Endpoints of `-n` (or the default). */
export async function openCore(kubeconfig: string, flagNamespace: string): Promise<CoreAccess> {
  await checkKubeconfigExists(kubeconfig);
  const kc = await loadKubeConfig(kubeconfig);
  const k8s = await kubeClient();
  const api = kc.makeApiClient(k8s.CoreV1Api);
  const namespace = flagNamespace || currentNamespace(kc);
  const get = async <T>(what: string, fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (err) {
      if (apiErrorStatus(err)?.code === 404) return undefined;
      throw failure(what, err);
    }
  };
  const write = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      throw failure(what, err);
    }
  };
  // deno-lint-ignore no-explicit-any
  const body = (b: unknown) => b as any;
  return {
    namespace,
    getService: (name) =>
      get(
        `read service ${namespace}/${name}`,
        () => api.readNamespacedService({ name, namespace }) as Promise<KubeService>,
      ),
    createService: (b) =>
      write(
        `create service ${namespace}/${(b.metadata as { name: string }).name}`,
        () => api.createNamespacedService({ namespace, body: body(b) }),
      ),
    getEndpoints: (name) =>
      get(
        `read endpoints ${namespace}/${name}`,
        () => api.readNamespacedEndpoints({ name, namespace }) as Promise<KubeEndpoints>,
      ),
    createEndpoints: (b) =>
      write(
        `create endpoints ${namespace}/${(b.metadata as { name: string }).name}`,
        () => api.createNamespacedEndpoints({ namespace, body: body(b) }),
      ),
    replaceEndpoints: (b) =>
      write(
        `update endpoints ${namespace}/${b.metadata?.name}`,
        () =>
          api.replaceNamespacedEndpoints({
            name: String(b.metadata?.name),
            namespace,
            body: body(b),
          }),
      ),
    deleteEndpoints: (name) =>
      write(
        `delete endpoints ${namespace}/${name}`,
        () => api.deleteNamespacedEndpoints({ name, namespace }),
      ),
  };
}

/** Runs a read-modify-write step again (up to 5 times) while its write is stale. */
export async function retryConflicts<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!(err instanceof StaleWrite) || attempt >= 5) {
        throw err instanceof StaleWrite ? new Error(`cannot ${err.message}`) : err;
      }
    }
  }
}

/** The ServiceEntry type (the file store of the fs platform holds only it). */
export function serviceEntrySchema(): ModelSchema {
  return schemaByType("serviceentry")!;
}

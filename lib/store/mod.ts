/**
 * Config stores: one {@link ConfigStore} contract, three implementations.
 *
 * - {@link createMemoryStore} (`mem://`): in memory, for tests and `--registries Mock` style setups.
 * - {@link createFileStore} (`fs://<dir>`, `--configDir`): a directory of YAML/JSON files.
 * - {@link openKubeStore} (`orch://<kubeconfig>`): custom resources of the orchestrator API. The
 *   implementation (and the ~0.7 s client library) is imported only when this is called.
 *
 * {@link openStoreFromURL} turns a `--configStoreURL` value into a store.
 *
 * @example
 * ```ts
 * import { openStoreFromURL } from "./mod.ts";
 * const store = await openStoreFromURL("mem://");
 * console.log((await store.list("virtualservice")).length); // 0
 * await store.close();
 * ```
 * @module
 */
import type { InClusterEnv } from "../kube/mod.ts";
import type { TypeSchema } from "../model/types.ts";
import type { KubeStore, KubeStoreOptions } from "./kube.ts";
import { createFileStore } from "./file.ts";
import { createMemoryStore } from "./memory.ts";
import type { ConfigStore } from "./types.ts";

export * from "./types.ts";
export { createMemoryStore, type MemoryStoreOptions } from "./memory.ts";
export {
  createFileStore,
  type FileStore,
  type FileStoreError,
  type FileStoreOptions,
} from "./file.ts";
export type { KubeStore, KubeStoreError, KubeStoreOptions } from "./kube.ts";

/**
 * Opens an orchestrator (Kubernetes API) store; see `createKubeStore` in ./kube.ts. The module and
 * the client library are loaded on first call.
 */
export async function openKubeStore(options: KubeStoreOptions = {}): Promise<KubeStore> {
  const { createKubeStore } = await import("./kube.ts");
  return createKubeStore(options);
}

/** Options of {@link openStoreFromURL}. */
export interface StoreURLOptions {
  /** Types the store holds (default: every schema of the model). */
  schemas?: readonly TypeSchema[];
  /** File store polling period (ms). */
  pollMs?: number;
  /** Orchestrator store resync period (ms). */
  resyncMs?: number;
  /** Namespace for objects without one. */
  defaultNamespace?: string;
  /** In-cluster environment for `orch://` with an empty path (the program's, read in `cli/`). */
  inCluster?: InClusterEnv;
}

/**
 * Opens the store a `--configStoreURL` value names:
 * - `fs://<dir>` → file store on `<dir>` (`fs:///etc/mesh/config`, or relative `fs://config`);
 * - `orch://<kubeconfig path>` → orchestrator store; an empty path means in-cluster configuration;
 * - `mem://` → an empty memory store.
 *
 * Throws an Error quoting the value for any other form.
 */
export async function openStoreFromURL(
  url: string,
  options: StoreURLOptions = {},
): Promise<ConfigStore> {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(.*)$/s.exec(url);
  if (!m) {
    throw new Error(
      `Invalid config store URL "${url}": want fs://<dir>, orch://<kubeconfig path> or mem://`,
    );
  }
  const [, scheme, rest] = m;
  switch (scheme.toLowerCase()) {
    case "fs":
      if (!rest) throw new Error(`Invalid config store URL "${url}": fs:// needs a directory`);
      return await createFileStore({
        dir: rest,
        schemas: options.schemas,
        pollMs: options.pollMs,
        defaultNamespace: options.defaultNamespace,
      });
    case "orch":
      return await openKubeStore({
        kubeconfigPath: rest,
        inCluster: options.inCluster,
        schemas: options.schemas,
        resyncMs: options.resyncMs,
        defaultNamespace: options.defaultNamespace,
      });
    case "mem":
      if (rest) {
        throw new Error(`Invalid config store URL "${url}": mem:// takes nothing after "//"`);
      }
      return createMemoryStore(options.schemas, { defaultNamespace: options.defaultNamespace });
    default:
      throw new Error(
        `Invalid config store URL "${url}": unsupported scheme "${scheme}://" ` +
          `(want fs://, orch:// or mem://)`,
      );
  }
}

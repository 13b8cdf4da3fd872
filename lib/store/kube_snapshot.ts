/**
 * A read-only, one-shot view of the orchestrator config store over the direct REST path
 * (`lib/kube/rest.ts`): each type is listed once (paged), converted and validated as the watching
 * store does ({@link convertApiObject}), with the same error words; no watch, no client library.
 * For short-lived reads such as `meshctl get`.
 * @module
 */
import { describeApiError } from "../kube/informer.ts";
import type { RestConfig } from "../kube/rest.ts";
import type { ConfigObject, TypeSchema } from "../model/types.ts";
import { attempt, byNsName, SchemaSet } from "./_common.ts";
import { convertApiObject, type KubeStore, type KubeStoreError } from "./kube.ts";

/** Options of {@link readKubeSnapshot}. */
export interface KubeSnapshotOptions {
  rest: RestConfig;
  /** Types to list. */
  schemas: readonly TypeSchema[];
  /** List this namespace only; empty or absent = all namespaces. */
  namespace?: string;
  /** Namespace for objects without one (default: `namespace`, else the context's). */
  defaultNamespace?: string;
}

/** Page size of the lists, as the watching store. */
const PAGE_SIZE = 500;

/**
 * Lists every type of `schemas` once and returns a {@link KubeStore} serving get/list from that
 * snapshot; writes and watches throw. A type whose collection answers 404 (no CRD) is empty and
 * reported by `errors()` as the watching store does; any other failure rejects with
 * `Cannot open the orchestrator config store: cannot list <collection>: <reason>`.
 */
export async function readKubeSnapshot(opts: KubeSnapshotOptions): Promise<KubeStore> {
  const { rest, schemas } = opts;
  const set = new SchemaSet(schemas);
  const restrict = opts.namespace ?? "";
  const defaultNamespace = opts.defaultNamespace || restrict || rest.namespace;
  const items = new Map<string, ConfigObject[]>();
  const errors: KubeStoreError[] = [];

  const listType = async (s: TypeSchema) => {
    const collection = `${s.plural}.${s.group}/${s.version} from ${rest.server}`;
    const path = `/apis/${s.group}/${s.version}${
      restrict ? `/namespaces/${encodeURIComponent(restrict)}` : ""
    }/${s.plural}`;
    const out: ConfigObject[] = [];
    let cont = "";
    do {
      const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
      if (cont) q.set("continue", cont);
      let res: { status: number; body: string };
      try {
        res = await rest.get(`${path}?${q}`);
      } catch (e) {
        throw new Error(
          `Cannot open the orchestrator config store: cannot list ${collection}: ${
            (e as Error).message
          }`,
        );
      }
      if (res.status === 404) {
        errors.push({
          type: s.type,
          message:
            `cannot list ${collection}: not found (is the custom resource definition installed?)`,
        });
        items.set(s.type, []);
        return;
      }
      if (res.status !== 200) {
        throw new Error(
          `Cannot open the orchestrator config store: cannot list ${collection}: ${
            describeApiError({ code: res.status, body: res.body })
          }`,
        );
      }
      let page: { items?: unknown[]; metadata?: { continue?: string } };
      try {
        page = JSON.parse(res.body);
      } catch {
        throw new Error(
          `Cannot open the orchestrator config store: cannot list ${collection}: the answer is not JSON`,
        );
      }
      for (const raw of page.items ?? []) {
        const c = convertApiObject(s, set, raw, defaultNamespace);
        if (c?.object) out.push(c.object);
        else if (c) {
          errors.push({
            type: s.type,
            object: `${s.kind}/${c.key}`,
            message: c.problem ?? "invalid object",
          });
        }
      }
      cont = page.metadata?.continue ?? "";
    } while (cont);
    items.set(s.type, out.sort(byNsName));
  };
  await Promise.all(schemas.map(listType));

  const readOnly = () => Promise.reject(new Error("This view of the config store is read-only"));
  return {
    schemas,
    defaultNamespace,
    namespace: restrict,
    errors: () => errors.map((e) => ({ ...e })),
    resync: () => Promise.resolve(),
    get(type, name, namespace) {
      return attempt(() => {
        const o = items.get(set.require(type).type)!.find((o) =>
          o.metadata.name === name && o.metadata.namespace === namespace
        );
        return o && structuredClone(o);
      });
    },
    list(type, namespace) {
      return attempt(() =>
        items.get(set.require(type).type)!
          .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
          .map((o) => structuredClone(o))
      );
    },
    create: readOnly,
    update: readOnly,
    delete: readOnly,
    watch() {
      throw new Error("This view of the config store cannot be watched");
    },
    close() {
      rest.close();
      return Promise.resolve();
    },
  };
}

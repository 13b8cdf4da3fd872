/**
 * Orchestrator config store (`orch://<kubeconfig>`): the config types as custom resources of the
 * Kubernetes API, through `@kubernetes/client-node`. Import this module only when the store is
 * used (lib/store/mod.ts reaches it through a dynamic import); the client library itself is
 * loaded when {@link createKubeStore} runs.
 * @module
 */
import { createInformer, type Informer, type ListPage } from "../kube/informer.ts";
import {
  apiErrorStatus,
  currentNamespace,
  type InClusterEnv,
  kubeClient,
  type KubeConfig,
  loadKubeConfig,
  toStoreError,
} from "../kube/mod.ts";
import type { Logger } from "../log/mod.ts";
import { allSchemas, ingressToV1 } from "../model/mod.ts";
import type { ConfigObject, ObjectMeta, TypeSchema } from "../model/types.ts";
import {
  attempt,
  byNsName,
  checkObject,
  describe,
  issuesText,
  mustCheck,
  notFound,
  nsName,
  sameContent,
  SchemaSet,
  storeLogger,
  Watchers,
} from "./_common.ts";
import { type ConfigStore, NotFoundError, type StoreEvent } from "./types.ts";

/** Options of {@link createKubeStore}. */
export interface KubeStoreOptions {
  /** Kubeconfig file; "" or undefined means in-cluster configuration. Ignored with `kubeConfig`. */
  kubeconfigPath?: string;
  /** In-cluster environment (used when `kubeconfigPath` is empty), read by the program. */
  inCluster?: InClusterEnv;
  /** A kubeconfig already loaded (tests, callers sharing one). */
  kubeConfig?: KubeConfig;
  /** Kubeconfig context to use instead of the current one. */
  context?: string;
  /** Restricts the store to one namespace (list, watch and writes); empty = all namespaces. */
  namespace?: string;
  /** Full relist period in milliseconds (default 60000; 0 disables periodic resync). */
  resyncMs?: number;
  /** Types this store holds (default: every schema of the model). */
  schemas?: readonly TypeSchema[];
  /** Namespace for objects without one (default: `namespace`, else the context's namespace). */
  defaultNamespace?: string;
  /** How long a write waits for the watch cache to show it (default 2000 ms). */
  writeWaitMs?: number;
  /**
   * Server-side timeout of each watch request in seconds, after which the watch is resumed from
   * the last resourceVersion (default: random between 300 and 600, as client-go does).
   */
  watchTimeoutSeconds?: number;
  /**
   * Where the store logs invalid objects and unlistable types: a logger, or `false` for none (the
   * caller reads `errors()` instead, as meshctl does). Default: the `default` scope of lib/log.
   */
  log?: Logger | false;
}

/** A current problem of the orchestrator store (a type that cannot be listed, an invalid object). */
export interface KubeStoreError {
  /** Schema type name (`virtualservice`). */
  type: string;
  /** `Kind/namespace/name` when the problem is one object. */
  object?: string;
  message: string;
}

/** A {@link ConfigStore} backed by the orchestrator API. */
export interface KubeStore extends ConfigStore {
  /** The namespace objects without one are written to. */
  readonly defaultNamespace: string;
  /** The namespace restriction, or "" for all namespaces. */
  readonly namespace: string;
  /** Current problems (unlistable types, objects failing validation). */
  errors(): KubeStoreError[];
  /** Relists every type now (as the periodic resync does); resolves when done. */
  resync(): Promise<void>;
}

interface TypeCache {
  schema: TypeSchema;
  items: Map<string, ConfigObject>;
  listError?: string;
  invalid: Map<string, string>;
}

/** Page size of the lists (the API server's continue tokens make a long list consistent). */
const PAGE_SIZE = 500;

const META_KEYS: (keyof ObjectMeta)[] = [
  "name",
  "namespace",
  "resourceVersion",
  "labels",
  "annotations",
  "uid",
  "creationTimestamp",
  "generation",
];

/**
 * Opens an orchestrator store: loads the kubeconfig, lists every type (a type whose CRD is not
 * installed counts as empty and is retried on resync) and starts one watch per type. Resolves
 * once every type has been listed.
 *
 * - get/list are served from the watch cache (kept by one informer of `lib/kube/informer.ts` per
 *   type: paged list + watch, relisted on 410 Gone and every `resyncMs`); writes go to the API and then wait (up to `writeWaitMs`) until the cache shows
 *   them, so a get after a write sees the write.
 * - API errors map to store errors: 409 → ConflictError, 404 → NotFoundError, 422 →
 *   ValidationError with the API's message. Objects are validated locally before writing.
 * - Objects in the orchestrator that fail validation are left out (the last valid version of
 *   an object stays in force), logged once, and listed by `errors()`.
 * - Watch events are emitted only for real changes (content other than resourceVersion).
 */
export async function createKubeStore(options: KubeStoreOptions = {}): Promise<KubeStore> {
  const k8s = await kubeClient();
  const kc = options.kubeConfig ??
    await loadKubeConfig(options.kubeconfigPath, options.context, options.inCluster);
  const schemas = options.schemas ?? allSchemas;
  const set = new SchemaSet(schemas);
  const restrict = options.namespace ?? "";
  const defaultNamespace = options.defaultNamespace || restrict || currentNamespace(kc);
  const resyncMs = options.resyncMs ?? 60_000;
  const writeWaitMs = options.writeWaitMs ?? 2000;
  if (!Number.isFinite(resyncMs) || resyncMs < 0) {
    throw new Error(`Invalid orchestrator store resyncMs ${resyncMs}: must be >= 0`);
  }
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const server = kc.getCurrentCluster()?.server ?? "?";
  const log = storeLogger(options.log);
  const watchers = new Watchers(log);
  let closed = false;

  const caches = new Map<string, TypeCache>(schemas.map((s) => [s.type, {
    schema: s,
    items: new Map(),
    invalid: new Map(),
  }]));

  // ---- write waiters ----------------------------------------------------------------------
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const w of [...waiters]) w();
  };
  function waitFor(cond: () => boolean): Promise<void> {
    if (cond() || closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      const check = () => {
        if (cond() || closed) done();
      };
      const timer = setTimeout(done, writeWaitMs);
      waiters.add(check);
    });
  }

  // ---- conversion -------------------------------------------------------------------------
  type Converted = { key: string; object?: ConfigObject; problem?: string };
  function fromApi(tc: TypeCache, raw: unknown): Converted | undefined {
    if (typeof raw !== "object" || raw === null) return undefined;
    const r = raw as { metadata?: Record<string, unknown>; [k: string]: unknown };
    const meta: Record<string, unknown> = {};
    for (const k of META_KEYS) if (r.metadata?.[k] !== undefined) meta[k] = r.metadata[k];
    const name = String(meta.name ?? "");
    const ns = String(meta.namespace ?? "");
    const key = nsName(ns, name);
    const label = `${tc.schema.kind}/${ns}/${name}`;
    const res = checkObject(
      { apiVersion: r.apiVersion, kind: r.kind, metadata: meta, spec: r.spec ?? {} },
      set,
      label,
      defaultNamespace,
    );
    // the problem without the object's name: errors() gives the name separately
    if (!res.ok) return { key, problem: issuesText(res.issues, label) };
    res.object.metadata.resourceVersion = String(meta.resourceVersion ?? "");
    return { key, object: res.object };
  }

  function toApi(schema: TypeSchema, given: ConfigObject): Record<string, unknown> {
    // Ingress: the API serves networking.k8s.io/v1 only; older forms are converted
    const obj = given.kind === "Ingress" && given.apiVersion !== `${schema.group}/${schema.version}`
      ? ingressToV1(given)
      : given;
    const { name, namespace, labels, annotations, resourceVersion } = obj.metadata;
    const metadata: Record<string, unknown> = { name, namespace };
    if (labels) metadata.labels = labels;
    if (annotations) metadata.annotations = annotations;
    if (resourceVersion) metadata.resourceVersion = resourceVersion;
    return {
      apiVersion: `${schema.group}/${schema.version}`,
      kind: schema.kind,
      metadata,
      spec: obj.spec,
    };
  }

  /** Applies one object (valid or not) to a cache, emitting an event when its content changed. */
  function applyUpsert(tc: TypeCache, c: Converted) {
    if (!c.object) {
      const msg = c.problem ?? "invalid object";
      if (tc.invalid.get(c.key) !== msg) {
        log.error(
          `Invalid ${tc.schema.plural} object in the orchestrator (ignored): ` +
            `${tc.schema.kind}/${c.key}: ${msg}`,
        );
      }
      tc.invalid.set(c.key, msg);
      return;
    }
    tc.invalid.delete(c.key);
    const old = tc.items.get(c.key);
    tc.items.set(c.key, c.object);
    if (!old) watchers.emit("ADDED", c.object);
    else if (!sameContent(old, c.object)) watchers.emit("MODIFIED", c.object);
  }

  function applyDelete(tc: TypeCache, key: string) {
    tc.invalid.delete(key);
    const old = tc.items.get(key);
    if (!old) return;
    tc.items.delete(key);
    watchers.emit("DELETED", old);
  }

  /** Replaces a type's content with a complete list, emitting only the differences. */
  function applyList(tc: TypeCache, items: unknown[]) {
    const seen = new Set<string>();
    for (const raw of items) {
      const c = fromApi(tc, raw);
      if (!c) continue;
      seen.add(c.key);
      applyUpsert(tc, c);
    }
    for (const k of [...tc.items.keys()]) if (!seen.has(k)) applyDelete(tc, k);
    for (const k of [...tc.invalid.keys()]) if (!seen.has(k)) tc.invalid.delete(k);
    notify();
  }

  // ---- list + watch: one informer per type -------------------------------------------------
  const group = (s: TypeSchema) => ({ group: s.group, version: s.version, plural: s.plural });

  function informerOf(tc: TypeCache): Informer {
    const s = tc.schema;
    const collection = `${s.plural}.${s.group}/${s.version} from ${server}`;
    const list = async (cont: string | undefined): Promise<ListPage> => {
      const page = { ...group(s), limit: PAGE_SIZE, _continue: cont };
      const res = restrict
        ? await api.listNamespacedCustomObject({ ...page, namespace: restrict })
        : await api.listClusterCustomObject(page);
      tc.listError = undefined;
      return res;
    };
    return createInformer({
      name: collection,
      kubeConfig: kc,
      watchPath: `/apis/${s.group}/${s.version}${
        restrict ? `/namespaces/${encodeURIComponent(restrict)}` : ""
      }/${s.plural}`,
      list,
      resyncMs,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
      onListError(err) {
        // no CRD: the type is empty until it appears (listed again on each resync)
        const missing = apiErrorStatus(err.cause)?.code === 404;
        const msg = missing
          ? `cannot list ${collection}: not found (is the custom resource definition installed?)`
          : err.message;
        if (tc.listError !== msg) log.warn(`Orchestrator config store: ${msg}`);
        tc.listError = msg;
        return missing ? "absent" : undefined;
      },
      onList: (items) => applyList(tc, items),
      onEvent(type, obj) {
        const c = fromApi(tc, obj);
        if (c && type === "DELETED") applyDelete(tc, c.key);
        else if (c) applyUpsert(tc, c);
        notify();
      },
    });
  }

  const informers = [...caches.values()].map(informerOf);

  function requestResync(): Promise<void> {
    if (closed) return Promise.resolve();
    return Promise.all(informers.map((i) => i.resync())).then(() => {});
  }

  // ---- start ----------------------------------------------------------------------------------
  const startErrors: Error[] = [];
  await Promise.all(informers.map((i) => i.start().catch((e: Error) => void startErrors.push(e))));
  if (startErrors.length > 0) {
    closed = true;
    await Promise.all(informers.map((i) => i.stop()));
    throw new Error(`Cannot open the orchestrator config store: ${startErrors[0].message}`);
  }

  // ---- the store --------------------------------------------------------------------------------
  function checkNamespace(ns: string) {
    if (restrict && ns !== restrict) {
      throw new Error(
        `Namespace "${ns}" is outside this config store, which is restricted to namespace "${restrict}"`,
      );
    }
  }
  const assertOpen = () => {
    if (closed) throw new Error("Config store is closed");
  };

  return {
    schemas,
    defaultNamespace,
    namespace: restrict,
    errors() {
      const out: KubeStoreError[] = [];
      for (const tc of caches.values()) {
        if (tc.listError) out.push({ type: tc.schema.type, message: tc.listError });
        for (const [k, m] of tc.invalid) {
          out.push({ type: tc.schema.type, object: `${tc.schema.kind}/${k}`, message: m });
        }
      }
      return out;
    },
    resync: () => requestResync(),
    get(type, name, namespace) {
      return attempt(() => {
        const tc = caches.get(set.require(type).type)!;
        const o = tc.items.get(nsName(namespace, name));
        return o && structuredClone(o);
      });
    },
    list(type, namespace) {
      return attempt(() => {
        const tc = caches.get(set.require(type).type)!;
        return [...tc.items.values()]
          .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
          .sort(byNsName)
          .map((o) => structuredClone(o));
      });
    },
    async create(raw) {
      assertOpen();
      const { object, schema } = mustCheck(raw, set, defaultNamespace);
      const ns = object.metadata.namespace!;
      checkNamespace(ns);
      const tc = caches.get(schema.type)!;
      const key = nsName(ns, object.metadata.name);
      const body = toApi(schema, object);
      delete (body.metadata as Record<string, unknown>).resourceVersion;
      let res: unknown;
      try {
        res = await api.createNamespacedCustomObject({ ...group(schema), namespace: ns, body });
      } catch (err) {
        throw toStoreError(err, `create ${describe(object)}`);
      }
      const c = fromApi(tc, res);
      const rv = c?.object?.metadata.resourceVersion;
      await waitFor(() => tc.items.get(key)?.metadata.resourceVersion === rv);
      return c?.object ?? object;
    },
    async update(raw) {
      assertOpen();
      const { object, schema } = mustCheck(raw, set, defaultNamespace);
      const ns = object.metadata.namespace!;
      const name = object.metadata.name;
      checkNamespace(ns);
      const tc = caches.get(schema.type)!;
      const key = nsName(ns, name);
      const what = `update ${describe(object)}`;
      if (!object.metadata.resourceVersion) {
        // the API requires one: take the current one (last writer wins, as asked)
        try {
          const cur = await api.getNamespacedCustomObject({
            ...group(schema),
            namespace: ns,
            name,
          });
          object.metadata.resourceVersion = (cur as { metadata?: ObjectMeta }).metadata
            ?.resourceVersion;
        } catch (err) {
          throw toStoreError(err, what);
        }
      }
      let res: unknown;
      try {
        res = await api.replaceNamespacedCustomObject({
          ...group(schema),
          namespace: ns,
          name,
          body: toApi(schema, object),
        });
      } catch (err) {
        throw toStoreError(err, what);
      }
      const c = fromApi(tc, res);
      const rv = c?.object?.metadata.resourceVersion;
      await waitFor(() => tc.items.get(key)?.metadata.resourceVersion === rv);
      return c?.object ?? object;
    },
    async delete(type, name, namespace) {
      assertOpen();
      const schema = set.require(type);
      checkNamespace(namespace);
      const tc = caches.get(schema.type)!;
      try {
        await api.deleteNamespacedCustomObject({ ...group(schema), namespace, name });
      } catch (err) {
        const e = toStoreError(err, `delete ${schema.kind}/${namespace}/${name}`);
        if (e instanceof NotFoundError) {
          throw notFound(schema.kind, name, namespace);
        }
        throw e;
      }
      await waitFor(() => !tc.items.has(nsName(namespace, name)));
    },
    watch(handler: (event: StoreEvent) => void) {
      return watchers.add(handler);
    },
    async close() {
      if (closed) return;
      closed = true;
      const stopped = Promise.all(informers.map((i) => i.stop()));
      notify();
      await stopped;
      watchers.clear();
    },
  };
}

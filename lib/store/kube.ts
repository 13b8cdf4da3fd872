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
import { allSchemas } from "../model/mod.ts";
import type { ConfigObject, ObjectMeta, TypeSchema } from "../model/types.ts";
import {
  attempt,
  byNsName,
  describe,
  mustCheck,
  notFound,
  nsName,
  SchemaSet,
  storeLogger,
  Watchers,
} from "./_common.ts";
import { TypeCache, WriteWaiters } from "./_kube_cache.ts";
import { apiGroup as group, convertApiObject, toApi } from "./_kube_convert.ts";
import { type ConfigStore, NotFoundError, type StoreEvent } from "./types.ts";

export { convertApiObject, type ConvertedObject } from "./_kube_convert.ts";

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
  const resyncMs = options.resyncMs ?? 60_000;
  if (!Number.isFinite(resyncMs) || resyncMs < 0) {
    throw new Error(`Invalid orchestrator store resyncMs ${resyncMs}: must be >= 0`);
  }
  const store = new OrchestratorStore(options, kc, kc.makeApiClient(k8s.CustomObjectsApi));
  await store.open();
  return store;
}

/** Page size of the lists (the API server's continue tokens make a long list consistent). */
const PAGE_SIZE = 500;

type CustomObjectsApi = InstanceType<Awaited<ReturnType<typeof kubeClient>>["CustomObjectsApi"]>;

/** The orchestrator store: a watch cache per type, writes through the API. */
class OrchestratorStore implements KubeStore {
  readonly schemas: readonly TypeSchema[];
  readonly defaultNamespace: string;
  /** The namespace restriction, or "". */
  readonly namespace: string;
  readonly #options: KubeStoreOptions;
  readonly #kc: KubeConfig;
  readonly #api: CustomObjectsApi;
  readonly #set: SchemaSet;
  readonly #log: Logger;
  readonly #watchers: Watchers;
  readonly #caches: Map<string, TypeCache>;
  readonly #informers: Informer[];
  readonly #waiters: WriteWaiters;
  #closed = false;

  constructor(options: KubeStoreOptions, kc: KubeConfig, api: CustomObjectsApi) {
    this.#options = options;
    this.#kc = kc;
    this.#api = api;
    this.schemas = options.schemas ?? allSchemas;
    this.#set = new SchemaSet(this.schemas);
    this.namespace = options.namespace ?? "";
    this.defaultNamespace = options.defaultNamespace || this.namespace || currentNamespace(kc);
    this.#log = storeLogger(options.log);
    this.#watchers = new Watchers(this.#log);
    this.#waiters = new WriteWaiters(options.writeWaitMs ?? 2000);
    this.#caches = new Map(
      this.schemas.map((s) => [s.type, new TypeCache(s, this.#watchers, this.#log)]),
    );
    this.#informers = [...this.#caches.values()].map((tc) => this.#informerOf(tc));
  }

  /** Lists every type and starts the watches; on failure stops them and rejects. */
  async open(): Promise<void> {
    const startErrors: Error[] = [];
    await Promise.all(
      this.#informers.map((i) => i.start().catch((e: Error) => void startErrors.push(e))),
    );
    if (startErrors.length > 0) {
      this.#closed = true;
      await Promise.all(this.#informers.map((i) => i.stop()));
      throw new Error(`Cannot open the orchestrator config store: ${startErrors[0].message}`);
    }
  }

  #fromApi(tc: TypeCache, raw: unknown) {
    return convertApiObject(tc.schema, this.#set, raw, this.defaultNamespace);
  }

  /** One informer per type: paged list + watch, relisted on 410 Gone and every `resyncMs`. */
  #informerOf(tc: TypeCache): Informer {
    const s = tc.schema;
    const restrict = this.namespace;
    const server = this.#kc.getCurrentCluster()?.server ?? "?";
    const collection = `${s.plural}.${s.group}/${s.version} from ${server}`;
    const list = async (cont: string | undefined): Promise<ListPage> => {
      const page = { ...group(s), limit: PAGE_SIZE, _continue: cont };
      const res = restrict
        ? await this.#api.listNamespacedCustomObject({ ...page, namespace: restrict })
        : await this.#api.listClusterCustomObject(page);
      tc.listError = undefined;
      return res;
    };
    return createInformer({
      name: collection,
      kubeConfig: this.#kc,
      watchPath: `/apis/${s.group}/${s.version}${
        restrict ? `/namespaces/${encodeURIComponent(restrict)}` : ""
      }/${s.plural}`,
      list,
      resyncMs: this.#options.resyncMs ?? 60_000,
      watchTimeoutSeconds: this.#options.watchTimeoutSeconds,
      onListError: (err) => {
        // no CRD: the type is empty until it appears (listed again on each resync)
        const missing = apiErrorStatus(err.cause)?.code === 404;
        const msg = missing
          ? `cannot list ${collection}: not found (is the custom resource definition installed?)`
          : err.message;
        if (tc.listError !== msg) this.#log.warn(`Orchestrator config store: ${msg}`);
        tc.listError = msg;
        return missing ? "absent" : undefined;
      },
      onList: (items) => {
        tc.replace(items.map((raw) => this.#fromApi(tc, raw)));
        this.#waiters.notify();
      },
      onEvent: (type, obj) => {
        const c = this.#fromApi(tc, obj);
        if (c && type === "DELETED") tc.delete(c.key);
        else if (c) tc.upsert(c);
        this.#waiters.notify();
      },
    });
  }

  #checkNamespace(ns: string): void {
    const restrict = this.namespace;
    if (restrict && ns !== restrict) {
      throw new Error(
        `Namespace "${ns}" is outside this config store, which is restricted to namespace "${restrict}"`,
      );
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error("Config store is closed");
  }

  errors(): KubeStoreError[] {
    const out: KubeStoreError[] = [];
    for (const tc of this.#caches.values()) {
      if (tc.listError) out.push({ type: tc.schema.type, message: tc.listError });
      for (const [k, m] of tc.invalid) {
        out.push({ type: tc.schema.type, object: `${tc.schema.kind}/${k}`, message: m });
      }
    }
    return out;
  }

  resync(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return Promise.all(this.#informers.map((i) => i.resync())).then(() => {});
  }

  get(type: string, name: string, namespace: string): Promise<ConfigObject | undefined> {
    return attempt(() => {
      const tc = this.#caches.get(this.#set.require(type).type)!;
      const o = tc.items.get(nsName(namespace, name));
      return o && structuredClone(o);
    });
  }

  list(type: string, namespace?: string): Promise<ConfigObject[]> {
    return attempt(() => {
      const tc = this.#caches.get(this.#set.require(type).type)!;
      return [...tc.items.values()]
        .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
        .sort(byNsName)
        .map((o) => structuredClone(o));
    });
  }

  async create(raw: unknown): Promise<ConfigObject> {
    this.#assertOpen();
    const { object, schema } = mustCheck(raw, this.#set, this.defaultNamespace);
    const ns = object.metadata.namespace!;
    this.#checkNamespace(ns);
    const tc = this.#caches.get(schema.type)!;
    const key = nsName(ns, object.metadata.name);
    const body = toApi(schema, object);
    delete (body.metadata as Record<string, unknown>).resourceVersion;
    let res: unknown;
    try {
      res = await this.#api.createNamespacedCustomObject({ ...group(schema), namespace: ns, body });
    } catch (err) {
      throw toStoreError(err, `create ${describe(object)}`);
    }
    const c = this.#fromApi(tc, res);
    const rv = c?.object?.metadata.resourceVersion;
    await this.#waiters.waitFor(() => tc.items.get(key)?.metadata.resourceVersion === rv);
    return c?.object ?? object;
  }

  async update(raw: unknown): Promise<ConfigObject> {
    this.#assertOpen();
    const { object, schema } = mustCheck(raw, this.#set, this.defaultNamespace);
    const ns = object.metadata.namespace!;
    const name = object.metadata.name;
    this.#checkNamespace(ns);
    const tc = this.#caches.get(schema.type)!;
    const key = nsName(ns, name);
    const what = `update ${describe(object)}`;
    if (!object.metadata.resourceVersion) {
      // the API requires one: take the current one (last writer wins, as asked)
      try {
        const cur = await this.#api.getNamespacedCustomObject({
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
      res = await this.#api.replaceNamespacedCustomObject({
        ...group(schema),
        namespace: ns,
        name,
        body: toApi(schema, object),
      });
    } catch (err) {
      throw toStoreError(err, what);
    }
    const c = this.#fromApi(tc, res);
    const rv = c?.object?.metadata.resourceVersion;
    await this.#waiters.waitFor(() => tc.items.get(key)?.metadata.resourceVersion === rv);
    return c?.object ?? object;
  }

  async delete(type: string, name: string, namespace: string): Promise<void> {
    this.#assertOpen();
    const schema = this.#set.require(type);
    this.#checkNamespace(namespace);
    const tc = this.#caches.get(schema.type)!;
    try {
      await this.#api.deleteNamespacedCustomObject({ ...group(schema), namespace, name });
    } catch (err) {
      const e = toStoreError(err, `delete ${schema.kind}/${namespace}/${name}`);
      if (e instanceof NotFoundError) {
        throw notFound(schema.kind, name, namespace);
      }
      throw e;
    }
    await this.#waiters.waitFor(() => !tc.items.has(nsName(namespace, name)));
  }

  watch(handler: (event: StoreEvent) => void, kinds?: readonly string[]): { close(): void } {
    return this.#watchers.add(handler, kinds);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const stopped = Promise.all(this.#informers.map((i) => i.stop()));
    this.#waiters.close();
    await stopped;
    this.#watchers.clear();
  }
}

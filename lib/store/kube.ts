/**
 * Orchestrator config store (`orch://<kubeconfig>`): the config types as custom resources of the
 * Kubernetes API, through `@kubernetes/client-node`. Import this module only when the store is
 * used (lib/store/mod.ts reaches it through a dynamic import); the client library itself is
 * loaded when {@link createKubeStore} runs.
 * @module
 */
import {
  currentNamespace,
  kubeClient,
  type KubeConfig,
  loadKubeConfig,
  toStoreError,
} from "../kube/mod.ts";
import { apiErrorStatus } from "../kube/mod.ts";
import { getLogger } from "../log/mod.ts";
import { allSchemas } from "../model/mod.ts";
import type { ConfigObject, ObjectMeta, TypeSchema } from "../model/types.ts";
import {
  attempt,
  byNsName,
  checkObject,
  describe,
  issuesText,
  mustCheck,
  nsName,
  sameContent,
  SchemaSet,
  Watchers,
} from "./_common.ts";
import { type ConfigStore, NotFoundError, type StoreEvent } from "./types.ts";

/** Options of {@link createKubeStore}. */
export interface KubeStoreOptions {
  /** Kubeconfig file; "" or undefined means in-cluster configuration. Ignored with `kubeConfig`. */
  kubeconfigPath?: string;
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
  rv: string;
  listError?: string;
  invalid: Map<string, string>;
  abort?: AbortController;
  resyncRequested: boolean;
  /** Resolvers of resync() calls waiting for the next completed relist. */
  relistWaiters: (() => void)[];
  loop?: Promise<void>;
}

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
 * - get/list are served from the watch cache (kept by list + watch, relisted on 410 Gone and every
 *   `resyncMs`); writes go to the API and then wait (up to `writeWaitMs`) until the cache shows
 *   them, so a get after a write sees the write.
 * - API errors map to store errors: 409 → ConflictError, 404 → NotFoundError, 422 →
 *   ValidationError with the API's message. Objects are validated locally before writing.
 * - Objects in the orchestrator that fail validation are left out (the last valid version of
 *   an object stays in force), logged once, and listed by `errors()`.
 * - Watch events are emitted only for real changes (content other than resourceVersion).
 */
export async function createKubeStore(options: KubeStoreOptions = {}): Promise<KubeStore> {
  const k8s = await kubeClient();
  const kc = options.kubeConfig ?? await loadKubeConfig(options.kubeconfigPath, options.context);
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
  const log = getLogger("default");
  const watchers = new Watchers();
  let closed = false;

  const caches = new Map<string, TypeCache>(schemas.map((s) => [s.type, {
    schema: s,
    items: new Map(),
    rv: "",
    invalid: new Map(),
    resyncRequested: false,
    relistWaiters: [],
  }]));

  // ---- timers that close() can cancel ------------------------------------------------------
  const sleepers = new Set<{ timer: number; resolve: () => void }>();
  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const s = {
        timer: setTimeout(() => {
          sleepers.delete(s);
          resolve();
        }, ms),
        resolve,
      };
      sleepers.add(s);
    });
  }

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
  function fromApi(
    tc: TypeCache,
    raw: unknown,
  ): { key: string; object?: ConfigObject; problem?: string } | undefined {
    if (typeof raw !== "object" || raw === null) return undefined;
    const r = raw as { metadata?: Record<string, unknown>; [k: string]: unknown };
    const meta: Record<string, unknown> = {};
    for (const k of META_KEYS) if (r.metadata?.[k] !== undefined) meta[k] = r.metadata[k];
    const name = String(meta.name ?? "");
    const ns = String(meta.namespace ?? "");
    const key = nsName(ns, name);
    const res = checkObject(
      { apiVersion: r.apiVersion, kind: r.kind, metadata: meta, spec: r.spec ?? {} },
      set,
      `${tc.schema.kind}/${ns}/${name}`,
      defaultNamespace,
    );
    if (!res.ok) return { key, problem: issuesText(res.issues) };
    res.object.metadata.resourceVersion = String(meta.resourceVersion ?? "");
    return { key, object: res.object };
  }

  function toApi(schema: TypeSchema, obj: ConfigObject): Record<string, unknown> {
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
  function applyUpsert(tc: TypeCache, raw: unknown) {
    const c = fromApi(tc, raw);
    if (!c) return;
    if (!c.object) {
      const msg = `${tc.schema.kind}/${c.key}: ${c.problem}`;
      if (tc.invalid.get(c.key) !== msg) {
        log.error(`Invalid ${tc.schema.plural} object in the orchestrator (ignored): ${c.problem}`);
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

  // ---- list + watch ------------------------------------------------------------------------
  const group = (s: TypeSchema) => ({ group: s.group, version: s.version, plural: s.plural });

  async function relist(tc: TypeCache): Promise<void> {
    const s = tc.schema;
    let list: { items?: unknown[]; metadata?: { resourceVersion?: string } };
    try {
      list = restrict
        ? await api.listNamespacedCustomObject({ ...group(s), namespace: restrict })
        : await api.listClusterCustomObject(group(s));
    } catch (err) {
      const st = apiErrorStatus(err);
      const msg = st?.code === 404
        ? `cannot list ${s.plural}.${s.group}/${s.version} from ${server}: not found ` +
          `(is the custom resource definition installed?)`
        : `cannot list ${s.plural}.${s.group}/${s.version} from ${server}: ${
          st ? `${st.message} (HTTP ${st.code})` : (err as Error).message
        }`;
      if (tc.listError !== msg) log.warn(`Orchestrator config store: ${msg}`);
      tc.listError = msg;
      if (st?.code === 404) {
        // no CRD: the type is empty until it appears
        for (const k of [...tc.items.keys()]) applyDelete(tc, k);
        tc.rv = "";
        return;
      }
      throw new Error(msg);
    }
    tc.listError = undefined;
    const seen = new Set<string>();
    for (const raw of list.items ?? []) {
      const c = fromApi(tc, raw);
      if (c) seen.add(c.key);
      applyUpsert(tc, raw);
    }
    for (const k of [...tc.items.keys()]) if (!seen.has(k)) applyDelete(tc, k);
    for (const k of [...tc.invalid.keys()]) if (!seen.has(k)) tc.invalid.delete(k);
    tc.rv = list.metadata?.resourceVersion ?? "";
    notify();
  }

  type WatchEnd = "gone" | "ended" | "error" | "resync" | "closed";

  function watchOnce(tc: TypeCache): Promise<WatchEnd> {
    const s = tc.schema;
    const path = `/apis/${s.group}/${s.version}${
      restrict ? `/namespaces/${encodeURIComponent(restrict)}` : ""
    }/${s.plural}`;
    return new Promise<WatchEnd>((resolve) => {
      let result: WatchEnd | undefined;
      let ctrl: AbortController | undefined;
      let finished = false;
      const stop = (r: WatchEnd) => {
        result ??= r;
        ctrl?.abort();
      };
      const finish = (err: unknown) => {
        if (finished) return;
        finished = true;
        tc.abort = undefined;
        if (closed) return resolve("closed");
        if (tc.resyncRequested) return resolve("resync");
        if (result) return resolve(result);
        if (err) {
          const st = apiErrorStatus(err);
          if (st?.code === 410) return resolve("gone");
          log.warn(
            `Orchestrator config store: watch of ${s.plural} failed: ${
              st ? `${st.message} (HTTP ${st.code})` : (err as Error).message ?? String(err)
            }`,
          );
          return resolve("error");
        }
        resolve("ended");
      };
      const onEvent = (phase: string, obj: unknown) => {
        if (finished || closed) return;
        const o = obj as {
          code?: number;
          message?: string;
          metadata?: { resourceVersion?: string };
        };
        if (phase === "ERROR") {
          if (o?.code === 410) return stop("gone");
          log.warn(
            `Orchestrator config store: watch of ${s.plural} reported an error: ${
              o?.message ?? JSON.stringify(obj)
            }`,
          );
          return stop("error");
        }
        const rv = o?.metadata?.resourceVersion;
        if (phase === "ADDED" || phase === "MODIFIED") applyUpsert(tc, obj);
        else if (phase === "DELETED") {
          const c = fromApi(tc, obj);
          if (c) applyDelete(tc, c.key);
        }
        if (rv) tc.rv = rv;
        notify();
      };
      const params: Record<string, string | number | boolean> = {
        allowWatchBookmarks: true,
        timeoutSeconds: options.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300),
      };
      if (tc.rv) params.resourceVersion = tc.rv;
      new k8s.Watch(kc).watch(path, params, onEvent, finish).then((c) => {
        ctrl = c;
        tc.abort = c;
        if (closed || tc.resyncRequested || result) c.abort();
      }, finish);
    });
  }

  async function runType(tc: TypeCache, first: () => void, firstFailed: (e: Error) => void) {
    let initial = true;
    let backoff = 100;
    outer: while (!closed) {
      tc.resyncRequested = false;
      try {
        await relist(tc);
        backoff = 100;
      } catch (err) {
        if (initial) {
          initial = false;
          firstFailed(err as Error);
          return;
        }
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 10_000);
        continue;
      } finally {
        const w = tc.relistWaiters.splice(0);
        for (const f of w) f();
      }
      if (initial) {
        initial = false;
        first();
      }
      if (tc.listError) {
        // no CRD: wait for the next resync
        while (!closed && !tc.resyncRequested) await sleep(Math.min(resyncMs || 5000, 5000));
        continue;
      }
      while (!closed) {
        const end = await watchOnce(tc);
        if (end === "closed") return;
        if (end === "gone" || end === "resync") continue outer;
        if (end === "error") {
          await sleep(backoff);
          backoff = Math.min(backoff * 2, 10_000);
        }
      }
    }
  }

  function requestResync(): Promise<void> {
    if (closed) return Promise.resolve();
    const all: Promise<void>[] = [];
    for (const tc of caches.values()) {
      all.push(new Promise<void>((r) => tc.relistWaiters.push(r)));
      tc.resyncRequested = true;
      tc.abort?.abort();
    }
    // wake a type that is sleeping because its CRD is missing
    for (const s of [...sleepers]) {
      clearTimeout(s.timer);
      sleepers.delete(s);
      s.resolve();
    }
    return Promise.all(all).then(() => {});
  }

  // ---- start ----------------------------------------------------------------------------------
  const startErrors: Error[] = [];
  await Promise.all(
    [...caches.values()].map((tc) =>
      new Promise<void>((resolve) => {
        tc.loop = runType(tc, resolve, (e) => {
          startErrors.push(e);
          resolve();
        });
      })
    ),
  );
  if (startErrors.length > 0) {
    closed = true;
    for (const tc of caches.values()) tc.abort?.abort();
    for (const s of sleepers) {
      clearTimeout(s.timer);
      s.resolve();
    }
    await Promise.all([...caches.values()].map((tc) => tc.loop));
    throw new Error(`Cannot open the orchestrator config store: ${startErrors[0].message}`);
  }

  let resyncTimer: number | undefined;
  if (resyncMs > 0) resyncTimer = setInterval(() => void requestResync(), resyncMs);

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
          throw new NotFoundError(`${schema.kind} "${name}" not found in namespace "${namespace}"`);
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
      if (resyncTimer !== undefined) clearInterval(resyncTimer);
      for (const tc of caches.values()) tc.abort?.abort();
      for (const s of [...sleepers]) {
        clearTimeout(s.timer);
        sleepers.delete(s);
        s.resolve();
      }
      notify();
      await Promise.all([...caches.values()].map((tc) => tc.loop));
      watchers.clear();
    },
  };
}

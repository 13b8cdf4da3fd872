/**
 * A small list + watch cache ("informer") over one orchestrator collection, for the registries
 * and the orchestrator config store.
 *
 * It lists the collection (in pages), then watches from the list's resourceVersion; a watch that
 * ends is resumed from the last resourceVersion seen, a `410 Gone`/`Expired` answer triggers a
 * relist, and every `resyncMs` the collection is relisted so that a missed event cannot stay
 * wrong for long. The caller receives the full state after every (re)list and every event after
 * that; it owns the cache. Stopping aborts the open watch and clears every timer.
 *
 * A collection that may not exist (a custom resource whose definition is not installed) can be
 * declared absent by {@linkcode InformerOptions.onListError}: it is then delivered as empty, not
 * watched, and listed again at the next resync.
 *
 * @example
 * ```ts ignore
 * import { createInformer } from "./informer.ts";
 * const inf = createInformer({
 *   name: "pods",
 *   kubeConfig,
 *   watchPath: "/api/v1/pods",
 *   list: (cont) => core.listPodForAllNamespaces({ limit: 500, _continue: cont }),
 *   resyncMs: 60_000,
 *   onList: (items) => console.log(items.length),
 *   onEvent: (type, obj) => console.log(type, obj),
 * });
 * await inf.start();
 * await inf.stop();
 * ```
 * @module
 */
import { getLogger } from "../log/mod.ts";
import { apiErrorStatus, kubeClient, type KubeConfig } from "./mod.ts";

/** One page of a list answer, as returned by the client library's typed `list*` calls. */
export interface ListPage {
  items?: unknown[];
  metadata?: { resourceVersion?: string; _continue?: string; continue?: string };
}

/** Watch event types delivered to {@linkcode InformerOptions.onEvent}. */
export type InformerEventType = "ADDED" | "MODIFIED" | "DELETED";

/** Options of {@linkcode createInformer}. */
export interface InformerOptions {
  /** Name used in log lines and errors (`services`, `pods in namespace x`). */
  name: string;
  /** Loaded kubeconfig of the cluster. */
  kubeConfig: KubeConfig;
  /** Collection path to watch, e.g. `/api/v1/namespaces/default/endpoints`. */
  watchPath: string;
  /** Lists one page; `cont` is the continue token of the previous page (undefined first). */
  list(cont: string | undefined): Promise<ListPage>;
  /** Relist period in ms (0 = only on 410 Gone). */
  resyncMs: number;
  /** Extra watch query parameters (e.g. a `fieldSelector`). */
  watchParams?: Record<string, string>;
  /** Called with every object after each complete (re)list. */
  onList(items: unknown[]): void;
  /** Called for each watch event after the list. */
  onEvent(type: InformerEventType, obj: unknown): void;
  /** Server-side watch timeout in seconds (default 300-599, random), after which it resumes. */
  watchTimeoutSeconds?: number;
  /**
   * Called on every failed list with the error (`cannot list <name>: <reason>`, the client
   * library's error as `cause`). Returning `"absent"` means the collection does not exist (e.g. a
   * 404 for a custom resource whose definition is not installed): it is delivered as empty
   * (`onList([])`, start() resolves), no watch is opened, and it is listed again at the next resync
   * (periodic or {@linkcode Informer.resync}). Otherwise the failure takes the usual path (start()
   * rejects; later failures are retried with backoff). When this hook is given, the informer
   * leaves the logging of list failures to it.
   */
  onListError?(err: Error): "absent" | void;
  /** Test hook: called with each retry delay (ms) before the informer sleeps it. */
  onRetryDelay?(ms: number): void;
}

/** Handle of a running informer. */
export interface Informer {
  /** Lists once and starts watching. Rejects when the first list fails (nothing keeps running). */
  start(): Promise<void>;
  /** Relists now; resolves when that list has been delivered (or failed). */
  resync(): Promise<void>;
  /** Aborts the watch, clears the timers and waits for the loop to end. Idempotent. */
  stop(): Promise<void>;
}

const PAGE_ERROR_PREFIX = "cannot list";

/** A failed list page, already handed to {@linkcode InformerOptions.onListError} when given. */
class ListFailure extends Error {}

/** Message of an API error: `<Status message> (HTTP <code>)` or the error text. */
export function describeApiError(err: unknown): string {
  const st = apiErrorStatus(err);
  if (st) return `${st.message} (HTTP ${st.code})`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Outages per API server: the informers currently failing against it. The first failure of an
 * outage is logged as one warning for the server (not one per watch and retry), its end as one
 * info line.
 */
const outages = new Map<string, { names: Set<string>; since: number }>();

/** Creates an informer; nothing happens until {@linkcode Informer.start}. */
export function createInformer(opts: InformerOptions): Informer {
  const log = getLogger("default");
  const server = (() => {
    try {
      return opts.kubeConfig.getCurrentCluster()?.server ?? "the API server";
    } catch {
      return "the API server";
    }
  })();
  /** Retry delay: doubles per failure up to 10 s, back to 100 ms once a list or watch works. */
  let backoff = 100;
  /** A failure reaching the API server: one warning per server and outage, else debug. */
  const failure = (message: string) => {
    let o = outages.get(server);
    if (!o) outages.set(server, o = { names: new Set(), since: Date.now() });
    if (o.names.size === 0) {
      log.warn(
        `Orchestrator API server ${server} failing: ${message} (watches retry with backoff; ` +
          `logged once until it recovers)`,
      );
    } else log.debug(message);
    o.names.add(opts.name);
  };
  /** A list or watch worked: the retry delay resets; the outage ends with its last informer. */
  const working = () => {
    backoff = 100;
    const o = outages.get(server);
    if (o?.names.delete(opts.name) && o.names.size === 0) {
      outages.delete(server);
      log.info(
        `Orchestrator API server ${server} reachable again after ${
          ((Date.now() - o.since) / 1000).toFixed(1)
        } s`,
      );
    }
  };
  const retryDelay = () => {
    const ms = backoff;
    backoff = Math.min(backoff * 2, 10_000);
    opts.onRetryDelay?.(ms);
    return ms;
  };
  let closed = false;
  let rv = "";
  let abort: AbortController | undefined;
  let resyncRequested = false;
  let resyncWaiters: (() => void)[] = [];
  let loop: Promise<void> | undefined;
  let resyncTimer: number | undefined;
  const sleepers = new Set<{ timer?: number; resolve: () => void }>();

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const s = {
        timer: setTimeout(() => {
          sleepers.delete(s);
          resolve();
        }, ms),
        resolve,
      };
      sleepers.add(s);
    });
  /** Waits, without a timer, until resync() or stop() wakes the loop. */
  const idle = () =>
    new Promise<void>((resolve) => {
      sleepers.add({ resolve });
    });
  const wakeSleepers = () => {
    for (const s of sleepers) {
      clearTimeout(s.timer);
      s.resolve();
    }
    sleepers.clear();
  };

  /** Lists every page and delivers the items; resolves "absent" when onListError said so. */
  async function relist(): Promise<"listed" | "absent"> {
    const items: unknown[] = [];
    let cont: string | undefined;
    let listRv = "";
    do {
      let page: ListPage;
      try {
        page = await opts.list(cont);
      } catch (err) {
        const failure = new ListFailure(
          `${PAGE_ERROR_PREFIX} ${opts.name}: ${describeApiError(err)}`,
          { cause: err },
        );
        if (closed || opts.onListError?.(failure) !== "absent") throw failure;
        rv = "";
        opts.onList([]);
        return "absent";
      }
      items.push(...(page.items ?? []));
      listRv = page.metadata?.resourceVersion ?? listRv;
      cont = page.metadata?._continue || page.metadata?.continue || undefined;
    } while (cont && !closed);
    if (closed) return "listed";
    rv = listRv;
    opts.onList(items);
    return "listed";
  }

  type WatchEnd = "gone" | "ended" | "error" | "resync" | "closed";

  async function watchOnce(): Promise<WatchEnd> {
    const k8s = await kubeClient();
    return new Promise<WatchEnd>((resolve) => {
      let result: WatchEnd | undefined;
      let ctrl: AbortController | undefined;
      let finished = false;
      const stopWith = (r: WatchEnd) => {
        result ??= r;
        ctrl?.abort();
      };
      const finish = (err: unknown) => {
        if (finished) return;
        finished = true;
        abort = undefined;
        if (closed) return resolve("closed");
        if (resyncRequested) return resolve("resync");
        if (result) return resolve(result);
        if (err) {
          if (apiErrorStatus(err)?.code === 410) return resolve("gone");
          failure(`Watch of ${opts.name} failed: ${describeApiError(err)}`);
          return resolve("error");
        }
        resolve("ended");
      };
      const onEvent = (type: string, obj: unknown) => {
        if (finished || closed) return;
        const o = obj as {
          code?: number;
          message?: string;
          metadata?: { resourceVersion?: string };
        };
        if (type === "ERROR") {
          if (o?.code === 410) return stopWith("gone");
          log.warn(`Watch of ${opts.name} reported an error: ${o?.message ?? JSON.stringify(obj)}`);
          return stopWith("error");
        }
        const objRv = o?.metadata?.resourceVersion;
        if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") {
          try {
            opts.onEvent(type, obj);
          } catch (err) {
            log.error(`Handling a ${type} event of ${opts.name} failed: ${(err as Error).message}`);
          }
        }
        if (objRv) rv = objRv;
      };
      const params: Record<string, string | number | boolean> = {
        ...opts.watchParams,
        allowWatchBookmarks: true,
        timeoutSeconds: opts.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300),
      };
      if (rv) params.resourceVersion = rv;
      new k8s.Watch(opts.kubeConfig).watch(opts.watchPath, params, onEvent, finish).then((c) => {
        ctrl = c;
        abort = c;
        if (!finished) working(); // established: the next failure starts from the minimum delay
        if (closed || resyncRequested || result) c.abort();
      }, finish);
    });
  }

  async function run(started: () => void, failed: (e: Error) => void): Promise<void> {
    let initial = true;
    outer: while (!closed) {
      resyncRequested = false;
      const waiters = resyncWaiters;
      resyncWaiters = [];
      let listed: Awaited<ReturnType<typeof relist>>;
      try {
        listed = await relist();
        working();
      } catch (err) {
        if (initial) {
          failed(err as Error);
          return;
        }
        if (!(err instanceof ListFailure && opts.onListError)) failure((err as Error).message);
        await sleep(retryDelay());
        continue;
      } finally {
        for (const w of waiters) w();
      }
      if (initial) {
        initial = false;
        started();
      }
      if (listed === "absent") {
        // nothing to watch: wait for the next resync
        while (!closed && !resyncRequested) await idle();
        continue;
      }
      while (!closed) {
        const end = await watchOnce();
        if (end === "closed") return;
        if (end === "gone" || end === "resync") continue outer;
        if (end === "error") {
          await sleep(retryDelay());
          if (resyncRequested) continue outer;
        }
      }
    }
  }

  function stopAll() {
    closed = true;
    // a stopped informer no longer counts toward an outage
    const o = outages.get(server);
    if (o?.names.delete(opts.name) && o.names.size === 0) outages.delete(server);
    if (resyncTimer !== undefined) clearInterval(resyncTimer);
    resyncTimer = undefined;
    abort?.abort();
    wakeSleepers();
    for (const w of resyncWaiters.splice(0)) w();
  }

  function resync(): Promise<void> {
    if (closed || !loop) return Promise.resolve();
    const done = new Promise<void>((r) => resyncWaiters.push(r));
    resyncRequested = true;
    abort?.abort();
    wakeSleepers();
    return done;
  }

  return {
    start() {
      if (loop) return Promise.reject(new Error(`Informer for ${opts.name} already started`));
      return new Promise<void>((resolve, reject) => {
        loop = run(() => {
          if (opts.resyncMs > 0 && !closed) {
            resyncTimer = setInterval(() => void resync(), opts.resyncMs);
          }
          resolve();
        }, (err) => {
          stopAll();
          reject(err);
        });
      });
    },
    resync,
    async stop() {
      stopAll();
      await loop;
    },
  };
}

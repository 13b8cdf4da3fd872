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
import { ServerHealth, Sleepers } from "./_informer_health.ts";

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

/** Creates an informer; nothing happens until {@linkcode Informer.start}. */
export function createInformer(opts: InformerOptions): Informer {
  return new KubeInformer(opts);
}

type WatchEnd = "gone" | "ended" | "quick" | "error" | "resync" | "closed";

/**
 * A watch the API server ends sooner than this without delivering anything ends "quick": the next
 * one waits the retry delay, as after a failure (a proxy in front of the API server that closes
 * long requests at once would otherwise be asked again at once, forever).
 */
const QUICK_END_MS = 500;

/** The informer: its fields are the resume point, the open watch and the resync requests. */
class KubeInformer implements Informer {
  readonly #opts: InformerOptions;
  readonly #log = getLogger("default");
  readonly #health: ServerHealth;
  readonly #sleepers = new Sleepers();
  #closed = false;
  /** The resourceVersion to resume the watch from ("" = none). */
  #rv = "";
  #abort: AbortController | undefined;
  #resyncRequested = false;
  #resyncWaiters: (() => void)[] = [];
  #loop: Promise<void> | undefined;
  #resyncTimer: number | undefined;

  constructor(opts: InformerOptions) {
    this.#opts = opts;
    const server = (() => {
      try {
        return opts.kubeConfig.getCurrentCluster()?.server ?? "the API server";
      } catch {
        return "the API server";
      }
    })();
    this.#health = new ServerHealth(server, opts.name, this.#log, opts.onRetryDelay);
  }

  start(): Promise<void> {
    if (this.#loop) {
      return Promise.reject(new Error(`Informer for ${this.#opts.name} already started`));
    }
    return new Promise<void>((resolve, reject) => {
      this.#loop = this.#run(() => {
        if (this.#opts.resyncMs > 0 && !this.#closed) {
          this.#resyncTimer = setInterval(() => void this.resync(), this.#opts.resyncMs);
        }
        resolve();
      }, (err) => {
        this.#stopAll();
        reject(err);
      });
    });
  }

  resync(): Promise<void> {
    if (this.#closed || !this.#loop) return Promise.resolve();
    const done = new Promise<void>((r) => this.#resyncWaiters.push(r));
    this.#resyncRequested = true;
    this.#abort?.abort();
    this.#sleepers.wake();
    return done;
  }

  async stop(): Promise<void> {
    this.#stopAll();
    await this.#loop;
  }

  #stopAll(): void {
    this.#closed = true;
    this.#health.forget();
    if (this.#resyncTimer !== undefined) clearInterval(this.#resyncTimer);
    this.#resyncTimer = undefined;
    this.#abort?.abort();
    this.#sleepers.wake();
    for (const w of this.#resyncWaiters.splice(0)) w();
  }

  /** List, then watch until the watch must be relisted; retries with backoff. */
  async #run(started: () => void, failed: (e: Error) => void): Promise<void> {
    let initial = true;
    outer: while (!this.#closed) {
      this.#resyncRequested = false;
      const waiters = this.#resyncWaiters;
      this.#resyncWaiters = [];
      let listed: "listed" | "absent";
      try {
        listed = await this.#relist();
        this.#health.working();
      } catch (err) {
        if (initial) {
          failed(err as Error);
          return;
        }
        if (!(err instanceof ListFailure && this.#opts.onListError)) {
          this.#health.failure((err as Error).message);
        }
        await this.#sleepers.sleep(this.#health.retryDelay());
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
        while (!this.#closed && !this.#resyncRequested) await this.#sleepers.idle();
        continue;
      }
      while (!this.#closed) {
        const end = await this.#watchOnce();
        if (end === "closed") return;
        if (end === "gone" || end === "resync") continue outer;
        if (end === "error" || end === "quick") {
          await this.#sleepers.sleep(this.#health.retryDelay());
          if (this.#resyncRequested) continue outer;
        }
      }
    }
  }

  /** Lists every page and delivers the items; resolves "absent" when onListError said so. */
  async #relist(): Promise<"listed" | "absent"> {
    const opts = this.#opts;
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
        if (this.#closed || opts.onListError?.(failure) !== "absent") throw failure;
        this.#rv = "";
        opts.onList([]);
        return "absent";
      }
      items.push(...(page.items ?? []));
      listRv = page.metadata?.resourceVersion ?? listRv;
      cont = page.metadata?._continue || page.metadata?.continue || undefined;
    } while (cont && !this.#closed);
    if (this.#closed) return "listed";
    this.#rv = listRv;
    opts.onList(items);
    return "listed";
  }

  /** One watch request from the last resourceVersion, until it ends; says why it ended. */
  async #watchOnce(): Promise<WatchEnd> {
    const k8s = await kubeClient();
    const opts = this.#opts;
    return new Promise<WatchEnd>((resolve) => {
      let result: WatchEnd | undefined;
      let ctrl: AbortController | undefined;
      let finished = false;
      let delivering = false;
      const startedAt = performance.now();
      const stopWith = (r: WatchEnd) => {
        result ??= r;
        ctrl?.abort();
      };
      const finish = (err: unknown) => {
        if (finished) return;
        finished = true;
        this.#abort = undefined;
        if (this.#closed) return resolve("closed");
        if (this.#resyncRequested) return resolve("resync");
        if (result) return resolve(result);
        if (err) {
          if (apiErrorStatus(err)?.code === 410) return resolve("gone");
          this.#health.failure(`Watch of ${opts.name} failed: ${describeApiError(err)}`);
          return resolve("error");
        }
        // ended by the server (its timeout): it worked, unless it ended at once without a word
        if (!delivering && performance.now() - startedAt < QUICK_END_MS) return resolve("quick");
        this.#health.working();
        resolve("ended");
      };
      const onEvent = (type: string, obj: unknown) => {
        if (finished || this.#closed) return;
        const end = this.#deliver(type, obj);
        if (end) return stopWith(end);
        // the watch delivers: the next failure starts from the minimum delay (not on its
        // establishment alone: a server that fails each watch at once is retried with backoff)
        if (!delivering) this.#health.working();
        delivering = true;
      };
      const params: Record<string, string | number | boolean> = {
        ...opts.watchParams,
        allowWatchBookmarks: true,
        timeoutSeconds: opts.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300),
      };
      if (this.#rv) params.resourceVersion = this.#rv;
      new k8s.Watch(opts.kubeConfig).watch(opts.watchPath, params, onEvent, finish).then((c) => {
        ctrl = c;
        this.#abort = c;
        if (!finished) this.#health.reachable(); // established: an outage is over
        if (this.#closed || this.#resyncRequested || result) c.abort();
      }, finish);
    });
  }

  /** Hands one watch event to the caller and records its resourceVersion; an end on ERROR. */
  #deliver(type: string, obj: unknown): WatchEnd | undefined {
    const o = obj as { code?: number; message?: string; metadata?: { resourceVersion?: string } };
    if (type === "ERROR") {
      if (o?.code === 410) return "gone";
      this.#log.warn(
        `Watch of ${this.#opts.name} reported an error: ${o?.message ?? JSON.stringify(obj)}`,
      );
      return "error";
    }
    const objRv = o?.metadata?.resourceVersion;
    if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") {
      try {
        this.#opts.onEvent(type, obj);
      } catch (err) {
        this.#log.error(
          `Handling a ${type} event of ${this.#opts.name} failed: ${(err as Error).message}`,
        );
      }
    }
    if (objRv) this.#rv = objRv;
    return undefined;
  }
}

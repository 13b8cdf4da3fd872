/**
 * The control isolate's side of ADS streams owned by worker isolates (the worker side is
 * `worker_ads.ts`): {@link WorkerXdsControl} answers the workers' generator questions from the
 * one generator of the process, debounces pushes and sends each merged push to every worker as
 * one message, and keeps what the workers report (their streams' proxies, watched names, held
 * resources) so that the rest of the control isolate reads the server as it reads one
 * {@link XdsServer}: together with the control isolate's own server (its TLS listener, say).
 * @module
 */

import type { Logger } from "../../log/mod.ts";
import { adsDebounce, Debouncer, type MergedPush } from "./debounce.ts";
import type { ConnectionStatus, StreamInfo, XdsServer } from "./stream.ts";
import type {
  Clock,
  ListenerState,
  PushEvent,
  ResourcesFor,
  XdsMetrics,
  XdsNode,
} from "./types.ts";
import { sumListenerStates, systemClock } from "./types.ts";
import type {
  WorkerAnswer,
  WorkerConnect,
  WorkerConnection,
  WorkerPush,
  WorkerQueries,
  WorkerState,
} from "./worker_ads.ts";
import { trace, traced, traceIsolate, tracing } from "./push_trace.ts";
import { MirrorEncoder, MirrorIds, type MirrorStats } from "./worker_mirror.ts";

/** What one live worker holds of the mirror (see {@link WorkerXdsControl.mirrorStats}). */
export interface WorkerMirrorStats extends MirrorStats {
  worker: number;
}

/**
 * What the control isolate reads of an ADS server (one {@link XdsServer}, or several isolates).
 * `refreshConnections`, when present, brings {@link XdsServer.connections} up to date (the workers'
 * per-type state) and is awaited first.
 */
export type XdsServerView<P> =
  & { refreshConnections?(): Promise<void>; mirrorStats?(): WorkerMirrorStats[] }
  & Pick<
    XdsServer<P>,
    | "push"
    | "flush"
    | "watchedNames"
    | "forEachHeld"
    | "hasProxy"
    | "proxies"
    | "connectionCount"
    | "connections"
    | "close"
  >;

/** Options of {@link WorkerXdsControl}. */
export interface WorkerXdsControlOptions<P> {
  /** The control isolate's own server (its streams count with the workers'). */
  local: XdsServer<P>;
  parseNode(node: XdsNode): P;
  proxyKey(proxy: P): string;
  resourcesFor: ResourcesFor<P>;
  /** Sends a merged push to every worker; resolves once each has sent it. */
  broadcastPush(p: WorkerPush): Promise<unknown>;
  /** Asks every worker to send what is pending (see {@link XdsServer.flush}). */
  broadcastFlush(): Promise<unknown>;
  /** Every worker's `WorkerAds.connections()` (undefined for one that did not answer). */
  broadcastConnections?(): Promise<(WorkerConnection[] | undefined)[]>;
  metrics?: XdsMetrics;
  log: Logger;
  debounceAfter?: number;
  debounceMax?: number;
  debounceMaxEds?: number;
  clock?: Clock;
}

/** A stream of a worker, as the control isolate knows it. */
interface RemoteStream<P> extends StreamInfo {
  proxy: P;
  node: XdsNode;
  at: string;
}

/** What the control isolate knows of one worker. */
class WorkerRecord<P> {
  readonly streams = new Map<number, RemoteStream<P>>();
  /** The worker's names lists by id (see `WorkerQueries`). */
  readonly names = new Map<number, readonly string[]>();
  state: WorkerState | undefined;
  /** Per-type state of its streams, as of the last {@link WorkerXdsControl.refreshConnections}. */
  statuses = new Map<number, WorkerConnection>();
  readonly encoder: MirrorEncoder;
  constructor(ids: MirrorIds) {
    this.encoder = new MirrorEncoder(ids);
  }
}

/** The workers' streams and the control isolate's own, seen as one server. */
export class WorkerXdsControl<P> implements XdsServerView<P> {
  readonly #o: WorkerXdsControlOptions<P>;
  readonly #ids = new MirrorIds();
  readonly #workers: (WorkerRecord<P> | undefined)[] = [];
  readonly #debouncer: Debouncer;
  readonly #inflight = new Set<Promise<void>>();
  /** Connected worker streams by proxy key. */
  readonly #keys = new Map<string, number>();
  /** Names lists by their text: a subscription is one array here, as in the worker. */
  #names = new Map<string, readonly string[]>();
  #closed = false;

  constructor(o: WorkerXdsControlOptions<P>) {
    this.#o = o;
    traceIsolate("control");
    const clock = o.clock ?? systemClock;
    this.#debouncer = new Debouncer((p) => this.#send(p, clock), { ...adsDebounce(o), clock });
  }

  /**
   * Worker `index` (re)starts: what the control isolate knew of its predecessor (streams, state,
   * mirrored maps) is forgotten. Call it before the worker's first message (the pool's `init`).
   */
  startWorker(index: number): void {
    this.forgetWorker(index);
    this.#workers[index] = new WorkerRecord<P>(this.#ids);
  }

  /**
   * Worker `index` died: its streams, what they watch and hold, and its mirror are forgotten at
   * once (push scoping, `/debug` pages and metrics stop counting them before its restart).
   */
  forgetWorker(index: number): void {
    const old = this.#workers[index];
    if (!old) return;
    for (const s of old.streams.values()) this.#unkey(s.proxy);
    this.#workers[index] = undefined;
    this.#o.metrics?.connections?.(this.connectionCount);
  }

  /** The requests and notes of the workers, by method (for `WorkerPool`'s `handlers`). */
  readonly handlers: Record<string, (arg: unknown, index: number) => unknown> = {
    connect: (a, i) => this.#connect(this.#worker(i), a as WorkerConnect[]),
    query: (a, i) =>
      traced(
        () => this.#query(this.#worker(i), a as WorkerQueries),
        (r) => `query w${i} n=${r.ids.length}`,
      ),
    state: (a, i) =>
      traced(() => this.#state(this.#worker(i), a as WorkerState), () => `state w${i}`),
  };

  #worker(index: number): WorkerRecord<P> {
    return this.#workers[index] ??= new WorkerRecord<P>(this.#ids);
  }

  #connect(w: WorkerRecord<P>, list: WorkerConnect[]): void {
    for (const c of list) {
      let proxy: P;
      try {
        proxy = this.#o.parseNode(c.node);
      } catch (e) {
        // the worker validated the node as well: not expected
        this.#o.log.warn(`ADS worker: node ${c.node?.id}: ${(e as Error).message}`);
        continue;
      }
      w.streams.set(c.sid, { proxy, node: c.node, at: c.at, mode: c.mode, peer: c.peer });
      const k = this.#o.proxyKey(proxy);
      this.#keys.set(k, (this.#keys.get(k) ?? 0) + 1);
    }
  }

  #unkey(proxy: P): void {
    const k = this.#o.proxyKey(proxy);
    const n = (this.#keys.get(k) ?? 0) - 1;
    if (n > 0) this.#keys.set(k, n);
    else this.#keys.delete(k);
  }

  /** Answers a batch of generator questions (synchronously: see worker_ads.ts). */
  #query(w: WorkerRecord<P>, batch: WorkerQueries): WorkerAnswer {
    const ids: (number | string)[] = [];
    for (const id of batch.forget) w.names.delete(id);
    for (const [id, names] of batch.names) w.names.set(id, this.#intern(names));
    for (const [sid, typeUrl, namesId] of batch.queries) {
      const s = w.streams.get(sid);
      if (!s) {
        ids.push(`stream ${sid} is not known to the control isolate`);
        continue;
      }
      try {
        const list = namesId === null ? null : w.names.get(namesId);
        if (list === undefined) throw new Error(`names list ${namesId} is not known`);
        const got = this.#o.resourcesFor(s.proxy, typeUrl, list);
        if (got instanceof Promise) throw new Error("the generator must answer synchronously");
        ids.push(w.encoder.add(got));
      } catch (e) {
        ids.push((e as Error).message);
      }
    }
    return { drop: w.encoder.takeDrop(), delta: w.encoder.take(), ids };
  }

  #intern(names: readonly string[]): readonly string[] {
    const key = names.join("\n");
    let got = this.#names.get(key);
    if (!got) {
      if (this.#names.size >= 65536) this.#names = new Map();
      this.#names.set(key, got = names);
    }
    return got;
  }

  #state(w: WorkerRecord<P>, s: WorkerState): void {
    const live = new Set(s.sids);
    for (const [sid, st] of w.streams) {
      if (sid <= s.maxSid && !live.has(sid)) {
        w.streams.delete(sid);
        this.#unkey(st.proxy);
      }
    }
    w.state = s;
    const m = this.#o.metrics;
    for (const [k, n] of Object.entries(s.events)) {
      const [hook, typeUrl] = k.split(" ");
      for (let i = 0; i < n; i++) {
        if (hook === "pushed") m?.pushed?.(typeUrl);
        else if (hook === "nack") m?.nack?.(typeUrl);
        else if (hook === "buildError") m?.buildError?.(typeUrl);
        else if (hook === "sendError:error") m?.sendError?.(typeUrl, "error");
        else if (hook === "sendError:timeout") m?.sendError?.(typeUrl, "timeout");
      }
    }
    m?.connections?.(this.connectionCount);
  }

  /** The workers' listeners, summed. */
  transport(): ListenerState {
    return sumListenerStates(
      this.#live().map((w) => w.state?.transport).filter((t) => t !== undefined),
    );
  }

  #live(): WorkerRecord<P>[] {
    return this.#workers.filter((w): w is WorkerRecord<P> => w !== undefined);
  }

  /** A merged push: one message to every worker (and the control isolate's own server). */
  #send(p: MergedPush, clock: Clock): void {
    const startedAt = clock.now();
    for (const w of this.#live()) w.encoder.nextEpoch();
    const msg: WorkerPush = {
      full: p.full,
      types: [...p.types],
      edsClusters: [...p.edsClusters],
    };
    if (tracing) trace(`push send eds=${msg.edsClusters.length} full=${msg.full}`);
    const done = this.#o.broadcastPush(msg).then(() => {
      const now = clock.now();
      if (tracing) trace(`push done ${(now - startedAt).toFixed(1)}ms`);
      this.#o.metrics?.pushDuration?.((now - startedAt) / 1000);
      this.#o.metrics?.convergence?.((now - p.firstEventAt) / 1000);
    }).finally(() => this.#inflight.delete(done));
    this.#inflight.add(done);
  }

  // ---- the XdsServer surface ------------------------------------------------------------------

  /** Queues a push for every worker (debounced here) and for the control isolate's server. */
  push(ev: PushEvent): void {
    if (this.#closed) return;
    this.#o.local.push(ev);
    this.#debouncer.push(ev);
  }

  /** Sends a pending push now; resolves once every worker (and the local server) sent it. */
  async flush(): Promise<void> {
    this.#debouncer.flushNow();
    await Promise.all([...this.#inflight, this.#o.local.flush(), this.#o.broadcastFlush()]);
  }

  /** Names of `typeUrl` watched by some stream (as the workers last reported). */
  watchedNames(typeUrl: string): Set<string> {
    const out = this.#o.local.watchedNames(typeUrl);
    for (const w of this.#live()) for (const n of w.state?.watched[typeUrl] ?? []) out.add(n);
    return out;
  }

  /** What the streams hold (as the workers last reported). */
  forEachHeld(fn: (typeUrl: string, name: string, version: string) => void): void {
    this.#o.local.forEachHeld(fn);
    for (const w of this.#live()) {
      for (const k of w.state?.held ?? []) {
        const sp = k.indexOf(" "), bar = k.lastIndexOf("|");
        fn(k.slice(0, sp), k.slice(sp + 1, bar), k.slice(bar + 1));
      }
    }
  }

  /** True when a stream's proxy has `key`. */
  hasProxy(key: string): boolean {
    return this.#keys.has(key) || this.#o.local.hasProxy(key);
  }

  /** The proxies of every stream. */
  proxies(): P[] {
    const out = this.#o.local.proxies();
    for (const w of this.#live()) for (const s of w.streams.values()) out.push(s.proxy);
    return out;
  }

  /** Streams of every isolate. */
  get connectionCount(): number {
    let n = this.#o.local.connectionCount;
    for (const w of this.#live()) n += w.streams.size;
    return n;
  }

  /** Asks every worker for its streams' per-type state (for {@link connections}). */
  async refreshConnections(): Promise<void> {
    const all = await this.#o.broadcastConnections?.();
    all?.forEach((list, index) => {
      const w = this.#workers[index];
      if (w && list) w.statuses = new Map(list.map((c) => [c.sid, c]));
    });
  }

  /**
   * The control isolate's streams, and the workers' with their node, proxy, mode and peer (from
   * their connect note); their per-type state as of the last {@link refreshConnections} (before
   * it: no types).
   */
  connections(): ConnectionStatus<P>[] {
    const out = this.#o.local.connections();
    this.#workers.forEach((w, index) => {
      for (const [sid, s] of w?.streams ?? []) {
        const st = w!.statuses.get(sid);
        out.push({
          conId: st?.conId ?? `${s.node.id}-w${index}.${sid}`,
          nodeId: s.node.id,
          proxy: s.proxy,
          node: s.node,
          mode: s.mode,
          peer: `${s.peer} (worker ${index})`,
          peerIdentities: st?.peerIdentities ?? [],
          connectedAt: s.at,
          types: st?.types ?? {},
        });
      }
    });
    return out;
  }

  /** Per live worker: the maps and entries it holds (as the control isolate records them). */
  mirrorStats(): WorkerMirrorStats[] {
    const out: WorkerMirrorStats[] = [];
    this.#workers.forEach((w, worker) => {
      if (w) out.push({ worker, ...w.encoder.stats() });
    });
    return out;
  }

  /** Stops pushing; the local server ends its streams (the workers are closed by their pool). */
  close(): void {
    this.#closed = true;
    this.#debouncer.stop();
    this.#o.local.close();
  }
}

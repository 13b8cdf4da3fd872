/**
 * The worker isolate's side of an ADS server whose generator runs in a control isolate
 * (mesh-discovery's `--workers`; the control side is `worker_control.ts`). The worker owns its
 * streams: the state machine ({@link XdsServer}: SotW and delta, nonces, ACK/NACK, flow control,
 * send loops). What crosses to the control isolate:
 *
 * - `connect` note, batched per task: the node of each new stream with its stream id;
 * - `query` request, batched per task: the generator's questions (stream id, type, names) of the
 *   send loops; the answer is one map id per question plus, in a {@link MirrorDelta}, the maps
 *   and entries this worker does not hold yet (and the ids it may forget);
 * - `state` note, once quiet after a change (a stream, an answer, a push): the live stream ids, the names
 *   each type watches, what the streams hold (for the control isolate's cache cleanup), metric
 *   events since the last note, and the listener's state.
 *
 * From the control isolate: `push` (a merged push: the worker marks its streams and sends; the
 * reply comes once every affected stream was sent its responses) and `flush`.
 * @module
 */

import type { Logger } from "../../log/mod.ts";
import type { Channel } from "../../workers/mod.ts";
import { type ConnectionStatus, type StreamInfo, XdsServer } from "./stream.ts";
import type { ListenerState, PushEvent, ResourceMap, XdsMetrics, XdsNode } from "./types.ts";
import { externalNote, trace, traced, tracing } from "./push_trace.ts";
import { MirrorDecoder, type MirrorDelta, type MirrorDrop } from "./worker_mirror.ts";

/** A `state` note waits for this long without a change (ms)... */
export const STATE_QUIET_MS = 50;
/** ...but not longer than this after the first change (ms). */
export const STATE_MAX_MS = 500;
/**
 * How often the listener's state is looked at (ms): a refused or throttled connection, or the
 * listener no longer accepting, changes no stream, so nothing else would send a note for it.
 */
export const TRANSPORT_POLL_MS = 1000;

/** A stream's proxy in a worker: its id, unique in the worker, and its proxy key. */
export interface WorkerProxy {
  readonly sid: number;
  readonly key: string;
}

/** A generator question: stream id, type, id of its names list (null = wildcard). */
export type WorkerQuery = [sid: number, typeUrl: string, names: number | null];

/**
 * A batch of questions. A names list (a subscription: one array for every stream with the same
 * names) crosses once: `names` carries the lists the control isolate has not seen, by id;
 * `forget` the ids of lists this worker no longer has (collected), which never come back.
 */
export interface WorkerQueries {
  queries: WorkerQuery[];
  names: [id: number, names: readonly string[]][];
  forget: number[];
}

/** The answer to a batch of {@link WorkerQuery}. */
export interface WorkerAnswer {
  /** Ids this worker may forget (applied before `delta`). */
  drop: MirrorDrop | null;
  delta: MirrorDelta;
  /** A map id per question, or a message when the generator failed. */
  ids: (number | string)[];
}

/** One stream's connect note. */
export interface WorkerConnect extends StreamInfo {
  sid: number;
  node: XdsNode;
  at: string;
}

/** The `state` note. */
export interface WorkerState {
  /** Stream ids up to this one were assigned when the note was made. */
  maxSid: number;
  sids: number[];
  /** Per type, the names watched (see {@link XdsServer.watchedNames}). */
  watched: Record<string, string[]>;
  /** `<type> <name>|<version>` of what the streams hold. */
  held: string[];
  /** Metric events since the last note: `<hook> <typeUrl>` → count. */
  events: Record<string, number>;
  transport: ListenerState;
}

/**
 * A worker stream's per-type state (for `/debug/adsz`), by stream id (its mode and peer came with
 * its {@link WorkerConnect} note).
 */
export type WorkerConnection =
  & { sid: number }
  & Pick<ConnectionStatus<unknown>, "conId" | "peerIdentities" | "types">;

/** A merged push as sent to the workers. */
export interface WorkerPush {
  full: boolean;
  types: string[];
  edsClusters: string[];
}

/** Options of {@link WorkerAds}. */
export interface WorkerAdsOptions {
  channel: Channel;
  log: Logger;
  /** Validates a node (throws with the reason) and returns its proxy key (e.g. its IP). */
  proxyKey(node: XdsNode): string;
  knownTypes: readonly string[];
  /** The listener's state, for the `state` note. */
  transport(): ListenerState;
  /** Send loops running at once (default 4096; see `XdsServerOptions.maxConcurrentPushes`). */
  maxConcurrentPushes?: number;
}

/** The worker's XdsServer and its link to the control isolate's generator. */
export class WorkerAds {
  /** The worker's state machine (give it to `startAdsServer`). */
  readonly server: XdsServer<WorkerProxy>;
  readonly #o: WorkerAdsOptions;
  readonly #mirror = new MirrorDecoder();
  readonly #events: Record<string, number> = {};
  #sid = 0;
  #connects: WorkerConnect[] = [];
  #queries: WorkerQuery[] = [];
  /** Ids of names lists (see {@link WorkerQueries}), and those not sent yet. */
  readonly #namesIds = new WeakMap<readonly string[], number>();
  #namesSeq = 0;
  #newNames: [number, readonly string[]][] = [];
  #forget: number[] = [];
  readonly #collected = new FinalizationRegistry<number>((id) => this.#forget.push(id));
  #waiting: PromiseWithResolvers<ResourceMap>[] = [];
  #stateTimer: number | undefined;
  #lastState = "";
  #transportPoll: number;
  #lastTransport = "";

  constructor(o: WorkerAdsOptions) {
    this.#o = o;
    // Every event is told in the next state note, which each one schedules (a response sent also
    // changes what its stream holds).
    const count = (hook: string) => (t: string) => {
      const k = `${hook} ${t}`;
      this.#events[k] = (this.#events[k] ?? 0) + 1;
      this.#soon();
    };
    const metrics: XdsMetrics = {
      pushed: count("pushed"),
      nack: count("nack"),
      buildError: count("buildError"),
      sendError: (t, reason) => count(`sendError:${reason}`)(t),
      connections: () => this.#soon(),
    };
    this.#transportPoll = setInterval(() => {
      const t = JSON.stringify(o.transport());
      if (t === this.#lastTransport) return;
      this.#lastTransport = t;
      this.#soon();
    }, TRANSPORT_POLL_MS);
    this.server = new XdsServer<WorkerProxy>({
      parseNode: (node, stream) => this.#connect(node, stream),
      proxyKey: (p) => p.key,
      resourcesFor: (p, t, names) => this.#ask([p.sid, t, names && this.#namesId(names)]),
      knownTypes: o.knownTypes,
      metrics,
      logger: o.log,
      // the control isolate debounces; a push arrives merged and is sent at once
      debounceAfter: 0,
      // every send loop of a push asks its question in the same batch: one round trip per type
      // for the whole push, not one per 256 streams
      maxConcurrentPushes: o.maxConcurrentPushes ?? 4096,
    });
  }

  #connect(node: XdsNode, stream: StreamInfo): WorkerProxy {
    const key = this.#o.proxyKey(node);
    const sid = ++this.#sid;
    if (!this.#connects.length) queueMicrotask(() => this.#sendConnects());
    this.#connects.push({ sid, node, at: new Date().toISOString(), ...stream });
    return { sid, key };
  }

  #sendConnects(): void {
    const c = this.#connects;
    this.#connects = [];
    this.#o.channel.notify("connect", c);
  }

  /** The id of a names list; a new one is sent with the next batch. */
  #namesId(names: readonly string[]): number {
    let id = this.#namesIds.get(names);
    if (id === undefined) {
      this.#namesIds.set(names, id = ++this.#namesSeq);
      this.#newNames.push([id, names]);
      this.#collected.register(names, id);
    }
    return id;
  }

  /** Queues a question; the questions of one task go in one request. */
  #ask(q: WorkerQuery): Promise<ResourceMap> {
    // a stream's first question may come in the task of its connect: that note goes first
    if (this.#connects.length) this.#sendConnects();
    const w = Promise.withResolvers<ResourceMap>();
    if (!this.#queries.length) queueMicrotask(() => queueMicrotask(() => this.#sendQueries()));
    this.#queries.push(q);
    this.#waiting.push(w);
    return w.promise;
  }

  #sendQueries(): void {
    const queries = this.#queries, waiting = this.#waiting;
    const batch: WorkerQueries = { queries, names: this.#newNames, forget: this.#forget };
    this.#newNames = [];
    this.#forget = [];
    this.#queries = [];
    this.#waiting = [];
    // The answer is applied in the reaction to the reply, before any later message is handled:
    // the mirror sees the control isolate's deltas and drops in the order they were made.
    if (tracing) trace(`query send ${queries.length}${externalNote()}`);
    this.#o.channel.request<WorkerAnswer>("query", batch).then((a) => {
      if (tracing) trace(`answer recv ${a.ids.length}`);
      if (a.drop) this.#mirror.drop(a.drop);
      this.#mirror.apply(a.delta);
      a.ids.forEach((id, i) => {
        if (typeof id === "string") waiting[i].reject(new Error(id));
        else waiting[i].resolve(this.#mirror.map(id));
      });
      this.#soon();
      if (tracing) trace(`answer applied${externalNote()}`);
    }).catch((e) => {
      for (const w of waiting) w.reject(e);
    });
  }

  /** Applies a push; resolves once every affected stream was sent its responses. */
  async push(p: WorkerPush): Promise<void> {
    const events: PushEvent[] = p.full ? [{ kind: "full" }] : [];
    if (!p.full && p.types.length) events.push({ kind: "config", types: p.types });
    if (!p.full && p.edsClusters.length) events.push({ kind: "eds", clusters: p.edsClusters });
    if (tracing) trace(`push recv streams=${this.server.connectionCount}${externalNote()}`);
    for (const ev of events) this.server.push(ev);
    await this.server.flush();
    if (tracing) trace(`push done${externalNote()}`);
    this.#soon();
  }

  /**
   * A `state` note once things are quiet: {@link STATE_QUIET_MS} after the last change (a push's
   * answers come in bursts; the note is computed once after them, not during them), at most
   * {@link STATE_MAX_MS} after the first.
   */
  #soon(): void {
    const now = performance.now();
    this.#lastChangeAt = now;
    if (this.#stateTimer !== undefined) return; // cheap: called for every response sent
    this.#firstChangeAt = now;
    this.#armState(STATE_QUIET_MS);
  }

  #armState(ms: number): void {
    this.#stateTimer = setTimeout(() => {
      this.#stateTimer = undefined;
      const now = performance.now();
      const quietIn = this.#lastChangeAt + STATE_QUIET_MS - now;
      const maxIn = this.#firstChangeAt! + STATE_MAX_MS - now;
      if (quietIn > 0 && maxIn > 0) return this.#armState(Math.min(quietIn, maxIn));
      this.#firstChangeAt = undefined;
      this.#sendState();
    }, ms);
  }

  #lastChangeAt = 0;
  #firstChangeAt: number | undefined;

  /** Sends the `state` note when it differs from the last one. */
  #sendState(): void {
    const s = traced(() => this.state(), () => "state computed");
    const key = JSON.stringify([s.sids, s.watched, s.held, s.transport]);
    if (key === this.#lastState && !Object.keys(s.events).length) return;
    this.#lastState = key;
    for (const k of Object.keys(this.#events)) delete this.#events[k];
    this.#o.channel.notify("state", s);
  }

  /** The state as the control isolate is told it (metric events are taken by the note). */
  state(): WorkerState {
    const server = this.server;
    const watched: Record<string, string[]> = {};
    for (const t of this.#o.knownTypes) watched[t] = [...server.watchedNames(t)];
    const held = new Set<string>();
    server.forEachHeld((t, n, v) => held.add(`${t} ${n}|${v}`));
    return {
      maxSid: this.#sid,
      sids: server.proxies().map((p) => p.sid),
      watched,
      held: [...held],
      events: { ...this.#events },
      transport: this.#o.transport(),
    };
  }

  /** Every stream's introspection (the control isolate adds node and proxy). */
  connections(): WorkerConnection[] {
    return this.server.connections().map((c) => ({
      sid: c.proxy.sid,
      conId: c.conId,
      peerIdentities: c.peerIdentities,
      types: c.types,
    }));
  }

  /** Maps mirrored now (tests). */
  get mirrored(): number {
    return this.#mirror.size;
  }

  /** Stops the timers and ends every stream. */
  close(): void {
    if (this.#stateTimer !== undefined) clearTimeout(this.#stateTimer);
    clearInterval(this.#transportPoll);
    this.server.close();
  }
}

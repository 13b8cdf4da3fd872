/**
 * Push scheduling: pushes are debounced and merged; a push marks what it touches on the streams it
 * concerns (every stream for a config push; for an endpoints push only the subscribers of the
 * changed clusters, found through the reverse index in `subscribers.ts`), and each stream's send
 * loop builds and sends its dirty types one at a time in Envoy's order (CDS, EDS, LDS, RDS, SDS).
 * At most `maxConcurrent` send loops run at once for pushes (istiod's push queue and throttle): the
 * others wait in a FIFO queue, and while a stream waits or sends, later pushes only widen its dirty
 * marks (coalescing per stream), so a stream has at most one push pending however fast changes
 * come. Streams whose client waits for an answer (a new stream, a new subscription) have as many
 * slots again of their own, and take a free push slot too: a push held by slow proxies, whose
 * sends wait for their sockets, never holds a new proxy's first response (istiod answers a
 * request outside its push throttle as well).
 * Send timeouts are checked by one sweep timer over the streams with a send in flight.
 *
 * A push to many streams does not hold the event loop: the send loops share one
 * {@link TimeSlicer}, and once they have run for its budget (20 ms) each pauses for a macrotask
 * before its next build, so `/ready`, REST xDS and new streams are served between batches. The
 * streams a client's own request made dirty (a new stream, a new subscription) are started before
 * those a push queued.
 * @module
 */

import type { Logger } from "../../log/mod.ts";
import { SLICE_MS, TimeSlicer } from "../../process/slice.ts";
import { Debouncer, type MergedPush } from "./debounce.ts";
import { externalNote, trace, tracing } from "./push_trace.ts";
import { typeShortName } from "./metrics.ts";
import {
  type Connection,
  type Dirty,
  type PushRecord,
  type Subscription,
  typeRank,
  type TypeState,
} from "./state.ts";
import type { SubscriberIndex } from "./subscribers.ts";
import {
  type Clock,
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
  type PushEvent,
  Status,
  XDS_TYPES,
  type XdsMetrics,
  type XdsTransport,
} from "./types.ts";

/** Options of a {@link PushScheduler}. */
export interface PushOptions<P> {
  /** The connected streams (the server's map, shared). */
  conns: ReadonlyMap<string, Connection<P>>;
  /** Builds the response of a dirty type of a stream (null: nothing to send). */
  build(
    conn: Connection<P>,
    st: TypeState,
    d: Dirty,
  ):
    | DiscoveryResponse
    | DeltaDiscoveryResponse
    | null
    | Promise<DiscoveryResponse | DeltaDiscoveryResponse | null>;
  clock: Clock;
  log: Logger;
  metrics: XdsMetrics;
  /** Longest time one send may take before the stream is closed, ms. */
  sendTimeout: number;
  /** Quiet period before a push, ms. */
  debounceAfter?: number;
  /** Longest delay of a push after its first event, ms. */
  debounceMax?: number;
  /** Longest delay of an endpoints-only push after its first event, ms (default debounceMax). */
  debounceMaxEds?: number;
  /** Streams by subscribed name (finds the streams of an endpoints push). */
  index: SubscriberIndex<P>;
  /**
   * Send loops running at once for pushes; further streams wait in a FIFO queue (default 256).
   * Streams whose client waits for an answer have as many slots again.
   */
  maxConcurrent?: number;
  /**
   * Work the send loops may do, together, before they let other tasks run, ms (default
   * {@link SLICE_MS}; null: never pause).
   */
  sliceMs?: number | null;
}

/**
 * Longest time a push holds the reading of the connections it reaches, ms (see
 * `PushScheduler.#push`): the client's keepalive PINGs and new requests wait at most this long.
 */
export const READ_HOLD_MAX_MS = 1000;
/**
 * A push holds reads only after this long without a push, ms: one that follows another
 * closely is part of sustained churn, where the server is behind and reading must keep pace.
 */
export const READ_HOLD_QUIET_MS = 250;

/** Default number of send loops running at once (istiod's PILOT_PUSH_THROTTLE is 100). */
export const DEFAULT_MAX_CONCURRENT_PUSHES = 256;

/** Ends a push's hold of the reads of `conn`'s connection (see `PushScheduler.#push`). */
function releaseRead<P>(conn: Connection<P>): void {
  if (!conn.readHeld) return;
  conn.readHeld = false;
  (conn.transport as XdsTransport<unknown>).releaseReads!();
}

/** A Dirty mark shared by every stream of a push: every name, no forced response. */
const ALL: Dirty = Object.freeze({ all: true, names: new Set<string>(), force: false });

/** Debounced pushes and the per-stream send loops. */
export class PushScheduler<P> {
  readonly #conns: ReadonlyMap<string, Connection<P>>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: XdsMetrics;
  readonly #sendTimeout: number;
  readonly #debouncer: Debouncer;
  readonly #inflight = new Set<Promise<void>>();
  /** When the last push ended (clock ms). */
  #lastPushEnd = -Infinity;
  readonly #index: SubscriberIndex<P>;
  readonly #maxConcurrent: number;
  /** Send loops running in the push slots. */
  #active = 0;
  /** Send loops running in the slots kept for clients' requests. */
  #activeUrgent = 0;
  /** Streams waiting for a send loop slot, FIFO (from #queueHead on). */
  #queue: Connection<P>[] = [];
  #queueHead = 0;
  /**
   * Streams a client's request made dirty, waiting for a slot: started before {@link #queue}
   * (FIFO from #urgentHead on; the set holds the same streams).
   */
  #urgent: Connection<P>[] = [];
  #urgentHead = 0;
  readonly #urgentSet = new Set<Connection<P>>();
  /** Shared by the send loops: a long push pauses for a macrotask every slice. */
  readonly #slicer: TimeSlicer;
  /** Resolvers of the `drained` promises of queued streams. */
  readonly #queuedDone = new Map<Connection<P>, () => void>();
  /** Streams with a send in flight (for the timeout sweep). */
  readonly #sending = new Set<Connection<P>>();
  readonly build: PushOptions<P>["build"];
  #closed = false;

  /** A scheduler over `opts.conns`. */
  constructor(opts: PushOptions<P>) {
    this.#conns = opts.conns;
    this.#clock = opts.clock;
    this.#log = opts.log;
    this.#metrics = opts.metrics;
    this.#sendTimeout = opts.sendTimeout;
    this.build = opts.build;
    this.#index = opts.index;
    this.#maxConcurrent = opts.maxConcurrent ?? DEFAULT_MAX_CONCURRENT_PUSHES;
    this.#slicer = new TimeSlicer(opts.sliceMs === undefined ? SLICE_MS : opts.sliceMs);
    if (!Number.isInteger(this.#maxConcurrent) || this.#maxConcurrent < 1) {
      throw new Error(`Invalid maxConcurrent ${this.#maxConcurrent}: must be a whole number >= 1`);
    }
    this.#debouncer = new Debouncer((p) => this.#push(p), {
      after: opts.debounceAfter,
      max: opts.debounceMax,
      maxEds: opts.debounceMaxEds,
      clock: this.#clock,
    });
  }

  /** Queues a push event (debounced and merged). */
  push(ev: PushEvent): void {
    this.#debouncer.push(ev);
  }

  /**
   * Flushes a pending debounced push now and resolves when every push in flight has been sent to
   * every affected client (or the client went away).
   */
  async flush(): Promise<void> {
    this.#debouncer.flushNow();
    for (;;) {
      const busy = [...this.#inflight];
      for (const c of this.#conns.values()) if (c.draining) busy.push(c.drained);
      if (!busy.length) return;
      await Promise.all(busy);
    }
  }

  /** Drops pending events and stops the send sweep. */
  stop(): void {
    this.#closed = true;
    this.#debouncer.stop();
    if (this.#sendSweep !== undefined) this.#clock.clearTimeout(this.#sendSweep);
    this.#sendSweep = undefined;
  }

  /**
   * Starts a debounced push: marks what it touches on the streams it concerns and drains them. A
   * config push visits every stream; an endpoints-only push visits only the subscribers of the
   * changed clusters (reverse index), with one Dirty mark per distinct subscription.
   */
  #push(p: MergedPush): void {
    let done!: () => void;
    const promise = new Promise<void>((r) => done = r);
    let streams = 0;
    const rec: PushRecord = {
      firstEventAt: p.firstEventAt,
      startedAt: this.#clock.now(),
      // Held by this method while it enlists streams: a stream's send loop can end at once (a
      // build with nothing to send answers synchronously), and must not end the push early.
      remaining: 1,
      done: () => {},
    };
    // A push reads nothing from the connections it reaches until it was sent to all (or for
    // READ_HOLD_MAX_MS): their ACKs, which only confirm what was sent, wait in their sockets
    // instead of taking turns with the sends to the streams not served yet. A stream about to be
    // sent anything but endpoints is let go first (#send): that response can make the client ask
    // for new resources at once (CDS → EDS of a new cluster, LDS → RDS, proxyless RDS → CDS), and
    // that request must not wait. Only after a quiet spell: under sustained churn holding only
    // moves the reading into the next push.
    const quiet = this.#inflight.size === 0 &&
      rec.startedAt - this.#lastPushEnd >= READ_HOLD_QUIET_MS;
    let held: Connection<P>[] | undefined = quiet ? [] : undefined;
    let holdTimer: unknown;
    const releaseHeld = () => {
      if (!held) return;
      for (const c of held) releaseRead(c);
      held = undefined;
      if (holdTimer !== undefined) this.#clock.clearTimeout(holdTimer);
    };
    rec.done = () => {
      const now = this.#clock.now();
      this.#lastPushEnd = now;
      this.#metrics.pushDuration?.((now - rec.startedAt) / 1000);
      this.#metrics.convergence?.((now - rec.firstEventAt) / 1000);
      if (tracing) {
        trace(
          `push done ${(now - rec.startedAt).toFixed(1)}ms streams=${streams}${externalNote()}`,
        );
      }
      releaseHeld();
      this.#inflight.delete(promise);
      done();
    };
    this.#inflight.add(promise);
    const eds = XDS_TYPES.endpoint;
    const enlist = (conn: Connection<P>) => {
      rec.remaining++;
      streams++;
      const t = conn.transport as XdsTransport<unknown>;
      if (held && !conn.readHeld && t.holdReads && t.releaseReads) {
        t.holdReads();
        conn.readHeld = true;
        held.push(conn);
      }
      conn.waiters.push(rec);
      this.drain(conn);
    };
    const edsTypes = !p.full && !p.types.has(eds) && p.edsClusters.size > 0;
    /** Streams enlisted by the config part (skipped by the endpoints part, which marks them). */
    let enlisted: Set<Connection<P>> | undefined;
    if (p.full || p.types.size) {
      for (const conn of this.#conns.values()) {
        let marked = false;
        for (const t of conn.types.keys()) {
          if (p.full || p.types.has(t)) {
            this.markDirty(conn, t, ALL);
            marked = true;
          }
        }
        if (marked) {
          if (edsTypes) (enlisted ??= new Set()).add(conn);
          enlist(conn);
        }
      }
    }
    if (edsTypes) {
      // One Dirty mark per distinct subscription: the changed clusters it holds.
      this.#index.forEachSubscriber(eds, p.edsClusters, (sub, conns) => {
        const d = this.#edsDirty(sub, p.edsClusters);
        for (const conn of conns) {
          if (conn.closed) continue;
          this.markDirty(conn, eds, d);
          if (!enlisted?.has(conn)) enlist(conn);
        }
      });
    }
    this.#log.debug("ADS: push", {
      full: p.full,
      types: [...p.types],
      edsClusters: p.edsClusters.size,
      events: p.events,
      clients: streams,
    });
    if (tracing) trace(`push start streams=${streams} full=${p.full}${externalNote()}`);
    if (held?.length) holdTimer = this.#clock.setTimeout(releaseHeld, READ_HOLD_MAX_MS);
    if (--rec.remaining === 0) rec.done();
  }

  /** The Dirty mark of an endpoints push for the streams of `sub` (null: wildcard streams). */
  #edsDirty(sub: Subscription | null, clusters: ReadonlySet<string>): Dirty {
    const names = new Set<string>();
    for (const c of clusters) if (!sub || sub.set.has(c)) names.add(c);
    return Object.freeze({ all: false, names, force: false });
  }

  /** `conn` is done with push `rec` (sent, or gone). */
  release(rec: PushRecord, _conn: Connection<P>): void {
    // Each (push, stream) pair is released once: the stream's waiters list is emptied as it is.
    if (--rec.remaining === 0) rec.done();
  }

  /**
   * Marks a type of a stream for recomputation. Marks are never mutated (a push shares one among
   * many streams): a second mark of the same type is merged into a new one (the wider of both).
   */
  markDirty(conn: Connection<P>, typeUrl: string, d: Dirty): void {
    const old = conn.dirty.get(typeUrl);
    if (!old) {
      conn.dirty.set(typeUrl, d);
      return;
    }
    if (old === d) return;
    // Streams that waited through the same pushes hold the same (shared) marks: each pair is
    // merged once, and they share the result.
    let byNext = this.#merged.get(old);
    if (!byNext) this.#merged.set(old, byNext = new WeakMap());
    let m = byNext.get(d);
    if (!m) {
      const all = old.all || d.all;
      const names = all ? new Set<string>() : new Set([...old.names, ...d.names]);
      byNext.set(d, m = Object.freeze({ all, names, force: old.force || d.force }));
    }
    conn.dirty.set(typeUrl, m);
  }

  /** Merged marks by the two marks merged (see {@link markDirty}). */
  readonly #merged = new WeakMap<Dirty, WeakMap<Dirty, Dirty>>();

  /**
   * Starts the send loop of a stream unless it runs or waits for a slot (then its new dirty marks
   * are simply taken up by that loop: coalescing). Beyond `maxConcurrent` running loops the stream
   * joins the FIFO queue; an `urgent` one (a client waits for the answer to its request) runs in
   * its own slots, or a free push slot, and beyond those joins the queue of those started first.
   */
  drain(conn: Connection<P>, urgent = false): void {
    if (conn.draining || conn.closed) {
      if (urgent && !conn.closed && this.#queuedDone.has(conn)) {
        // waits behind a push: moves ahead (its place in the FIFO queue is skipped when reached)
        this.#pushUrgent(conn);
        this.#next();
      }
      return;
    }
    conn.draining = true;
    const slot = urgent ? this.#urgentSlot() : this.#active < this.#maxConcurrent;
    if (!slot) {
      conn.drained = new Promise<void>((r) => this.#queuedDone.set(conn, r));
      if (urgent) this.#pushUrgent(conn);
      else this.#queue.push(conn);
      return;
    }
    this.#start(conn, urgent && this.#ownUrgentSlotFree());
  }

  /** A slot is free for a client's request: one of its own, or a push slot. */
  #urgentSlot(): boolean {
    return this.#ownUrgentSlotFree() || this.#active < this.#maxConcurrent;
  }

  /** One of the slots kept for clients' requests is free. */
  #ownUrgentSlotFree(): boolean {
    return this.#activeUrgent < this.#maxConcurrent;
  }

  /** Runs the send loop of `conn` in a slot kept for clients' requests or in a push slot. */
  #start(conn: Connection<P>, urgentSlot: boolean): void {
    if (urgentSlot) this.#activeUrgent++;
    else this.#active++;
    conn.drained = this.#drainLoop(conn).finally(() => {
      if (urgentSlot) this.#activeUrgent--;
      else this.#active--;
      this.#next();
    });
  }

  /** Queues `conn` among the urgent streams (once). */
  #pushUrgent(conn: Connection<P>): void {
    if (this.#urgentSet.has(conn)) return;
    this.#urgentSet.add(conn);
    this.#urgent.push(conn);
  }

  /** Starts queued send loops while slots are free (urgent ones first). */
  #next(): void {
    for (;;) {
      let conn: Connection<P>;
      let urgent = false;
      if (this.#urgentHead < this.#urgent.length && this.#urgentSlot()) {
        urgent = true;
        conn = this.#urgent[this.#urgentHead++];
        this.#urgentSet.delete(conn);
        if (this.#urgentHead === this.#urgent.length) {
          this.#urgent = [];
          this.#urgentHead = 0;
        }
      } else if (this.#queueHead < this.#queue.length && this.#active < this.#maxConcurrent) {
        conn = this.#queue[this.#queueHead++];
        if (this.#queueHead > 1024 && this.#queueHead * 2 > this.#queue.length) {
          this.#queue = this.#queue.slice(this.#queueHead);
          this.#queueHead = 0;
        }
      } else return;
      const resolve = this.#queuedDone.get(conn);
      if (!resolve) continue; // started already (moved ahead as urgent)
      this.#queuedDone.delete(conn);
      this.#start(conn, urgent && this.#ownUrgentSlotFree());
      void conn.drained.then(resolve);
    }
  }

  async #drainLoop(conn: Connection<P>): Promise<void> {
    try {
      for (;;) {
        // a long push lets other tasks run between slices (before the marks are read: a push
        // meanwhile widens them)
        if (conn.dirty.size && this.#slicer.due) await this.#slicer.pause();
        if (conn.closed) return;
        let next: string | undefined;
        for (const t of conn.dirty.keys()) {
          if (next === undefined || typeRank(t) < typeRank(next)) next = t;
        }
        if (next === undefined) break;
        const d = conn.dirty.get(next)!;
        conn.dirty.delete(next);
        const st = conn.types.get(next)!;
        let res: DiscoveryResponse | DeltaDiscoveryResponse | null;
        try {
          // Most builds answer at once (the generator's shared views): no promise to wait for.
          const built = this.build(conn, st, d);
          res = built instanceof Promise ? await built : built;
        } catch (e) {
          this.#metrics.buildError?.(next);
          this.#log.error(
            `ADS: building ${typeShortName(next)} for ${conn.conId} failed: ${
              (e as Error).message
            }`,
          );
          continue;
        }
        if (!res || conn.closed) continue;
        if (!await this.#send(conn, next, res)) return;
      }
    } catch (e) {
      this.#log.error(`ADS: send loop of ${conn.conId} failed: ${(e as Error).message}`);
      conn.endStream({ code: Status.INTERNAL, message: (e as Error).message });
      return;
    } finally {
      conn.draining = false;
    }
    const ws = conn.waiters;
    conn.waiters = [];
    for (const w of ws) this.release(w, conn);
  }

  async #send(
    conn: Connection<P>,
    typeUrl: string,
    res: DiscoveryResponse | DeltaDiscoveryResponse,
  ): Promise<boolean> {
    // A response that can make the client ask for more at once (any type but endpoints) ends
    // the push's hold of this stream's reads, so that the request is read as it comes.
    if (conn.readHeld && typeUrl !== XDS_TYPES.endpoint) releaseRead(conn);
    // One sweep timer checks every send in flight (a timer per send cost ~8% of a full push).
    conn.sendDeadline = this.#clock.now() + this.#sendTimeout;
    conn.sendType = typeUrl;
    this.#sending.add(conn);
    this.#armSendSweep();
    try {
      await (conn.transport as XdsTransport<typeof res>).send(res);
      if (conn.sendTimedOut) return false;
      this.#metrics.pushed?.(typeUrl);
      return true;
    } catch (e) {
      if (conn.sendTimedOut) return false;
      this.#metrics.sendError?.(typeUrl, "error");
      this.#log.warn(
        `ADS: sending ${typeShortName(typeUrl)} to ${conn.conId} failed: ${(e as Error).message}`,
      );
      conn.endStream({
        code: Status.UNAVAILABLE,
        message: `Send failed: ${(e as Error).message}`,
      });
      return false;
    } finally {
      conn.sendDeadline = 0;
      this.#sending.delete(conn);
    }
  }

  #sendSweep: unknown;

  /** Runs {@link #sweepSends} every tenth of the send timeout while sends are in flight. */
  #armSendSweep(): void {
    if (this.#sendSweep !== undefined || this.#closed) return;
    this.#sendSweep = this.#clock.setTimeout(() => {
      this.#sendSweep = undefined;
      if (this.#sweepSends()) this.#armSendSweep();
    }, Math.max(5, Math.min(1000, this.#sendTimeout / 10)));
  }

  /** Ends the streams whose send is past its deadline; true while other sends are in flight. */
  #sweepSends(): boolean {
    const now = this.#clock.now();
    let pending = false;
    for (const conn of [...this.#sending]) {
      if (!conn.sendDeadline) {
        this.#sending.delete(conn);
        continue;
      }
      if (now < conn.sendDeadline) {
        pending = true;
        continue;
      }
      conn.sendTimedOut = true;
      conn.sendDeadline = 0;
      this.#sending.delete(conn);
      this.#metrics.sendError?.(conn.sendType, "timeout");
      conn.endStream({
        code: Status.DEADLINE_EXCEEDED,
        message: `Sending ${
          typeShortName(conn.sendType)
        } to ${conn.conId} timed out after ${this.#sendTimeout} ms`,
      });
    }
    return pending;
  }
}

/**
 * Push scheduling: pushes are debounced and merged, mark what they touch on every stream (every
 * name of the named types, or only the named clusters' endpoints), and each stream's send loop
 * builds and sends its dirty types one at a time in Envoy's order (CDS, EDS, LDS, RDS, SDS),
 * with a send timeout checked by one sweep timer.
 * @module
 */

import type { Logger } from "../../log/mod.ts";
import { Debouncer, type MergedPush } from "./debounce.ts";
import { typeShortName } from "./metrics.ts";
import { type Connection, type Dirty, type PushRecord, typeRank, type TypeState } from "./state.ts";
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
  ): Promise<DiscoveryResponse | DeltaDiscoveryResponse | null>;
  clock: Clock;
  log: Logger;
  metrics: XdsMetrics;
  /** Longest time one send may take before the stream is closed, ms. */
  sendTimeout: number;
  /** Quiet period before a push, ms. */
  debounceAfter?: number;
  /** Longest delay of a push after its first event, ms. */
  debounceMax?: number;
}

/** Debounced pushes and the per-stream send loops. */
export class PushScheduler<P> {
  readonly #conns: ReadonlyMap<string, Connection<P>>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: XdsMetrics;
  readonly #sendTimeout: number;
  readonly #debouncer: Debouncer;
  readonly #inflight = new Set<Promise<void>>();
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
    this.#debouncer = new Debouncer((p) => this.#push(p), {
      after: opts.debounceAfter,
      max: opts.debounceMax,
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

  /** Starts a debounced push: marks what it touches on every stream and drains them. */
  #push(p: MergedPush): void {
    let done!: () => void;
    const promise = new Promise<void>((r) => done = r);
    const rec: PushRecord = {
      firstEventAt: p.firstEventAt,
      startedAt: this.#clock.now(),
      remaining: new Set(),
      done: () => {},
    };
    rec.done = () => {
      const now = this.#clock.now();
      this.#metrics.pushDuration?.((now - rec.startedAt) / 1000);
      this.#metrics.convergence?.((now - rec.firstEventAt) / 1000);
      this.#inflight.delete(promise);
      done();
    };
    this.#inflight.add(promise);
    const eds = XDS_TYPES.endpoint;
    for (const conn of this.#conns.values()) {
      let marked = false;
      for (const t of conn.types.keys()) {
        if (p.full || p.types.has(t)) {
          this.markDirty(conn, t, { all: true, names: new Set(), force: false });
          marked = true;
        }
      }
      const st = conn.types.get(eds);
      if (st && p.edsClusters.size && !p.full && !p.types.has(eds)) {
        const names = new Set(
          [...p.edsClusters].filter((c) => st.wildcard || st.sub.set.has(c) || st.held.has(c)),
        );
        if (names.size) {
          this.markDirty(conn, eds, { all: false, names, force: false });
          marked = true;
        }
      }
      if (marked) {
        rec.remaining.add(conn as Connection<unknown>);
        conn.waiters.push(rec);
        this.drain(conn);
      }
    }
    this.#log.debug("ADS: push", {
      full: p.full,
      types: [...p.types],
      edsClusters: p.edsClusters.size,
      events: p.events,
      clients: rec.remaining.size,
    });
    if (rec.remaining.size === 0) rec.done();
  }

  /** `conn` is done with push `rec` (sent, or gone). */
  release(rec: PushRecord, conn: Connection<P>): void {
    if (rec.remaining.delete(conn as Connection<unknown>) && rec.remaining.size === 0) rec.done();
  }

  /** Marks a type of a stream for recomputation. */
  markDirty(conn: Connection<P>, typeUrl: string, d: Dirty): void {
    const old = conn.dirty.get(typeUrl);
    if (!old) {
      conn.dirty.set(typeUrl, d);
      return;
    }
    old.all ||= d.all;
    old.force ||= d.force;
    for (const n of d.names) old.names.add(n);
  }

  /** Starts the send loop of a stream unless it runs. */
  drain(conn: Connection<P>): void {
    if (conn.draining || conn.closed) return;
    conn.draining = true;
    conn.drained = this.#drainLoop(conn);
  }

  async #drainLoop(conn: Connection<P>): Promise<void> {
    try {
      for (;;) {
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
          res = await this.build(conn, st, d);
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
    // One sweep timer checks every send in flight (a timer per send cost ~8% of a full push).
    conn.sendDeadline = this.#clock.now() + this.#sendTimeout;
    conn.sendType = typeUrl;
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
    for (const conn of this.#conns.values()) {
      if (!conn.sendDeadline) continue;
      if (now < conn.sendDeadline) {
        pending = true;
        continue;
      }
      conn.sendTimedOut = true;
      conn.sendDeadline = 0;
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

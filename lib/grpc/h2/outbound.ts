/**
 * The output side of a connection: control frames, then for each stream with output its
 * headers, as much message data as the windows and the outbound backlog limit allow, and its
 * trailers, packed into one pooled buffer and one socket write per flush. Writes across all
 * connections share a per-macrotask budget, so that a push to thousands of clients cycles
 * through the buffer pool instead of allocating a buffer per client.
 * @module
 */

import { Buffer } from "node:buffer";
import type { Socket } from "node:net";
import { encodeHeaders } from "./hpack.ts";
import { BufferPool, Flag, frame, frameHeader, FrameType, rstStream } from "./frames.ts";
import { calm, DEFAULT_WINDOW, H2Error, type H2Limits } from "./limits.ts";
import type { Pending, Stream } from "./stream.ts";

const { HEADERS, DATA } = FrameType;
const { END_STREAM, END_HEADERS } = Flag;

/** The content-type of gRPC. */
export const GRPC = "application/grpc";
/** The response headers of every call that sends messages (the same block each time). */
const RESPONSE_HEADERS = encodeHeaders([
  [":status", "200"],
  ["content-type", GRPC],
  ["grpc-accept-encoding", "identity,gzip"],
]);

/** Output buffers and request messages spread over frames (see {@link BufferPool}). */
export const pool: BufferPool = new BufferPool({
  limit: 64 * 1024 * 1024,
  largest: 8 * 1024 * 1024,
});

/**
 * Output written in the current macrotask, across connections. Past {@link TICK_BUDGET} further
 * flushes wait for the next one: the completion callbacks of the writes made so far (which return
 * their buffers to the pool) run in between, so a push to thousands of clients cycles through the
 * pool instead of allocating a buffer per client.
 */
let tickBytes = 0;
let tickTimer = false;
const TICK_BUDGET = 16 * 1024 * 1024;
const deferred = new Set<Outbound>();

function spend(n: number): void {
  tickBytes += n;
  if (!tickTimer) {
    tickTimer = true;
    setTimeout(nextTick, 0);
  }
}

function nextTick(): void {
  tickTimer = false;
  tickBytes = 0;
  const waiting = [...deferred];
  deferred.clear();
  for (const c of waiting) c.flushNow();
  const settled = tickWaiters;
  tickWaiters = [];
  for (const r of settled) r();
}

/** Callers of {@link writesSettled} waiting for the next {@link nextTick}. */
let tickWaiters: (() => void)[] = [];

/**
 * Resolves once no budget timer is pending and the flushes it deferred have run. A listener's
 * `close()` awaits it, so that a write made as it closed leaves no timer behind (Deno's test
 * sanitizer fails a test that ends with one). Waits for 10 ticks at most: other connections of
 * the process may go on writing.
 */
export async function writesSettled(): Promise<void> {
  for (let i = 0; tickTimer && i < 10; i++) await new Promise<void>((r) => tickWaiters.push(r));
}

/** What the scheduler needs of its connection. */
export interface OutboundHost {
  /** Where frames are written. */
  readonly socket: Socket;
  /** The connection's limits (`maxOutboundBytes`, `maxOutboundControlFrames`). */
  readonly limits: Readonly<H2Limits>;
  /** The connection is finished (nothing but what is queued goes out). */
  readonly dead: boolean;
  /** Headers or data were sent (keepalive forgives the client's ping strikes). */
  sent(): void;
  /** Our side of `s` is written and the client's is over: the stream can be forgotten. */
  retire(s: Stream): void;
  /** The outbound backlog went over `maxOutboundBytes`. */
  backlogged(): void;
  /** The outbound backlog drained below `maxOutboundBytes`. */
  drained(): void;
  /** A stream's data waits for the peer's WINDOW_UPDATE (which only reading brings). */
  awaitingWindow(): void;
}

/** The write plan of one stream in a flush. */
interface Plan {
  s: Stream;
  /** Payload lengths of the DATA frames to send now. */
  frames: number[];
  trailers?: Buffer;
  rst?: Buffer;
}

/** The output scheduler of one connection: its send windows and what waits to be written. */
export class Outbound {
  /** The connection's send window (the peer's receive window). */
  sendWindow = DEFAULT_WINDOW;
  /** The peer's SETTINGS_MAX_FRAME_SIZE. */
  peerMaxFrame = 16384;
  /** Streams with output to send, in order. */
  readonly ready = new Set<Stream>();
  /** Control frames waiting for the next flush. */
  control: Buffer[] = [];
  /** Control frames handed to the socket whose write has not completed. */
  controlInFlight = 0;
  /** Bytes handed to the socket whose write has not completed. */
  outstanding = 0;
  /** DATA frames sent so far (the WINDOW_UPDATE budget grows with them). */
  dataFramesSent = 0;
  #flushQueued = false;
  /** Writes handed to the socket and not completed. */
  #writing = 0;
  /** Run once every write so far completed (see {@link afterFlush}). */
  #waiting: (() => void)[] = [];

  /** The scheduler of `host`'s connection. */
  constructor(readonly host: OutboundHost) {}

  /** Queues a control frame, within the budget of those not yet written (else throws calm). */
  queueControl(f: Buffer): void {
    const max = this.host.limits.maxOutboundControlFrames;
    if (this.control.length + this.controlInFlight >= max) {
      throw calm(`more than ${max} control frames queued (peer not reading)`);
    }
    this.pushControl(f);
  }

  /** Queues a control frame of our own (SETTINGS, GOAWAY, keepalive PING): no budget. */
  pushControl(f: Buffer): void {
    this.control.push(f);
    this.queueFlush();
  }

  /** Marks a stream as having output (messages or trailers) and schedules a flush. */
  schedule(s: Stream): void {
    if (s.closed) return;
    this.ready.add(s);
    this.queueFlush();
  }

  /** Flushes in a microtask (once, however often it is asked). */
  queueFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      this.flushNow();
    });
  }

  /** Flushes now, or in the next macrotask when this one's write budget is spent. */
  flushNow(): void {
    if (tickBytes >= TICK_BUDGET && !this.host.dead) {
      deferred.add(this);
      spend(0);
      return;
    }
    this.flush();
  }

  /** Runs `fn` once everything queued so far was written. */
  afterFlush(fn: () => void): void {
    this.queueFlush();
    queueMicrotask(() => {
      if (this.#writing === 0) fn();
      else this.#waiting.push(fn);
    });
  }

  /** Drops everything not yet written (the connection is gone). */
  clear(): void {
    this.control = [];
    this.ready.clear();
    deferred.delete(this);
  }

  /**
   * Writes control frames, then for each ready stream its headers, as much message data as the
   * windows and the outbound backlog limit allow, and its trailers once its data is out: all in
   * one buffer and one write.
   */
  flush(): void {
    const host = this.host;
    if (host.dead && !host.socket.writable) return;
    // Plan: control frames, then per stream [HEADERS] [DATA...] [trailers].
    const chunks: Uint8Array[] = [...this.control];
    const controlFrames = chunks.length;
    this.control = [];
    let size = 0;
    for (const c of chunks) size += c.length;
    const dataPlan: Plan[] = [];
    /** Stream data we may still hand to the socket in this flush. */
    let room = host.limits.maxOutboundBytes - this.outstanding - size;
    let sent = false;
    let awaitingWindow = false;
    for (const s of this.ready) {
      if (room <= 0) break; // the rest stays ready until the backlog drains
      this.ready.delete(s);
      if (s.closed) continue;
      if (!s.headersSent && (s.queue.length || s.trailers)) {
        s.headersSent = true;
        sent = true;
        const h = s.queue.length
          ? RESPONSE_HEADERS
          : encodeHeaders([[":status", "200"], ["content-type", GRPC], ...s.trailers!]);
        const trailersOnly = !s.queue.length;
        const f = frame(HEADERS, END_HEADERS | (trailersOnly ? END_STREAM : 0), s.id, h);
        chunks.push(f);
        size += f.length;
        room -= f.length;
        if (trailersOnly) {
          s.trailers = undefined;
          const plan: Plan = { s, frames: [] };
          if (!s.remoteEnded) plan.rst = rstStream(s.id, H2Error.NO_ERROR);
          if (plan.rst) size += plan.rst.length;
          dataPlan.push(plan);
          continue;
        }
      }
      const plan: Plan = { s, frames: [] };
      // Bytes of queued messages we may send now.
      let budget = Math.min(this.sendWindow, s.sendWindow, room);
      let pendingLeft = 0;
      for (const q of s.queue) pendingLeft += q.left;
      while (budget > 0 && pendingLeft > 0) {
        const len = Math.min(budget, this.peerMaxFrame, pendingLeft);
        plan.frames.push(len);
        size += 9 + len;
        room -= 9 + len;
        budget -= len;
        pendingLeft -= len;
        this.sendWindow -= len;
        s.sendWindow -= len;
      }
      if (pendingLeft > 0) {
        if (this.sendWindow <= 0 || s.sendWindow <= 0) awaitingWindow = true;
        else if (room <= 0) this.ready.add(s); // cut by the backlog limit, not by flow control
      }
      if (pendingLeft === 0 && s.trailers) {
        plan.trailers = frame(
          HEADERS,
          END_HEADERS | END_STREAM,
          s.id,
          encodeHeaders(s.trailers),
        );
        size += plan.trailers.length;
        s.trailers = undefined;
        if (!s.remoteEnded) {
          plan.rst = rstStream(s.id, H2Error.NO_ERROR);
          size += plan.rst.length;
        }
      }
      if (plan.frames.length) sent = true;
      this.dataFramesSent += plan.frames.length;
      if (plan.frames.length || plan.trailers) dataPlan.push(plan);
    }
    if (sent) host.sent();
    if (awaitingWindow) host.awaitingWindow();
    if (size === 0) return;
    const out = pool.take(size);
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.length;
    }
    const completed: Pending[] = [];
    const retire: Stream[] = [];
    for (const plan of dataPlan) {
      at = this.#copy(plan, out, at, completed);
      const s = plan.s;
      if (plan.trailers || plan.rst || (s.localEnded && !s.trailers && !s.queue.length)) {
        retire.push(s);
      }
      // More data waits for a WINDOW_UPDATE; nothing to do until then.
    }
    this.#write(out, at, controlFrames, completed);
    for (const s of retire) {
      // Our side is finished: the stream is gone once the client's side is too (or was reset).
      if (!s.queue.length) host.retire(s);
    }
  }

  /** Copies one stream's planned DATA frames, trailers and reset into `out` at `at`. */
  #copy(plan: Plan, out: Buffer, at: number, completed: Pending[]): number {
    const s = plan.s;
    for (const len of plan.frames) {
      frameHeader(out, at, len, DATA, 0, s.id);
      at += 9;
      let need = len;
      while (need > 0) {
        const q = s.queue[0];
        const src = q.part < 0 ? q.prefix : q.parts[q.part];
        const n = Math.min(need, src.length - q.offset);
        out.set(
          n === src.length && q.offset === 0 ? src : src.subarray(q.offset, q.offset + n),
          at,
        );
        at += n;
        need -= n;
        q.left -= n;
        q.offset += n;
        if (q.offset === src.length) {
          q.part++;
          q.offset = 0;
          while (q.part < q.parts.length && q.parts[q.part].length === 0) q.part++;
        }
        if (q.left === 0) completed.push(s.queue.shift()!);
      }
    }
    if (plan.trailers) {
      out.set(plan.trailers, at);
      at += plan.trailers.length;
    }
    if (plan.rst) {
      out.set(plan.rst, at);
      at += plan.rst.length;
    }
    return at;
  }

  /** Hands the first `at` bytes of `out` to the socket and settles `completed` when written. */
  #write(out: Buffer, at: number, controlFrames: number, completed: Pending[]): void {
    const host = this.host;
    this.#writing++;
    this.outstanding += at;
    this.controlInFlight += controlFrames;
    spend(at);
    host.socket.write(out.subarray(0, at), (err?: Error | null) => {
      this.#writing--;
      this.outstanding -= at;
      this.controlInFlight -= controlFrames;
      pool.give(out);
      if (err) {
        for (const q of completed) q.reject(err);
      } else for (const q of completed) q.resolve();
      if (this.#writing === 0) {
        const ws = this.#waiting;
        this.#waiting = [];
        for (const fn of ws) fn();
      }
      if (this.outstanding < host.limits.maxOutboundBytes && !host.dead) {
        host.drained();
        if (this.ready.size) this.queueFlush();
      }
    });
    if (this.outstanding >= host.limits.maxOutboundBytes && !host.dead) host.backlogged();
  }
}

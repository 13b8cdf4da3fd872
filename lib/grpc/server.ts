/**
 * A small HTTP/2 server for gRPC (RFC 7540 server side, the gRPC-over-HTTP/2 protocol), written
 * for the ADS listener. Deno's `node:http2` writes every HTTP/2 frame with its own `socket.write`
 * and allocates a fresh buffer per frame and per message; pushing ~0.4 MB to 2000 proxies made it
 * most of the server's CPU. Here each flush packs every frame that flow control allows into one
 * pooled buffer and one socket write, and a message is given as parts (a per-client head and the
 * shared, pre-encoded resources) that are copied once, straight into that buffer.
 *
 * Scope: server side only; no server push; requests may be `identity` or `gzip` (any other
 * `grpc-encoding` is answered UNIMPLEMENTED, as grpc-js does), responses are never compressed;
 * the HPACK encoder never indexes. Flow control is honoured both ways. Runs over any `node:net`
 * socket, so plaintext and TLS (`node:tls`) share one implementation.
 *
 * Hardening (see docs/ads.md "Transport"): every per-connection resource is bounded by
 * {@link H2Limits} (streams, control frames, empty frames, resets, WINDOW_UPDATE and PRIORITY
 * frames, header blocks, buffered request data, outbound backlog); abuse ends the connection with
 * GOAWAY ENHANCE_YOUR_CALM and the socket is closed after any connection-error GOAWAY. Keepalive
 * is enforced like grpc-go's `EnforcementPolicy`; idle peers are pinged; connections may have a
 * maximum age; the listener caps connections and recovers from EMFILE.
 * @module
 */

import { Buffer } from "node:buffer";
import type { Socket } from "node:net";
import { encodeHeaders, type HeaderList, HpackDecoder, HpackError } from "./hpack.ts";
import { FailureThrottle } from "./throttle.ts";
import { BufferPool, Flag, frame, frameHeader, FrameType, PREFACE } from "./frames.ts";
import { GrpcMessageReader, type MessageError } from "./messages.ts";
import zlib from "node:zlib";

// ---- protocol constants (RFC 7540 §6, §7, §11) -----------------------------------------------

const { DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY } = FrameType;
const { WINDOW_UPDATE, CONTINUATION } = FrameType;
const { END_STREAM, ACK, END_HEADERS, PADDED } = Flag;
const PRIORITY_FLAG = Flag.PRIORITY;

/** HTTP/2 error codes (RFC 7540 §7). */
export const H2Error = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  STREAM_CLOSED: 5,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  ENHANCE_YOUR_CALM: 11,
} as const;

const SETTINGS_HEADER_TABLE_SIZE = 1, SETTINGS_ENABLE_PUSH = 2, SETTINGS_INITIAL_WINDOW_SIZE = 4;
const SETTINGS_MAX_CONCURRENT_STREAMS = 3;
const SETTINGS_MAX_FRAME_SIZE = 5, SETTINGS_MAX_HEADER_LIST_SIZE = 6;
const DEFAULT_WINDOW = 65535;
const MAX_WINDOW = 0x7fffffff;
/** The largest frame payload we accept (our SETTINGS_MAX_FRAME_SIZE: the protocol default). */
const OUR_MAX_FRAME = 16384;
/** Our per-stream receive window, and the connection's (raised by a WINDOW_UPDATE at start). */
const RECV_WINDOW = 4 * 1024 * 1024;
const CONN_RECV_WINDOW = 16 * 1024 * 1024;
const MAX_HEADER_LIST = 65536;

/**
 * Per-connection limits of the transport. Defaults ({@link DEFAULT_LIMITS}) follow Envoy's
 * `Http2ProtocolOptions`, grpc-go's keepalive defaults as Istio sets them, and nghttp2; every
 * budget that is exceeded ends the connection with GOAWAY ENHANCE_YOUR_CALM unless said otherwise.
 */
export interface H2Limits {
  /** SETTINGS_MAX_CONCURRENT_STREAMS, advertised and enforced (REFUSED_STREAM beyond it). */
  maxConcurrentStreams: number;
  /** Control frames (PING/SETTINGS acks, RST_STREAM, WINDOW_UPDATE) queued but not yet written. */
  maxOutboundControlFrames: number;
  /** Consecutive DATA/HEADERS/CONTINUATION frames with an empty payload and no END_STREAM. */
  maxConsecutiveEmptyFrames: number;
  /** WINDOW_UPDATEs allowed: 5 + 2 × (streams opened + this × DATA frames sent) (Envoy). */
  maxWindowUpdatesPerDataFrameSent: number;
  /** PRIORITY frames allowed: 5 + 2 × streams opened × (1 + this) (Envoy). */
  maxPriorityFramesPerStream: number;
  /**
   * Rapid reset (CVE-2023-44487): once this many streams were opened, the connection is closed
   * when at least half of them were reset by the client (or refused by us) within a second of
   * opening, before their response ended (Envoy's premature-reset protection).
   */
  prematureResetMinStreams: number;
  /** Frames of one header block (HEADERS + CONTINUATIONs), besides its byte bound. */
  maxHeaderBlockFrames: number;
  /** Bytes of partly received request messages held per connection (RESOURCE_EXHAUSTED beyond). */
  maxBufferedRequestBytes: number;
  /**
   * Bytes written to the socket but not yet taken by the kernel: past it we stop reading from the
   * socket and sending stream data until it drains.
   */
  maxOutboundBytes: number;
  /** A connection whose outbound backlog stays over the limit this long is closed (ms). */
  sendTimeoutMs: number;
  /** The client preface and its first SETTINGS must arrive within this (ms). */
  prefaceTimeoutMs: number;
  /**
   * Keepalive enforcement (grpc-go `EnforcementPolicy.MinTime`, with PermitWithoutStream): a
   * client PING sooner than this after the previous one is a strike; a third strike is answered
   * GOAWAY ENHANCE_YOUR_CALM `too_many_pings`. Strikes are forgiven when we send headers or data.
   */
  keepaliveMinTimeMs: number;
  /** We PING a peer that sent nothing for this long (0 = never) ... */
  keepaliveIntervalMs: number;
  /** ... and close the connection when the ack does not come within this (ms). */
  keepaliveTimeoutMs: number;
  /** After this age (± 10 % jitter) a connection gets a graceful GOAWAY (0 = no limit). */
  maxConnectionAgeMs: number;
  /** Calls still open this long after the max-age GOAWAY end with UNAVAILABLE (ms). */
  maxConnectionAgeGraceMs: number;
  /** The largest request message, after gzip decompression too (RESOURCE_EXHAUSTED beyond). */
  maxReceiveMessageBytes: number;
}

/** The defaults of {@link H2Limits} (documented in docs/ads.md "Transport"). */
export const DEFAULT_LIMITS: Readonly<H2Limits> = Object.freeze({
  maxConcurrentStreams: 100,
  maxOutboundControlFrames: 1000,
  maxConsecutiveEmptyFrames: 1,
  maxWindowUpdatesPerDataFrameSent: 10,
  maxPriorityFramesPerStream: 100,
  prematureResetMinStreams: 100,
  maxHeaderBlockFrames: 32,
  maxBufferedRequestBytes: 16 * 1024 * 1024,
  maxOutboundBytes: 16 * 1024 * 1024,
  sendTimeoutMs: 30_000,
  prefaceTimeoutMs: 10_000,
  keepaliveMinTimeMs: 15_000,
  keepaliveIntervalMs: 30_000,
  keepaliveTimeoutMs: 10_000,
  maxConnectionAgeMs: 0,
  maxConnectionAgeGraceMs: 10_000,
  maxReceiveMessageBytes: 4 * 1024 * 1024,
});

/** gRPC status codes used by the transport. */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

// ---- output buffers ---------------------------------------------------------------------------

const GRPC = "application/grpc";
/** The response headers of every call that sends messages (the same block each time). */
const RESPONSE_HEADERS = encodeHeaders([
  [":status", "200"],
  ["content-type", GRPC],
  ["grpc-accept-encoding", "identity,gzip"],
]);

/** Output buffers and request messages spread over frames (see {@link BufferPool}). */
const pool = new BufferPool({ limit: 64 * 1024 * 1024, largest: 8 * 1024 * 1024 });
const take = (n: number) => pool.take(n);
const give = (b: Buffer) => pool.give(b);

/**
 * Output written in the current macrotask, across connections. Past {@link TICK_BUDGET} further
 * flushes wait for the next one: the completion callbacks of the writes made so far (which return
 * their buffers to the pool) run in between, so a push to thousands of clients cycles through the
 * pool instead of allocating a buffer per client.
 */
let tickBytes = 0;
let tickTimer = false;
const TICK_BUDGET = 16 * 1024 * 1024;
const deferred = new Set<Connection>();

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
}

/** See Connection#head: one frame header and payload at most. */
const scratch = Buffer.allocUnsafe(9 + OUR_MAX_FRAME);

// ---- calls ------------------------------------------------------------------------------------

/** One gRPC call (one HTTP/2 stream) as seen by a handler. */
export interface GrpcCall {
  /** `/package.Service/Method`. */
  readonly path: string;
  /** Request headers (pseudo-headers included), as received. */
  readonly headers: HeaderList;
  /** The peer, `ipv4:127.0.0.1:53412` / `ipv6:[::1]:53412`, like grpc-js's `getPeer()`. */
  readonly peer: string;
  /** The connection's socket (a `TLSSocket` on TLS listeners: peer certificate). */
  readonly socket: Socket;
  /**
   * Called with each request message. The bytes are valid only during the call (they may sit in
   * a reused buffer): copy what you keep. Set by the handler.
   */
  onMessage: (message: Buffer) => void;
  /** The client half-closed its side (no more messages). */
  onEnd: () => void;
  /** The call is gone: reset by the client, or the connection closed. `why` says which. */
  onCancel: (why: string) => void;
  /**
   * Sends one message given as parts (concatenated on the wire, never joined in memory).
   * Resolves when its last byte was written to the socket; rejects when the call ends first.
   */
  send(parts: readonly Uint8Array[]): Promise<void>;
  /** Ends the call with trailers (`grpc-status`, `grpc-message`). Idempotent. */
  end(status: number, message?: string): void;
}

/** A call handler: sets the call's callbacks (synchronously) and answers through it. */
export type CallHandler = (call: GrpcCall) => void;

interface Pending {
  parts: readonly Uint8Array[];
  /** Bytes of this message (5-byte gRPC prefix included) still to put into DATA frames. */
  left: number;
  /** Position: index of the part and offset in it (-1 = the gRPC prefix not sent yet). */
  part: number;
  offset: number;
  prefix: Buffer;
  resolve: () => void;
  reject: (e: Error) => void;
}

class Stream implements GrpcCall {
  onMessage: (message: Buffer) => void = () => {};
  onEnd: () => void = () => {};
  onCancel: (why: string) => void = () => {};
  path = "";
  headers: HeaderList = [];
  sendWindow: number;
  recvConsumed = 0;
  /** Splits the request into messages (pooled buffers, counted per connection). */
  reader: GrpcMessageReader<Buffer>;
  /** The request is gzip-compressed (`grpc-encoding: gzip`). */
  gzip = false;
  /** When the stream was opened (rapid-reset detection). */
  readonly openedAt = performance.now();
  /** The request's content-length, when it has one, and the DATA bytes received so far. */
  contentLength = -1;
  received = 0;
  headersSent = false;
  /** Our side is done (trailers queued or sent). */
  localEnded = false;
  remoteEnded = false;
  closed = false;
  /** The request was refused: later request bytes are dropped. */
  discard = false;
  queue: Pending[] = [];
  trailers: HeaderList | undefined;
  constructor(readonly conn: Connection, readonly id: number) {
    this.sendWindow = conn.peerInitialWindow;
    this.reader = new GrpcMessageReader<Buffer>({
      maxLength: conn.limits.maxReceiveMessageBytes,
      take: (n) => conn.takeRequestBuffer(n),
      give: (b) => conn.giveRequestBuffer(b),
      compressed: true,
    });
  }
  get peer() {
    return this.conn.peer;
  }
  get socket() {
    return this.conn.socket;
  }
  send(parts: readonly Uint8Array[]): Promise<void> {
    if (this.localEnded || this.closed) return Promise.reject(new Error("stream ended"));
    let len = 0;
    for (const p of parts) len += p.length;
    const prefix = Buffer.allocUnsafe(5);
    prefix[0] = 0;
    prefix.writeUInt32BE(len, 1);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ parts, left: len + 5, part: -1, offset: 0, prefix, resolve, reject });
      this.conn.schedule(this);
    });
  }
  end(status: number, message = ""): void {
    if (this.localEnded || this.closed) return;
    this.localEnded = true;
    const t: HeaderList = [["grpc-status", String(status)]];
    if (message) t.push(["grpc-message", percentEncode(message)]);
    this.trailers = t;
    this.conn.schedule(this);
  }
}

/** Percent-encodes a grpc-message (gRPC over HTTP/2: bytes outside 0x20-0x7E and '%'). */
export function percentEncode(s: string): string {
  let out = "";
  for (const b of new TextEncoder().encode(s)) {
    out += b >= 0x20 && b <= 0x7e && b !== 0x25
      ? String.fromCharCode(b)
      : "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

class ConnectionError extends Error {
  /** `debug`: GOAWAY debug data when it is not the message (`too_many_pings`). */
  constructor(readonly code: number, message: string, readonly debug = message) {
    super(message);
  }
}

/** A request message would take the connection over its buffered-request budget. */
class BufferBudgetError extends Error {}

/** Options of a connection / server. */
export interface H2Options {
  /** Handlers by path (`/pkg.Service/Method`). */
  handlers: ReadonlyMap<string, CallHandler>;
  /** Called with one line when a connection fails (protocol errors, socket errors). */
  onError?: (message: string) => void;
  /** Overrides of {@link DEFAULT_LIMITS}. */
  limits?: Partial<H2Limits>;
}

/** The server side of one HTTP/2 connection. */
export class Connection {
  readonly peer: string;
  readonly limits: Readonly<H2Limits>;
  peerInitialWindow = DEFAULT_WINDOW;
  #peerMaxFrame = 16384;
  #sendWindow = DEFAULT_WINDOW;
  #recvConsumed = 0;
  #streams = new Map<number, Stream>();
  #lastStreamId = 0;
  #in: Buffer[] = [];
  #inlen = 0;
  #prefaceSeen = false;
  #settingsSeen = false;
  #hpack = new HpackDecoder({ maxHeaderListSize: MAX_HEADER_LIST });
  /** A header block being received (HEADERS without END_HEADERS, then CONTINUATIONs). */
  #block:
    | { id: number; flags: number; parts: Uint8Array[]; size: number; frames: number }
    | undefined;
  /** Streams with output to send, in order. */
  #ready = new Set<Stream>();
  #flushQueued = false;
  #control: Buffer[] = [];
  #goingAway = false;
  #dead = false;
  #failed = false;
  // Budgets (see H2Limits).
  #streamsOpened = 0;
  #prematureResets = 0;
  #emptyFrames = 0;
  #windowUpdates = 0;
  #priorityFrames = 0;
  #dataFramesSent = 0;
  /** Control frames handed to the socket whose write has not completed. */
  #controlInFlight = 0;
  /** Bytes handed to the socket whose write has not completed. */
  #outstanding = 0;
  /** Bytes of pooled buffers holding partly received request messages. */
  #buffered = 0;
  #readPaused = false;
  #backlogTimer: ReturnType<typeof setTimeout> | undefined;
  #prefaceTimer: ReturnType<typeof setTimeout> | undefined;
  #keepaliveTimer: ReturnType<typeof setTimeout> | undefined;
  #pingTimeout: ReturnType<typeof setTimeout> | undefined;
  #ageTimer: ReturnType<typeof setTimeout> | undefined;
  #closeTimer: ReturnType<typeof setTimeout> | undefined;
  /** A frame arrived since the keepalive timer last fired. */
  #heard = true;
  #lastClientPing = -Infinity;
  #pingStrikes = 0;

  constructor(readonly socket: Socket, readonly opts: H2Options) {
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    const fam = socket.remoteFamily === "IPv6" ? "ipv6" : "ipv4";
    const addr = fam === "ipv6" ? `[${socket.remoteAddress}]` : socket.remoteAddress;
    this.peer = `${fam}:${addr}:${socket.remotePort}`;
    socket.setNoDelay?.(true);
    const onData = (chunk: Buffer) => this.#receive(chunk);
    const onError = (e: Error) => this.#gone(`connection error: ${e.message}`);
    const onEnd = () => this.#gone("client closed the connection");
    const onClose = () => {
      clearTimeout(this.#closeTimer);
      this.#gone("connection closed");
      // Deno's node:net keeps some closed sockets reachable: let go of this connection (an
      // error listener stays, so a late error cannot be unhandled).
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("close", onClose);
      socket.off("error", onError);
      socket.on("error", ignore);
      this.#hpack = CLOSED_HPACK;
    };
    socket.on("data", onData);
    socket.on("error", onError);
    socket.on("close", onClose);
    socket.on("end", onEnd);
    // Our SETTINGS, then a connection WINDOW_UPDATE (the connection window is not a setting).
    const s = Buffer.alloc(24);
    s.writeUInt16BE(SETTINGS_INITIAL_WINDOW_SIZE, 0);
    s.writeUInt32BE(RECV_WINDOW, 2);
    s.writeUInt16BE(SETTINGS_MAX_HEADER_LIST_SIZE, 6);
    s.writeUInt32BE(MAX_HEADER_LIST, 8);
    s.writeUInt16BE(SETTINGS_ENABLE_PUSH, 12);
    s.writeUInt32BE(0, 14);
    s.writeUInt16BE(SETTINGS_MAX_CONCURRENT_STREAMS, 18);
    s.writeUInt32BE(this.limits.maxConcurrentStreams, 20);
    this.#control.push(frame(SETTINGS, 0, 0, s));
    this.#control.push(windowUpdate(0, CONN_RECV_WINDOW - DEFAULT_WINDOW));
    this.#queueFlush();
    const l = this.limits;
    if (l.prefaceTimeoutMs > 0) {
      this.#prefaceTimer = setTimeout(() => {
        this.opts.onError?.(
          `HTTP/2 connection from ${this.peer} closed: no client preface and SETTINGS within ` +
            `${l.prefaceTimeoutMs} ms`,
        );
        this.#markFailed();
        this.#destroy();
      }, l.prefaceTimeoutMs);
    }
    if (l.keepaliveIntervalMs > 0) this.#armKeepalive();
    if (l.maxConnectionAgeMs > 0) {
      const age = l.maxConnectionAgeMs * (0.9 + Math.random() * 0.2);
      this.#ageTimer = setTimeout(() => this.#maxAge(), age);
    }
  }

  /**
   * True once the connection ended with a connection error (GOAWAY with an error code) or without
   * a client preface in time, or a request message would have gone over its
   * `maxBufferedRequestBytes` (that stream ends `RESOURCE_EXHAUSTED`, the connection stays): what
   * a hostile or broken client gets, never a well-behaved one.
   */
  get failed(): boolean {
    return this.#failed;
  }

  /** Called once when the connection fails (see {@link failed}), before its socket closes. */
  onFailed: (() => void) | undefined = undefined;

  #markFailed(): void {
    if (this.#failed) return;
    this.#failed = true;
    this.onFailed?.();
  }

  /** Open streams. */
  get streams(): number {
    return this.#streams.size;
  }

  /** Bytes written to the socket and not yet taken by it (the outbound backlog). */
  get outstanding(): number {
    return this.#outstanding;
  }

  /**
   * Ends every call with `status` and sends GOAWAY; the socket is closed once written (or after
   * `graceMs`).
   */
  shutdown(status: number, message: string, graceMs = 2000): Promise<void> {
    for (const s of this.#streams.values()) s.end(status, message);
    this.#goaway(H2Error.NO_ERROR, "");
    return new Promise<void>((resolve) => {
      if (this.#dead || this.socket.destroyed) return resolve();
      const t = setTimeout(() => {
        this.socket.destroy();
      }, graceMs);
      this.socket.once("close", () => {
        clearTimeout(t);
        resolve();
      });
      this.#afterFlush(() => this.socket.end());
    });
  }

  /** A buffer for a request message spread over frames, within the connection's budget. */
  takeRequestBuffer(n: number): Buffer {
    if (this.#buffered + n > this.limits.maxBufferedRequestBytes) {
      this.#markFailed(); // abusive too, though only the stream ends
      throw new BufferBudgetError(
        `Request data buffered on this connection would exceed ` +
          `${this.limits.maxBufferedRequestBytes} bytes`,
      );
    }
    const b = take(n);
    this.#buffered += b.length;
    return b;
  }

  /** Gives back a buffer from {@link takeRequestBuffer}. */
  giveRequestBuffer(b: Buffer): void {
    this.#buffered -= b.length;
    give(b);
  }

  #armKeepalive(): void {
    this.#keepaliveTimer = setTimeout(() => {
      if (this.#dead) return;
      if (this.#heard || this.#pingTimeout) {
        this.#heard = false;
        return this.#armKeepalive();
      }
      // Nothing heard for a whole interval: is the peer still there?
      this.#control.push(frame(PING, 0, 0, KEEPALIVE_PING));
      this.#queueFlush();
      this.#pingTimeout = setTimeout(() => {
        this.opts.onError?.(
          `HTTP/2 connection from ${this.peer} closed: keepalive PING not acknowledged within ` +
            `${this.limits.keepaliveTimeoutMs} ms`,
        );
        this.#destroy();
      }, this.limits.keepaliveTimeoutMs);
      this.#armKeepalive();
    }, this.limits.keepaliveIntervalMs);
  }

  /** Max connection age: a graceful GOAWAY, then calls still open end after the grace period. */
  #maxAge(): void {
    this.#ageTimer = undefined;
    if (this.#dead) return;
    this.#goaway(H2Error.NO_ERROR, "max_age");
    this.#ageTimer = setTimeout(() => {
      this.#ageTimer = undefined;
      void this.shutdown(GrpcStatus.UNAVAILABLE, "Connection reached its maximum age");
    }, this.limits.maxConnectionAgeGraceMs);
  }

  #receive(chunk: Buffer): void {
    if (this.#dead) return;
    this.#heard = true;
    this.#in.push(chunk);
    this.#inlen += chunk.length;
    try {
      this.#parse();
    } catch (e) {
      const code = e instanceof ConnectionError
        ? e.code
        : e instanceof HpackError
        ? H2Error.COMPRESSION_ERROR
        : H2Error.INTERNAL_ERROR;
      this.#fatal(code, (e as Error).message, e instanceof ConnectionError ? e.debug : undefined);
    }
  }

  /**
   * A connection error: GOAWAY, no more reading, every call cancelled, and the socket closed once
   * the GOAWAY is written (at most a second later).
   */
  #fatal(code: number, message: string, debug = message): void {
    if (this.#dead) return;
    this.opts.onError?.(`HTTP/2 connection from ${this.peer} failed: ${message}`);
    this.#goaway(code, debug);
    this.#dead = true;
    this.#markFailed();
    this.#in = [];
    this.#inlen = 0;
    this.socket.pause();
    this.#cancelAll("connection failed");
    this.#ready.clear();
    this.#flush();
    this.#closeTimer = setTimeout(() => this.socket.destroy(), 1000);
    this.#afterFlush(() => this.socket.end());
  }

  /** Closes the socket at once (dead peer, timeouts). */
  #destroy(): void {
    this.#dead = true;
    this.socket.destroy();
    this.#gone("connection closed");
  }

  /**
   * The first `n` buffered bytes (n ≤ #inlen, at most one frame) as one buffer: the first chunk
   * when they are all in it, else a copy in a scratch buffer shared by all connections (valid
   * until the next call; frames are handled synchronously).
   */
  #head(n: number): Buffer {
    const first = this.#in[0];
    if (first.length >= n) return first;
    let at = 0;
    for (const c of this.#in) {
      const k = Math.min(c.length, n - at);
      scratch.set(k === c.length ? c : c.subarray(0, k), at);
      at += k;
      if (at === n) break;
    }
    return scratch.subarray(0, n);
  }

  #consume(n: number): void {
    this.#inlen -= n;
    while (n > 0) {
      const b = this.#in[0];
      if (b.length <= n) {
        this.#in.shift();
        n -= b.length;
      } else {
        this.#in[0] = b.subarray(n);
        n = 0;
      }
    }
  }

  #parse(): void {
    if (!this.#prefaceSeen) {
      if (this.#inlen < PREFACE.length) {
        const have = this.#head(this.#inlen);
        if (!PREFACE.subarray(0, have.length).equals(have)) {
          throw new ConnectionError(H2Error.PROTOCOL_ERROR, "not an HTTP/2 connection preface");
        }
        return;
      }
      if (!this.#head(PREFACE.length).subarray(0, PREFACE.length).equals(PREFACE)) {
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, "not an HTTP/2 connection preface");
      }
      this.#consume(PREFACE.length);
      this.#prefaceSeen = true;
    }
    while (this.#inlen >= 9 && !this.#dead && !this.#readPaused) {
      const h = this.#head(9);
      const len = (h[0] << 16) | (h[1] << 8) | h[2];
      const type = h[3], flags = h[4];
      const id = h.readUInt32BE(5) & MAX_WINDOW;
      if (len > OUR_MAX_FRAME) {
        throw new ConnectionError(
          H2Error.FRAME_SIZE_ERROR,
          `frame of ${len} bytes exceeds SETTINGS_MAX_FRAME_SIZE ${OUR_MAX_FRAME}`,
        );
      }
      if (this.#inlen < 9 + len) return;
      const b = this.#head(9 + len);
      const payload = b.subarray(9, 9 + len);
      this.#consume(9 + len);
      if (!this.#settingsSeen && type !== SETTINGS) {
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, "first frame is not SETTINGS");
      }
      if (this.#block && type !== CONTINUATION) {
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, "expected CONTINUATION");
      }
      if (type === DATA || type === HEADERS || type === CONTINUATION) {
        // Envoy's max_consecutive_inbound_frames_with_empty_payload.
        if (len === 0 && !(flags & END_STREAM)) {
          if (++this.#emptyFrames > this.limits.maxConsecutiveEmptyFrames) {
            throw calm(`${this.#emptyFrames} consecutive frames with an empty payload`);
          }
        } else this.#emptyFrames = 0;
      }
      this.#frame(type, flags, id, payload);
    }
  }

  #frame(type: number, flags: number, id: number, p: Buffer): void {
    switch (type) {
      case DATA:
        return this.#data(flags, id, p);
      case HEADERS:
        return this.#headers(flags, id, p);
      case CONTINUATION: {
        const b = this.#block;
        if (!b || b.id !== id) {
          throw new ConnectionError(H2Error.PROTOCOL_ERROR, "unexpected CONTINUATION");
        }
        b.parts.push(Buffer.from(p));
        b.size += p.length;
        if (b.size > MAX_HEADER_LIST * 2) {
          throw new ConnectionError(H2Error.PROTOCOL_ERROR, "header block too large");
        }
        if (++b.frames > this.limits.maxHeaderBlockFrames) {
          throw calm(`header block of more than ${this.limits.maxHeaderBlockFrames} frames`);
        }
        if (flags & END_HEADERS) {
          this.#block = undefined;
          this.#headerBlock(b.id, b.flags, Buffer.concat(b.parts, b.size));
        }
        return;
      }
      case PRIORITY:
        if (id === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "PRIORITY on stream 0");
        if (p.length !== 5) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "PRIORITY size");
        if (
          ++this.#priorityFrames >
            5 + 2 * this.#streamsOpened * (1 + this.limits.maxPriorityFramesPerStream)
        ) {
          throw calm(`too many PRIORITY frames (${this.#priorityFrames})`);
        }
        if ((p.readUInt32BE(0) & MAX_WINDOW) === id) {
          // §5.3.1: a stream cannot depend on itself (a stream error).
          this.#queueControl(rstStream(id, H2Error.PROTOCOL_ERROR));
          const s = this.#streams.get(id);
          if (s) this.#close(s, "stream depends on itself");
        }
        return;
      case RST_STREAM: {
        if (id === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "RST_STREAM on stream 0");
        if (p.length !== 4) {
          throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "RST_STREAM size");
        }
        if (id > this.#lastStreamId) {
          throw new ConnectionError(H2Error.PROTOCOL_ERROR, "RST_STREAM on an idle stream");
        }
        const s = this.#streams.get(id);
        if (s) {
          if (!s.localEnded && performance.now() - s.openedAt < 1000) this.#premature();
          this.#close(s, `client reset the stream (code ${p.readUInt32BE(0)})`);
        }
        return;
      }
      case SETTINGS:
        return this.#settings(flags, id, p);
      case PUSH_PROMISE:
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, "PUSH_PROMISE from a client");
      case PING:
        if (id !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "PING on a stream");
        if (p.length !== 8) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "PING size");
        if (flags & ACK) {
          clearTimeout(this.#pingTimeout);
          this.#pingTimeout = undefined;
          return;
        }
        this.#ping();
        this.#queueControl(frame(PING, ACK, 0, p));
        return;
      case GOAWAY:
        if (id !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "GOAWAY on a stream");
        this.#goingAway = true;
        return;
      case WINDOW_UPDATE:
        return this.#windowUpdate(id, p);
      default:
        return; // unknown frame types are ignored (§4.1)
    }
  }

  /** Keepalive enforcement (grpc-go's EnforcementPolicy with PermitWithoutStream). */
  #ping(): void {
    const now = performance.now();
    if (now - this.#lastClientPing < this.limits.keepaliveMinTimeMs) {
      if (++this.#pingStrikes > MAX_PING_STRIKES) {
        throw new ConnectionError(
          H2Error.ENHANCE_YOUR_CALM,
          `too many pings (more often than every ${this.limits.keepaliveMinTimeMs} ms)`,
          "too_many_pings",
        );
      }
    }
    this.#lastClientPing = now;
  }

  /** A stream reset by the client (or refused by us) early: rapid reset when it is the rule. */
  #premature(): void {
    this.#prematureResets++;
    if (
      this.#streamsOpened >= this.limits.prematureResetMinStreams &&
      this.#prematureResets * 2 >= this.#streamsOpened
    ) {
      throw calm(
        `rapid reset: ${this.#prematureResets} of ${this.#streamsOpened} streams reset early`,
      );
    }
  }

  /** Queues a control frame, within the budget of those not yet written. */
  #queueControl(f: Buffer): void {
    if (this.#control.length + this.#controlInFlight >= this.limits.maxOutboundControlFrames) {
      throw calm(
        `more than ${this.limits.maxOutboundControlFrames} control frames queued (peer not reading)`,
      );
    }
    this.#control.push(f);
    this.#queueFlush();
  }

  #settings(flags: number, id: number, p: Buffer): void {
    if (id !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "SETTINGS on a stream");
    if (flags & ACK) {
      if (p.length) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "SETTINGS ACK with data");
      return;
    }
    if (p.length % 6) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "SETTINGS size");
    if (!this.#settingsSeen) {
      this.#settingsSeen = true;
      clearTimeout(this.#prefaceTimer);
      this.#prefaceTimer = undefined;
    }
    for (let i = 0; i < p.length; i += 6) {
      const key = p.readUInt16BE(i), v = p.readUInt32BE(i + 2);
      if (key === SETTINGS_INITIAL_WINDOW_SIZE) {
        if (v > MAX_WINDOW) {
          throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, "SETTINGS_INITIAL_WINDOW_SIZE");
        }
        const delta = v - this.peerInitialWindow;
        this.peerInitialWindow = v;
        for (const s of this.#streams.values()) {
          s.sendWindow += delta;
          if (s.sendWindow > MAX_WINDOW) {
            throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, "stream window overflow");
          }
          if (delta > 0 && s.queue.length) this.#ready.add(s);
        }
      } else if (key === SETTINGS_MAX_FRAME_SIZE) {
        if (v < 16384 || v > 16777215) {
          throw new ConnectionError(H2Error.PROTOCOL_ERROR, `SETTINGS_MAX_FRAME_SIZE ${v}`);
        }
        this.#peerMaxFrame = v;
      } else if (key === SETTINGS_ENABLE_PUSH && v > 1) {
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, `SETTINGS_ENABLE_PUSH ${v}`);
      } else if (key === SETTINGS_HEADER_TABLE_SIZE) {
        // Our encoder never uses the dynamic table, whatever its size.
      }
    }
    this.#queueControl(frame(SETTINGS, ACK, 0));
  }

  #windowUpdate(id: number, p: Buffer): void {
    if (p.length !== 4) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "WINDOW_UPDATE size");
    if (
      ++this.#windowUpdates >
        5 + 2 * (this.#streamsOpened +
              this.limits.maxWindowUpdatesPerDataFrameSent * this.#dataFramesSent)
    ) {
      throw calm(`too many WINDOW_UPDATE frames (${this.#windowUpdates})`);
    }
    const inc = p.readUInt32BE(0) & MAX_WINDOW;
    if (id === 0) {
      if (inc === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
      this.#sendWindow += inc;
      if (this.#sendWindow > MAX_WINDOW) {
        throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, "connection window overflow");
      }
      for (const s of this.#streams.values()) if (s.queue.length) this.#ready.add(s);
      this.#queueFlush();
      return;
    }
    const s = this.#streams.get(id);
    if (!s) {
      if (id > this.#lastStreamId) {
        // §6.9 / §5.1: WINDOW_UPDATE on an idle stream.
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, `WINDOW_UPDATE on idle stream ${id}`);
      }
      return; // closed streams may still get updates
    }
    if (inc === 0) return this.#reset(s, H2Error.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
    s.sendWindow += inc;
    if (s.sendWindow > MAX_WINDOW) {
      return this.#reset(s, H2Error.FLOW_CONTROL_ERROR, "stream window overflow");
    }
    if (s.queue.length) this.schedule(s);
  }

  #headers(flags: number, id: number, p: Buffer): void {
    if (id === 0 || (id & 1) === 0) {
      throw new ConnectionError(H2Error.PROTOCOL_ERROR, `HEADERS on stream ${id}`);
    }
    let start = 0, end = p.length;
    if (flags & PADDED) {
      // §6.2: the Pad Length field must be there and shorter than the payload.
      if (!p.length || p[0] >= p.length) {
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, "bad HEADERS padding");
      }
      start = 1;
      end -= p[0];
    }
    let dependsOnSelf = false;
    if (flags & PRIORITY_FLAG) {
      if (end - start < 5) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "HEADERS size");
      dependsOnSelf = (p.readUInt32BE(start) & MAX_WINDOW) === id;
      start += 5;
    }
    if (start > end) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "bad HEADERS padding");
    const block = p.subarray(start, end);
    const f = dependsOnSelf ? flags | SELF_DEPENDENT : flags;
    if (flags & END_HEADERS) this.#headerBlock(id, f, block);
    else this.#block = { id, flags: f, parts: [Buffer.from(block)], size: block.length, frames: 1 };
  }

  #headerBlock(id: number, flags: number, block: Uint8Array): void {
    // Every block is decoded, even for streams we refuse: the HPACK table must stay in step.
    const headers = this.#hpack.decode(block);
    const existing = this.#streams.get(id);
    if (existing) {
      // Trailers from the client: only valid as the end of its request.
      if (!(flags & END_STREAM)) {
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, "second HEADERS without END_STREAM");
      }
      if (existing.remoteEnded) {
        return this.#reset(existing, H2Error.STREAM_CLOSED, "HEADERS after END_STREAM");
      }
      const bad = headers.find(([k]) => k.startsWith(":"));
      if (bad) return this.#reset(existing, H2Error.PROTOCOL_ERROR, `pseudo-header in trailers`);
      this.#remoteEnd(existing);
      return;
    }
    if (id <= this.#lastStreamId) {
      // Trailers that crossed our RST_STREAM are dropped (§5.1: "MUST ignore"), as nghttp2 does.
      if (flags & END_STREAM) return;
      // §5.1.1: stream identifiers of new streams only increase.
      throw new ConnectionError(
        H2Error.PROTOCOL_ERROR,
        `HEADERS on stream ${id}, not above the last one (${this.#lastStreamId})`,
      );
    }
    this.#lastStreamId = id;
    this.#streamsOpened++;
    if (this.#goingAway) {
      this.#queueControl(rstStream(id, H2Error.REFUSED_STREAM));
      return;
    }
    if (this.#streams.size >= this.limits.maxConcurrentStreams) {
      this.#queueControl(rstStream(id, H2Error.REFUSED_STREAM));
      this.#premature();
      return;
    }
    if (flags & SELF_DEPENDENT) {
      this.#queueControl(rstStream(id, H2Error.PROTOCOL_ERROR));
      return;
    }
    const malformed = checkRequestHeaders(headers);
    if (malformed) {
      // §8.1.1: a malformed request is a stream error of type PROTOCOL_ERROR.
      this.opts.onError?.(`HTTP/2 request from ${this.peer} refused: ${malformed}`);
      this.#queueControl(rstStream(id, H2Error.PROTOCOL_ERROR));
      return;
    }
    const s = new Stream(this, id);
    s.headers = headers;
    this.#streams.set(id, s);
    const get = (n: string) => headers.find(([k]) => k === n)?.[1];
    s.path = get(":path") ?? "";
    const method = get(":method");
    const ct = get("content-type") ?? "";
    const enc = get("grpc-encoding");
    const cl = get("content-length");
    if (cl !== undefined) s.contentLength = Number(cl);
    if (method !== "POST") {
      this.#refuse(
        s,
        flags,
        "405",
        GrpcStatus.INTERNAL,
        `Method ${method ?? "(none)"} is not POST`,
      );
    } else if (!/^application\/grpc([+;].*)?$/.test(ct)) {
      this.#refuse(
        s,
        flags,
        "415",
        GrpcStatus.INTERNAL,
        `Content-type ${ct || "(none)"} is not gRPC`,
      );
    } else if (enc && enc !== "identity" && enc !== "gzip") {
      this.#refuse(
        s,
        flags,
        "200",
        GrpcStatus.UNIMPLEMENTED,
        `Compression "${enc}" is not supported (only identity and gzip)`,
      );
    } else {
      s.gzip = enc === "gzip";
      const handler = this.opts.handlers.get(s.path);
      if (!handler) {
        this.#refuse(s, flags, "200", GrpcStatus.UNIMPLEMENTED, `Method not found: ${s.path}`);
      } else handler(s);
    }
    if (flags & END_STREAM) this.#endOfRequest(s);
  }

  /**
   * Answers a new stream with a Trailers-Only response (or an HTTP error status), then, if the
   * client is still sending (no END_STREAM in `flags` of its HEADERS), RST_STREAM NO_ERROR.
   */
  #refuse(s: Stream, flags: number, status: string, code: number, message: string): void {
    s.localEnded = true;
    s.headersSent = true;
    const h: HeaderList = [[":status", status], ["content-type", GRPC]];
    h.push(["grpc-status", String(code)], ["grpc-message", percentEncode(message)]);
    this.#queueControl(frame(HEADERS, END_HEADERS | END_STREAM, s.id, encodeHeaders(h)));
    if (!(flags & END_STREAM)) this.#queueControl(rstStream(s.id, H2Error.NO_ERROR));
    this.#streams.delete(s.id);
    s.closed = true;
  }

  #data(flags: number, id: number, p: Buffer): void {
    if (id === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "DATA on stream 0");
    // Flow control counts the whole payload, padding included.
    this.#recvConsumed += p.length;
    if (this.#recvConsumed > CONN_RECV_WINDOW) {
      throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, "client exceeded the window");
    }
    if (this.#recvConsumed >= CONN_RECV_WINDOW / 2) {
      this.#queueControl(windowUpdate(0, this.#recvConsumed));
      this.#recvConsumed = 0;
    }
    let body = p;
    if (flags & PADDED) {
      if (!p.length || p[0] >= p.length) {
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, "bad DATA padding");
      }
      body = p.subarray(1, p.length - p[0]);
    }
    const s = this.#streams.get(id);
    if (!s) {
      if (id > this.#lastStreamId) {
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, `DATA on idle stream ${id}`);
      }
      return; // a stream we already closed: the data is dropped
    }
    if (s.remoteEnded) return this.#reset(s, H2Error.STREAM_CLOSED, "DATA after END_STREAM");
    s.recvConsumed += p.length;
    if (s.recvConsumed > RECV_WINDOW) {
      return this.#reset(s, H2Error.FLOW_CONTROL_ERROR, "client exceeded the stream window");
    }
    s.received += body.length;
    if (s.contentLength >= 0 && s.received > s.contentLength) {
      return this.#reset(s, H2Error.PROTOCOL_ERROR, "more DATA than its content-length");
    }
    if (s.recvConsumed >= RECV_WINDOW / 2 && !(flags & END_STREAM)) {
      this.#queueControl(windowUpdate(id, s.recvConsumed));
      s.recvConsumed = 0;
    }
    if (body.length && !s.discard) this.#messages(s, body);
    if (flags & END_STREAM) this.#endOfRequest(s);
  }

  /** The client's END_STREAM: checks the content-length (§8.1.1), then ends its side. */
  #endOfRequest(s: Stream): void {
    if (s.contentLength >= 0 && s.received !== s.contentLength && !s.closed) {
      return this.#reset(s, H2Error.PROTOCOL_ERROR, "DATA shorter than its content-length");
    }
    this.#remoteEnd(s);
  }

  /** Splits request bytes into gRPC messages (5-byte prefix: compressed flag, length). */
  #messages(s: Stream, p: Buffer): void {
    let err: MessageError | undefined;
    try {
      const bad = s.reader.push(p, (m, compressed) => {
        if (!compressed) return s.onMessage(m);
        if (!s.gzip) {
          err = { tooLarge: false, message: "Compressed message without a grpc-encoding" };
          return;
        }
        const plain = gunzip(m, this.limits.maxReceiveMessageBytes);
        if (typeof plain === "string") {
          err = { tooLarge: plain.startsWith("Received"), message: plain };
        } else s.onMessage(plain);
      }, () => !s.closed && !s.discard && !err);
      err ??= bad;
    } catch (e) {
      if (!(e instanceof BufferBudgetError)) throw e;
      err = { tooLarge: true, message: e.message };
    }
    if (err) {
      this.#fail(
        s,
        err.tooLarge ? GrpcStatus.RESOURCE_EXHAUSTED : GrpcStatus.INTERNAL,
        err.message,
      );
    }
  }

  /** Ends a call with an error status (trailers), then resets it if the client is still sending. */
  #fail(s: Stream, code: number, message: string): void {
    s.end(code, message);
    s.discard = true;
    s.reader.reset();
  }

  #remoteEnd(s: Stream): void {
    if (s.remoteEnded) return;
    s.remoteEnded = true;
    if (!s.closed) s.onEnd();
    this.#maybeRetire(s);
  }

  /** Resets a stream (RST_STREAM) and cancels the call. */
  #reset(s: Stream, code: number, why: string): void {
    this.#queueControl(rstStream(s.id, code));
    this.#close(s, why || "stream reset");
  }

  #close(s: Stream, why: string): void {
    if (s.closed) return;
    s.closed = true;
    this.#streams.delete(s.id);
    this.#ready.delete(s);
    s.reader.reset();
    if (s.queue.length) {
      const err = new Error(why);
      for (const q of s.queue) q.reject(err);
      s.queue = [];
    }
    s.onCancel(why);
  }

  /** Forgets a stream both sides have ended (and whose output is all written). */
  #maybeRetire(s: Stream): void {
    if (s.remoteEnded && s.localEnded && !s.trailers && !s.queue.length) {
      s.closed = true;
      this.#streams.delete(s.id);
    }
  }

  #cancelAll(why: string): void {
    for (const s of [...this.#streams.values()]) this.#close(s, why);
  }

  #gone(why: string): void {
    this.#clearTimers();
    if (this.#dead && !this.#streams.size && !this.#in.length) return;
    this.#dead = true;
    this.#cancelAll(why);
    this.#control = [];
    this.#ready.clear();
    this.#in = [];
    this.#inlen = 0;
    this.#block = undefined;
    deferred.delete(this);
  }

  #clearTimers(): void {
    for (
      const t of [
        this.#prefaceTimer,
        this.#keepaliveTimer,
        this.#pingTimeout,
        this.#ageTimer,
        this.#backlogTimer,
      ]
    ) clearTimeout(t);
    this.#prefaceTimer = this.#keepaliveTimer = this.#pingTimeout = undefined;
    this.#ageTimer = this.#backlogTimer = undefined;
  }

  #goaway(code: number, debug: string): void {
    if (this.#dead) return;
    const d = new TextEncoder().encode(debug.slice(0, 200));
    const p = Buffer.allocUnsafe(8 + d.length);
    p.writeUInt32BE(this.#lastStreamId, 0);
    p.writeUInt32BE(code, 4);
    p.set(d, 8);
    this.#control.push(frame(GOAWAY, 0, 0, p));
    this.#goingAway = true;
    this.#queueFlush();
  }

  // ---- output ------------------------------------------------------------------------------

  /** Marks a stream as having output (messages or trailers) and schedules a flush. */
  schedule(s: Stream): void {
    if (s.closed) return;
    this.#ready.add(s);
    this.#queueFlush();
  }

  #queueFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      this.flushNow();
    });
  }

  /** Flushes now, or in the next macrotask when this one's write budget is spent. */
  flushNow(): void {
    if (tickBytes >= TICK_BUDGET && !this.#dead) {
      deferred.add(this);
      spend(0);
      return;
    }
    this.#flush();
  }

  #waiting: (() => void)[] = [];
  #writing = 0;

  /** Runs `fn` once everything queued so far was written. */
  #afterFlush(fn: () => void): void {
    this.#queueFlush();
    queueMicrotask(() => {
      if (this.#writing === 0) fn();
      else this.#waiting.push(fn);
    });
  }

  /**
   * Outbound backlog over the limit: stop reading (the peer's requests wait in its socket) and
   * close the connection if it does not drain within the send timeout.
   */
  #backlogged(): void {
    if (!this.#readPaused) {
      this.#readPaused = true;
      this.socket.pause();
    }
    this.#backlogTimer ??= setTimeout(() => {
      this.opts.onError?.(
        `HTTP/2 connection from ${this.peer} closed: ${this.#outstanding} bytes not taken by the ` +
          `peer within ${this.limits.sendTimeoutMs} ms`,
      );
      this.#destroy();
    }, this.limits.sendTimeoutMs);
  }

  /** The backlog drained below the limit: read and send again. */
  #drained(): void {
    clearTimeout(this.#backlogTimer);
    this.#backlogTimer = undefined;
    if (this.#readPaused) {
      this.#readPaused = false;
      this.socket.resume();
      if (this.#inlen && !this.#dead) this.#receive(Buffer.alloc(0));
    }
    if (this.#ready.size) this.#queueFlush();
  }

  /**
   * Writes control frames, then for each ready stream its headers, as much message data as the
   * windows and the outbound backlog limit allow, and its trailers once its data is out: all in
   * one buffer and one write.
   */
  #flush(): void {
    if (this.#dead && !this.socket.writable) return;
    // Plan: control frames, then per stream [HEADERS] [DATA...] [trailers].
    const chunks: Uint8Array[] = [...this.#control];
    const controlFrames = chunks.length;
    this.#control = [];
    let size = 0;
    for (const c of chunks) size += c.length;
    const dataPlan: { s: Stream; frames: number[]; trailers?: Buffer; rst?: Buffer }[] = [];
    /** Stream data we may still hand to the socket in this flush. */
    let room = this.limits.maxOutboundBytes - this.#outstanding - size;
    for (const s of this.#ready) {
      if (room <= 0) break; // the rest stays ready until the backlog drains
      this.#ready.delete(s);
      if (s.closed) continue;
      if (!s.headersSent && (s.queue.length || s.trailers)) {
        s.headersSent = true;
        this.#pingStrikes = 0;
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
          const plan = { s, frames: [] as number[], rst: undefined as Buffer | undefined };
          if (!s.remoteEnded) plan.rst = rstStream(s.id, H2Error.NO_ERROR);
          if (plan.rst) size += plan.rst.length;
          dataPlan.push(plan);
          continue;
        }
      }
      const plan = {
        s,
        /** Payload lengths of the DATA frames to send now. */
        frames: [] as number[],
        trailers: undefined as Buffer | undefined,
        rst: undefined as Buffer | undefined,
      };
      // Bytes of queued messages we may send now.
      let budget = Math.min(this.#sendWindow, s.sendWindow, room);
      let pendingLeft = 0;
      for (const q of s.queue) pendingLeft += q.left;
      while (budget > 0 && pendingLeft > 0) {
        const len = Math.min(budget, this.#peerMaxFrame, pendingLeft);
        plan.frames.push(len);
        size += 9 + len;
        room -= 9 + len;
        budget -= len;
        pendingLeft -= len;
        this.#sendWindow -= len;
        s.sendWindow -= len;
      }
      if (pendingLeft > 0 && room <= 0 && this.#sendWindow > 0 && s.sendWindow > 0) {
        this.#ready.add(s); // cut by the backlog limit, not by flow control
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
      if (plan.frames.length) this.#pingStrikes = 0;
      this.#dataFramesSent += plan.frames.length;
      if (plan.frames.length || plan.trailers) dataPlan.push(plan);
    }
    if (size === 0) return;
    const out = take(size);
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.length;
    }
    const completed: Pending[] = [];
    const retire: Stream[] = [];
    for (const plan of dataPlan) {
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
      if (plan.trailers || plan.rst || (s.localEnded && !s.trailers && !s.queue.length)) {
        retire.push(s);
      }
      // More data waits for a WINDOW_UPDATE; nothing to do until then.
    }
    this.#writing++;
    this.#outstanding += at;
    this.#controlInFlight += controlFrames;
    spend(at);
    const written = at;
    this.socket.write(out.subarray(0, at), (err?: Error | null) => {
      this.#writing--;
      this.#outstanding -= written;
      this.#controlInFlight -= controlFrames;
      give(out);
      if (err) {
        for (const q of completed) q.reject(err);
      } else for (const q of completed) q.resolve();
      if (this.#writing === 0) {
        const ws = this.#waiting;
        this.#waiting = [];
        for (const fn of ws) fn();
      }
      if (this.#outstanding < this.limits.maxOutboundBytes && !this.#dead) this.#drained();
    });
    if (this.#outstanding >= this.limits.maxOutboundBytes && !this.#dead) this.#backlogged();
    for (const s of retire) {
      // Our side is finished: the stream is gone once the client's side is too (or was reset).
      if (!s.queue.length) {
        s.closed = true;
        this.#streams.delete(s.id);
      }
    }
  }
}

const ignore = () => {};
/** Stands in for a closed connection's HPACK decoder (its dynamic table is let go). */
const CLOSED_HPACK = new HpackDecoder({ maxHeaderListSize: 0 });

/** The ENHANCE_YOUR_CALM connection error of an exceeded budget. */
function calm(message: string): ConnectionError {
  return new ConnectionError(H2Error.ENHANCE_YOUR_CALM, message);
}

/** grpc-go's maxPingStrikes: the third too-early PING ends the connection. */
const MAX_PING_STRIKES = 2;
/** Opaque data of our keepalive PINGs. */
const KEEPALIVE_PING = Buffer.from("meshkeep", "latin1");
/** Internal flag (not on the wire): the HEADERS frame's priority names its own stream. */
const SELF_DEPENDENT = 0x100;

const CONNECTION_SPECIFIC = new Set([
  "connection",
  "proxy-connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
]);
const REQUEST_PSEUDO = new Set([":method", ":scheme", ":path", ":authority"]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;

/**
 * What makes a request's header list malformed (RFC 9113 §8.1.1, §8.2, §8.3), or undefined:
 * pseudo-headers unknown, repeated, after a regular field or missing (`:method`, `:scheme`,
 * `:path`); field names not lower-case tokens; connection-specific fields; `te` other than
 * `trailers`; values with NUL, CR or LF; a content-length that is not a number.
 */
export function checkRequestHeaders(headers: HeaderList): string | undefined {
  const seen = new Set<string>();
  let regular = false;
  for (const [k, v] of headers) {
    if (k.startsWith(":")) {
      if (regular) return `pseudo-header ${k} after a regular field`;
      if (!REQUEST_PSEUDO.has(k)) return `unknown pseudo-header ${k}`;
      if (seen.has(k)) return `repeated pseudo-header ${k}`;
      seen.add(k);
    } else {
      regular = true;
      if (!TOKEN.test(k)) return `field name ${JSON.stringify(k)} is not a lower-case token`;
      if (CONNECTION_SPECIFIC.has(k)) return `connection-specific field ${k}`;
      if (k === "te" && v !== "trailers") return `te ${JSON.stringify(v)} (only "trailers")`;
      if (k === "content-length" && !/^[0-9]+$/.test(v)) return `content-length ${v}`;
    }
    if (/[\0\r\n]/.test(v)) return `field ${k} has NUL, CR or LF in its value`;
  }
  for (const k of [":method", ":scheme", ":path"]) if (!seen.has(k)) return `missing ${k}`;
  if (headers.find(([k]) => k === ":path")![1] === "") return "empty :path";
  return undefined;
}

/** Inflates a gzip message, at most `max` bytes; a string says why it could not. */
function gunzip(m: Uint8Array, max: number): Buffer | string {
  try {
    return zlib.gunzipSync(m, { maxOutputLength: max });
  } catch (e) {
    const err = e as Error & { code?: string };
    if (err.code === "ERR_BUFFER_TOO_LARGE" || err instanceof RangeError) {
      return `Received message larger than max after decompression (over ${max})`;
    }
    return `Cannot decompress the gzip message: ${err.message}`;
  }
}

function windowUpdate(id: number, inc: number): Buffer {
  const p = Buffer.allocUnsafe(4);
  p.writeUInt32BE(inc, 0);
  return frame(WINDOW_UPDATE, 0, id, p);
}

function rstStream(id: number, code: number): Buffer {
  const p = Buffer.allocUnsafe(4);
  p.writeUInt32BE(code, 0);
  return frame(RST_STREAM, 0, id, p);
}

// ---- listener ---------------------------------------------------------------------------------

/** Options of {@link listenGrpc}. */
export interface GrpcListenOptions extends H2Options {
  /** Host to bind (`127.0.0.1`, `0.0.0.0`, `::`; brackets allowed). */
  host: string;
  /** Port (0 picks a free one). */
  port: number;
  /**
   * TLS (ALPN `h2`). `ca` verifies client certificates: with `requireClientCert` a client
   * without a valid certificate is refused during the handshake; otherwise a certificate is
   * requested and, when one is presented, it must verify against `ca`.
   */
  tls?: { cert: Uint8Array; key: Uint8Array; ca: Uint8Array; requireClientCert?: boolean };
  /**
   * Open connections at most (0 = no cap, the default); connections beyond are closed at once
   * and counted in {@link GrpcListener.refused}, with one log line per 10 s.
   */
  maxConnections?: number;
  /**
   * Failed connections ({@link Connection.failed}: a connection error, no client preface in
   * time, or over the buffered-request budget) per source
   * address and second before that address's new connections are paced (default
   * {@link DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND}; 0 = off; see {@link FailureThrottle}).
   * While over budget, a new connection from the address is held, unread, until its turn (at
   * most this many a second), and refused when it would wait over 2 s; counted in
   * {@link GrpcListener.throttled}, with one log line per 10 s. Well-behaved clients never fail a
   * connection, so a burst of thousands of proxies from one address is not affected.
   */
  maxFailedConnectionsPerSecond?: number;
  /**
   * How often the listener checks that it still accepts (a loopback connection to itself), in ms
   * (default 2000; 0 = never). Deno's accept loop stops for good after EMFILE: when the check
   * fails (the connection cannot be made, or two checks in a row are not accepted within a
   * second) the listener is reopened on the same port, and {@link GrpcListener.accepting} is
   * false until a check passes again.
   */
  acceptCheckMs?: number;
  /** Called when {@link GrpcListener.accepting} changes, with the reason when it is false. */
  onAcceptingChange?: (accepting: boolean, reason: string) => void;
  /**
   * A unix domain socket path to listen on instead of `host`/`port` (`port` is then reported as
   * 0 and the accept check is off).
   */
  path?: string;
}

/** A listening gRPC server. */
export interface GrpcListener {
  /** The bound port. */
  readonly port: number;
  /** Open connections. */
  readonly connections: ReadonlySet<Connection>;
  /** False while the listener cannot accept connections (out of file descriptors). */
  readonly accepting: boolean;
  /** Connections closed at once because {@link GrpcListenOptions.maxConnections} were open. */
  readonly refused: number;
  /**
   * New connections held or refused because their address was over
   * {@link GrpcListenOptions.maxFailedConnectionsPerSecond}.
   */
  readonly throttled: number;
  /**
   * Stops accepting, ends every call with `status`/`message`, sends GOAWAY and closes each
   * connection once its output is written (at most `graceMs` later).
   */
  close(status: number, message: string, graceMs?: number): Promise<void>;
  /** Replaces the TLS certificate, key and CA for new connections (TLS listeners only). */
  setTls(tls: { cert: Uint8Array; key: Uint8Array; ca: Uint8Array }): void;
}

/**
 * The URI SANs of a TLS socket's verified peer certificate (`[]` when none was presented, the
 * socket is plaintext, or the certificate did not verify).
 */
// deno-lint-ignore no-explicit-any
export function peerUris(socket: any): string[] {
  try {
    if (!socket.authorized) return [];
    const san: string = socket.getPeerCertificate?.()?.subjectaltname ?? "";
    return san.split(/,\s*/).filter((s) => s.startsWith("URI:")).map((s) => s.slice(4));
  } catch {
    return [];
  }
}

const STOPPED = "the accept loop stopped";

/** Default of {@link GrpcListenOptions.maxFailedConnectionsPerSecond}. */
export const DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND = 20;

/** Listens for gRPC over HTTP/2 (plaintext, or TLS with `opts.tls`). */
export async function listenGrpc(opts: GrpcListenOptions): Promise<GrpcListener> {
  const connections = new Set<Connection>();
  const maxConnections = opts.maxConnections ?? 0;
  let refused = 0, refusedLogged = 0, lastRefusalLog = -Infinity;
  /** `address:port` of our own accept check in flight (its socket is not a gRPC connection). */
  const probes = new Set<string>();
  /** `address:port` of a socket's peer (IPv4-mapped IPv6 addresses as IPv4). */
  const peerKey = (socket: Socket) =>
    `${(socket.remoteAddress ?? "").replace(/^::ffff:/, "")}:${socket.remotePort}`;
  let probeSeen: (() => void) | undefined;
  const perSecond = opts.maxFailedConnectionsPerSecond ?? DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND;
  if (!(perSecond >= 0)) {
    throw new RangeError(`maxFailedConnectionsPerSecond must not be negative, got ${perSecond}`);
  }
  const throttle = perSecond > 0 ? new FailureThrottle(perSecond) : undefined;
  /** Connections held until their address's turn. */
  const held = new Set<Socket>();
  let throttled = 0, throttledLogged = 0, lastThrottleLog = -Infinity;
  const accept = (socket: Socket) => {
    const address = (socket.remoteAddress ?? "").replace(/^::ffff:/, "");
    const wait = throttle?.admit(address) ?? 0;
    if (wait === 0) return serve(socket, address);
    throttled++;
    const now = performance.now();
    if (now - lastThrottleLog >= 10_000) {
      lastThrottleLog = now;
      opts.onError?.(
        `held or refused ${throttled - throttledLogged} new connection(s) (latest from ` +
          `${address}): more than ${perSecond} of its connections a second ended in a ` +
          `connection error`,
      );
      throttledLogged = throttled;
    }
    if (wait < 0 || closing) return void socket.destroy();
    // Held unread (before any per-connection state exists) until the address's turn.
    socket.pause();
    socket.on("error", ignore);
    held.add(socket);
    const gone = () => {
      clearTimeout(timer);
      held.delete(socket);
    };
    const timer = setTimeout(() => {
      gone();
      socket.off("close", gone);
      if (!socket.destroyed) serve(socket, address);
    }, wait);
    socket.once("close", gone);
  };
  const serve = (socket: Socket, address: string) => {
    if (maxConnections > 0 && connections.size >= maxConnections) {
      refused++;
      socket.destroy();
      const now = performance.now();
      if (now - lastRefusalLog >= 10_000) {
        lastRefusalLog = now;
        opts.onError?.(
          `refused ${refused - refusedLogged} connection(s) (latest from ` +
            `${socket.remoteAddress}:${socket.remotePort}): ${connections.size} connections ` +
            `open, the limit is ${maxConnections}`,
        );
        refusedLogged = refused;
      }
      return;
    }
    const c = new Connection(socket, opts);
    socket.resume();
    connections.add(c);
    if (throttle) c.onFailed = () => throttle.failed(address);
    socket.once("close", () => connections.delete(c));
  };
  /**
   * Raw TCP accepts (before TLS): our own accept checks are recognised and dropped here, by the
   * address and port of the check in flight (forgotten once seen or over, so a client reusing the
   * port later is not mistaken for one). While a check is in flight every accepted port is noted
   * too: the accept may come before the check's own connect callback tells its port.
   */
  const isProbe = (socket: Socket) => {
    if (!socket.remotePort) return false;
    const key = peerKey(socket);
    if (probeSeen) acceptedPorts.add(key);
    if (!probes.has(key)) return false;
    probes.delete(key);
    hush(key);
    probeSeen?.();
    return true;
  };
  /** Recent checks, whose TLS handshake error (they never handshake) is not logged. */
  const quiet = new Set<string>();
  const hush = (key: string) => {
    quiet.add(key);
    if (quiet.size > 8) quiet.delete(quiet.values().next().value!);
  };
  const acceptedPorts = new Set<string>();
  const tlsModule = opts.tls ? await import("node:tls") : undefined;
  const net = await import("node:net");
  const create = (): import("node:net").Server => {
    let server: import("node:net").Server;
    if (opts.tls) {
      const t = opts.tls;
      server = tlsModule!.createServer({
        cert: Buffer.from(t.cert),
        key: Buffer.from(t.key),
        ca: Buffer.from(t.ca),
        requestCert: true,
        rejectUnauthorized: t.requireClientCert ?? false,
        ALPNProtocols: ["h2"],
      }, (socket) => {
        // Without requireClientCert a certificate is optional, but one that is presented must
        // verify against the CA.
        const presented = Object.keys(socket.getPeerCertificate?.() ?? {}).length > 0;
        if (presented && !socket.authorized) {
          opts.onError?.(
            `TLS client ${socket.remoteAddress}:${socket.remotePort} refused: certificate not ` +
              `verified (${socket.authorizationError})`,
          );
          socket.destroy();
          return;
        }
        accept(socket);
      });
      server.on("connection", (raw: Socket) => void isProbe(raw));
      server.on("tlsClientError", (e: Error, tlsSocket: Socket) => {
        // Deno's TLS socket forgets its peer once its handshake failed; the TCP socket it wraps
        // (`_parent`, as in Node) still knows it.
        const socket = (tlsSocket as Socket & { _parent?: Socket })?._parent ?? tlsSocket;
        if (socket?.remotePort && quiet.has(peerKey(socket))) return;
        opts.onError?.(`TLS handshake failed: ${e.message}`);
      });
    } else {
      server = net.createServer({ noDelay: true }, (socket) => {
        if (isProbe(socket)) socket.destroy();
        else accept(socket);
      });
    }
    return server;
  };
  const host = opts.host.replace(/^\[(.*)\]$/, "$1");
  const listen = (server: import("node:net").Server, port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      const ready = () => {
        server.off("error", reject);
        server.on("error", (e: Error) => opts.onError?.(`gRPC listener error: ${e.message}`));
        resolve();
      };
      if (opts.path) server.listen(opts.path, ready);
      else server.listen(port, host, ready);
    });
  let server = create();
  await listen(server, opts.port);
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : opts.port;
  let closing: Promise<void> | undefined;
  let accepting = true;
  const setAccepting = (ok: boolean, reason: string) => {
    if (ok === accepting) return;
    accepting = ok;
    opts.onError?.(
      ok ? `accepting connections again on port ${port}` : `cannot accept connections: ${reason}`,
    );
    opts.onAcceptingChange?.(ok, reason);
  };
  const probeHost = host === "" || host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  /** Connects to ourselves: true when the listener saw the connection within a second. */
  const check = () =>
    new Promise<{ ok: boolean; reason: string }>((resolve) => {
      let done = false;
      const finish = (ok: boolean, reason: string) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        probeSeen = undefined;
        acceptedPorts.clear();
        // A check the listener never saw must not be taken for one later (its port is reused).
        if (key) probes.delete(key);
        sock.destroy();
        resolve({ ok, reason });
      };
      const timer = setTimeout(() => finish(false, STOPPED), 1000);
      let key = "";
      probeSeen = () => {};
      const sock = net.connect({ port, host: probeHost });
      sock.on("error", (e: Error & { code?: string }) =>
        finish(
          false,
          e.code === "EMFILE" || e.code === "ENFILE"
            ? `too many open files (${e.code})`
            : e.message,
        ));
      sock.on("connect", () => {
        const k = `${(sock.localAddress ?? "").replace(/^::ffff:/, "")}:${sock.localPort}`;
        // Accepted before this callback ran, as it usually is (then served as a connection,
        // closed just below; over TLS its failed handshake is not logged).
        if (acceptedPorts.has(k)) {
          hush(k);
          return finish(true, "");
        }
        probes.add(key = k);
        probeSeen = () => finish(true, "");
      });
    });
  const checkMs = opts.path ? 0 : opts.acceptCheckMs ?? 2000;
  let checkTimer: ReturnType<typeof setTimeout> | undefined;
  let inflight: Promise<void> = Promise.resolve();
  /** Whether the listening socket is open (it is closed to be reopened after a failed check). */
  let open = true;
  /** Checks in a row whose connection was not accepted within a second. */
  let unanswered = 0;
  let lastReopenError = "";
  const recheck = async () => {
    const r = open ? await check() : { ok: false, reason: "the listener is being reopened" };
    if (closing) return;
    if (r.ok) {
      unanswered = 0;
      lastReopenError = "";
      return setAccepting(true, "");
    }
    // One unanswered check may be a busy event loop; two in a row mean the accept loop is gone.
    if (r.reason === STOPPED && ++unanswered < 2) return;
    setAccepting(false, r.reason);
    // Reopen the listening socket: Deno's accept loop does not resume after EMFILE. (close()'s
    // callback waits for every connection, so it is not awaited; open connections stay.)
    if (open) {
      server.close();
      open = false;
      await new Promise((r) => setTimeout(r, 50));
    }
    const next = create();
    try {
      await listen(next, port);
      server = next;
      open = true;
      if (closing) next.close();
    } catch (e) {
      // Still out of descriptors (or the port is not free yet): the next check tries again.
      const m = (e as Error).message;
      if (m !== lastReopenError) opts.onError?.(`cannot reopen the listener: ${m}`);
      lastReopenError = m;
    }
  };
  const schedule = () => {
    if (closing || checkMs <= 0) return;
    checkTimer = setTimeout(() => {
      inflight = recheck().finally(schedule);
    }, checkMs);
  };
  schedule();
  return {
    port,
    connections,
    get accepting() {
      return accepting;
    },
    get refused() {
      return refused;
    },
    get throttled() {
      return throttled;
    },
    close(status, message, graceMs = 2000) {
      closing ??= (async () => {
        clearTimeout(checkTimer);
        for (const s of held) s.destroy();
        await inflight;
        const stopped = open
          ? new Promise<void>((resolve) => server.close(() => resolve()))
          : Promise.resolve();
        await Promise.all([...connections].map((c) => c.shutdown(status, message, graceMs)));
        await stopped;
      })();
      return closing;
    },
    setTls(t) {
      if (!opts.tls) throw new Error("setTls() on a plaintext listener");
      (server as import("node:tls").Server).setSecureContext({
        cert: Buffer.from(t.cert),
        key: Buffer.from(t.key),
        ca: Buffer.from(t.ca),
      });
    },
  };
}

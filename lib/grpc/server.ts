/**
 * A small HTTP/2 server for gRPC (RFC 7540 server side, the gRPC-over-HTTP/2 protocol), written
 * for the ADS listener. Deno's `node:http2` writes every HTTP/2 frame with its own `socket.write`
 * and allocates a fresh buffer per frame and per message; pushing ~0.4 MB to 2000 proxies made it
 * most of the server's CPU. Here each flush packs every frame that flow control allows into one
 * pooled buffer and one socket write, and a message is given as parts (a per-client head and the
 * shared, pre-encoded resources) that are copied once, straight into that buffer.
 *
 * Scope: server side only; no server push; no compression (a request with a `grpc-encoding`
 * other than `identity` is answered UNIMPLEMENTED, as grpc-js does for unknown encodings); the
 * HPACK encoder never indexes. Flow control is honoured both ways. Runs over any `node:net`
 * socket, so plaintext and TLS (`node:tls`) share one implementation.
 * @module
 */

import { Buffer } from "node:buffer";
import type { Socket } from "node:net";
import { encodeHeaders, type HeaderList, HpackDecoder, HpackError } from "./hpack.ts";
import { BufferPool, Flag, frame, frameHeader, FrameType, PREFACE } from "./frames.ts";
import { GrpcMessageReader } from "./messages.ts";

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
} as const;

const SETTINGS_HEADER_TABLE_SIZE = 1, SETTINGS_ENABLE_PUSH = 2, SETTINGS_INITIAL_WINDOW_SIZE = 4;
const SETTINGS_MAX_FRAME_SIZE = 5, SETTINGS_MAX_HEADER_LIST_SIZE = 6;
const DEFAULT_WINDOW = 65535;
const MAX_WINDOW = 0x7fffffff;
/** The largest frame payload we accept (our SETTINGS_MAX_FRAME_SIZE: the protocol default). */
const OUR_MAX_FRAME = 16384;
/** Our per-stream receive window, and the connection's (raised by a WINDOW_UPDATE at start). */
const RECV_WINDOW = 4 * 1024 * 1024;
const CONN_RECV_WINDOW = 16 * 1024 * 1024;
const MAX_HEADER_LIST = 65536;

/** gRPC status codes used by the transport. */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** gRPC's default limit on a received message (4 MiB). */
export const MAX_RECEIVE_MESSAGE = 4 * 1024 * 1024;

// ---- output buffers ---------------------------------------------------------------------------

const GRPC = "application/grpc";
/** The response headers of every call that sends messages (the same block each time). */
const RESPONSE_HEADERS = encodeHeaders([
  [":status", "200"],
  ["content-type", GRPC],
  ["grpc-accept-encoding", "identity"],
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
  /** Splits the request into messages (pooled buffers for those spread over frames). */
  reader = new GrpcMessageReader<Buffer>({ maxLength: MAX_RECEIVE_MESSAGE, take, give });
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
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** Options of a connection / server. */
export interface H2Options {
  /** Handlers by path (`/pkg.Service/Method`). */
  handlers: ReadonlyMap<string, CallHandler>;
  /** Called with one line when a connection fails (protocol errors, socket errors). */
  onError?: (message: string) => void;
}

/** The server side of one HTTP/2 connection. */
export class Connection {
  readonly peer: string;
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
  #block: { id: number; flags: number; parts: Uint8Array[]; size: number } | undefined;
  /** Streams with output to send, in order. */
  #ready = new Set<Stream>();
  #flushQueued = false;
  #control: Buffer[] = [];
  #goingAway = false;
  #dead = false;

  constructor(readonly socket: Socket, readonly opts: H2Options) {
    const fam = socket.remoteFamily === "IPv6" ? "ipv6" : "ipv4";
    const addr = fam === "ipv6" ? `[${socket.remoteAddress}]` : socket.remoteAddress;
    this.peer = `${fam}:${addr}:${socket.remotePort}`;
    socket.setNoDelay?.(true);
    socket.on("data", (chunk: Buffer) => this.#receive(chunk));
    socket.on("error", (e: Error) => this.#gone(`connection error: ${e.message}`));
    socket.on("close", () => this.#gone("connection closed"));
    socket.on("end", () => this.#gone("client closed the connection"));
    // Our SETTINGS, then a connection WINDOW_UPDATE (the connection window is not a setting).
    const s = Buffer.alloc(18);
    s.writeUInt16BE(SETTINGS_INITIAL_WINDOW_SIZE, 0);
    s.writeUInt32BE(RECV_WINDOW, 2);
    s.writeUInt16BE(SETTINGS_MAX_HEADER_LIST_SIZE, 6);
    s.writeUInt32BE(MAX_HEADER_LIST, 8);
    s.writeUInt16BE(SETTINGS_ENABLE_PUSH, 12);
    s.writeUInt32BE(0, 14);
    this.#control.push(frame(SETTINGS, 0, 0, s));
    this.#control.push(windowUpdate(0, CONN_RECV_WINDOW - DEFAULT_WINDOW));
    this.#queueFlush();
  }

  /** Open streams. */
  get streams(): number {
    return this.#streams.size;
  }

  /**
   * Ends every call with `status` and sends GOAWAY; the socket is closed once written (or after
   * `graceMs`).
   */
  shutdown(status: number, message: string, graceMs = 2000): Promise<void> {
    for (const s of this.#streams.values()) s.end(status, message);
    this.#goaway(H2Error.NO_ERROR, "");
    return new Promise<void>((resolve) => {
      if (this.#dead) return resolve();
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

  #receive(chunk: Buffer): void {
    if (this.#dead) return;
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
      this.opts.onError?.(`HTTP/2 connection from ${this.peer} failed: ${(e as Error).message}`);
      this.#goaway(code, (e as Error).message);
      this.#afterFlush(() => this.socket.end());
      this.#dead = true;
      this.#cancelAll("connection failed");
    }
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
    while (this.#inlen >= 9 && !this.#dead) {
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
        if (flags & END_HEADERS) {
          this.#block = undefined;
          this.#headerBlock(b.id, b.flags, Buffer.concat(b.parts, b.size));
        }
        return;
      }
      case PRIORITY:
        if (id === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "PRIORITY on stream 0");
        if (p.length !== 5) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "PRIORITY size");
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
        if (s) this.#close(s, `client reset the stream (code ${p.readUInt32BE(0)})`);
        return;
      }
      case SETTINGS:
        return this.#settings(flags, id, p);
      case PUSH_PROMISE:
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, "PUSH_PROMISE from a client");
      case PING:
        if (id !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "PING on a stream");
        if (p.length !== 8) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "PING size");
        if (!(flags & ACK)) {
          this.#control.push(frame(PING, ACK, 0, p));
          this.#queueFlush();
        }
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

  #settings(flags: number, id: number, p: Buffer): void {
    if (id !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "SETTINGS on a stream");
    if (flags & ACK) {
      if (p.length) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "SETTINGS ACK with data");
      return;
    }
    if (p.length % 6) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "SETTINGS size");
    this.#settingsSeen = true;
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
    this.#control.push(frame(SETTINGS, ACK, 0));
    this.#queueFlush();
  }

  #windowUpdate(id: number, p: Buffer): void {
    if (p.length !== 4) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "WINDOW_UPDATE size");
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
    if (!s) return; // closed streams may still get updates
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
      const pad = p[0];
      start = 1;
      end -= pad;
    }
    if (flags & PRIORITY_FLAG) start += 5;
    if (start > end) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "bad HEADERS padding");
    const block = p.subarray(start, end);
    if (flags & END_HEADERS) this.#headerBlock(id, flags, block);
    else this.#block = { id, flags, parts: [Buffer.from(block)], size: block.length };
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
      this.#remoteEnd(existing);
      return;
    }
    if (id <= this.#lastStreamId) {
      throw new ConnectionError(H2Error.STREAM_CLOSED, `HEADERS on closed stream ${id}`);
    }
    this.#lastStreamId = id;
    const s = new Stream(this, id);
    s.headers = headers;
    this.#streams.set(id, s);
    if (this.#goingAway) return this.#reset(s, H2Error.REFUSED_STREAM, "");
    const get = (n: string) => headers.find(([k]) => k === n)?.[1];
    s.path = get(":path") ?? "";
    const method = get(":method");
    const ct = get("content-type") ?? "";
    const enc = get("grpc-encoding");
    if (method !== "POST") {
      this.#refuse(s, "405", GrpcStatus.INTERNAL, `Method ${method ?? "(none)"} is not POST`);
    } else if (!/^application\/grpc([+;].*)?$/.test(ct)) {
      this.#refuse(s, "415", GrpcStatus.INTERNAL, `Content-type ${ct || "(none)"} is not gRPC`);
    } else if (enc && enc !== "identity") {
      this.#refuse(
        s,
        "200",
        GrpcStatus.UNIMPLEMENTED,
        `Compression "${enc}" is not supported (only identity)`,
      );
    } else {
      const handler = this.opts.handlers.get(s.path);
      if (!handler) {
        this.#refuse(s, "200", GrpcStatus.UNIMPLEMENTED, `Method not found: ${s.path}`);
      } else handler(s);
    }
    if (flags & END_STREAM) this.#remoteEnd(s);
  }

  /** Answers a stream with a Trailers-Only response (or an HTTP error status). */
  #refuse(s: Stream, status: string, code: number, message: string): void {
    s.localEnded = true;
    s.headersSent = true;
    const h: HeaderList = [[":status", status], ["content-type", GRPC]];
    h.push(["grpc-status", String(code)], ["grpc-message", percentEncode(message)]);
    this.#control.push(frame(HEADERS, END_HEADERS | END_STREAM, s.id, encodeHeaders(h)));
    if (!s.remoteEnded) this.#control.push(rstStream(s.id, H2Error.NO_ERROR));
    this.#streams.delete(s.id);
    s.closed = true;
    this.#queueFlush();
  }

  #data(flags: number, id: number, p: Buffer): void {
    if (id === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "DATA on stream 0");
    // Flow control counts the whole payload, padding included.
    this.#recvConsumed += p.length;
    if (this.#recvConsumed > CONN_RECV_WINDOW) {
      throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, "client exceeded the window");
    }
    if (this.#recvConsumed >= CONN_RECV_WINDOW / 2) {
      this.#control.push(windowUpdate(0, this.#recvConsumed));
      this.#recvConsumed = 0;
      this.#queueFlush();
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
    if (s.recvConsumed >= RECV_WINDOW / 2 && !(flags & END_STREAM)) {
      this.#control.push(windowUpdate(id, s.recvConsumed));
      s.recvConsumed = 0;
      this.#queueFlush();
    }
    if (body.length && !s.discard) this.#messages(s, body);
    if (flags & END_STREAM) this.#remoteEnd(s);
  }

  /** Splits request bytes into gRPC messages (5-byte prefix: compressed flag, length). */
  #messages(s: Stream, p: Buffer): void {
    const err = s.reader.push(p, s.onMessage, () => !s.closed && !s.discard);
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
    this.#control.push(rstStream(s.id, code));
    this.#queueFlush();
    this.#close(s, why || "stream reset");
  }

  #close(s: Stream, why: string): void {
    if (s.closed) return;
    s.closed = true;
    this.#streams.delete(s.id);
    this.#ready.delete(s);
    const err = new Error(why);
    for (const q of s.queue) q.reject(err);
    s.queue = [];
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
    if (this.#dead && !this.#streams.size) return;
    this.#dead = true;
    this.#cancelAll(why);
    this.#control = [];
    this.#ready.clear();
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
   * Writes control frames, then for each ready stream its headers, as much message data as the
   * windows allow, and its trailers once its data is out: all in one buffer and one write.
   */
  #flush(): void {
    if (this.#dead && !this.socket.writable) return;
    // Plan: control frames, then per stream [HEADERS] [DATA...] [trailers].
    const chunks: Uint8Array[] = [...this.#control];
    this.#control = [];
    let size = 0;
    for (const c of chunks) size += c.length;
    const dataPlan: { s: Stream; frames: number[]; trailers?: Buffer; rst?: Buffer }[] = [];
    for (const s of this.#ready) {
      this.#ready.delete(s);
      if (s.closed) continue;
      if (!s.headersSent && (s.queue.length || s.trailers)) {
        s.headersSent = true;
        const h = s.queue.length
          ? RESPONSE_HEADERS
          : encodeHeaders([[":status", "200"], ["content-type", GRPC], ...s.trailers!]);
        const trailersOnly = !s.queue.length;
        const f = frame(HEADERS, END_HEADERS | (trailersOnly ? END_STREAM : 0), s.id, h);
        chunks.push(f);
        size += f.length;
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
      let budget = Math.min(this.#sendWindow, s.sendWindow);
      let pendingLeft = 0;
      for (const q of s.queue) pendingLeft += q.left;
      while (budget > 0 && pendingLeft > 0) {
        const len = Math.min(budget, this.#peerMaxFrame, pendingLeft);
        plan.frames.push(len);
        size += 9 + len;
        budget -= len;
        pendingLeft -= len;
        this.#sendWindow -= len;
        s.sendWindow -= len;
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
    spend(at);
    this.socket.write(out.subarray(0, at), (err?: Error | null) => {
      this.#writing--;
      give(out);
      if (err) {
        for (const q of completed) q.reject(err);
      } else for (const q of completed) q.resolve();
      if (this.#writing === 0) {
        const ws = this.#waiting;
        this.#waiting = [];
        for (const fn of ws) fn();
      }
    });
    for (const s of retire) {
      // Our side is finished: the stream is gone once the client's side is too (or was reset).
      if (!s.queue.length) {
        s.closed = true;
        this.#streams.delete(s.id);
      }
    }
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
  /** A Unix socket path to listen on instead of `host`/`port` (an old socket file is replaced). */
  path?: string;
  /**
   * TLS (ALPN `h2`). `ca` verifies client certificates: with `requireClientCert` a client
   * without a valid certificate is refused during the handshake; otherwise a certificate is
   * requested and, when one is presented, it must verify against `ca`.
   */
  tls?: { cert: Uint8Array; key: Uint8Array; ca: Uint8Array; requireClientCert?: boolean };
}

/** A listening gRPC server. */
export interface GrpcListener {
  /** The bound port. */
  readonly port: number;
  /** Open connections. */
  readonly connections: ReadonlySet<Connection>;
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

/** Listens for gRPC over HTTP/2 (plaintext, or TLS with `opts.tls`). */
export async function listenGrpc(opts: GrpcListenOptions): Promise<GrpcListener> {
  const connections = new Set<Connection>();
  const accept = (socket: Socket) => {
    const c = new Connection(socket, opts);
    connections.add(c);
    socket.once("close", () => connections.delete(c));
  };
  let server: import("node:net").Server;
  if (opts.tls) {
    const tls = await import("node:tls");
    const t = opts.tls;
    server = tls.createServer({
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
    server.on("tlsClientError", (e: Error) => opts.onError?.(`TLS handshake failed: ${e.message}`));
  } else {
    const net = await import("node:net");
    server = net.createServer({ noDelay: true }, accept);
  }
  const host = opts.host.replace(/^\[(.*)\]$/, "$1");
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    const listening = () => {
      server.off("error", reject);
      resolve();
    };
    if (opts.path) {
      try {
        Deno.removeSync(opts.path);
      } catch { /* none */ }
      server.listen(opts.path, listening);
    } else server.listen(opts.port, host, listening);
  });
  server.on("error", (e: Error) => opts.onError?.(`gRPC listener error: ${e.message}`));
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : opts.port;
  let closing: Promise<void> | undefined;
  return {
    port,
    connections,
    close(status, message, graceMs = 2000) {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
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

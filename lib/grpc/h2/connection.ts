/**
 * The server side of one HTTP/2 connection (RFC 7540/9113): the client preface, frame parsing
 * and dispatch, SETTINGS, flow control of what we receive, streams and their states, the
 * per-connection budgets of {@link H2Limits}, GOAWAY and shutdown. Output goes through
 * {@link Outbound} (`outbound.ts`), keepalive through {@link Keepalive} (`keepalive.ts`).
 * @module
 */

import { Buffer } from "node:buffer";
import type { Socket } from "node:net";
import { encodeHeaders, type HeaderList, HpackDecoder, HpackError } from "./hpack.ts";
import { Flag, frame, FrameType, PREFACE, rstStream, windowUpdate } from "./frames.ts";
import {
  BufferBudgetError,
  calm,
  CONN_RECV_WINDOW,
  ConnectionError,
  DEFAULT_LIMITS,
  DEFAULT_WINDOW,
  GrpcStatus,
  H2Error,
  type H2Limits,
  MAX_HEADER_LIST,
  MAX_WINDOW,
  OUR_MAX_FRAME,
  RECV_WINDOW,
  Setting,
} from "./limits.ts";
import { Keepalive, KEEPALIVE_PING } from "./keepalive.ts";
import { GRPC, Outbound, pool } from "./outbound.ts";
import { checkRequestHeaders, readGrpcRequest } from "./request_headers.ts";
import { type CallHandler, percentEncode, Stream, type StreamOwner } from "./stream.ts";

const { DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY } = FrameType;
const { WINDOW_UPDATE, CONTINUATION } = FrameType;
const { END_STREAM, ACK, END_HEADERS, PADDED } = Flag;
const PRIORITY_FLAG = Flag.PRIORITY;

/** See Connection#head: one frame header and payload at most. */
const scratch = Buffer.allocUnsafe(9 + OUR_MAX_FRAME);

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
export class Connection implements StreamOwner {
  /** The peer, `ipv4:127.0.0.1:53412` / `ipv6:[::1]:53412`. */
  readonly peer: string;
  /** The connection's limits ({@link DEFAULT_LIMITS} with the options' overrides). */
  readonly limits: Readonly<H2Limits>;
  /** The peer's SETTINGS_INITIAL_WINDOW_SIZE. */
  peerInitialWindow: number = DEFAULT_WINDOW;
  #recvConsumed = 0;
  #streams = new Map<number, Stream>();
  #lastStreamId = 0;
  #in: Buffer[] = [];
  /** Bytes of `#in[0]` already parsed (an offset instead of a new view per frame). */
  #inOff = 0;
  /** Bytes buffered and not parsed yet: those of `#in` from `#inOff` on. */
  #inlen = 0;
  /** The socket reuses a chunk's memory for its next read: what is kept is copied first. */
  #transient: boolean;
  /** The pooled buffer holding the bytes kept from transient chunks (given back when replaced). */
  #kept: Buffer | undefined;
  #prefaceSeen = false;
  #settingsSeen = false;
  #hpack = new HpackDecoder({ maxHeaderListSize: MAX_HEADER_LIST });
  /** A header block being received (HEADERS without END_HEADERS, then CONTINUATIONs). */
  #block:
    | { id: number; flags: number; parts: Uint8Array[]; size: number; frames: number }
    | undefined;
  /** The output scheduler: send windows, control frames and streams with output. */
  #out: Outbound;
  #keepalive: Keepalive;
  #goingAway = false;
  #dead = false;
  #failed = false;
  // Budgets (see H2Limits).
  #streamsOpened = 0;
  #prematureResets = 0;
  #emptyFrames = 0;
  #windowUpdates = 0;
  #priorityFrames = 0;
  /** Header blocks (trailers) received for streams already closed. */
  #closedStreamHeaders = 0;
  /** Bytes of pooled buffers holding partly received request messages. */
  #buffered = 0;
  #readPaused = false;
  /** Holds of {@link holdReads} not yet released. */
  #holds = 0;
  /** Reading stopped for the holds (not while a send waits for the peer's window). */
  #held = false;
  /** The socket is paused (for the backlog or the holds). */
  #socketPaused = false;
  #backlogTimer: ReturnType<typeof setTimeout> | undefined;
  #prefaceTimer: ReturnType<typeof setTimeout> | undefined;
  #closeTimer: ReturnType<typeof setTimeout> | undefined;

  /** Serves HTTP/2 on `socket` (accepted, plaintext or TLS) with `opts`. */
  constructor(readonly socket: Socket, readonly opts: H2Options) {
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.#transient = (socket as { transientReads?: boolean }).transientReads === true;
    // deno-lint-ignore no-this-alias
    const conn = this;
    this.#out = new Outbound({
      socket,
      limits: this.limits,
      get dead() {
        return conn.#dead;
      },
      sent: () => this.#keepalive.forgive(),
      retire: (s) => {
        s.closed = true;
        this.#streams.delete(s.id);
      },
      backlogged: () => this.#backlogged(),
      drained: () => this.#drained(),
      awaitingWindow: () => this.#awaitingWindow(),
    });
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
    s.writeUInt16BE(Setting.INITIAL_WINDOW_SIZE, 0);
    s.writeUInt32BE(RECV_WINDOW, 2);
    s.writeUInt16BE(Setting.MAX_HEADER_LIST_SIZE, 6);
    s.writeUInt32BE(MAX_HEADER_LIST, 8);
    s.writeUInt16BE(Setting.ENABLE_PUSH, 12);
    s.writeUInt32BE(0, 14);
    s.writeUInt16BE(Setting.MAX_CONCURRENT_STREAMS, 18);
    s.writeUInt32BE(this.limits.maxConcurrentStreams, 20);
    this.#out.pushControl(frame(SETTINGS, 0, 0, s));
    this.#out.pushControl(windowUpdate(0, CONN_RECV_WINDOW - DEFAULT_WINDOW));
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
    this.#keepalive = new Keepalive(l, {
      get dead() {
        return conn.#dead;
      },
      ping: () => this.#out.pushControl(frame(PING, 0, 0, KEEPALIVE_PING)),
      unresponsive: (why) => {
        this.opts.onError?.(`HTTP/2 connection from ${this.peer} closed: ${why}`);
        this.#destroy();
      },
      goaway: () => this.#goaway(H2Error.NO_ERROR, "max_age"),
      expire: () =>
        void this.shutdown(GrpcStatus.UNAVAILABLE, "Connection reached its maximum age"),
    });
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

  /** True once the client preface and its first SETTINGS arrived. */
  get greeted(): boolean {
    return this.#settingsSeen;
  }

  /** Called once when the client preface and its first SETTINGS arrived. */
  onGreeted: (() => void) | undefined = undefined;

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
    return this.#out.outstanding;
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
      this.#out.afterFlush(() => this.socket.end());
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
    const b = pool.take(n);
    this.#buffered += b.length;
    return b;
  }

  /** Gives back a buffer from {@link takeRequestBuffer}. */
  giveRequestBuffer(b: Buffer): void {
    this.#buffered -= b.length;
    pool.give(b);
  }

  #receive(chunk: Buffer): void {
    if (this.#dead) return;
    this.#keepalive.heard();
    this.#in.push(chunk);
    this.#inlen += chunk.length;
    if (this.#held) {
      // a read already under way when the hold paused the socket (reused-buffer reads): kept
      // unparsed until the holds are released (see holdReads)
      if (this.#transient) this.#keep();
      return;
    }
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
    if (this.#transient) this.#keep();
  }

  /**
   * Copies the bytes left unparsed (part of a frame) out of transient chunks into one pooled
   * buffer, and gives back the previous one: the socket's next read overwrites its chunk.
   */
  #keep(): void {
    const old = this.#kept;
    this.#kept = undefined;
    if (this.#inlen > 0) {
      const b = pool.take(this.#inlen);
      let at = 0;
      for (let i = 0; i < this.#in.length; i++) {
        const c = this.#in[i];
        b.set(i === 0 && this.#inOff ? c.subarray(this.#inOff) : c, at);
        at += c.length - (i === 0 ? this.#inOff : 0);
      }
      this.#in = [b.subarray(0, at)];
      this.#kept = b;
    } else this.#in = [];
    this.#inOff = 0;
    if (old) pool.give(old);
  }

  /**
   * A connection error: GOAWAY, every call cancelled, and the socket closed once the GOAWAY is
   * written (at most a second later). What the peer still sends is read and dropped until then
   * (as nghttp2 does): closing a socket with unread bytes makes the kernel send a reset, which
   * can destroy the GOAWAY before a slow peer has read it.
   */
  #fatal(code: number, message: string, debug = message): void {
    if (this.#dead) return;
    this.opts.onError?.(`HTTP/2 connection from ${this.peer} failed: ${message}`);
    this.#goaway(code, debug);
    this.#dead = true;
    this.#markFailed();
    this.#dropInput();
    this.#socketPaused = false;
    this.socket.resume(); // #receive drops what arrives now
    this.#cancelAll("connection failed");
    this.#out.ready.clear();
    this.#out.flush();
    this.#closeTimer = setTimeout(() => this.socket.destroy(), 1000);
    this.#out.afterFlush(() => this.socket.end());
  }

  /** Closes the socket at once (dead peer, timeouts). */
  #destroy(): void {
    this.#dead = true;
    this.socket.destroy();
    this.#gone("connection closed");
  }

  /** Forgets every byte received and not parsed yet. */
  #dropInput(): void {
    this.#in = [];
    this.#inOff = 0;
    this.#inlen = 0;
  }

  /**
   * The first `n` buffered bytes (n ≤ #inlen, at most one frame) as one buffer from its start:
   * the first chunk (or a view of it from `#inOff`) when they are all in it, else a copy in a
   * scratch buffer shared by all connections (valid until the next call; frames are handled
   * synchronously).
   */
  #head(n: number): Buffer {
    const first = this.#in[0];
    const off = this.#inOff;
    if (first.length - off >= n) return off === 0 ? first : first.subarray(off);
    let at = 0;
    for (let i = 0; i < this.#in.length; i++) {
      const c = this.#in[i];
      const from = i === 0 ? off : 0;
      const k = Math.min(c.length - from, n - at);
      scratch.set(from === 0 && k === c.length ? c : c.subarray(from, from + k), at);
      at += k;
      if (at === n) break;
    }
    return scratch.subarray(0, n);
  }

  #consume(n: number): void {
    this.#inlen -= n;
    while (n > 0) {
      const left = this.#in[0].length - this.#inOff;
      if (left <= n) {
        this.#in.shift();
        this.#inOff = 0;
        n -= left;
      } else {
        this.#inOff += n;
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
      // Most frames are whole in the first chunk: read there, at #inOff, without a view or copy.
      const first = this.#in[0], off = this.#inOff;
      const inFirst = first.length - off;
      const h = inFirst >= 9 ? first : this.#head(9);
      const at = inFirst >= 9 ? off : 0;
      const len = (h[at] << 16) | (h[at + 1] << 8) | h[at + 2];
      const type = h[at + 3], flags = h[at + 4];
      const id = h.readUInt32BE(at + 5) & MAX_WINDOW;
      if (len > OUR_MAX_FRAME) {
        throw new ConnectionError(
          H2Error.FRAME_SIZE_ERROR,
          `frame of ${len} bytes exceeds SETTINGS_MAX_FRAME_SIZE ${OUR_MAX_FRAME}`,
        );
      }
      if (this.#inlen < 9 + len) return;
      const payload = inFirst >= 9 + len
        ? first.subarray(off + 9, off + 9 + len)
        : this.#head(9 + len).subarray(9, 9 + len);
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
          this.#out.queueControl(rstStream(id, H2Error.PROTOCOL_ERROR));
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
        if (flags & ACK) return this.#keepalive.acked();
        this.#keepalive.clientPing();
        this.#out.queueControl(frame(PING, ACK, 0, p));
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
      this.onGreeted?.();
    }
    for (let i = 0; i < p.length; i += 6) {
      const key = p.readUInt16BE(i), v = p.readUInt32BE(i + 2);
      if (key === Setting.INITIAL_WINDOW_SIZE) {
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
          if (delta > 0 && s.queue.length) this.#out.ready.add(s);
        }
      } else if (key === Setting.MAX_FRAME_SIZE) {
        if (v < 16384 || v > 16777215) {
          throw new ConnectionError(H2Error.PROTOCOL_ERROR, `SETTINGS_MAX_FRAME_SIZE ${v}`);
        }
        this.#out.peerMaxFrame = v;
      } else if (key === Setting.ENABLE_PUSH && v > 1) {
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, `SETTINGS_ENABLE_PUSH ${v}`);
      } else if (key === Setting.HEADER_TABLE_SIZE) {
        // Our encoder never uses the dynamic table, whatever its size.
      }
    }
    this.#out.queueControl(frame(SETTINGS, ACK, 0));
  }

  #windowUpdate(id: number, p: Buffer): void {
    if (p.length !== 4) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, "WINDOW_UPDATE size");
    if (
      ++this.#windowUpdates >
        5 + 2 * (this.#streamsOpened +
              this.limits.maxWindowUpdatesPerDataFrameSent * this.#out.dataFramesSent)
    ) {
      throw calm(`too many WINDOW_UPDATE frames (${this.#windowUpdates})`);
    }
    const inc = p.readUInt32BE(0) & MAX_WINDOW;
    if (id === 0) {
      if (inc === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
      this.#out.sendWindow += inc;
      if (this.#out.sendWindow > MAX_WINDOW) {
        throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, "connection window overflow");
      }
      for (const s of this.#streams.values()) if (s.queue.length) this.#out.ready.add(s);
      this.#out.queueFlush();
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
      // Trailers from the client: only valid as the end of its request. Otherwise the request
      // is malformed, a stream error (RFC 9113 §8.1) that spares the other calls.
      if (!(flags & END_STREAM)) {
        return this.#reset(existing, H2Error.PROTOCOL_ERROR, "second HEADERS without END_STREAM");
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
      // Trailers that crossed our RST_STREAM are dropped (§5.1: "MUST ignore"), as nghttp2 does;
      // at most one per stream opened is what crossing allows, more is a flood of decodes.
      if (flags & END_STREAM) {
        if (++this.#closedStreamHeaders > 5 + this.#streamsOpened) {
          throw calm(`${this.#closedStreamHeaders} header blocks on closed streams`);
        }
        return;
      }
      // §5.1.1: stream identifiers of new streams only increase.
      throw new ConnectionError(
        H2Error.PROTOCOL_ERROR,
        `HEADERS on stream ${id}, not above the last one (${this.#lastStreamId})`,
      );
    }
    this.#lastStreamId = id;
    this.#streamsOpened++;
    if (this.#goingAway) {
      this.#out.queueControl(rstStream(id, H2Error.REFUSED_STREAM));
      return;
    }
    if (this.#streams.size >= this.limits.maxConcurrentStreams) {
      this.#out.queueControl(rstStream(id, H2Error.REFUSED_STREAM));
      this.#premature();
      return;
    }
    if (flags & SELF_DEPENDENT) {
      this.#out.queueControl(rstStream(id, H2Error.PROTOCOL_ERROR));
      return;
    }
    const malformed = checkRequestHeaders(headers);
    if (malformed) {
      // §8.1.1: a malformed request is a stream error of type PROTOCOL_ERROR.
      this.opts.onError?.(`HTTP/2 request from ${this.peer} refused: ${malformed}`);
      this.#out.queueControl(rstStream(id, H2Error.PROTOCOL_ERROR));
      return;
    }
    const s = new Stream(this, id);
    s.headers = headers;
    this.#streams.set(id, s);
    const req = readGrpcRequest(headers);
    s.path = req.path;
    s.contentLength = req.contentLength;
    const r = req.refusal;
    if (r) this.#refuse(s, flags, r.httpStatus, r.grpcStatus, r.message);
    else {
      s.gzip = req.gzip;
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
    this.#out.queueControl(frame(HEADERS, END_HEADERS | END_STREAM, s.id, encodeHeaders(h)));
    if (!(flags & END_STREAM)) this.#out.queueControl(rstStream(s.id, H2Error.NO_ERROR));
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
      this.#out.queueControl(windowUpdate(0, this.#recvConsumed));
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
      this.#out.queueControl(windowUpdate(id, s.recvConsumed));
      s.recvConsumed = 0;
    }
    if (body.length && !s.discard) {
      const err = s.receive(body);
      if (err) {
        s.fail(err.tooLarge ? GrpcStatus.RESOURCE_EXHAUSTED : GrpcStatus.INTERNAL, err.message);
      }
    }
    if (flags & END_STREAM) this.#endOfRequest(s);
  }

  /** The client's END_STREAM: checks the content-length (§8.1.1), then ends its side. */
  #endOfRequest(s: Stream): void {
    if (s.contentLength >= 0 && s.received !== s.contentLength && !s.closed) {
      return this.#reset(s, H2Error.PROTOCOL_ERROR, "DATA shorter than its content-length");
    }
    this.#remoteEnd(s);
  }

  #remoteEnd(s: Stream): void {
    if (s.remoteEnded) return;
    s.remoteEnded = true;
    if (!s.closed) s.onEnd();
    this.#maybeRetire(s);
  }

  /** Resets a stream (RST_STREAM) and cancels the call. */
  #reset(s: Stream, code: number, why: string): void {
    this.#out.queueControl(rstStream(s.id, code));
    this.#close(s, why || "stream reset");
  }

  #close(s: Stream, why: string): void {
    if (s.closed) return;
    s.closed = true;
    this.#streams.delete(s.id);
    this.#out.ready.delete(s);
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
    this.#out.clear();
    this.#dropInput();
    this.#block = undefined;
  }

  #clearTimers(): void {
    this.#keepalive.stop();
    clearTimeout(this.#prefaceTimer);
    clearTimeout(this.#backlogTimer);
    this.#prefaceTimer = this.#backlogTimer = undefined;
  }

  #goaway(code: number, debug: string): void {
    if (this.#dead) return;
    const d = new TextEncoder().encode(debug.slice(0, 200));
    const p = Buffer.allocUnsafe(8 + d.length);
    p.writeUInt32BE(this.#lastStreamId, 0);
    p.writeUInt32BE(code, 4);
    p.set(d, 8);
    this.#goingAway = true;
    this.#out.pushControl(frame(GOAWAY, 0, 0, p));
  }

  // ---- output (see Outbound) ------------------------------------------------------------

  /** Marks a stream as having output (messages or trailers) and schedules a flush. */
  schedule(s: Stream): void {
    this.#out.schedule(s);
  }

  /**
   * Stops reading until {@link releaseReads} (see `GrpcCall.holdReads`): what the peer sends
   * waits in its socket. Not while a stream's data waits for the peer's window: only reading
   * brings its WINDOW_UPDATE.
   */
  holdReads(): void {
    if (this.#holds++ > 0 || this.#dead) return;
    for (const s of this.#streams.values()) {
      if (s.queue.length && (s.sendWindow <= 0 || this.#out.sendWindow <= 0)) return;
    }
    this.#held = true;
    this.#reading();
  }

  /** Undoes one {@link holdReads}; reading resumes once none is left. */
  releaseReads(): void {
    if (this.#holds === 0) return;
    if (--this.#holds === 0 && this.#held) {
      this.#held = false;
      this.#reading();
    }
  }

  /** A send waits for the peer's window: read, holds or not. */
  #awaitingWindow(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#reading();
  }

  /** Pauses or resumes the socket for the backlog and the holds. */
  #reading(): void {
    const pause = (this.#readPaused || this.#held) && !this.#dead;
    if (pause === this.#socketPaused) return;
    this.#socketPaused = pause;
    if (pause) this.socket.pause();
    else {
      this.socket.resume();
      if (this.#inlen && !this.#dead) this.#receive(Buffer.alloc(0));
    }
  }

  /**
   * Outbound backlog over the limit: stop reading (the peer's requests wait in its socket) and
   * close the connection if it does not drain within the send timeout.
   */
  #backlogged(): void {
    if (!this.#readPaused) {
      this.#readPaused = true;
      this.#reading();
    }
    this.#backlogTimer ??= setTimeout(() => {
      this.opts.onError?.(
        `HTTP/2 connection from ${this.peer} closed: ${this.#out.outstanding} bytes not taken by the ` +
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
      this.#reading();
    }
  }
}

const ignore = () => {};
/** Stands in for a closed connection's HPACK decoder (its dynamic table is let go). */
const CLOSED_HPACK = new HpackDecoder({ maxHeaderListSize: 0 });
/** Internal flag (not on the wire): the HEADERS frame's priority names its own stream. */
const SELF_DEPENDENT = 0x100;

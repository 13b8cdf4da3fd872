/**
 * A lean HTTP/2 client for the simulated sidecars: gRPC streams over one `Deno.connect` socket
 * per session, frames parsed and built by hand (headers through the HPACK codec in
 * `lib/grpc/h2/hpack.ts`). Deno's `node:http2` client spends more CPU receiving a full push
 * to 2000 streams than the server spends sending it, and the bench runs both on the same two
 * cores; this client reads into one reused buffer per session and hands over complete gRPC
 * messages without per-frame allocations.
 *
 * What it does: connection preface and SETTINGS (Envoy's 256 MiB windows), SETTINGS/PING ACKs,
 * WINDOW_UPDATEs for what it received, flow-controlled sends (stream and connection windows,
 * frames of at most the server's SETTINGS_MAX_FRAME_SIZE), response headers and trailers
 * (`grpc-status`), RST_STREAM and GOAWAY. No server push, no priorities, no padding on send.
 * @module
 */

import { encodeHeaders, HpackDecoder } from "../lib/grpc/h2/hpack.ts";
import { GrpcMessageReader } from "../lib/grpc/messages.ts";
import { Buffer } from "node:buffer";
import { BufferPool, Flag, frameHeader, FrameType, PREFACE } from "../lib/grpc/h2/frames.ts";

const { DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION } =
  FrameType;
const { END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY } = Flag;
/** Envoy's HTTP/2 windows for its gRPC clients. */
const WINDOW = 256 * 1024 * 1024;

/** Callbacks of one stream. */
export interface LeanHandlers {
  /** A complete gRPC message (a view, valid only during the call). */
  message(msg: Buffer): void;
  /** The stream ended: trailers (`grpc-status N: message`), a reset, or the connection. */
  end(why: string): void;
}

/** A frame header of its own (the payload is written after it). */
function head(len: number, type: number, flags: number, id: number): Uint8Array {
  const h = new Uint8Array(9);
  frameHeader(h, 0, len, type, flags, id);
  return h;
}

function u32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
}

/** Buffers for messages that span frames (each handled synchronously, then given back). */
const pool = new BufferPool({ limit: 64 * 1024 * 1024, largest: 8 * 1024 * 1024 });
/**
 * Buffers that a session's frames are written into, one per write in flight (given back once the
 * socket took it): a wave of 10,000 ACKs of ~35 kB reuses them instead of allocating and
 * zero-filling each write. Every session of a wave takes one before any write completes (5,005
 * sessions × 128 kB at 10,010 proxies), so the pool keeps up to 1 GiB: with 128 MiB most of a
 * wave's buffers were new, and allocating them took 8 % of this process's CPU under churn.
 */
const writePool = new BufferPool({ limit: 1024 * 1024 * 1024, largest: 8 * 1024 * 1024 });
const take = (n: number) => pool.take(n);
const give = (b: Buffer) => pool.give(b);
/** `take` and `give` of that pool, for other message readers of the bench. */
export const messageBuffers = { take, give };

/** One gRPC stream of a {@link LeanSession}. */
export class LeanStream {
  sendWindow: number;
  recvConsumed = 0;
  /** Queued outgoing bytes (gRPC-framed messages, possibly in several chunks each). */
  out: Uint8Array[] = [];
  outOffset = 0;
  /** Bytes in {@link out} not yet sent. */
  queued = 0;
  ended = false;
  /** Splits the response into messages. */
  reader = new GrpcMessageReader<Buffer>({ maxLength: Infinity, take, give });
  constructor(readonly session: LeanSession, readonly id: number, readonly h: LeanHandlers) {
    this.sendWindow = session.peerInitialWindow;
  }
  /** Queues one gRPC-framed message, whole or as consecutive chunks (not copied: kept as is). */
  write(bytes: Uint8Array | readonly Uint8Array[]): void {
    if (this.ended) return;
    for (const b of bytes instanceof Uint8Array ? [bytes] : bytes) {
      this.out.push(b);
      this.queued += b.length;
    }
    this.session.schedule();
  }
  /** Copies the next `len` queued bytes into `dst` at `at`; returns the offset after them. */
  copyOut(dst: Uint8Array, at: number, len: number): number {
    this.queued -= len;
    while (len > 0) {
      const b = this.out[0];
      const k = Math.min(len, b.length - this.outOffset);
      dst.set(k === b.length ? b : b.subarray(this.outOffset, this.outOffset + k), at);
      at += k;
      len -= k;
      this.outOffset += k;
      if (this.outOffset === b.length) {
        this.out.shift();
        this.outOffset = 0;
      }
    }
    return at;
  }
  /** Cancels the stream (RST_STREAM CANCEL). */
  close(): void {
    if (this.ended) return;
    this.session.reset(this, 8);
  }
}

/** An HTTP/2 connection to the ADS port. */
export class LeanSession {
  peerInitialWindow = 65535;
  #peerMaxFrame = 16384;
  #sendWindow = 65535;
  #recvConsumed = 0;
  #streams = new Map<number, LeanStream>();
  #nextId = 1;
  #conn: Deno.TcpConn;
  #buf = Buffer.alloc(256 * 1024);
  #have = 0;
  #hpack = new HpackDecoder();
  #block: { id: number; flags: number; parts: Uint8Array[] } | undefined;
  #control: Uint8Array[] = [];
  #flushQueued = false;
  #writing = false;
  #closed = false;
  readonly #authority: string;

  private constructor(conn: Deno.TcpConn, port: number) {
    this.#conn = conn;
    this.#authority = `127.0.0.1:${port}`;
    const settings = new Uint8Array(12);
    const dv = new DataView(settings.buffer);
    dv.setUint16(0, 2); // ENABLE_PUSH 0
    dv.setUint32(2, 0);
    dv.setUint16(6, 4); // INITIAL_WINDOW_SIZE
    dv.setUint32(8, WINDOW);
    this.#control.push(
      PREFACE,
      head(12, SETTINGS, 0, 0),
      settings,
      head(4, WINDOW_UPDATE, 0, 0),
      u32(WINDOW - 65535),
    );
    this.schedule();
    this.#readLoop();
  }

  /** Connects to `127.0.0.1:<port>`. */
  static async connect(port: number): Promise<LeanSession> {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.setNoDelay(true);
    return new LeanSession(conn, port);
  }

  /** Opens a gRPC stream on `path`. */
  request(path: string, h: LeanHandlers): LeanStream {
    const id = this.#nextId;
    this.#nextId += 2;
    const s = new LeanStream(this, id, h);
    this.#streams.set(id, s);
    const block = encodeHeaders([
      [":method", "POST"],
      [":scheme", "http"],
      [":path", path],
      [":authority", this.#authority],
      ["content-type", "application/grpc"],
      ["te", "trailers"],
    ]);
    this.#control.push(head(block.length, HEADERS, END_HEADERS, id), block);
    this.schedule();
    return s;
  }

  /** Closes the connection (streams end with "closed"). */
  close(): void {
    this.#fail("closed");
  }

  /** Same as {@link close} (the node:http2 session's name for it). */
  destroy(): void {
    this.close();
  }

  reset(s: LeanStream, code: number): void {
    this.#control.push(head(4, RST_STREAM, 0, s.id), u32(code));
    this.#end(s, "closed");
    this.schedule();
  }

  #end(s: LeanStream, why: string) {
    if (s.ended) return;
    s.ended = true;
    this.#streams.delete(s.id);
    s.reader.reset();
    s.h.end(why);
  }

  #endAll(why: string) {
    for (const s of [...this.#streams.values()]) this.#end(s, why);
  }

  schedule(): void {
    if (this.#flushQueued || this.#closed) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      this.#flush();
    });
  }

  /**
   * Writes control frames and what the windows allow of each stream's queue, in one write: the
   * DATA frames' headers and payloads are written straight into a pooled buffer.
   */
  async #flush(): Promise<void> {
    if (this.#writing || this.#closed) return;
    const control = this.#control;
    this.#control = [];
    let size = 0;
    for (const c of control) size += c.length;
    const sends: [LeanStream, number][] = [];
    let window = this.#sendWindow;
    for (const s of this.#streams.values()) {
      const n = Math.min(s.queued, s.sendWindow, window);
      if (n <= 0) continue;
      window -= n;
      sends.push([s, n]);
      size += n + 9 * Math.ceil(n / this.#peerMaxFrame);
    }
    if (!size) return;
    const all = writePool.take(size);
    let at = 0;
    for (const c of control) {
      all.set(c, at);
      at += c.length;
    }
    for (const [s, n] of sends) {
      s.sendWindow -= n;
      this.#sendWindow -= n;
      for (let left = n; left > 0;) {
        const len = Math.min(left, this.#peerMaxFrame);
        frameHeader(all, at, len, DATA, 0, s.id);
        at = s.copyOut(all, at + 9, len);
        left -= len;
      }
    }
    this.#writing = true;
    try {
      for (let off = 0; off < at;) off += await this.#conn.write(all.subarray(off, at));
    } catch (e) {
      this.#fail(`write failed: ${(e as Error).message}`);
      return;
    } finally {
      this.#writing = false;
      writePool.give(all);
    }
    if (this.#control.length || [...this.#streams.values()].some((s) => s.queued)) {
      this.schedule();
    }
  }

  #fail(why: string) {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#conn.close();
    } catch { /* already closed */ }
    this.#endAll(why);
  }

  async #readLoop(): Promise<void> {
    try {
      for (;;) {
        if (this.#have === this.#buf.length) {
          const bigger = Buffer.alloc(this.#buf.length * 2);
          bigger.set(this.#buf);
          this.#buf = bigger;
        }
        const n = await this.#conn.read(this.#buf.subarray(this.#have));
        if (n === null) return this.#fail("connection closed by the server");
        this.#have += n;
        this.#parse();
      }
    } catch (e) {
      this.#fail(this.#closed ? "closed" : `read failed: ${(e as Error).message}`);
    }
  }

  #parse(): void {
    const b = this.#buf;
    let pos = 0;
    while (this.#have - pos >= 9) {
      const len = (b[pos] << 16) | (b[pos + 1] << 8) | b[pos + 2];
      if (this.#have - pos < 9 + len) break;
      const type = b[pos + 3], flags = b[pos + 4];
      const id = ((b[pos + 5] & 0x7f) << 24) | (b[pos + 6] << 16) | (b[pos + 7] << 8) | b[pos + 8];
      this.#frame(type, flags, id, b.subarray(pos + 9, pos + 9 + len));
      pos += 9 + len;
    }
    // Keep the partial frame at the start of the buffer.
    if (pos > 0) {
      b.copyWithin(0, pos, this.#have);
      this.#have -= pos;
    }
  }

  #frame(type: number, flags: number, id: number, p: Buffer): void {
    switch (type) {
      case DATA: {
        this.#recvConsumed += p.length;
        if (this.#recvConsumed >= WINDOW / 2) {
          this.#control.push(head(4, WINDOW_UPDATE, 0, 0), u32(this.#recvConsumed));
          this.#recvConsumed = 0;
          this.schedule();
        }
        const s = this.#streams.get(id);
        if (!s) return;
        s.recvConsumed += p.length;
        if (s.recvConsumed >= WINDOW / 2) {
          this.#control.push(head(4, WINDOW_UPDATE, 0, id), u32(s.recvConsumed));
          s.recvConsumed = 0;
          this.schedule();
        }
        const body = flags & PADDED ? p.subarray(1, p.length - p[0]) : p;
        this.#data(s, body);
        if (flags & END_STREAM) this.#end(s, "server ended the stream without trailers");
        return;
      }
      case HEADERS: {
        let start = 0, end = p.length;
        if (flags & PADDED) {
          start = 1;
          end -= p[0];
        }
        if (flags & PRIORITY) start += 5;
        const block = p.slice(start, end);
        if (flags & END_HEADERS) this.#headers(id, flags, block);
        else this.#block = { id, flags, parts: [block] };
        return;
      }
      case CONTINUATION: {
        const blk = this.#block;
        if (!blk) return this.#fail("unexpected CONTINUATION");
        blk.parts.push(p.slice());
        if (flags & END_HEADERS) {
          this.#block = undefined;
          let size = 0;
          for (const x of blk.parts) size += x.length;
          const all = new Uint8Array(size);
          let at = 0;
          for (const x of blk.parts) {
            all.set(x, at);
            at += x.length;
          }
          this.#headers(blk.id, blk.flags, all);
        }
        return;
      }
      case RST_STREAM: {
        const s = this.#streams.get(id);
        if (s) {
          const code = new DataView(p.buffer, p.byteOffset, 4).getUint32(0);
          this.#end(s, `reset by the server (code ${code})`);
        }
        return;
      }
      case SETTINGS: {
        if (flags & ACK) return;
        const dv = new DataView(p.buffer, p.byteOffset, p.length);
        for (let i = 0; i + 6 <= p.length; i += 6) {
          const key = dv.getUint16(i), v = dv.getUint32(i + 2);
          if (key === 4) {
            const delta = v - this.peerInitialWindow;
            this.peerInitialWindow = v;
            for (const s of this.#streams.values()) s.sendWindow += delta;
          } else if (key === 5) this.#peerMaxFrame = v;
        }
        this.#control.push(head(0, SETTINGS, ACK, 0));
        this.schedule();
        return;
      }
      case PING:
        if (!(flags & ACK)) {
          this.#control.push(head(8, PING, ACK, 0), p.slice());
          this.schedule();
        }
        return;
      case GOAWAY:
        return this.#fail("GOAWAY from the server");
      case WINDOW_UPDATE: {
        const inc = new DataView(p.buffer, p.byteOffset, 4).getUint32(0) & 0x7fffffff;
        if (id === 0) this.#sendWindow += inc;
        else {
          const s = this.#streams.get(id);
          if (s) s.sendWindow += inc;
        }
        this.schedule();
        return;
      }
      default:
        return;
    }
  }

  #headers(id: number, flags: number, block: Uint8Array): void {
    const headers = this.#hpack.decode(block);
    const s = this.#streams.get(id);
    if (!s) return;
    if (flags & END_STREAM) {
      const get = (n: string) => headers.find(([k]) => k === n)?.[1];
      this.#end(s, `grpc-status ${get("grpc-status")}: ${get("grpc-message") ?? ""}`);
    }
  }

  /** Splits DATA payload bytes into gRPC messages; complete ones go to the handler. */
  #data(s: LeanStream, p: Buffer): void {
    const err = s.reader.push(p, s.h.message, () => !s.ended);
    if (err) this.reset(s, 1);
  }
}

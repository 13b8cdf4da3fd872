/**
 * HTTP/2 framing shared by the server (`connection.ts`, `outbound.ts`) and the benchmark's lean client: frame types
 * and flags (RFC 7540 §6), the connection preface, frame headers, and a pool of reusable buffers.
 * @module
 */

import { Buffer } from "node:buffer";

/** The client connection preface (RFC 7540 §3.5). */
export const PREFACE: Buffer = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** Frame types (RFC 7540 §6). */
export const FrameType = {
  DATA: 0,
  HEADERS: 1,
  PRIORITY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PUSH_PROMISE: 5,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
  CONTINUATION: 9,
} as const;

/** Frame flags (END_STREAM and ACK share a bit; PRIORITY is the HEADERS flag). */
export const Flag = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 };

/** Writes a 9-byte frame header at `out[at]`. */
export function frameHeader(
  out: Uint8Array,
  at: number,
  len: number,
  type: number,
  flags: number,
  id: number,
): void {
  out[at] = len >>> 16;
  out[at + 1] = (len >>> 8) & 0xff;
  out[at + 2] = len & 0xff;
  out[at + 3] = type;
  out[at + 4] = flags;
  out[at + 5] = (id >>> 24) & 0x7f;
  out[at + 6] = (id >>> 16) & 0xff;
  out[at + 7] = (id >>> 8) & 0xff;
  out[at + 8] = id & 0xff;
}

/** One complete frame as its own buffer (control frames, headers). */
export function frame(
  type: number,
  flags: number,
  id: number,
  payload: Uint8Array = new Uint8Array(),
): Buffer {
  const b = Buffer.allocUnsafe(9 + payload.length);
  frameHeader(b, 0, payload.length, type, flags, id);
  b.set(payload, 9);
  return b;
}

/**
 * Reusable buffers by power-of-two size. Writing into warm memory costs a memcpy; a fresh
 * ArrayBuffer of a few hundred kB costs page faults and GC work many times that.
 */
export class BufferPool {
  #free = new Map<number, Buffer[]>();
  #pooled = 0;
  /** `limit`: bytes kept at most; `largest`: buffers above this size are not kept. */
  constructor(readonly opts: { limit: number; largest: number }) {}

  /** A buffer of at least `n` bytes (its length is the size class). */
  take(n: number): Buffer {
    let c = 16384;
    while (c < n) c *= 2;
    const b = this.#free.get(c)?.pop();
    if (b) {
      this.#pooled -= c;
      return b;
    }
    return Buffer.allocUnsafeSlow(c);
  }

  /** Gives back a buffer from {@link take} (kept unless the pool is full). */
  give(b: Buffer): void {
    const c = b.length;
    if (this.#pooled + c > this.opts.limit || c > this.opts.largest) return;
    let free = this.#free.get(c);
    if (!free) this.#free.set(c, free = []);
    free.push(b);
    this.#pooled += c;
  }
}

/** A WINDOW_UPDATE frame of `inc` bytes on stream `id` (0: the connection). */
export function windowUpdate(id: number, inc: number): Buffer {
  const p = Buffer.allocUnsafe(4);
  p.writeUInt32BE(inc, 0);
  return frame(FrameType.WINDOW_UPDATE, 0, id, p);
}

/** A RST_STREAM frame with error `code`. */
export function rstStream(id: number, code: number): Buffer {
  const p = Buffer.allocUnsafe(4);
  p.writeUInt32BE(code, 0);
  return frame(FrameType.RST_STREAM, 0, id, p);
}

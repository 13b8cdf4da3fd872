/**
 * The part of a `node:net` Socket that the gRPC transport uses, over a `Deno.Conn`, reading into
 * one buffer per connection that every read reuses. Deno 2.7.14's `node:net` wraps each read in a
 * new ArrayBuffer that V8 counts as external memory until a GC sweeps it; a stream of ACKs of
 * 35 kB each then starts V8's "external memory pressure" major GCs every 64 MiB read (see
 * docs/benchmarks.md). Reads here allocate nothing.
 *
 * The price: a chunk handed to `data` listeners is valid only during the call (the next read
 * overwrites it; {@link NativeSocket.transientReads} says so, and `Connection` copies what it keeps
 * into pooled buffers), and every open connection holds its read buffer
 * ({@link NATIVE_READ_BUFFER} bytes) for its lifetime.
 * @module
 */

import { EventEmitter } from "node:events";
import { Buffer } from "node:buffer";

/** Bytes of a connection's read buffer (one HTTP/2 frame of the default size, with its header). */
export const NATIVE_READ_BUFFER = 16 * 1024 + 9;

/** One queued write and its callback. */
interface Write {
  b: Uint8Array;
  cb?: (e?: Error | null) => void;
}

/**
 * A `node:net`-like socket over `conn`: events `data` (a transient chunk), `end` (the peer closed
 * its side), `error`, `close` (once); `write(buf, cb)` (writes complete in order; `buf` must not
 * change until `cb`), `end()` (closes our side once the writes are done), `destroy()`,
 * `pause()`/`resume()` (it starts paused: nothing is read until the first `resume()`).
 */
export class NativeSocket extends EventEmitter {
  /** Chunks passed to `data` listeners are overwritten by the next read. */
  readonly transientReads = true;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly remoteFamily: string;
  destroyed = false;
  writable = true;
  /** Bytes read so far. */
  bytesRead = 0;
  #conn: Deno.Conn;
  #buf: Buffer;
  #paused = true;
  #resume: (() => void) | undefined;
  #writes: Write[] = [];
  #writing = false;
  #ending = false;

  /** Wraps an accepted (or connected) TCP connection; `bufferSize` is the read buffer's size. */
  constructor(conn: Deno.Conn, bufferSize = NATIVE_READ_BUFFER) {
    super();
    this.#conn = conn;
    this.#buf = Buffer.allocUnsafeSlow(bufferSize);
    const remote = conn.remoteAddr as Deno.NetAddr;
    this.remoteAddress = remote.hostname ?? "";
    this.remotePort = remote.port ?? 0;
    this.remoteFamily = this.remoteAddress.includes(":") ? "IPv6" : "IPv4";
    this.#readLoop();
  }

  /** Sets TCP_NODELAY (ignored once closed). */
  setNoDelay(on = true): this {
    try {
      (this.#conn as Deno.TcpConn).setNoDelay?.(on);
    } catch {
      // closed
    }
    return this;
  }

  /** Stops reading after the read in flight (its chunk is still delivered). */
  pause(): this {
    this.#paused = true;
    return this;
  }

  /** Reads again. */
  resume(): this {
    this.#paused = false;
    const r = this.#resume;
    this.#resume = undefined;
    r?.();
    return this;
  }

  async #readLoop(): Promise<void> {
    for (;;) {
      if (this.#paused && !this.destroyed) {
        await new Promise<void>((r) => this.#resume = r);
      }
      if (this.destroyed) return;
      let n: number | null;
      try {
        n = await this.#conn.read(this.#buf);
      } catch (e) {
        if (!this.destroyed) {
          this.emit("error", e);
          this.destroy();
        }
        return;
      }
      if (this.destroyed) return;
      if (n === null) {
        this.emit("end");
        this.destroy();
        return;
      }
      this.bytesRead += n;
      this.emit("data", this.#buf.subarray(0, n));
    }
  }

  /** Queues `b` (not copied: unchanged until `cb`); false after `end()`/`destroy()`. */
  write(b: Uint8Array, cb?: (e?: Error | null) => void): boolean {
    if (this.destroyed || this.#ending) {
      const e = new Error("This socket has been ended by the other party");
      queueMicrotask(() => cb?.(e));
      return false;
    }
    this.#writes.push({ b, cb });
    if (!this.#writing) this.#drain();
    return true;
  }

  async #drain(): Promise<void> {
    this.#writing = true;
    while (this.#writes.length) {
      const w = this.#writes.shift()!;
      let err: Error | null = null;
      try {
        for (let at = 0; at < w.b.length;) at += await this.#conn.write(w.b.subarray(at));
      } catch (e) {
        err = e as Error;
      }
      w.cb?.(err);
      if (err) {
        for (const r of this.#writes.splice(0)) r.cb?.(err);
        if (!this.destroyed) {
          this.emit("error", err);
          this.destroy();
        }
        break;
      }
    }
    this.#writing = false;
    if (this.#ending && !this.destroyed) this.#closeWrite();
  }

  /** Closes our side once the queued writes are done; the socket closes at the peer's end. */
  end(): this {
    if (this.#ending || this.destroyed) return this;
    this.#ending = true;
    this.writable = false;
    if (!this.#writing) this.#closeWrite();
    return this;
  }

  #closeWrite(): void {
    try {
      (this.#conn as Deno.TcpConn).closeWrite();
    } catch {
      this.destroy();
      return;
    }
    // The peer's end (or our destroy) closes the socket: keep reading until then.
    if (this.#paused) this.resume();
  }

  /** Closes the connection now; `close` follows (once). */
  destroy(): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.writable = false;
    this.#resume?.();
    this.#resume = undefined;
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
    const pending = this.#writes.splice(0);
    const err = new Error("This socket was destroyed");
    queueMicrotask(() => {
      for (const w of pending) w.cb?.(err);
      this.emit("close", false);
    });
    return this;
  }
}

/**
 * One gRPC call: the {@link GrpcCall} a handler sees, and the {@link Stream} behind it (its
 * windows, its outbound message queue and trailers, its request messages, its state).
 * @module
 */

import { Buffer } from "node:buffer";
import type { Socket } from "node:net";
import zlib from "node:zlib";
import type { HeaderList } from "./hpack.ts";
import { GrpcMessageReader, type MessageError } from "../messages.ts";
import { BufferBudgetError, type H2Limits } from "./limits.ts";

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
  /**
   * Asks the connection to stop reading for now (what the peer sends waits in its socket), so
   * that sending comes first; counted per connection, each hold undone by one
   * {@link releaseReads}. Reading goes on regardless while a send waits for the peer's window.
   */
  holdReads(): void;
  /** Undoes one {@link holdReads}. */
  releaseReads(): void;
}

/** A call handler: sets the call's callbacks (synchronously) and answers through it. */
export type CallHandler = (call: GrpcCall) => void;

/** One message queued on a stream, partly written. */
export interface Pending {
  /** The message's parts (concatenated on the wire). */
  parts: readonly Uint8Array[];
  /** Bytes of this message (5-byte gRPC prefix included) still to put into DATA frames. */
  left: number;
  /** Position: index of the part and offset in it (-1 = the gRPC prefix not sent yet). */
  part: number;
  /** Offset in the current part. */
  offset: number;
  /** The 5-byte gRPC message prefix. */
  prefix: Buffer;
  /** Settles {@link GrpcCall.send}. */
  resolve: () => void;
  /** Rejects {@link GrpcCall.send}. */
  reject: (e: Error) => void;
}

/** What a stream needs of its connection. */
export interface StreamOwner {
  /** The peer, as {@link GrpcCall.peer}. */
  readonly peer: string;
  /** The connection's socket. */
  readonly socket: Socket;
  /** The connection's limits. */
  readonly limits: Readonly<H2Limits>;
  /** The peer's SETTINGS_INITIAL_WINDOW_SIZE: a new stream's send window. */
  readonly peerInitialWindow: number;
  /** A buffer for a request message, within the connection's budget (throws beyond it). */
  takeRequestBuffer(n: number): Buffer;
  /** Gives back a buffer of {@link takeRequestBuffer}. */
  giveRequestBuffer(b: Buffer): void;
  /** The stream has output to send. */
  schedule(s: Stream): void;
  /** See {@link GrpcCall.holdReads}. */
  holdReads(): void;
  /** See {@link GrpcCall.releaseReads}. */
  releaseReads(): void;
}

/** The server side of one HTTP/2 stream, which is one gRPC call. */
export class Stream implements GrpcCall {
  onMessage: (message: Buffer) => void = () => {};
  onEnd: () => void = () => {};
  onCancel: (why: string) => void = () => {};
  path = "";
  headers: HeaderList = [];
  /** What the stream may still send (the peer's window for it). */
  sendWindow: number;
  /** Bytes received since our last WINDOW_UPDATE for the stream. */
  recvConsumed = 0;
  /** Splits the request into messages (pooled buffers, counted per connection). */
  reader: GrpcMessageReader<Buffer>;
  /** The request is gzip-compressed (`grpc-encoding: gzip`). */
  gzip = false;
  /** When the stream was opened (rapid-reset detection). */
  readonly openedAt = performance.now();
  /** The request's content-length, when it has one. */
  contentLength = -1;
  /** The DATA bytes received so far. */
  received = 0;
  /** Our response headers are queued or sent. */
  headersSent = false;
  /** Our side is done (trailers queued or sent). */
  localEnded = false;
  /** The client's side is done (END_STREAM received). */
  remoteEnded = false;
  /** The stream is gone (forgotten by its connection). */
  closed = false;
  /** The request was refused: later request bytes are dropped. */
  discard = false;
  /** Messages to send, in order. */
  queue: Pending[] = [];
  /** Trailers to send once the queue is written. */
  trailers: HeaderList | undefined;
  /** A stream `id` of connection `conn`. */
  constructor(readonly conn: StreamOwner, readonly id: number) {
    this.sendWindow = conn.peerInitialWindow;
    this.reader = new GrpcMessageReader<Buffer>({
      maxLength: conn.limits.maxReceiveMessageBytes,
      take: (n) => conn.takeRequestBuffer(n),
      give: (b) => conn.giveRequestBuffer(b),
      compressed: true,
    });
  }
  /** See {@link GrpcCall.peer}. */
  get peer(): string {
    return this.conn.peer;
  }
  /** See {@link GrpcCall.socket}. */
  get socket(): Socket {
    return this.conn.socket;
  }
  /** See {@link GrpcCall.holdReads}. */
  holdReads(): void {
    this.conn.holdReads();
  }
  /** See {@link GrpcCall.releaseReads}. */
  releaseReads(): void {
    this.conn.releaseReads();
  }
  /** See {@link GrpcCall.send}. */
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
  /** See {@link GrpcCall.end}. */
  end(status: number, message = ""): void {
    if (this.localEnded || this.closed) return;
    this.localEnded = true;
    const t: HeaderList = [["grpc-status", String(status)]];
    if (message) t.push(["grpc-message", percentEncode(message)]);
    this.trailers = t;
    this.conn.schedule(this);
  }

  /**
   * Splits request bytes into gRPC messages (5-byte prefix: compressed flag, length) and hands
   * them to {@link onMessage}, inflating gzip ones. Returns what ended the call early, if
   * anything: a message too large (also after inflating, or over the connection's
   * buffered-request budget), compressed without an encoding, or not inflatable.
   */
  receive(p: Buffer): MessageError | undefined {
    let err: MessageError | undefined;
    try {
      const bad = this.reader.push(p, (m, compressed) => {
        if (!compressed) return this.onMessage(m);
        if (!this.gzip) {
          err = { tooLarge: false, message: "Compressed message without a grpc-encoding" };
          return;
        }
        const plain = gunzip(m, this.conn.limits.maxReceiveMessageBytes);
        if (typeof plain === "string") {
          err = { tooLarge: plain.startsWith("Received"), message: plain };
        } else this.onMessage(plain);
      }, () => !this.closed && !this.discard && !err);
      err ??= bad;
    } catch (e) {
      if (!(e instanceof BufferBudgetError)) throw e;
      err = { tooLarge: true, message: e.message };
    }
    return err;
  }

  /** Ends the call with an error status (trailers); later request bytes are dropped. */
  fail(code: number, message: string): void {
    this.end(code, message);
    this.discard = true;
    this.reader.reset();
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

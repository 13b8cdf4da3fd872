/**
 * gRPC's length-prefixed messages on an HTTP/2 stream (gRPC over HTTP/2: a compressed-flag byte,
 * a 4-byte big-endian length, the message), split out of DATA payloads however the frames cut
 * them. Used by the server (`server.ts`) and by the benchmark's lean client.
 * @module
 */

/** Why a stream's messages cannot be read on. */
export interface MessageError {
  /** The message is longer than the reader's limit (gRPC: RESOURCE_EXHAUSTED). */
  tooLarge: boolean;
  message: string;
}

/** Options of {@link GrpcMessageReader}. */
export interface MessageReaderOptions<B extends Uint8Array> {
  /** The longest message accepted. */
  maxLength: number;
  /** A buffer of at least `n` bytes for a message spread over frames (e.g. from a pool). */
  take(n: number): B;
  /** Gives back a buffer from `take` once its message was handled. */
  give(b: B): void;
  /**
   * Messages with the compressed flag are accepted (the stream has a `grpc-encoding`); the flag
   * is passed to `onMessage`. Without it such a message is an error.
   */
  compressed?: boolean;
}

/**
 * Reads the messages of one stream. A message inside one payload is handed over as a view of it;
 * one spread over payloads is assembled in a buffer from `take`. Either is valid only during the
 * `onMessage` call.
 */
export class GrpcMessageReader<B extends Uint8Array> {
  #head = new Uint8Array(5);
  #headHave = 0;
  #msg: B | undefined;
  #len = 0;
  #have = 0;
  #compressed = false;

  constructor(readonly opts: MessageReaderOptions<B>) {}

  /**
   * Feeds payload bytes; calls `onMessage` for each complete message while `go()` (checked before
   * each) says so. Returns what is wrong with a message prefix (compressed flag without an
   * encoding, length over the limit), after which the stream's later bytes must be dropped.
   */
  push(
    p: B,
    onMessage: (m: B, compressed: boolean) => void,
    go: () => boolean = () => true,
  ): MessageError | undefined {
    let i = 0;
    while (i < p.length && go()) {
      if (this.#msg === undefined) {
        // The prefix is read where it is (no view of it allocated), or gathered in #head when a
        // payload cuts it.
        let head: Uint8Array = p, at = i;
        if (this.#headHave === 0 && p.length - i >= 5) {
          i += 5;
        } else {
          while (this.#headHave < 5 && i < p.length) this.#head[this.#headHave++] = p[i++];
          if (this.#headHave < 5) return undefined;
          this.#headHave = 0;
          head = this.#head;
          at = 0;
        }
        const flag = head[at];
        const len = ((head[at + 1] << 24) >>> 0) + (head[at + 2] << 16) + (head[at + 3] << 8) +
          head[at + 4];
        if (flag > 1) return { tooLarge: false, message: `Bad message flag ${flag}` };
        if (flag && !this.opts.compressed) {
          return { tooLarge: false, message: "Compressed message without a grpc-encoding" };
        }
        this.#compressed = flag === 1;
        if (len > this.opts.maxLength) {
          return {
            tooLarge: true,
            message: `Received message larger than max (${len} vs. ${this.opts.maxLength})`,
          };
        }
        if (p.length - i >= len) {
          onMessage(p.subarray(i, i + len) as B, this.#compressed);
          i += len;
          continue;
        }
        this.#msg = this.opts.take(len);
        this.#len = len;
        this.#have = 0;
      }
      const n = Math.min(this.#len - this.#have, p.length - i);
      this.#msg.set(i === 0 && n === p.length ? p : p.subarray(i, i + n), this.#have);
      this.#have += n;
      i += n;
      if (this.#have === this.#len) {
        const m = this.#msg;
        this.#msg = undefined;
        try {
          onMessage(m.subarray(0, this.#len) as B, this.#compressed);
        } finally {
          this.opts.give(m);
        }
      }
    }
    return undefined;
  }

  /** Drops a partly received message. */
  reset(): void {
    if (this.#msg) this.opts.give(this.#msg);
    this.#msg = undefined;
    this.#headHave = 0;
  }
}

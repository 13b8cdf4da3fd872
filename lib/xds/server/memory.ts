/**
 * An in-memory {@link XdsTransport} for driving the state machine in tests: it records responses,
 * can hold sends (a slow client) and waits for responses with deadlines.
 * @module
 */

import type { StreamEnd, XdsTransport } from "./types.ts";

/**
 * Records what the server sends on one stream.
 *
 * @example
 * ```ts ignore
 * const s = new MemoryStream<DiscoveryResponse>();
 * const h = server.openSotw(s);
 * h.receive({ node: { id: "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local" }, type_url: XDS_TYPES.cluster });
 * const res = await s.next();
 * ```
 */
export class MemoryStream<R> implements XdsTransport<R> {
  readonly peer: string;
  readonly peerIdentities: readonly string[];
  /** Every response sent, in order. */
  readonly sent: R[] = [];
  /** How the server ended the stream, once it did. */
  ended: StreamEnd | undefined;
  #read = 0;
  #held: (() => void)[] | undefined;
  #wake: (() => void)[] = [];

  constructor(peer = "memory:1", peerIdentities: readonly string[] = []) {
    this.peer = peer;
    this.peerIdentities = peerIdentities;
  }

  /** Records `r`; resolves at once unless {@link hold} is in effect. */
  send(r: R): Promise<void> {
    if (this.ended) return Promise.reject(new Error("stream ended"));
    this.sent.push(r);
    this.#notify();
    if (this.#held) return new Promise((resolve) => this.#held!.push(resolve));
    return Promise.resolve();
  }

  /** Holds of the reads (see {@link XdsTransport.holdReads}) not yet released. */
  readHolds = 0;

  /** Counts a hold of the reads. */
  holdReads(): void {
    this.readHolds++;
  }

  /** Counts a release of the reads; more releases than holds throw. */
  releaseReads(): void {
    if (this.readHolds === 0) throw new Error("releaseReads() without a hold");
    this.readHolds--;
  }

  /** Records the end status. */
  end(e?: StreamEnd): void {
    this.ended ??= e ?? { code: 0, message: "OK" };
    this.#notify();
  }

  /** From now on, sends stay unresolved until {@link release} (a slow client). */
  hold(): void {
    this.#held ??= [];
  }

  /** Resolves held sends and stops holding. */
  release(): void {
    const h = this.#held ?? [];
    this.#held = undefined;
    for (const r of h) r();
  }

  /** Responses sent but not yet returned by {@link next}. */
  get unread(): number {
    return this.sent.length - this.#read;
  }

  /** The next unread response; rejects after `timeoutMs` or when the stream ended first. */
  next(timeoutMs = 2000): Promise<R> {
    return this.#until(() => this.#read < this.sent.length, timeoutMs, "a response").then(() =>
      this.sent[this.#read++]
    );
  }

  /** Resolves with the end status once the server ended the stream. */
  waitEnded(timeoutMs = 2000): Promise<StreamEnd> {
    return this.#until(() => this.ended !== undefined, timeoutMs, "the stream to end", true)
      .then(() => this.ended!);
  }

  #notify(): void {
    const w = this.#wake;
    this.#wake = [];
    for (const f of w) f();
  }

  #until(ok: () => boolean, timeoutMs: number, what: string, endOk = false): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (ok()) {
          clearTimeout(timer);
          resolve();
        } else if (this.ended && !endOk) {
          clearTimeout(timer);
          reject(new Error(`Stream ended (${this.ended.message}) while waiting for ${what}`));
        } else {
          this.#wake.push(check);
        }
      };
      const timer = setTimeout(() => {
        this.#wake = this.#wake.filter((f) => f !== check);
        reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      check();
    });
  }
}

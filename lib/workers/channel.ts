/**
 * {@link Channel}: requests with replies and one-way notes between two isolates over
 * `postMessage` (a Worker and its parent). Every message is one structured-clone; send one
 * message per batch, not one per item (a message costs ~2–10 µs one way).
 * @module
 */

/** The end of a message pipe: a `Worker`, or a worker's global scope. */
export interface MessageEnd {
  /** Sends one structured-clone message (transferring `transfer`). */
  postMessage(message: unknown, transfer?: Transferable[]): void;
}

/** A handler of requests or notes of one method. */
export type ChannelHandler = (arg: unknown) => unknown;

/** The wire form of a channel message. */
type Wire =
  | { ch: "req"; id: number; method: string; arg: unknown }
  | { ch: "res"; id: number; ok: true; value: unknown }
  | { ch: "res"; id: number; ok: false; error: string }
  | { ch: "note"; method: string; arg: unknown };

/** A request that failed on the other side (its message is the other side's error message). */
export class RemoteError extends Error {
  /** `"RemoteError"`. */
  override name = "RemoteError";
}

/** Requests, replies and notes over one {@link MessageEnd}. */
export class Channel {
  #next = 1;
  #pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  #handlers = new Map<string, ChannelHandler>();
  #closed: string | undefined;

  /** A channel over `end` (feed what it receives to {@link receive}). */
  constructor(readonly end: MessageEnd) {}

  /** Answers requests (and notes) of `method` with `fn` (its value or promise is the reply). */
  on(method: string, fn: ChannelHandler): this {
    this.#handlers.set(method, fn);
    return this;
  }

  /** Sends a request and resolves with the reply. @throws RemoteError, or when closed. */
  request<T = unknown>(method: string, arg?: unknown, transfer?: Transferable[]): Promise<T> {
    if (this.#closed !== undefined) return Promise.reject(new Error(this.#closed));
    const id = this.#next++;
    const { promise, resolve, reject } = Promise.withResolvers<unknown>();
    this.#pending.set(id, { resolve, reject });
    this.end.postMessage({ ch: "req", id, method, arg } satisfies Wire, transfer ?? []);
    return promise as Promise<T>;
  }

  /** Sends a note (no reply). Dropped once the channel is closed. */
  notify(method: string, arg?: unknown): void {
    if (this.#closed === undefined) {
      this.end.postMessage({ ch: "note", method, arg } satisfies Wire);
    }
  }

  /** Handles one received message; false when it is not a channel message. */
  receive(data: unknown): boolean {
    const m = data as Wire;
    if (!m || typeof m !== "object" || typeof m.ch !== "string") return false;
    if (m.ch === "res") {
      const p = this.#pending.get(m.id);
      if (!p) return true;
      this.#pending.delete(m.id);
      if (m.ok) p.resolve(m.value);
      else p.reject(new RemoteError(m.error));
      return true;
    }
    // A closed channel's peer is gone (a worker that died): what it sent last is not acted on.
    if (this.#closed !== undefined) return true;
    const fn = this.#handlers.get(m.method);
    if (m.ch === "note") {
      try {
        void fn?.(m.arg);
      } catch { /* a note has nobody to tell */ }
      return true;
    }
    const reply = (r: Wire) => {
      if (this.#closed === undefined) this.end.postMessage(r);
    };
    if (!fn) {
      reply({ ch: "res", id: m.id, ok: false, error: `no handler for "${m.method}"` });
      return true;
    }
    Promise.resolve().then(() => fn(m.arg)).then(
      (value) => reply({ ch: "res", id: m.id, ok: true, value }),
      (e) => reply({ ch: "res", id: m.id, ok: false, error: (e as Error)?.message ?? String(e) }),
    );
    return true;
  }

  /**
   * Rejects every request in flight with `reason`; later requests reject at once, and requests and
   * notes received later are dropped unanswered.
   */
  close(reason: string): void {
    this.#closed ??= reason;
    for (const p of this.#pending.values()) p.reject(new Error(reason));
    this.#pending.clear();
  }
}

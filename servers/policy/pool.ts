/**
 * A bounded worker pool: at most `size` jobs run at once; later callers wait their turn
 * (first come, first served) instead of failing.
 * @module
 */

/** See the module doc. */
export class Pool {
  #active = 0;
  readonly #waiting: (() => void)[] = [];
  /** `size` ≥ 1 jobs at once. */
  constructor(readonly size: number) {
    if (!(size >= 1)) throw new Error(`Pool size must be >= 1, got ${size}`);
  }
  /** Jobs running now. */
  get active(): number {
    return this.#active;
  }
  /** Callers waiting for a slot. */
  get queued(): number {
    return this.#waiting.length;
  }
  /**
   * Runs `work` when a slot is free. When `signal` aborts while the caller waits, it leaves the
   * queue and the returned promise rejects with `signal.reason` (at once if it already aborted).
   */
  async run<T>(work: () => T | Promise<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    if (this.#active >= this.size) await this.#wait(signal);
    else this.#active++;
    try {
      return await work();
    } finally {
      const next = this.#waiting.shift();
      if (next) next(); // the slot passes to the next caller
      else this.#active--;
    }
  }

  /** Waits for a slot passed on by a finishing job. */
  #wait(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = this.#waiting.indexOf(take);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(signal!.reason);
      };
      const take = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      this.#waiting.push(take);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

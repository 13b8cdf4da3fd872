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
  /** Runs `work` when a slot is free. */
  async run<T>(work: () => T | Promise<T>): Promise<T> {
    if (this.#active >= this.size) await new Promise<void>((r) => this.#waiting.push(r));
    else this.#active++;
    try {
      return await work();
    } finally {
      const next = this.#waiting.shift();
      if (next) next(); // the slot passes to the next caller
      else this.#active--;
    }
  }
}

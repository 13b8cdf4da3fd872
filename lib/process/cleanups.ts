/**
 * A stack of shutdown steps for a server's `start()`: each opened resource pushes the step that
 * closes it, and {@link Cleanups.run} undoes them in reverse order, once.
 * @module
 */

/** One shutdown step. */
export type Cleanup = () => Promise<void> | void;

/** Options of {@link Cleanups}. */
export interface CleanupsOptions {
  /**
   * Called with the error of a failed step; the remaining steps still run and `run()` resolves.
   * Without it, every step still runs and `run()` rejects with the first error.
   */
  onError?: (error: unknown) => void;
}

/**
 * Shutdown steps, run last-in first-out.
 *
 * ```ts
 * import { Cleanups } from "./cleanups.ts";
 * const cleanups = new Cleanups();
 * const timer = setInterval(() => {}, 1000);
 * cleanups.push(() => clearInterval(timer));
 * await cleanups.run(); // clears the timer; a second call returns the same promise
 * ```
 */
export class Cleanups {
  readonly #steps: Cleanup[] = [];
  readonly #onError?: (error: unknown) => void;
  #running?: Promise<void>;

  constructor(options: CleanupsOptions = {}) {
    this.#onError = options.onError;
  }

  /** Adds a step (run before every step pushed earlier). */
  push(step: Cleanup): void {
    this.#steps.push(step);
  }

  /** Steps pushed and not yet run. */
  get size(): number {
    return this.#steps.length;
  }

  /**
   * Runs every step pushed so far, newest first, each once; idempotent (later calls return the
   * first call's promise).
   */
  run(): Promise<void> {
    return this.#running ??= this.#runAll();
  }

  async #runAll(): Promise<void> {
    let first: { error: unknown } | undefined;
    for (const step of this.#steps.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        if (this.#onError) this.#onError(error);
        else first ??= { error };
      }
    }
    if (first) throw first.error;
  }
}

/**
 * Time slicing for long synchronous work that runs beside servers (parsing and validating a large
 * configuration, emitting its events, fanning a push out to many streams): the work pauses for a
 * macrotask once it has held the event loop for a budget, so that requests, streams and timers
 * are served meanwhile. One slicer may be shared by several concurrent tasks: once the budget is
 * spent, each of them pauses at its next {@link TimeSlicer.pause}.
 *
 * @example
 * ```ts
 * import { TimeSlicer } from "./slice.ts";
 *
 * const slicer = new TimeSlicer();
 * let sum = 0;
 * for (let i = 0; i < 1e5; i++) {
 *   sum += i;
 *   await slicer.pause(); // yields to timers and I/O every 20 ms of work
 * }
 * ```
 * @module
 */

/** Work a slice may hold the event loop for, in ms, before it lets other tasks run. */
export const SLICE_MS = 20;

/** Counts the time since the last pause; {@link TimeSlicer.pause} yields once it exceeds the budget. */
export class TimeSlicer {
  readonly #budgetMs: number | null;
  readonly #onPause?: () => void;
  #since = performance.now();

  /**
   * `budgetMs` null: never pause (blocking work is fine: nothing else runs yet). `onPause` is
   * told of every pause (progress, for a watchdog).
   */
  constructor(budgetMs: number | null = SLICE_MS, onPause?: () => void) {
    this.#budgetMs = budgetMs;
    this.#onPause = onPause;
  }

  /**
   * Lets other tasks run when the budget is spent; resolves at once otherwise. While a pause is
   * pending, every caller waits for that same pause, and the budget starts again once, when it
   * ends: tasks sharing the slicer resume together and share the next budget (were it restarted
   * by each task as it resumes, N tasks would run N budgets back to back).
   */
  pause(): Promise<void> {
    if (this.#pausing) return this.#pausing;
    if (this.#budgetMs === null || performance.now() - this.#since < this.#budgetMs) {
      return RESOLVED;
    }
    this.#onPause?.();
    return this.#pausing = new Promise<void>((resolve) =>
      setTimeout(() => {
        this.#pausing = null;
        this.#since = performance.now();
        resolve();
      }, 0)
    );
  }
  #pausing: Promise<void> | null = null;

  /**
   * {@link pause} would wait now: the budget is spent (also while a pause is pending, since the
   * budget starts again only when it ends). Callers that check this first skip the `await` of an
   * already resolved promise, which still costs a turn of the microtask queue and an allocation.
   */
  get due(): boolean {
    return this.#budgetMs !== null && performance.now() - this.#since >= this.#budgetMs;
  }
}

const RESOLVED = Promise.resolve();

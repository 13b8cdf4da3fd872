/**
 * Missed watch events for the fake API server: `FakeKube.missEvents(resource, n)` makes the next
 * `n` changes of a resource reach the store and the watch history but none of the watches open
 * now, as when a real watch stream loses events. A relist (a registry's resync) is what repairs
 * that. Hooked into `fake_kube.ts` by a few lines.
 * @module
 */

/** Counts, per resource key, the events still to keep from open watches. */
export class MissedEvents {
  #left = new Map<string, number>();

  /** The next `n` events of `key` reach no open watch. */
  miss(key: string, n: number): void {
    if (!Number.isInteger(n) || n < 1) {
      throw new TypeError(`FakeKube.missEvents: "n" must be a positive integer, got ${n}`);
    }
    this.#left.set(key, (this.#left.get(key) ?? 0) + n);
  }

  /** True (and counted) when this event of `key` must not be delivered. */
  take(key: string): boolean {
    const left = this.#left.get(key) ?? 0;
    if (left === 0) return false;
    if (left === 1) this.#left.delete(key);
    else this.#left.set(key, left - 1);
    return true;
  }
}

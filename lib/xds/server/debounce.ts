/**
 * Debouncing of push events (like Istio's PILOT_DEBOUNCE_AFTER / PILOT_DEBOUNCE_MAX): events are
 * merged until none arrived for `after` ms, or `max` ms passed since the first one.
 * @module
 */

import { type Clock, type PushEvent, systemClock } from "./types.ts";

/** Default quiet period before a push, in ms. */
export const DEFAULT_DEBOUNCE_AFTER_MS = 100;
/** Default longest delay of a push after its first event, in ms. */
export const DEFAULT_DEBOUNCE_MAX_MS = 1000;
/** Default longest delay of an endpoints-only push after its first event, in ms. */
export const DEFAULT_DEBOUNCE_MAX_EDS_MS = 250;

/**
 * An ADS server's debounce settings with the defaults filled in: an endpoints-only push waits at
 * most {@link DEFAULT_DEBOUNCE_MAX_EDS_MS}, within [`after`, `max`], unless `maxEds` is given.
 */
export function adsDebounce(
  o: { debounceAfter?: number; debounceMax?: number; debounceMaxEds?: number },
): { after: number; max: number; maxEds: number } {
  const after = o.debounceAfter ?? DEFAULT_DEBOUNCE_AFTER_MS;
  const max = o.debounceMax ?? DEFAULT_DEBOUNCE_MAX_MS;
  return {
    after,
    max,
    maxEds: o.debounceMaxEds ?? Math.max(after, Math.min(DEFAULT_DEBOUNCE_MAX_EDS_MS, max)),
  };
}

/** Several push events merged into one. */
export interface MergedPush {
  /** Every type must be recomputed for every client. */
  full: boolean;
  /** Types to recompute for every client (config change); ignored when `full`. */
  types: Set<string>;
  /** Clusters whose endpoints changed (EDS-only push to their watchers). */
  edsClusters: Set<string>;
  /** Number of events merged. */
  events: number;
  /** Clock time of the first merged event (ms). */
  firstEventAt: number;
}

/** Merges `ev` into `into` (a config push without types is a full push). */
export function mergePush(into: MergedPush, ev: PushEvent): MergedPush {
  into.events++;
  switch (ev.kind) {
    case "full":
      into.full = true;
      break;
    case "config":
      if (!ev.types) into.full = true;
      else for (const t of ev.types) into.types.add(t);
      break;
    case "eds":
      for (const c of ev.clusters) into.edsClusters.add(c);
      break;
    default:
      throw new Error(`Unknown push event kind "${(ev as { kind: unknown }).kind}"`);
  }
  return into;
}

/** Debounce settings in ms. `after <= 0` flushes on the next timer tick without waiting. */
export interface DebounceOptions {
  after?: number;
  max?: number;
  /**
   * Longest delay of a push made only of endpoint (`eds`) events, ms (default `max`). Endpoint
   * pushes are cheap and coalesce per stream, so under continuous churn they can go out more
   * often than config pushes.
   */
  maxEds?: number;
  clock?: Clock;
}

/** Collects push events and calls `flush` with the merged push once things are quiet. */
export class Debouncer {
  readonly after: number;
  readonly max: number;
  readonly maxEds: number;
  #clock: Clock;
  #pending: MergedPush | undefined;
  #timer: unknown;
  #flush: (p: MergedPush) => void;

  constructor(flush: (p: MergedPush) => void, opts: DebounceOptions = {}) {
    this.after = opts.after ?? DEFAULT_DEBOUNCE_AFTER_MS;
    this.max = opts.max ?? DEFAULT_DEBOUNCE_MAX_MS;
    if (!Number.isFinite(this.after) || this.after < 0) {
      throw new Error(`Invalid debounceAfter ${this.after}: must be a number >= 0`);
    }
    if (!Number.isFinite(this.max) || this.max < this.after) {
      throw new Error(`Invalid debounceMax ${this.max}: must be a number >= debounceAfter`);
    }
    this.maxEds = opts.maxEds ?? this.max;
    if (!Number.isFinite(this.maxEds) || this.maxEds < this.after || this.maxEds > this.max) {
      throw new Error(
        `Invalid debounceMaxEds ${this.maxEds}: must be a number >= debounceAfter and <= debounceMax`,
      );
    }
    this.#clock = opts.clock ?? systemClock;
    this.#flush = flush;
  }

  /** True while events wait for a flush. */
  get pending(): boolean {
    return this.#pending !== undefined;
  }

  /** Adds an event; (re)arms the timer. */
  push(ev: PushEvent): void {
    const now = this.#clock.now();
    if (!this.#pending) {
      this.#pending = {
        full: false,
        types: new Set(),
        edsClusters: new Set(),
        events: 0,
        firstEventAt: now,
      };
    }
    mergePush(this.#pending, ev);
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    const p = this.#pending;
    const edsOnly = !p.full && p.types.size === 0;
    const deadline = p.firstEventAt + (edsOnly ? this.maxEds : this.max);
    const wait = Math.max(0, Math.min(this.after, deadline - now));
    this.#timer = this.#clock.setTimeout(() => this.flushNow(), wait);
  }

  /** Flushes pending events now (no-op when none). */
  flushNow(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    const p = this.#pending;
    this.#pending = undefined;
    if (p) this.#flush(p);
  }

  /** Drops pending events and the timer. */
  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pending = undefined;
  }
}

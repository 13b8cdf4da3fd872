/**
 * The process's file-descriptor budget, so that a listener never accepts its way into EMFILE:
 * Deno's accept loop stops for good after an accept fails with EMFILE, and the kernel goes on
 * completing connections nobody accepts. The budget is the soft `RLIMIT_NOFILE` less a reserve
 * that accepted connections never take (the accept itself, files, outgoing connections, the
 * listener's own accept check).
 * @module
 */

/** Where the budget reads the limit and the descriptors in use (Linux `/proc` by default). */
export interface DescriptorSource {
  /** The soft limit of open descriptors (Infinity when unlimited or unknown, NaN when unreadable now). */
  limit(): number;
  /** Descriptors open now (-1 when they cannot be counted now: out of descriptors). */
  open(): number;
}

/** Linux: `/proc/self/limits` and `/proc/self/fd`; elsewhere (or without read access) no limit. */
export const procDescriptors: DescriptorSource = {
  limit(): number {
    try {
      const text = Deno.readTextFileSync("/proc/self/limits");
      const m = text.match(/^Max open files\s+(\d+|unlimited)/m);
      return m && m[1] !== "unlimited" ? Number(m[1]) : Infinity;
    } catch (e) {
      return (e as Error).message.includes("Too many open files") ? NaN : Infinity;
    }
  },
  open(): number {
    try {
      let n = -1; // the directory's own descriptor while it is read
      for (const _ of Deno.readDirSync("/proc/self/fd")) n++;
      return n;
    } catch {
      return -1;
    }
  },
};

/**
 * Connections Deno accepts from the backlog in one turn of its event loop, before the first of
 * them reaches JavaScript (measured on 2.7: batches of 128): the reserve holds at least these,
 * or a burst accepted at the budget reaches EMFILE, which stops the accept loop for good.
 */
export const ACCEPT_BATCH = 128;

/**
 * The descriptors of connections that the process's gRPC listeners accepted and have not closed,
 * counted from an arbitrary start: one `Int32Array` slot over a `SharedArrayBuffer`. A worker pool
 * hands its control isolate's to each worker ({@link adoptAcceptedDescriptors}), so that every
 * listener's budget sees, between two measurements, what every other listener of the process
 * accepted, in whichever isolate.
 */
let accepted: Int32Array = new Int32Array(new SharedArrayBuffer(4));

/** This process's count of accepted descriptors (see {@link adoptAcceptedDescriptors}). */
export function acceptedDescriptors(): Int32Array {
  return accepted;
}

/**
 * Makes `count` (the control isolate's {@link acceptedDescriptors}) this isolate's: called by a
 * worker before it opens any listener.
 */
export function adoptAcceptedDescriptors(count: Int32Array): void {
  accepted = count;
}

/** How often (ms) the count of open descriptors is taken again, at least. */
const MEASURE_MS = 500;
/** Near the budget, how often (ms) it is taken again at most (under a flood of connections). */
const NEAR_MS = 20;

/**
 * The descriptors accepted connections may still take. Between measurements the count is kept
 * by {@link opened} and {@link closed}; near the budget it is measured again before a
 * connection is refused.
 */
export class DescriptorBudget {
  #limit = Infinity;
  #measured = 0;
  #measuredAt = -Infinity;
  /** The process's accepted descriptors (shared), and their count at the last measurement. */
  readonly #accepted: Int32Array;
  #base = 0;

  /**
   * `reserve`: descriptors kept free (default: 10 % of the limit, at least {@link ACCEPT_BATCH}
   * per accept loop + 32); `acceptLoops`: the listeners of the process that accept at once, each
   * of which may accept a batch before any budget hears of it (default 1); `accepted`: where the
   * listeners count what they open and close (default {@link acceptedDescriptors}, the process's);
   * `source`: where the limit and the count come from (tests).
   */
  constructor(
    readonly opts: {
      reserve?: number;
      acceptLoops?: number;
      accepted?: Int32Array;
      source?: DescriptorSource;
      now?: () => number;
    } = {},
  ) {
    this.#accepted = opts.accepted ?? accepted;
  }

  /** Descriptors kept free under the current limit. */
  get reserve(): number {
    this.#refresh(false);
    const ahead = ACCEPT_BATCH * Math.max(1, this.opts.acceptLoops ?? 1);
    return this.opts.reserve ?? Math.max(ahead + 32, Math.ceil(this.#limit * 0.1));
  }

  /** The descriptors accepted connections may hold in all: the limit less the reserve. */
  get budget(): number {
    const reserve = this.reserve;
    return this.#limit === Infinity ? Infinity : Math.max(0, this.#limit - reserve);
  }

  /** Descriptors open now (estimated between measurements). */
  get open(): number {
    this.#refresh(false);
    return this.#estimate();
  }

  /** A descriptor was opened (a connection accepted: counted for every budget of the process). */
  opened(): void {
    Atomics.add(this.#accepted, 0, 1);
  }

  /** A descriptor was closed. */
  closed(): void {
    Atomics.sub(this.#accepted, 0, 1);
  }

  /** The last measurement, plus what the process's listeners opened less closed since. */
  #estimate(): number {
    return this.#measured + Atomics.load(this.#accepted, 0) - this.#base;
  }

  /**
   * Where the open descriptors (the new connection's included) stand against the budget: their
   * number less the budget (over it when positive; within the last half-reserve below it when
   * greater than minus half the reserve). Measured again every few ms once the estimate comes
   * within the reserve: accepts the runtime made but did not report yet, and descriptors of
   * closed sockets it did not release yet, are seen only by a measurement.
   */
  excess(): number {
    this.#refresh(false);
    if (this.#limit === Infinity) return -Infinity;
    const budget = this.budget;
    if (this.#estimate() <= budget - this.reserve) return -Infinity;
    this.#refresh(true);
    return this.#estimate() - budget;
  }

  #refresh(near: boolean): void {
    const now = this.opts.now ? this.opts.now() : performance.now();
    if (now - this.#measuredAt < (near ? NEAR_MS : MEASURE_MS)) return;
    const source = this.opts.source ?? procDescriptors;
    const limit = source.limit();
    if (!Number.isNaN(limit)) this.#limit = limit;
    const base = Atomics.load(this.#accepted, 0);
    const open = source.open();
    // Cannot be counted: out of descriptors (or no access, then with no limit known either).
    this.#measured = open >= 0 ? open : this.#limit === Infinity ? 0 : this.#limit;
    this.#measuredAt = now;
    this.#base = base;
  }
}

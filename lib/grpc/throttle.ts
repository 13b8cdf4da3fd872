/**
 * A budget of failed connections per source address ({@link FailureThrottle}): an address whose
 * connections keep ending in connection errors has its new connections paced instead of served
 * at once, which bounds an attacker's reconnect churn (and the garbage each reconnect leaves)
 * without touching well-behaved clients, whose connections never fail that way. IPv6 addresses
 * count per /64 ({@link addressBucket}): a host is usually given a whole /64 and can pick a new
 * address in it for every connection.
 * @module
 */

import { isIPv6 } from "node:net";

/**
 * The bucket an address's failures count in: an IPv4 address itself, an IPv6 address's /64
 * (`2001:db8:0:1::/64`, zone dropped).
 */
export function addressBucket(address: string): string {
  const a = address.replace(/%.*$/, "");
  if (!isIPv6(a)) return address;
  const [head, tail] = a.includes("::") ? a.split("::") : [a, undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  // An embedded IPv4 tail (::ffff:1.2.3.4) counts as two groups; only the first four matter.
  const groups = [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0")];
  return groups.slice(0, 4).map((g) => parseInt(g || "0", 16).toString(16)).join(":") + "::/64";
}

interface AddressState {
  /** Failures not yet drained (a leaky bucket draining `perSecond` a second). */
  level: number;
  /** When `level` was last brought up to date. */
  at: number;
  /** When the next paced connection may be served. */
  next: number;
}

/**
 * Counts connections that ended in a connection error, per source address (IPv6: per /64), in a
 * leaky bucket
 * that drains `perSecond` a second. While an address's bucket holds more than `perSecond` (more
 * failures than a second's budget), its new connections are served at most `perSecond` a second
 * ({@link admit} says how long to hold each); one that would wait longer than `maxDelayMs` is
 * refused. Addresses without failures cost nothing; drained ones are forgotten.
 */
export class FailureThrottle {
  #state = new Map<string, AddressState>();
  readonly #interval: number;

  /**
   * @param perSecond failed connections per address and second before pacing (> 0).
   * @param maxDelayMs the longest a paced connection is held before it is refused instead.
   * @param now the clock in ms (tests pass their own).
   */
  constructor(
    readonly perSecond: number,
    readonly maxDelayMs = 2000,
    readonly now: () => number = () => performance.now(),
  ) {
    if (!(perSecond > 0)) throw new RangeError(`perSecond must be > 0, got ${perSecond}`);
    this.#interval = 1000 / perSecond;
  }

  /** Addresses tracked (drained ones are forgotten). */
  get size(): number {
    return this.#state.size;
  }

  /** Records a connection from `address` that ended in a connection error. */
  failed(address: string): void {
    address = addressBucket(address);
    const t = this.now();
    let s = this.#state.get(address);
    if (!s) {
      if (this.#state.size >= 4096) this.#sweep(t);
      this.#state.set(address, s = { level: 0, at: t, next: 0 });
    }
    this.#drain(s, t);
    // Over budget: the next connection waits its turn (it is not served at once).
    if (++s.level > this.perSecond) s.next = Math.max(s.next, t + this.#interval);
  }

  /**
   * How long to hold a new connection from `address` before serving it: 0 at once, a positive
   * number of ms while the address is over budget, -1 to refuse it (it would wait longer than
   * `maxDelayMs`).
   */
  admit(address: string): number {
    address = addressBucket(address);
    const s = this.#state.get(address);
    if (!s) return 0;
    const t = this.now();
    this.#drain(s, t);
    if (s.level <= this.perSecond) {
      if (s.level === 0) this.#state.delete(address);
      return 0;
    }
    const at = Math.max(t, s.next);
    if (at - t > this.maxDelayMs) return -1;
    s.next = at + this.#interval;
    return at - t;
  }

  #drain(s: AddressState, t: number): void {
    s.level = Math.max(0, s.level - (t - s.at) * this.perSecond / 1000);
    s.at = t;
  }

  /** Forgets drained addresses. */
  #sweep(t: number): void {
    for (const [a, s] of this.#state) {
      this.#drain(s, t);
      if (s.level === 0) this.#state.delete(a);
    }
  }
}

/**
 * Bookkeeping of the sustained-churn scenario of `bench/xds.ts`: endpoint changes posted at a
 * steady rate, each adding the address `10.251.<seq >> 8>.<seq & 255>` to one service, and for
 * every simulated proxy the time from a change's post to the first EDS response that carries it
 * (or a later change of the same cluster, which includes it: changes only add endpoints). Latencies
 * go into a 1 ms histogram (10,000 proxies × 3000 changes would be 30 M samples). Beside them, what
 * tells the server's lateness from the simulated proxies' own backlog: for each change the time
 * to the first proxy that has it (the server's turn-around, before any one stream's wait), and for
 * each proxy the longest time between two of its EDS responses (every proxy is sent every change,
 * so a long one is a stream the server left waiting or a socket this process did not read).
 * @module
 */

import type { Section } from "./_ads_sim.ts";

/** The address of churn change `seq` (1-based, < 65536). */
export function churnAddress(seq: number): string {
  return `10.251.${seq >> 8}.${seq & 255}`;
}

const PREFIX = new TextEncoder().encode("10.251.");
const u8IndexOf = Uint8Array.prototype.indexOf;

/** Churn sequence numbers of the addresses found in `bytes` (protobuf strings `10.251.x.y`). */
export function churnSeqsIn(bytes: Uint8Array): number[] {
  const out: number[] = [];
  for (
    let i = u8IndexOf.call(bytes, PREFIX[0]);
    i >= 0;
    i = u8IndexOf.call(bytes, PREFIX[0], i + 1)
  ) {
    let k = 1;
    while (k < PREFIX.length && bytes[i + k] === PREFIX[k]) k++;
    if (k < PREFIX.length || i === 0) continue;
    const len = bytes[i - 1]; // the string field's length byte
    if (len < PREFIX.length + 3 || len > 15 || i + len > bytes.length) continue;
    const seq = octets(bytes, i + PREFIX.length, i + len);
    if (seq >= 0) out.push(seq);
  }
  return out;
}

/** `x * 256 + y` for the text `x.y` (1-3 digits each) in `bytes[from, to)`, else -1. */
function octets(bytes: Uint8Array, from: number, to: number): number {
  let x = -1, y = -1, digits = 0;
  for (let j = from; j < to; j++) {
    const c = bytes[j];
    if (c === 0x2e && x < 0 && digits > 0) {
      x = y;
      y = -1;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39 && digits < 3) {
      y = (y < 0 ? 0 : y * 10) + c - 0x30;
      digits++;
    } else return -1;
  }
  return x >= 0 && digits > 0 ? x * 256 + y : -1;
}

/** A tracker's figures, to merge into another's ({@link ChurnTracker.absorb}). */
export interface ChurnPart {
  hist: Uint32Array;
  delivered: number;
  /** By seq (index 0 unused): the first delivery's latency, ms, NaN for none. */
  first: number[];
  /** Each proxy's longest wait between two EDS responses, ms. */
  quiet: number[];
}

/** Per service, the churn changes posted for it, and what each proxy has received of them. */
export class ChurnTracker {
  /** Post time (performance.now) by seq. */
  readonly posted: number[] = [NaN];
  /** Service index by seq. */
  readonly serviceOf: number[] = [-1];
  /** Seqs by service, ascending. */
  readonly #bySvc = new Map<number, number[]>();
  /** Per proxy: per service, how many of its changes the proxy has. */
  readonly #got = new WeakMap<object, Map<number, number>>();
  /** Per distinct section content: service → highest seq it carries. */
  readonly #sections = new WeakMap<Section, Map<number, number>>();
  /** Latency histogram, 1 ms buckets; the last bucket holds everything beyond. */
  readonly hist = new Uint32Array(120_001);
  /** Deliveries recorded (change × proxy). */
  delivered = 0;
  /** By seq: the latency (ms) of its first delivery, NaN until then. */
  readonly first: number[] = [NaN];
  /** Per proxy: when its last EDS response came, and the longest time between two of them. */
  readonly #quiet = new Map<object, { last: number; longest: number }>();

  /** Records change `seq` (the next one) of service `svc`, posted now. */
  post(svc: number, at: number): number {
    const seq = this.posted.length;
    this.posted.push(at);
    this.first.push(NaN);
    this.serviceOf.push(svc);
    let l = this.#bySvc.get(svc);
    if (!l) this.#bySvc.set(svc, l = []);
    l.push(seq);
    if (this.#early) {
      const early = this.#early;
      this.#early = undefined;
      for (const e of early) {
        if (e.seq === seq) this.#deliver(e.p, new Map([[svc, seq]]), e.at);
        else (this.#early ??= []).push(e);
      }
    }
    return seq;
  }

  /** An EDS response `section` reached proxy `p` at `now`. */
  received(p: object, section: Section, now: number): void {
    const q = this.#quiet.get(p);
    if (!q) this.#quiet.set(p, { last: now, longest: 0 });
    else {
      if (now - q.last > q.longest) q.longest = now - q.last;
      q.last = now;
    }
    let found = this.#sections.get(section);
    if (!found) {
      found = new Map();
      let unknown = false;
      for (const seq of churnSeqsIn(section.bytes)) {
        const svc = this.serviceOf[seq];
        if (svc === undefined) {
          // posted in another isolate and not yet told here: counted when it is (see post())
          if (seq >= this.posted.length) (this.#early ??= []).push({ p, seq, at: now });
          unknown = true;
          continue;
        }
        if ((found.get(svc) ?? 0) < seq) found.set(svc, seq);
      }
      if (!unknown) this.#sections.set(section, found);
    }
    this.#deliver(p, found, now);
  }

  /** Records the deliveries to `p` at `now` of every change up to `max` of each service. */
  #deliver(p: object, found: ReadonlyMap<number, number>, now: number): void {
    if (!found.size) return;
    let got = this.#got.get(p);
    if (!got) this.#got.set(p, got = new Map());
    for (const [svc, max] of found) {
      const list = this.#bySvc.get(svc)!;
      let k = got.get(svc) ?? 0;
      while (k < list.length && list[k] <= max) {
        const ms = Math.round(now - this.posted[list[k]]);
        if (!(this.first[list[k]] <= ms)) this.first[list[k]] = ms;
        this.hist[Math.max(0, Math.min(this.hist.length - 1, ms))]++;
        this.delivered++;
        k++;
      }
      got.set(svc, k);
    }
  }

  /** Responses that carried changes not yet posted here: (proxy, change, when). */
  #early: { p: object; seq: number; at: number }[] | undefined;

  /** The p-th percentile (0-100) of the recorded latencies, ms. */
  percentile(p: number): number {
    if (!this.delivered) return NaN;
    const rank = Math.ceil((p / 100) * this.delivered);
    let n = 0;
    for (let ms = 0; ms < this.hist.length; ms++) {
      n += this.hist[ms];
      if (n >= rank) return ms;
    }
    return Infinity;
  }

  /**
   * Each proxy's longest time between two EDS responses (ms), from its first response in the
   * churn to the last one; ascending.
   */
  longestQuiet(): number[] {
    return [...this.#longest(), ...this.#absorbedQuiet]
      .sort((a, b) => a - b);
  }

  /** The longest wait of each proxy seen here. */
  #longest(): number[] {
    return Array.from(this.#quiet.values(), (q) => q.longest);
  }

  /** What other isolates' trackers of the same changes are merged from (see {@link absorb}). */
  part(): ChurnPart {
    return {
      hist: this.hist,
      delivered: this.delivered,
      first: this.first,
      quiet: this.#longest(),
    };
  }

  /** Adds the deliveries of another tracker of the same changes (another isolate's proxies). */
  absorb(part: ChurnPart): void {
    for (let i = 0; i < part.hist.length; i++) this.hist[i] += part.hist[i];
    this.delivered += part.delivered;
    part.first.forEach((ms, seq) => {
      if (!Number.isNaN(ms) && !(this.first[seq] <= ms)) this.first[seq] = ms;
    });
    this.#absorbedQuiet.push(...part.quiet);
  }

  /** Longest waits of the proxies of absorbed trackers. */
  readonly #absorbedQuiet: number[] = [];

  /** Changes posted. */
  get changes(): number {
    return this.posted.length - 1;
  }
}

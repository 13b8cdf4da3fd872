/**
 * Open connections per source address, counted by the listeners of one port that run in several
 * isolates (SO_REUSEPORT; see `GrpcListenOptions.reusePort`), so that
 * `maxConnectionsPerAddress` bounds what an address holds on the port, not on each listener.
 *
 * One `SharedArrayBuffer`: a lock word, then a hash table of addresses (linear probing, no
 * tombstones: a slot emptied shifts the slots after it back). Each slot keeps one count per
 * listener, so that whoever starts a listener again can forget what the one that died held
 * (`SharedAddressCounts.forget`). Every change takes the lock: a few dozen word reads and
 * writes per accepted or closed connection.
 * @module
 */

/** Longest address kept (bytes of its text: IPv6 with a zone fits). */
const KEY_BYTES = 60;
const KEY_WORDS = KEY_BYTES / 4;
/** Word 0: the lock; word 1: the number of slots. */
const HEADER = 2;

/** A view of a table made by {@link SharedAddressCounts.create}, as listener `index`. */
export class SharedAddressCounts {
  readonly #words: Int32Array;
  readonly #slots: number;
  readonly #listeners: number;
  readonly #stride: number;
  readonly #index: number;
  readonly #key = new Int32Array(1 + KEY_WORDS);

  /**
   * A table for `listeners` listeners with room for `slots` addresses at once (each slot takes
   * 64 bytes and 4 per listener).
   */
  static create(listeners: number, slots: number): SharedArrayBuffer {
    const buffer = new SharedArrayBuffer(4 * (HEADER + slots * (1 + KEY_WORDS + listeners)));
    new Int32Array(buffer)[1] = slots;
    return buffer;
  }

  constructor(readonly buffer: SharedArrayBuffer, listeners: number, index: number) {
    this.#words = new Int32Array(buffer);
    this.#slots = this.#words[1];
    this.#listeners = listeners;
    this.#stride = 1 + KEY_WORDS + listeners;
    this.#index = index;
    if (!(index >= 0 && index < listeners) || this.#slots <= 0) {
      throw new Error(
        `SharedAddressCounts: listener ${index} of ${listeners}, ${this.#slots} slots`,
      );
    }
  }

  /**
   * Counts one more connection of `address` for this listener. Answers the address's connections
   * on every listener, this one included; or -1 when it is not counted here (the table is full,
   * or the address's text is over 60 bytes or not ASCII): the caller then counts it alone.
   */
  add(address: string): number {
    if (!this.#encode(address)) return -1;
    return this.#locked(() => {
      let at = this.#find();
      if (at < 0) {
        at = -at - 1;
        if (at === this.#slots) return -1; // full
        const base = this.#base(at);
        this.#words.set(this.#key, base);
        this.#words.fill(0, base + 1 + KEY_WORDS, base + this.#stride);
      }
      const counts = this.#base(at) + 1 + KEY_WORDS;
      this.#words[counts + this.#index]++;
      let sum = 0;
      for (let i = 0; i < this.#listeners; i++) sum += this.#words[counts + i];
      return sum;
    });
  }

  /** Counts one connection of `address` less for this listener (one {@link add} counted). */
  remove(address: string): void {
    if (!this.#encode(address)) return;
    this.#locked(() => {
      const at = this.#find();
      if (at < 0) return;
      const counts = this.#base(at) + 1 + KEY_WORDS;
      if (this.#words[counts + this.#index] > 0) this.#words[counts + this.#index]--;
      this.#emptyIfUnused(at);
    });
  }

  /** The connections `address` holds on every listener (0 when none, or not counted). */
  count(address: string): number {
    if (!this.#encode(address)) return 0;
    return this.#locked(() => {
      const at = this.#find();
      if (at < 0) return 0;
      const counts = this.#base(at) + 1 + KEY_WORDS;
      let sum = 0;
      for (let i = 0; i < this.#listeners; i++) sum += this.#words[counts + i];
      return sum;
    });
  }

  /** Addresses with connections (tests, debugging). */
  get size(): number {
    return this.#locked(() => {
      let n = 0;
      for (let at = 0; at < this.#slots; at++) if (this.#words[this.#base(at)] !== 0) n++;
      return n;
    });
  }

  /**
   * Forgets what listener `listener` of the table in `buffer` counted (it died; its connections
   * closed with it): call it before that listener is started again.
   */
  static forget(buffer: SharedArrayBuffer, listeners: number, listener: number): void {
    new SharedAddressCounts(buffer, listeners, listener).#forget(listener);
  }

  #forget(listener: number): void {
    this.#locked(() => {
      for (let at = 0; at < this.#slots;) {
        const base = this.#base(at);
        if (this.#words[base] !== 0) this.#words[base + 1 + KEY_WORDS + listener] = 0;
        // an emptied slot may take the next one's place: look at this slot again
        if (this.#words[base] !== 0 && this.#emptyIfUnused(at)) continue;
        at++;
      }
    });
  }

  #base(at: number): number {
    return HEADER + at * this.#stride;
  }

  /** Puts `address` in #key: its length + 1, then its bytes. False when it does not fit. */
  #encode(address: string): boolean {
    if (address.length > KEY_BYTES) return false;
    const key = this.#key;
    key.fill(0);
    key[0] = address.length + 1;
    const bytes = new Uint8Array(key.buffer, 4);
    for (let i = 0; i < address.length; i++) {
      const c = address.charCodeAt(i);
      if (c > 0x7f) return false;
      bytes[i] = c;
    }
    return true;
  }

  /** The home slot of the key at word `from` of `words`. */
  #home(words: Int32Array, from: number): number {
    let h = 0x811c9dc5;
    for (let i = 0; i <= KEY_WORDS; i++) h = Math.imul(h ^ words[from + i], 0x01000193);
    return (h >>> 0) % this.#slots;
  }

  /** The slot of #key, or -(insertion slot + 1) (-(slots + 1) when the table is full). */
  #find(): number {
    const w = this.#words, key = this.#key;
    const home = this.#home(key, 0);
    for (let n = 0; n < this.#slots; n++) {
      const at = (home + n) % this.#slots;
      const base = this.#base(at);
      if (w[base] === 0) return -at - 1;
      let same = true;
      for (let i = 0; i <= KEY_WORDS && same; i++) same = w[base + i] === key[i];
      if (same) return at;
    }
    return -this.#slots - 1;
  }

  /** Empties slot `at` when no listener counts it, shifting the slots after it back. */
  #emptyIfUnused(at: number): boolean {
    const w = this.#words;
    const counts = this.#base(at) + 1 + KEY_WORDS;
    for (let i = 0; i < this.#listeners; i++) if (w[counts + i] !== 0) return false;
    let hole = at;
    for (
      let n = 1, j = (at + 1) % this.#slots;
      n < this.#slots && w[this.#base(j)] !== 0;
      n++, j = (j + 1) % this.#slots
    ) {
      const home = this.#home(w, this.#base(j));
      // j may move to the hole when its home is not cyclically within (hole, j]
      const within = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (within) continue;
      w.copyWithin(this.#base(hole), this.#base(j), this.#base(j) + this.#stride);
      hole = j;
    }
    w.fill(0, this.#base(hole), this.#base(hole) + this.#stride);
    return true;
  }

  #locked<T>(fn: () => T): T {
    const w = this.#words;
    while (Atomics.compareExchange(w, 0, 0, 1) !== 0) {
      // held by another isolate for a few dozen word operations
    }
    try {
      return fn();
    } finally {
      Atomics.store(w, 0, 0);
    }
  }
}

/**
 * Compressed attributes (`proto/mixer/v1/mixer.proto`): decoding into plain values, encoding
 * (clients, tests, benchmarks), and the bag that records which attributes a decision read.
 * @module
 */

import type { AttributeBag, AttributeManifest, Value } from "../expr/mod.ts";
import { GLOBAL_DICTIONARY, GLOBAL_INDEX } from "./dictionary.ts";
import type {
  AttributeMatch,
  CompressedAttributes,
  ProtoTime,
  ReferencedAttributes,
} from "./proto.ts";

/** A bad index or value in compressed attributes. */
export class AttributeError extends Error {
  override name = "AttributeError";
}

/** Resolves word indices: ≥ 0 global dictionary (first `globalCount` words), < 0 `words`. */
export class Dictionary {
  readonly #words: readonly string[];
  readonly #globalCount: number;
  /** `globalCount` 0 (unset) means the whole global dictionary. */
  constructor(words: readonly string[], globalCount = 0) {
    this.#words = words;
    this.#globalCount = globalCount > 0
      ? Math.min(globalCount, GLOBAL_DICTIONARY.length)
      : GLOBAL_DICTIONARY.length;
  }
  /** The word at `index`; throws AttributeError when there is none. */
  word(index: number | string): string {
    const i = Number(index);
    if (!Number.isInteger(i)) throw new AttributeError(`Bad word index ${JSON.stringify(index)}`);
    if (i >= 0) {
      if (i < this.#globalCount) return GLOBAL_DICTIONARY[i];
      throw new AttributeError(
        `Word index ${i} is beyond the global dictionary (${this.#globalCount} words)`,
      );
    }
    const w = this.#words[-i - 1];
    if (w === undefined) {
      throw new AttributeError(
        `Word index ${i} is beyond the message words (${this.#words.length})`,
      );
    }
    return w;
  }
}

/** A protobuf Timestamp or Duration in milliseconds. */
export function time(t: ProtoTime | undefined): number {
  return (Number(t?.seconds ?? 0) * 1000) + Number(t?.nanos ?? 0) / 1e6;
}

/**
 * Decodes compressed attributes into `into` (which may hold a previous bag: Report deltas).
 * `defaultWords` replace `words` when the message has none.
 * @throws {AttributeError} on an unknown index.
 */
export function decompress(
  ca: CompressedAttributes | undefined,
  globalWordCount = 0,
  into: Map<string, Value> = new Map(),
  defaultWords: readonly string[] = [],
): Map<string, Value> {
  if (!ca) return into;
  const dict = new Dictionary(ca.words?.length ? ca.words : defaultWords, globalWordCount);
  const each = <T>(m: Record<string, T> | undefined, f: (v: T) => Value) => {
    if (!m) return;
    for (const k in m) into.set(dict.word(k), f(m[k]));
  };
  each(ca.strings, (v) => dict.word(v));
  each(ca.int64s, (v) => Number(v));
  each(ca.doubles, (v) => Number(v));
  each(ca.bools, (v) => Boolean(v));
  each(ca.timestamps, (v) => new Date(time(v)));
  each(ca.durations, (v) => time(v));
  each(ca.bytes, (v) => new Uint8Array(v));
  each(ca.string_maps, (v) => {
    const out: Record<string, string> = {};
    for (const k in v.entries ?? {}) out[dict.word(k)] = dict.word(v.entries![k]);
    return out;
  });
  return into;
}

/** Builds compressed attributes, putting words not in the global dictionary in `words`. */
export class Compressor {
  readonly words: string[] = [];
  readonly #local = new Map<string, number>();
  /** The index of `w` (global when known, else a new or existing message word). */
  index(w: string): number {
    const g = GLOBAL_INDEX.get(w);
    if (g !== undefined) return g;
    let l = this.#local.get(w);
    if (l === undefined) {
      this.words.push(w);
      l = -this.words.length;
      this.#local.set(w, l);
    }
    return l;
  }
}

function protoTime(ms: number): ProtoTime {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

/**
 * Compresses attribute values. Numbers are INT64 unless `manifest` types them DOUBLE or DURATION
 * (milliseconds).
 */
export function compress(
  values: Readonly<Record<string, Value>>,
  manifest: AttributeManifest = {},
): CompressedAttributes {
  const c = new Compressor();
  const out: Required<CompressedAttributes> = {
    words: c.words,
    strings: {},
    int64s: {},
    doubles: {},
    bools: {},
    timestamps: {},
    durations: {},
    bytes: {},
    string_maps: {},
  };
  for (const [name, v] of Object.entries(values)) {
    const k = c.index(name);
    if (typeof v === "string") out.strings[k] = c.index(v);
    else if (typeof v === "boolean") out.bools[k] = v;
    else if (typeof v === "number") {
      const t = manifest[name];
      if (t === "DOUBLE") out.doubles[k] = v;
      else if (t === "DURATION") out.durations[k] = protoTime(v);
      else out.int64s[k] = v;
    } else if (v instanceof Date) out.timestamps[k] = protoTime(v.getTime());
    else if (v instanceof Uint8Array) out.bytes[k] = v;
    else {
      const entries: Record<string, number> = {};
      for (const [mk, mv] of Object.entries(v)) entries[c.index(mk)] = c.index(mv);
      out.string_maps[k] = { entries };
    }
  }
  return out;
}

/**
 * A bag that records each attribute looked up and whether it was present, for the
 * `referenced_attributes` of a Check response.
 */
export class TrackingBag implements AttributeBag {
  readonly #values: ReadonlyMap<string, Value>;
  readonly #seen = new Map<string, boolean>();
  /** name → key → present, for map keys read one by one. */
  readonly #keys = new Map<string, Map<string, boolean>>();
  /** Wraps decoded values. */
  constructor(values: ReadonlyMap<string, Value>) {
    this.#values = values;
  }
  /** The value of `name`, recording the lookup. */
  get(name: string): Value | undefined {
    const v = this.#values.get(name);
    this.#seen.set(name, v !== undefined);
    return v;
  }
  /** The value at `key` of map `name`, recording only that key (or the map's absence). */
  getKey(name: string, key: string): { map: boolean; value: string | undefined } {
    const m = this.#values.get(name);
    if (m === undefined || typeof m !== "object" || m instanceof Date || m instanceof Uint8Array) {
      this.#seen.set(name, false);
      return { map: false, value: undefined };
    }
    const r = m as Readonly<Record<string, string>>;
    const value = Object.hasOwn(r, key) ? r[key] : undefined;
    let keys = this.#keys.get(name);
    if (!keys) this.#keys.set(name, keys = new Map());
    keys.set(key, value !== undefined);
    return { map: true, value };
  }
  /** The values (without recording). */
  get values(): ReadonlyMap<string, Value> {
    return this.#values;
  }
  /**
   * What was looked up so far: EXACT for present attributes (and map keys, with `map_key`),
   * ABSENCE for absent ones.
   */
  referenced(): ReferencedAttributes {
    const c = new Compressor();
    const matches: AttributeMatch[] = [];
    const byName = (a: [string, unknown], b: [string, unknown]) => (a[0] < b[0] ? -1 : 1);
    for (const [name, present] of [...this.#seen].sort(byName)) {
      matches.push({ name: c.index(name), condition: present ? "EXACT" : "ABSENCE" });
    }
    for (const [name, keys] of [...this.#keys].sort(byName)) {
      if (this.#seen.get(name)) continue; // the whole map was read
      for (const [key, present] of [...keys].sort(byName)) {
        matches.push({
          name: c.index(name),
          condition: present ? "EXACT" : "ABSENCE",
          map_key: c.index(key),
        });
      }
    }
    return { words: c.words, attribute_matches: matches };
  }
}

/**
 * The Check call's messages encoded and decoded by hand (`proto/mixer/v1/mixer.proto`): the
 * policy server's hot path. A `CheckRequest` decodes straight into the plain object that
 * proto-loader gives with {@link MIXER_LOADER_OPTIONS} (snake_case names, int64 as numbers, maps as
 * objects keyed by the decimal key), without protobufjs's message objects and their conversion;
 * a `CheckResponse` is written into one buffer. Measured on the policy benchmark's Check: a third
 * of the memory the server allocated per Check went to protobufjs's decode and conversion, and
 * young-generation garbage collections are what delays the slowest Checks.
 *
 * Both follow the protobuf encoding rules (https://protobuf.dev/programming-guides/encoding/):
 * unknown fields of any wire type are skipped, a repeated field's last map key wins, a map entry
 * missing its key or value takes the default, and a field whose wire type does not match the
 * schema is an error (protobufjs would misread it).
 * @module
 */

import type { Value } from "../expr/mod.ts";
import {
  expectWire as expect,
  I64,
  LEN,
  Reader,
  VARINT,
  varintSize,
  WireError,
  writeInt64,
  writeVarint,
  zigzag32,
} from "../protowire/mod.ts";
import { Dictionary, time as ms } from "./attributes.ts";
import type {
  CheckRequest,
  CheckResponse,
  CompressedAttributes,
  ProtoTime,
  ReferencedAttributes,
} from "./proto.ts";

/** A `CheckRequest` that is not a well-formed encoding (protowire's, shared by every codec). */
export { WireError };

/** Reads a message whose fields 1 and 2 are varints, each with `read`; others are skipped. */
function twoVarints(r: Reader, what: string, read: (no: 1 | 2) => void): void {
  while (r.pos < r.end) {
    const tag = r.tag(), no = tag >>> 3, wire = tag & 7;
    if (no === 1 || no === 2) {
      expect(no, wire, VARINT, what);
      read(no);
    } else r.skip(wire);
  }
}

function time(r: Reader): ProtoTime {
  const out: ProtoTime = {};
  twoVarints(r, "Timestamp/Duration", (no) => {
    if (no === 1) out.seconds = r.int64();
    else out.nanos = r.int32();
  });
  return out;
}

/**
 * Reads one map entry of `r`'s current field into `into`: key (field 1, sint32 or string) and
 * value (field 2) read by `value`, each default when absent.
 */
function entry<K extends number | string, V>(
  r: Reader,
  into: Record<string, V>,
  key: (r: Reader) => K,
  keyWire: number,
  value: (r: Reader) => V,
  valueWire: number,
  empty: () => V,
  what: string,
): void {
  const e = r.sub();
  let k: K | undefined, v: V | undefined;
  while (e.pos < e.end) {
    const tag = e.tag(), no = tag >>> 3, wire = tag & 7;
    if (no === 1) {
      expect(no, wire, keyWire, what);
      k = key(e);
    } else if (no === 2) {
      expect(no, wire, valueWire, what);
      v = value(e);
    } else e.skip(wire);
  }
  into[String(k ?? (keyWire === LEN ? "" : 0))] = v ?? empty();
}

const sint32 = (r: Reader) => r.sint32();
const int64 = (r: Reader) => r.int64();
const double = (r: Reader) => r.double();
const bool = (r: Reader) => r.bool();
const bytes = (r: Reader) => r.bytes();
const string = (r: Reader) => r.string();
const subTime = (r: Reader) => time(r.sub());
const subStringMap = (r: Reader) => stringMap(r.sub());
const subQuota = (r: Reader) => quotaParams(r.sub());
const zero = () => 0;
const isFalse = () => false;
const empty = () => ({});
const noBytes = () => new Uint8Array();

/** The map fields of `CompressedAttributes` by field number: name, value reader, wire type, default. */
const MAPS: { name: string; read: (r: Reader) => unknown; wire: number; empty: () => unknown }[] =
  [];
MAPS[2] = { name: "strings", read: sint32, wire: VARINT, empty: zero };
MAPS[3] = { name: "int64s", read: int64, wire: VARINT, empty: zero };
MAPS[4] = { name: "doubles", read: double, wire: I64, empty: zero };
MAPS[5] = { name: "bools", read: bool, wire: VARINT, empty: isFalse };
MAPS[6] = { name: "timestamps", read: subTime, wire: LEN, empty };
MAPS[7] = { name: "durations", read: subTime, wire: LEN, empty };
MAPS[8] = { name: "bytes", read: bytes, wire: LEN, empty: noBytes };
MAPS[9] = { name: "string_maps", read: subStringMap, wire: LEN, empty };

function stringMap(r: Reader): { entries?: Record<string, number> } {
  const out: { entries?: Record<string, number> } = {};
  while (r.pos < r.end) {
    const tag = r.tag(), no = tag >>> 3, wire = tag & 7;
    if (no === 1) {
      expect(no, wire, LEN, "StringMap");
      entry(r, out.entries ??= {}, sint32, VARINT, sint32, VARINT, zero, "StringMap.entries");
    } else r.skip(wire);
  }
  return out;
}

/** Decodes `CompressedAttributes` from `r` (the reader of its payload). */
function compressedAttributes(r: Reader): CompressedAttributes {
  const out: CompressedAttributes = {};
  const what = "CompressedAttributes";
  while (r.pos < r.end) {
    const tag = r.tag(), no = tag >>> 3, wire = tag & 7;
    if (no > 9) {
      r.skip(wire);
      continue;
    }
    expect(no, wire, LEN, what);
    if (no === 1) {
      (out.words ??= []).push(r.string());
      continue;
    }
    const f = MAPS[no];
    // deno-lint-ignore no-explicit-any
    const into = ((out as any)[f.name] ??= {}) as Record<string, unknown>;
    entry(r, into, sint32, VARINT, f.read, f.wire, f.empty, `${what}.${f.name}`);
  }
  return out;
}

type QuotaParams = { amount?: number; best_effort?: boolean };

function quotaParams(r: Reader): QuotaParams {
  const out: QuotaParams = {};
  twoVarints(r, "QuotaParams", (no) => {
    if (no === 1) out.amount = r.int64();
    else out.best_effort = r.bool();
  });
  return out;
}

/**
 * Decodes a `CheckRequest` into the object proto-loader gives with {@link MIXER_LOADER_OPTIONS}:
 * only the fields present on the wire are set.
 * @throws {WireError} when `b` is not a well-formed `CheckRequest`.
 */
export function decodeCheckRequest(b: Uint8Array): CheckRequest {
  const out: CheckRequest = {};
  checkRequest(new Reader(b), out, (r) => {
    // A repeated occurrence of a message field merges into the first (protobuf's rule).
    out.attributes = merge(out.attributes, compressedAttributes(r.sub()));
  });
  return out;
}

/** Reads the fields of a `CheckRequest` into `out`, but `attributes`, which go to `attributes`. */
function checkRequest(
  r: Reader,
  out: Omit<CheckRequest, "attributes">,
  attributes: (r: Reader) => void,
): void {
  while (r.pos < r.end) {
    const tag = r.tag(), no = tag >>> 3, wire = tag & 7;
    if (no === 1) {
      expect(no, wire, LEN, "CheckRequest");
      attributes(r);
    } else if (no === 2) {
      expect(no, wire, VARINT, "CheckRequest");
      out.global_word_count = r.uint32();
    } else if (no === 3) {
      expect(no, wire, LEN, "CheckRequest");
      out.deduplication_id = r.string();
    } else if (no === 4) {
      expect(no, wire, LEN, "CheckRequest");
      entry(r, out.quotas ??= {}, string, LEN, subQuota, LEN, empty, "CheckRequest.quotas");
    } else r.skip(wire);
  }
}

/** A `CheckRequest` with its attributes decompressed: what the policy server's Check needs. */
export interface DecodedCheck {
  /** The attribute values by name, as {@link decompress} gives them. */
  values: Map<string, Value>;
  global_word_count?: number;
  deduplication_id?: string;
  quotas?: Record<string, QuotaParams>;
}

/**
 * Decodes a `CheckRequest` and decompresses its attributes in the same pass over the bytes, with
 * no intermediate `CompressedAttributes` object: the same values as
 * `decompress(decodeCheckRequest(b).attributes, global_word_count)`.
 * @throws {WireError} when `b` is not a well-formed `CheckRequest`.
 * @throws {AttributeError} on a word index that the dictionaries do not hold.
 */
export function decodeCheck(b: Uint8Array): DecodedCheck {
  const out: DecodedCheck = { values: new Map() };
  const spans: number[] = [];
  checkRequest(new Reader(b), out, (r) => spans.push(...r.span()));
  if (spans.length === 0) return out;
  // The message words first: the maps' indices refer to them, wherever they are in the bytes.
  const words: string[] = [];
  for (let i = 0; i < spans.length; i += 2) {
    const a = new Reader(b, spans[i], spans[i + 1]);
    while (a.pos < a.end) {
      const tag = a.tag(), no = tag >>> 3, wire = tag & 7;
      if (no <= 9) expect(no, wire, LEN, "CompressedAttributes");
      if (no === 1) words.push(a.string());
      else a.skip(wire);
    }
  }
  const dict = new Dictionary(words, out.global_word_count ?? 0);
  for (let i = 0; i < spans.length; i += 2) {
    const a = new Reader(b, spans[i], spans[i + 1]);
    while (a.pos < a.end) {
      const tag = a.tag(), no = tag >>> 3, wire = tag & 7;
      if (no < 2 || no > 9) {
        a.skip(wire);
        continue;
      }
      // A map entry: key (field 1, sint32) and value (field 2), each default when absent.
      const outer = a.enter();
      let key = 0, value: Value | undefined;
      while (a.pos < a.end) {
        const t = a.tag(), f = t >>> 3, w = t & 7;
        if (f === 1) {
          expect(f, w, VARINT, `CompressedAttributes.${MAPS[no].name}`);
          key = a.sint32();
        } else if (f === 2) {
          expect(f, w, MAPS[no].wire, `CompressedAttributes.${MAPS[no].name}`);
          value = mapValue(a, no, dict);
        } else a.skip(w);
      }
      a.leave(outer);
      out.values.set(dict.word(key), value ?? defaultValue(no, dict));
    }
  }
  return out;
}

/** The value of a `CompressedAttributes` map entry of field `no`, decompressed. */
function mapValue(e: Reader, no: number, dict: Dictionary): Value {
  switch (no) {
    case 2:
      return dict.word(e.sint32());
    case 3:
      return e.int64();
    case 4:
      return e.double();
    case 5:
      return e.bool();
    case 6:
      return new Date(ms(time(e.sub())));
    case 7:
      return ms(time(e.sub()));
    case 8:
      return e.bytes();
    default: {
      const m: Record<string, string> = {};
      const map = e.enter();
      while (e.pos < e.end) {
        const tag = e.tag(), f = tag >>> 3, w = tag & 7;
        if (f !== 1) {
          e.skip(w);
          continue;
        }
        expect(f, w, LEN, "StringMap");
        const entry = e.enter();
        let k = 0, v = 0;
        while (e.pos < e.end) {
          const t = e.tag(), g = t >>> 3, xw = t & 7;
          if (g === 1 || g === 2) {
            expect(g, xw, VARINT, "StringMap.entries");
            if (g === 1) k = e.sint32();
            else v = e.sint32();
          } else e.skip(xw);
        }
        e.leave(entry);
        m[dict.word(k)] = dict.word(v);
      }
      e.leave(map);
      return m;
    }
  }
}

/** The decompressed value of a map entry of field `no` that has no value: proto3's default. */
function defaultValue(no: number, dict: Dictionary): Value {
  switch (no) {
    case 2:
      return dict.word(0);
    case 3:
    case 4:
    case 7:
      return 0;
    case 5:
      return false;
    case 6:
      return new Date(0);
    case 8:
      return new Uint8Array();
    default:
      return {};
  }
}

/** Protobuf's merge of two occurrences of a `CompressedAttributes` field. */
function merge(a: CompressedAttributes | undefined, b: CompressedAttributes): CompressedAttributes {
  if (!a) return b;
  const out: CompressedAttributes = { ...a };
  for (const k of Object.keys(b) as (keyof CompressedAttributes)[]) {
    if (k === "words") out.words = [...(a.words ?? []), ...b.words!];
    // deno-lint-ignore no-explicit-any
    else out[k] = { ...(a[k] as any), ...(b[k] as any) };
  }
  return out;
}

const te = new TextEncoder();

/**
 * Writes protobuf fields into one buffer that grows as needed, a nested message's length
 * written after its payload (one byte reserved, moved when it needs more): no sizing pass.
 */
class Writer {
  buf = new Uint8Array(256);
  pos = 0;
  #ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }
  /** A non-negative integer below 2^53. */
  varint(n: number): void {
    this.#ensure(10);
    this.pos = writeVarint(this.buf, this.pos, n);
  }
  tag(no: number, wire: number): void {
    this.varint((no << 3) | wire);
  }
  /** int32/int64 field (negative numbers as 10-byte two's complement), omitted when 0. */
  int(no: number, n: number): void {
    if (n === 0) return;
    this.tag(no, VARINT);
    this.#ensure(10);
    this.pos = writeInt64(this.buf, this.pos, n);
  }
  /** sint32 field, omitted when 0. */
  sint(no: number, n: number): void {
    if (n === 0) return;
    this.tag(no, VARINT);
    this.varint(zigzag32(n));
  }
  /** string field, omitted when empty. */
  string(no: number, s: string | undefined): void {
    if (!s) return;
    this.tag(no, LEN);
    this.#ensure(5 + s.length * 3);
    const at = this.pos;
    this.pos += 1;
    const { written } = te.encodeInto(s, this.buf.subarray(this.pos));
    this.pos += written;
    this.#length(at);
  }
  /** string field, written even when empty (repeated elements, map keys). */
  stringAlways(no: number, s: string): void {
    if (s) return this.string(no, s);
    this.tag(no, LEN);
    this.varint(0);
  }
  /** Starts a length-delimited field; returns what {@link end} needs. */
  begin(no: number): number {
    this.tag(no, LEN);
    this.#ensure(1);
    return this.pos++;
  }
  end(at: number): void {
    this.#length(at);
  }
  /** Writes the length of the payload that starts at `at + 1` into the byte reserved at `at`. */
  #length(at: number): void {
    const len = this.pos - at - 1;
    const size = varintSize(len);
    if (size > 1) {
      this.#ensure(size - 1);
      this.buf.copyWithin(at + size, at + 1, this.pos);
      this.pos += size - 1;
    }
    writeVarint(this.buf, at, len);
  }
}

const CONDITION = { CONDITION_UNSPECIFIED: 0, ABSENCE: 1, EXACT: 2, REGEX: 3 } as const;

function writeTime(w: Writer, no: number, t: ProtoTime | undefined): void {
  if (!t) return;
  const at = w.begin(no);
  w.int(1, Number(t.seconds ?? 0));
  w.int(2, Number(t.nanos ?? 0));
  w.end(at);
}

function writeReferenced(w: Writer, no: number, ref: ReferencedAttributes | undefined): void {
  if (!ref) return;
  const at = w.begin(no);
  for (const word of ref.words) w.stringAlways(1, word); // a repeated string keeps empty ones
  for (const m of ref.attribute_matches) {
    const a = w.begin(2);
    w.sint(1, m.name);
    w.int(2, CONDITION[m.condition] ?? 0);
    w.string(3, m.regex);
    w.sint(4, m.map_key ?? 0);
    w.end(a);
  }
  w.end(at);
}

/** Encodes a `CheckResponse` (the fields in field-number order, proto3 defaults omitted). */
export function encodeCheckResponse(m: CheckResponse): Uint8Array {
  const w = new Writer();
  const p = m.precondition;
  const at = w.begin(2);
  const s = w.begin(1);
  w.int(1, p.status.code);
  w.string(2, p.status.message);
  w.end(s);
  writeTime(w, 2, p.valid_duration);
  w.int(3, p.valid_use_count);
  writeReferenced(w, 5, p.referenced_attributes);
  w.end(at);
  for (const [name, q] of Object.entries(m.quotas ?? {})) {
    const e = w.begin(3);
    w.stringAlways(1, name); // a map entry carries its key, as protobufjs writes it
    const v = w.begin(2);
    writeTime(w, 1, q.valid_duration);
    w.int(2, q.granted_amount);
    writeReferenced(w, 5, q.referenced_attributes);
    w.end(v);
    w.end(e);
  }
  return w.buf.subarray(0, w.pos);
}

/**
 * The hand-written Check encoding against protobufjs (proto-loader, the reference used
 * everywhere else): random messages decoded by both give the same object, responses encoded by
 * ours decode in protobufjs to what protobufjs's own encoding gives, and malformed input is refused
 * with a WireError. The seed is printed; replay one with `FUZZ_SEED=<seed>`.
 */
import assert from "node:assert/strict";
import { type Rng, rng, runSeed } from "../../tests/fuzz/_gen.ts";
import {
  type AttributeMatch,
  type CheckRequest,
  type CheckResponse,
  type CompressedAttributes,
  MIXER_SERVICE,
  mixerCodec,
} from "./proto.ts";
import { decodeCheck, decodeCheckRequest, encodeCheckResponse, WireError } from "./wire.ts";
import { AttributeError, decompress } from "./attributes.ts";
import { GLOBAL_DICTIONARY } from "./dictionary.ts";

const CASES = 400;

// deno-lint-ignore no-explicit-any
async function protobufjs(): Promise<any> {
  return (await mixerCodec()).definition[MIXER_SERVICE].Check;
}

/** This run's generator (its seed printed) and protobufjs's Check codec. */
async function fuzz() {
  const seed = runSeed();
  console.log(`FUZZ_SEED=${seed}`);
  return { r: rng(seed), pj: await protobufjs() };
}

const word = (r: Rng) =>
  r.pick(["", "a", "source.name", "héllo wörld", "日本語", "x".repeat(40), "😀 emoji", "k\u0000z"]);
const sint32 = (r: Rng) =>
  r.pick([0, 1, -1, 63, -64, 64, 2 ** 31 - 1, -(2 ** 31), r.int(1000) - 500, r.int(2 ** 20)]);
const int64 = (r: Rng) =>
  r.pick([0, 1, -1, 2 ** 31, -(2 ** 32) - 5, 2 ** 53 - 1, -(2 ** 53) + 1, r.int(1e9) - 5e8]);
const time = (r: Rng) => {
  const t: { seconds?: number; nanos?: number } = {};
  if (r.chance(0.8)) t.seconds = int64(r);
  if (r.chance(0.8)) t.nanos = r.pick([0, 1, 999_999_999, -5, r.int(1e9)]);
  return t;
};
function map<V>(r: Rng, value: (r: Rng) => V): Record<string, V> {
  const m: Record<string, V> = {};
  for (let i = r.int(4); i > 0; i--) m[sint32(r)] = value(r);
  return m;
}

function attributes(r: Rng): CompressedAttributes {
  const a: CompressedAttributes = {};
  if (r.chance(0.7)) a.words = Array.from({ length: r.int(5) }, () => word(r));
  if (r.chance(0.7)) a.strings = map(r, sint32);
  if (r.chance(0.5)) a.int64s = map(r, int64);
  if (r.chance(0.5)) {
    a.doubles = map(r, (r) => r.pick([0, -0, 0.5, -1e300, Infinity, -Infinity, NaN, r.next()]));
  }
  if (r.chance(0.5)) a.bools = map(r, (r) => r.chance(0.5));
  if (r.chance(0.5)) a.timestamps = map(r, time);
  if (r.chance(0.5)) a.durations = map(r, time);
  if (r.chance(0.5)) {
    a.bytes = map(r, (r) => Uint8Array.from({ length: r.int(6) }, () => r.int(256)));
  }
  if (r.chance(0.5)) {
    a.string_maps = map(r, (r) => (r.chance(0.8) ? { entries: map(r, sint32) } : {}));
  }
  return a;
}

function request(r: Rng): CheckRequest {
  const m: CheckRequest = {};
  if (r.chance(0.9)) m.attributes = attributes(r);
  if (r.chance(0.7)) m.global_word_count = r.pick([0, 1, 202, 2 ** 32 - 1, r.int(1000)]);
  if (r.chance(0.5)) m.deduplication_id = word(r);
  if (r.chance(0.5)) {
    m.quotas = {};
    for (let i = r.int(3); i >= 0; i--) {
      const q: { amount?: number; best_effort?: boolean } = {};
      if (r.chance(0.8)) q.amount = int64(r);
      if (r.chance(0.5)) q.best_effort = r.chance(0.5);
      m.quotas[word(r)] = q;
    }
  }
  return m;
}

/** Bytes as plain Uint8Arrays (protobufjs gives Buffers), for deepEqual. */
function plain(x: unknown): unknown {
  if (x instanceof Uint8Array) return Uint8Array.from(x);
  if (Array.isArray(x)) return x.map(plain);
  if (x && typeof x === "object") {
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, plain(v)]));
  }
  return x;
}

Deno.test("decodeCheckRequest gives what protobufjs gives for random CheckRequests", async () => {
  const { r, pj } = await fuzz();
  for (let i = 0; i < CASES; i++) {
    const wire: Uint8Array = pj.requestSerialize(request(r));
    assert.deepEqual(
      plain(decodeCheckRequest(wire)),
      plain(pj.requestDeserialize(wire)),
      `case ${i}`,
    );
  }
});

Deno.test("decodeCheckRequest skips unknown fields of every wire type and merges a repeated attributes field", async () => {
  const pj = await protobufjs();
  const base: Uint8Array = pj.requestSerialize({
    attributes: { words: ["a"], strings: { "-1": 5 } },
    global_word_count: 7,
  });
  const unknown = Uint8Array.from([
    ...[0x78, 0x96, 0x01], // field 15 varint
    ...[0x81, 0x01, 1, 2, 3, 4, 5, 6, 7, 8], // field 16 fixed64
    ...[0x8a, 0x01, 0x02, 0xff, 0xfe], // field 17 bytes
    ...[0x95, 0x01, 1, 2, 3, 4], // field 18 fixed32
  ]);
  const second = pj.requestSerialize({ attributes: { words: ["b"], strings: { "-2": 6 } } });
  const got = decodeCheckRequest(Uint8Array.from([...unknown, ...base, ...unknown, ...second]));
  assert.deepEqual(plain(got), {
    attributes: { words: ["a", "b"], strings: { "-1": 5, "-2": 6 } },
    global_word_count: 7,
  });
  // A map entry without key or value takes the defaults: {"0": 0}.
  assert.deepEqual(decodeCheckRequest(Uint8Array.from([0x0a, 0x02, 0x12, 0x00])), {
    attributes: { strings: { "0": 0 } },
  });
});

Deno.test("decodeCheckRequest refuses malformed input with a WireError that says where", async () => {
  const pj = await protobufjs();
  const r = rng(7);
  const refused = (b: Uint8Array, why: RegExp) =>
    assert.throws(
      () => decodeCheckRequest(b),
      (e) => e instanceof WireError && why.test(e.message),
    );
  refused(Uint8Array.from([0x0a, 0x05, 0x0a]), /field of 5 bytes at byte 2 runs past the end/);
  refused(Uint8Array.from([0x10, 0x80]), /truncated varint at byte 2/);
  refused(Uint8Array.from([0x10, ...Array(10).fill(0xff), 0x01]), /varint longer than 10 bytes/);
  refused(Uint8Array.from([0x12, 0x00]), /CheckRequest field 2 has wire type 2, want 0/);
  refused(
    Uint8Array.from([0x0a, 0x02, 0x10, 0x01]),
    /CompressedAttributes field 2 has wire type 0, want 2/,
  );
  refused(Uint8Array.from([0x0a, 0x03, 0x22, 0x01, 0x08]), /truncated varint|runs past the end/);
  refused(Uint8Array.from([0x7b]), /unsupported wire type 3 at byte 1/);
  refused(Uint8Array.from([0x02, 0x00]), /^field number 0 at byte 0$/);
  // Every strict prefix of a valid encoding decodes or is refused, never anything else.
  for (let i = 0; i < 50; i++) {
    const wire: Uint8Array = pj.requestSerialize(request(r));
    for (let n = 0; n < wire.length; n++) {
      try {
        decodeCheckRequest(wire.subarray(0, n));
      } catch (e) {
        assert.ok(e instanceof WireError, `prefix ${n} of case ${i}: ${e}`);
      }
    }
  }
});

/** Drops proto3 default values (absent and default are the same on the wire). */
function canon(x: unknown): unknown {
  if (x instanceof Uint8Array) return Uint8Array.from(x);
  if (Array.isArray(x)) return x.map(canon);
  if (x && typeof x === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(x)) {
      const c = canon(v);
      if (c === 0 || c === "" || c === false || c === "CONDITION_UNSPECIFIED") continue;
      out[k] = c;
    }
    return out;
  }
  return x;
}

function response(r: Rng): CheckResponse {
  const ref = () => ({
    words: Array.from({ length: r.int(4) }, () => word(r)),
    attribute_matches: Array.from({ length: r.int(4) }, () => {
      const match: AttributeMatch = {
        name: sint32(r),
        condition: r.pick(["ABSENCE", "EXACT", "REGEX"] as const),
      };
      if (r.chance(0.3)) match.regex = word(r);
      if (r.chance(0.3)) match.map_key = sint32(r);
      return match;
    }),
  });
  const res: CheckResponse = {
    precondition: {
      status: { code: r.pick([0, 7, 16, -1, 2 ** 31 - 1]), message: word(r) },
      valid_duration: time(r),
      valid_use_count: r.pick([0, 1, 10000, -3]),
      ...(r.chance(0.8) ? { referenced_attributes: ref() } : {}),
    },
  };
  if (r.chance(0.5)) {
    res.quotas = {};
    for (let i = r.int(3); i >= 0; i--) {
      res.quotas[word(r)] = {
        valid_duration: time(r),
        granted_amount: int64(r),
        ...(r.chance(0.3) ? { referenced_attributes: ref() } : {}),
      };
    }
  }
  return res;
}

Deno.test("encodeCheckResponse encodes what protobufjs encodes, for random responses", async () => {
  const { r, pj } = await fuzz();
  for (let i = 0; i < CASES; i++) {
    const res = response(r);
    const ours = encodeCheckResponse(res);
    const theirs: Uint8Array = pj.responseSerialize(res);
    assert.deepEqual(
      canon(pj.responseDeserialize(ours)),
      canon(pj.responseDeserialize(theirs)),
      `case ${i}`,
    );
  }
  // Large enough that lengths take several bytes: the reserved length byte grows in place.
  const big: CheckResponse = {
    precondition: {
      status: { code: 3, message: "é".repeat(10_000) },
      valid_duration: { seconds: 1 },
      valid_use_count: 1,
      referenced_attributes: { words: ["w".repeat(300)], attribute_matches: [] },
    },
  };
  assert.deepEqual(
    canon(pj.responseDeserialize(encodeCheckResponse(big))),
    canon(pj.responseDeserialize(pj.responseSerialize(big))),
  );
});

/** A CheckRequest whose word indices are mostly valid (global or message words). */
function checkWithIndices(r: Rng): CheckRequest {
  const m = request(r);
  const words = m.attributes?.words ?? [];
  const global = m.global_word_count && m.global_word_count < GLOBAL_DICTIONARY.length
    ? m.global_word_count
    : GLOBAL_DICTIONARY.length;
  const index = () =>
    r.chance(0.02)
      ? sint32(r) // sometimes out of range
      : words.length && r.chance(0.5)
      ? -1 - r.int(words.length)
      : r.int(global);
  const reindex = <V>(o: Record<string, V> | undefined, value?: (v: V) => V) =>
    o && Object.fromEntries(Object.values(o).map((v) => [index(), value ? value(v) : v]));
  const a = m.attributes;
  if (a) {
    a.strings = reindex(a.strings, index);
    a.int64s = reindex(a.int64s);
    a.doubles = reindex(a.doubles);
    a.bools = reindex(a.bools);
    a.timestamps = reindex(a.timestamps);
    a.durations = reindex(a.durations);
    a.bytes = reindex(a.bytes);
    a.string_maps = reindex(
      a.string_maps,
      (v) => (v.entries ? { entries: reindex(v.entries, index) } : v),
    );
  }
  return m;
}

Deno.test("decodeCheck decompresses as decompress() does after protobufjs, errors included", async () => {
  const { r, pj } = await fuzz();
  let ok = 0, refused = 0;
  for (let i = 0; i < CASES; i++) {
    const wire: Uint8Array = pj.requestSerialize(checkWithIndices(r));
    const ref = pj.requestDeserialize(wire) as CheckRequest;
    let want: Map<string, unknown> | AttributeError;
    try {
      want = decompress(ref.attributes, ref.global_word_count ?? 0);
    } catch (e) {
      want = e as AttributeError;
    }
    if (want instanceof Error) {
      assert.throws(() => decodeCheck(wire), AttributeError, `case ${i}`);
      refused++;
      continue;
    }
    const got = decodeCheck(wire);
    assert.deepEqual(got.values, want, `case ${i}`);
    assert.deepEqual(
      plain({ g: got.global_word_count, d: got.deduplication_id, q: got.quotas }),
      plain({ g: ref.global_word_count, d: ref.deduplication_id, q: ref.quotas }),
      `case ${i}`,
    );
    ok++;
  }
  assert.ok(ok > CASES / 2 && refused > 0, `${ok} decoded, ${refused} refused`);
});

Deno.test("decodeCheck gives proto3 defaults to map entries without a value and refuses wrong wire types", () => {
  // attributes { strings {key -1}, int64s {key -1... } }: entries with a key and no value.
  const entry = (field: number) => [(field << 3) | 2, 2, 0x08, 0x01]; // key = sint32 -1
  const attrs = [0x0a, 1, 0x61, ...[2, 3, 4, 5, 6, 7, 8, 9].flatMap(entry)]; // words ["a"]
  const got = decodeCheck(Uint8Array.from([0x0a, attrs.length, ...attrs]));
  // Every entry names "a": the last (string_maps) wins, as with decompress().
  assert.deepEqual(got.values, new Map([["a", {}]]));
  for (
    const [field, want] of [
      [2, GLOBAL_DICTIONARY[0]],
      [3, 0],
      [4, 0],
      [5, false],
      [6, new Date(0)],
      [7, 0],
      [8, new Uint8Array()],
    ] as const
  ) {
    const one = [0x0a, 1, 0x61, ...entry(field)];
    assert.deepEqual(
      decodeCheck(Uint8Array.from([0x0a, one.length, ...one])).values,
      new Map([["a", want]]),
      `field ${field}`,
    );
  }
  assert.throws(
    () => decodeCheck(Uint8Array.from([0x0a, 0x04, 0x12, 0x02, 0x11, 0x00])),
    /CompressedAttributes.strings field 2 has wire type 1, want 0/,
  );
  assert.throws(
    () => decodeCheck(Uint8Array.from([0x0a, 0x04, 0x12, 0x02, 0x08, 0x01])),
    (e) =>
      e instanceof AttributeError &&
      /Word index -1 is beyond the message words \(0\)/.test(e.message),
  );
});

/** `field` as a length-delimited field holding `payload`. */
const len = (field: number, payload: number[]) => [(field << 3) | 2, payload.length, ...payload];
/** A CheckRequest whose attributes (words ["a"] first) hold `fields`. */
const withAttributes = (...fields: number[][]) =>
  Uint8Array.from(len(1, [...len(1, [0x61]), ...fields.flat()]));
/** Both decoders. */
const DECODERS = [
  ["decodeCheckRequest", decodeCheckRequest],
  ["decodeCheck", decodeCheck],
] as const;

Deno.test("both decoders refuse a field of the wrong wire type, naming the message and the field", () => {
  const k = [0x08, 0x01]; // key: sint32 -1 ("a")
  const cases: [number[], RegExp][] = [
    [[0x08, 0x01], /^CheckRequest field 1 has wire type 0, want 2$/],
    [[0x19, 0, 0, 0, 0, 0, 0, 0, 0], /^CheckRequest field 3 has wire type 1, want 2$/],
    [[0x20, 0x01], /^CheckRequest field 4 has wire type 0, want 2$/],
    [len(4, [0x08, 0x01]), /^CheckRequest.quotas field 1 has wire type 0, want 2$/],
    [len(4, [0x10, 0x01]), /^CheckRequest.quotas field 2 has wire type 0, want 2$/],
    [len(4, len(2, len(1, []))), /^QuotaParams field 1 has wire type 2, want 0$/],
    [len(4, len(2, len(2, []))), /^QuotaParams field 2 has wire type 2, want 0$/],
    [len(1, [0x08, 0x01]), /^CompressedAttributes field 1 has wire type 0, want 2$/],
    [len(1, [0x48, 0x01]), /^CompressedAttributes field 9 has wire type 0, want 2$/],
    [len(1, len(2, len(1, []))), /^CompressedAttributes.strings field 1 has wire type 2, want 0$/],
    [
      len(1, len(3, [...k, 0x11, 0, 0, 0, 0, 0, 0, 0, 0])),
      /^CompressedAttributes.int64s field 2 has wire type 1, want 0$/,
    ],
    [
      len(1, len(4, [...k, 0x10, 0x01])),
      /^CompressedAttributes.doubles field 2 has wire type 0, want 1$/,
    ],
    [
      len(1, len(5, [...k, 0x12, 0x00])),
      /^CompressedAttributes.bools field 2 has wire type 2, want 0$/,
    ],
    [
      len(1, len(6, [...k, ...len(2, len(1, []))])),
      /^Timestamp\/Duration field 1 has wire type 2, want 0$/,
    ],
    [
      len(1, len(7, [...k, ...len(2, len(2, []))])),
      /^Timestamp\/Duration field 2 has wire type 2, want 0$/,
    ],
    [
      len(1, len(8, [...k, 0x10, 0x01])),
      /^CompressedAttributes.bytes field 2 has wire type 0, want 2$/,
    ],
    [
      len(1, len(9, [...k, ...len(2, [0x08, 0x01])])),
      /^StringMap field 1 has wire type 0, want 2$/,
    ],
    [
      len(1, len(9, [...k, ...len(2, len(1, len(1, [])))])),
      /^StringMap.entries field 1 has wire type 2, want 0$/,
    ],
    [
      len(1, len(9, [...k, ...len(2, len(1, len(2, [])))])),
      /^StringMap.entries field 2 has wire type 2, want 0$/,
    ],
  ];
  for (const [bytes, want] of cases) {
    for (const [name, decode] of DECODERS) {
      assert.throws(
        () => decode(Uint8Array.from(bytes)),
        (e) => e instanceof WireError && e.name === "WireError" && want.test(e.message),
        `${name}: ${want}`,
      );
    }
  }
});

Deno.test("both decoders skip unknown fields inside every nested message", () => {
  const unknownVarint = [0x78, 0x05]; // field 15, varint
  const unknownLen = [0x7a, 0x01, 0x00]; // field 15, bytes
  const k = [0x08, 0x01, ...unknownVarint, ...unknownLen]; // key -1 ("a") and two unknown fields
  const attrs = withAttributes(
    [0x50, 0x07], // field 10 of CompressedAttributes, varint
    [0x52, 0x00], // field 10, bytes
    len(5, [...k, 0x10, 0x01]),
    len(6, [...k, ...len(2, [0x08, 0x02, ...unknownLen, 0x10, 0x03])]),
    len(9, [
      ...k,
      ...len(2, [...unknownVarint, ...len(1, [0x08, 0x01, ...unknownLen, 0x10, 0x01])]),
    ]),
  );
  const got = decodeCheckRequest(attrs);
  assert.deepEqual(got.attributes, {
    words: ["a"],
    bools: { "-1": true },
    timestamps: { "-1": { seconds: 2, nanos: 3 } },
    string_maps: { "-1": { entries: { "-1": -1 } } },
  });
  assert.deepEqual(decodeCheck(attrs).values, new Map([["a", { a: "a" }]]));
  const quotas = Uint8Array.from(
    len(4, [
      ...len(1, [0x71]),
      ...unknownVarint,
      ...len(2, [0x08, 0x05, ...unknownLen, 0x10, 0x01]),
    ]),
  );
  for (const [, decode] of DECODERS) {
    assert.deepEqual(decode(quotas).quotas, { q: { amount: 5, best_effort: true } });
  }
});

Deno.test("both decoders give map entries their proto3 defaults: empty quota name, false, {}, empty bytes", () => {
  const q = decodeCheck(Uint8Array.from(len(4, len(2, [])))).quotas;
  assert.deepEqual(q, { "": {} });
  assert.deepEqual(decodeCheckRequest(Uint8Array.from(len(4, len(2, [])))).quotas, q);
  const k = [0x08, 0x01];
  assert.deepEqual(
    decodeCheckRequest(withAttributes(len(5, k), len(6, k), len(7, k), len(8, k), len(9, k)))
      .attributes,
    {
      words: ["a"],
      bools: { "-1": false },
      timestamps: { "-1": {} },
      durations: { "-1": {} },
      bytes: { "-1": new Uint8Array() },
      string_maps: { "-1": {} },
    },
  );
});

Deno.test("both decoders read a bool from all 64 bits and stop a varint at its message's end", () => {
  const k = [0x08, 0x01];
  const high = [0x10, 0x80, 0x80, 0x80, 0x80, 0x10]; // value 2^32: low 32 bits zero
  const b = withAttributes(len(5, [...k, ...high]));
  assert.deepEqual(decodeCheckRequest(b).attributes?.bools, { "-1": true });
  assert.deepEqual(decodeCheck(b).values, new Map([["a", true]]));
  // An entry that ends after its key's tag: the key's varint must not be read from what follows.
  const cut = Uint8Array.from([...len(1, [...len(1, [0x61]), ...len(2, [0x08])]), 0x10, 0x05]);
  for (const [name, decode] of DECODERS) {
    assert.throws(() => decode(cut), /truncated varint/, name);
  }
  // An entry longer than the attributes that hold it, though the request has bytes enough.
  const long = Uint8Array.from([...len(1, [0x12, 0x04, 0x08, 0x01]), 0x10, 0x05, 0x10, 0x06]);
  for (const [name, decode] of DECODERS) {
    assert.throws(() => decode(long), /field of 4 bytes at byte 4 runs past the end/, name);
  }
});

Deno.test("decodeCheckRequest merges a repeated attributes field field by field", () => {
  const first = withAttributes(len(5, [0x08, 0x01, 0x10, 0x01]));
  const second = Uint8Array.from(len(1, [...len(1, [0x62]), ...len(2, [0x08, 0x03, 0x10, 0x00])]));
  assert.deepEqual(decodeCheckRequest(Uint8Array.from([...first, ...second])).attributes, {
    words: ["a", "b"],
    bools: { "-1": true },
    strings: { "-2": 0 },
  });
  // The first occurrence without words: the second's words alone.
  const noWords = Uint8Array.from(len(1, len(5, [0x08, 0x01, 0x10, 0x01])));
  assert.deepEqual(decodeCheckRequest(Uint8Array.from([...noWords, ...second])).attributes, {
    words: ["b"],
    bools: { "-1": true },
    strings: { "-2": 0 },
  });
});

Deno.test("encodeCheckResponse writes the bytes protobufjs writes, once proto3 defaults are left out", async () => {
  const { r, pj } = await fuzz();
  const bytes = (x: Uint8Array) => Array.from(x);
  for (let i = 0; i < CASES; i++) {
    const res = response(r);
    // Sometimes without valid_duration: the field is left out, not written empty.
    if (r.chance(0.2)) {
      delete (res.precondition as Partial<CheckResponse["precondition"]>).valid_duration;
    }
    assert.deepEqual(
      bytes(encodeCheckResponse(res)),
      bytes(pj.responseSerialize(canon(res))),
      `case ${i}`,
    );
  }
  // Payloads of exactly 127, 128 and 16384 bytes: the length takes 1, 2 and 3 bytes.
  for (const n of [125, 126, 127, 128, 16382, 16384]) {
    const res: CheckResponse = {
      precondition: {
        status: { code: 3, message: "m".repeat(n) },
        valid_duration: {},
        valid_use_count: 0,
      },
    };
    assert.deepEqual(
      bytes(encodeCheckResponse(res)),
      bytes(pj.responseSerialize(canon(res))),
      `${n}`,
    );
  }
});

Deno.test("both decoders refuse field number 0 in nested messages and nested lengths past their message", () => {
  const k = [0x08, 0x01];
  const cases: [number[], RegExp][] = [
    [[...withAttributes([0x02, 0x00])], /^field number 0 at byte 5$/],
    [[...withAttributes(len(2, [0x00, 0x01]))], /^field number 0 at byte 7$/],
    [[...withAttributes(len(9, [...k, ...len(2, [0x02, 0x00])]))], /^field number 0 at byte 11$/],
    [[...len(4, len(2, [0x00, 0x01]))], /^field number 0 at byte 4$/],
    // A StringMap entry of 4 bytes inside a StringMap of 4 bytes, with more request after it.
    [
      [
        ...withAttributes(len(9, [...k, ...len(2, [0x0a, 0x04, 0x08, 0x01])])),
        0x10,
        0x05,
        0x10,
        0x06,
      ],
      /^field of 4 bytes at byte 13 runs past the end$/,
    ],
  ];
  for (const [bytes, want] of cases) {
    for (const [name, decode] of DECODERS) {
      assert.throws(
        () => decode(Uint8Array.from(bytes)),
        (e) => e instanceof WireError && want.test(e.message),
        `${name}: ${want}`,
      );
    }
  }
});

Deno.test("both decoders turn invalid UTF-8 into U+FFFD, short ASCII-looking words included", () => {
  const b = Uint8Array.from([
    ...len(1, [...len(1, [0x61, 0x80]), ...len(1, [0xff]), ...len(2, [0x08, 0x01, 0x10, 0x03])]),
  ]);
  assert.deepEqual(decodeCheckRequest(b).attributes?.words, ["a\uFFFD", "\uFFFD"]);
  assert.deepEqual(decodeCheck(b).values, new Map([["a\uFFFD", "\uFFFD"]]));
});

import assert from "node:assert/strict";
import { compile, DEFAULT_MANIFEST, parseIp } from "../expr/mod.ts";
import {
  compress,
  decompress,
  Dictionary,
  GLOBAL_DICTIONARY,
  mixerCodec,
  TrackingBag,
} from "./mod.ts";

Deno.test("Dictionary resolves global (>= 0) and message (< 0) indices", () => {
  const d = new Dictionary(["a", "b"], 10);
  assert.equal(d.word(0), GLOBAL_DICTIONARY[0]);
  assert.equal(d.word(-1), "a");
  assert.equal(d.word(-2), "b");
  assert.throws(() => d.word(-3), /Word index -3 is beyond the message words \(2\)/);
  assert.throws(() => d.word(10), /Word index 10 is beyond the global dictionary \(10 words\)/);
  assert.equal(new Dictionary([]).word(GLOBAL_DICTIONARY.length - 1), GLOBAL_DICTIONARY.at(-1));
});

Deno.test("compress() then decompress() round-trips every value kind through the wire", async () => {
  const codec = await mixerCodec();
  const values = {
    "source.name": "reviews-v1",
    "request.method": "GET",
    "response.code": 503,
    "response.duration": 1500.5,
    "connection.mtls": true,
    "request.time": new Date("2018-06-01T10:00:00.250Z"),
    "source.ip": parseIp("10.0.0.1")!,
    "request.headers": { ":path": "/x", "x-custom": "v" },
    "custom.double": 0.25,
  };
  const manifest = { ...DEFAULT_MANIFEST, "custom.double": "DOUBLE" as const };
  const ca = compress(values, manifest);
  assert.deepEqual(ca.words, ["reviews-v1", "/x", "x-custom", "v", "custom.double"]);
  const wire = codec.encodeCheckRequest({ attributes: ca, global_word_count: 30 });
  const back = codec.decodeCheckRequest(wire);
  const bag = decompress(back.attributes, 0);
  assert.deepEqual(Object.fromEntries(bag), values);
});

Deno.test("decompress() uses default words when a message has none, and applies deltas", () => {
  const first = { words: [], strings: { "-1": -2 } };
  const bag = decompress(first, 0, new Map(), ["my.attr", "one"]);
  assert.equal(bag.get("my.attr"), "one");
  decompress({ words: ["my.attr", "two"], strings: { "-1": -2 } }, 0, bag);
  assert.equal(bag.get("my.attr"), "two");
  assert.throws(() => decompress({ strings: { "-5": 0 } }), /beyond the message words/);
});

Deno.test("TrackingBag reports present attributes as EXACT and absent ones as ABSENCE", () => {
  const bag = new TrackingBag(new Map([["source.name", "a"]]));
  bag.get("source.name");
  bag.get("custom.absent");
  const ref = bag.referenced();
  assert.deepEqual(ref.words, ["custom.absent"]);
  assert.deepEqual(ref.attribute_matches, [
    { name: -1, condition: "ABSENCE" },
    { name: GLOBAL_DICTIONARY.indexOf("source.name"), condition: "EXACT" },
  ]);
});

Deno.test('TrackingBag records map keys read by m["k"] with map_key, not the whole map', () => {
  const bag = new TrackingBag(new Map([["request.headers", { "x-user": "jo" }]]));
  const e = compile(
    'request.headers["x-user"] == "jo" && request.headers["x-nope"] == "" | true',
    DEFAULT_MANIFEST,
  );
  assert.equal(e.evaluate(bag), true);
  const ref = bag.referenced();
  const h = GLOBAL_DICTIONARY.indexOf("request.headers");
  assert.deepEqual(ref.words, ["x-nope", "x-user"]);
  assert.deepEqual(ref.attribute_matches, [
    { name: h, condition: "ABSENCE", map_key: -1 },
    { name: h, condition: "EXACT", map_key: -2 },
  ]);
  const whole = new TrackingBag(new Map([["request.headers", {}]]));
  compile("request.headers == emptyStringMap()", DEFAULT_MANIFEST).evaluate(whole);
  assert.deepEqual(whole.referenced().attribute_matches, [{ name: h, condition: "EXACT" }]);
});

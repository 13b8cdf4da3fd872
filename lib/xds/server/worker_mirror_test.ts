import assert from "node:assert/strict";
import type { ResourceEntry, ResourceMap } from "./types.ts";
import { MIRROR_KEEP_EPOCHS, MirrorDecoder, MirrorEncoder, MirrorIds } from "./worker_mirror.ts";

const entry = (version: string, text: string): ResourceEntry => ({
  version,
  bytes: new TextEncoder().encode(text),
});

/** Sends what the encoder has for the worker (as a structured clone would, with a fresh buffer). */
function ship(enc: MirrorEncoder, dec: MirrorDecoder): void {
  const drop = enc.takeDrop();
  if (drop) dec.drop(drop);
  dec.apply(structuredClone(enc.take()));
}

Deno.test("MirrorEncoder sends a shared map's contents once; the worker gets one map object for it", () => {
  const a = entry("1", "alpha"), b = entry("2", "beta");
  const view: ResourceMap = new Map([["a", a], ["b", b]]);
  const enc = new MirrorEncoder(new MirrorIds()), dec = new MirrorDecoder();
  const id = enc.add(view);
  assert.equal(enc.add(view), id);
  const d = enc.take();
  assert.equal(d.maps.length, 1);
  assert.equal(d.entryIds.length, 2);
  dec.apply(structuredClone(d));
  const got = dec.map(id);
  assert.equal(dec.map(id), got);
  assert.deepEqual([...got.keys()], ["a", "b"]);
  assert.equal(new TextDecoder().decode(got.get("b")!.bytes), "beta");
  assert.equal(got.get("a")!.version, "1");
  // asked again: nothing new crosses
  assert.equal(enc.add(view), id);
  const again = enc.take();
  assert.equal(again.maps.length, 0);
  assert.equal(again.bytes.byteLength, 0);
});

Deno.test("MirrorEncoder sends only the entries of a new map that the worker does not hold", () => {
  const a = entry("1", "alpha"), b = entry("2", "beta"), b2 = entry("3", "beta-2");
  const enc = new MirrorEncoder(new MirrorIds()), dec = new MirrorDecoder();
  enc.add(new Map([["a", a], ["b", b]]));
  ship(enc, dec);
  const next = new Map([["a", a], ["b", b2]]);
  const id = enc.add(next);
  const d = enc.take();
  assert.equal(d.entryIds.length, 1);
  assert.equal(d.versions[0], "3");
  dec.apply(structuredClone(d));
  assert.deepEqual([...dec.map(id)].map(([n, e]) => [n, e.version]), [["a", "1"], ["b", "3"]]);
});

Deno.test("MirrorEncoder forgets maps unused for MIRROR_KEEP_EPOCHS pushes, tells the worker, and sends them again when asked", () => {
  const view: ResourceMap = new Map([["a", entry("1", "alpha")]]);
  const other: ResourceMap = new Map([["o", entry("9", "other")]]);
  const enc = new MirrorEncoder(new MirrorIds()), dec = new MirrorDecoder();
  const id = enc.add(view);
  enc.add(other);
  ship(enc, dec);
  for (let i = 0; i < MIRROR_KEEP_EPOCHS; i++) {
    enc.nextEpoch();
    enc.add(other); // still in use
  }
  enc.nextEpoch();
  assert.equal(enc.size, 1);
  ship(enc, dec);
  assert.throws(() => dec.map(id), /unknown map/);
  assert.equal(dec.size, 1);
  assert.equal(enc.add(view), id);
  ship(enc, dec);
  assert.equal(dec.map(id).get("a")!.version, "1");
});

Deno.test("MirrorDecoder.apply() throws when a map refers to an entry it never got", () => {
  const dec = new MirrorDecoder();
  assert.throws(
    () =>
      dec.apply({
        maps: [[1, ["a"], [7]]],
        entryIds: [],
        versions: [],
        lengths: [],
        bytes: new ArrayBuffer(0),
      }),
    /unknown entry 7/,
  );
});

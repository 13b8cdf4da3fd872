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
  const a = entry("1", "alpha");
  const view: ResourceMap = new Map([["a", a]]);
  const other: ResourceMap = new Map([["o", entry("9", "other")]]);
  const ids = new MirrorIds();
  const enc = new MirrorEncoder(ids), dec = new MirrorDecoder();
  const id = enc.add(view);
  enc.add(other);
  ship(enc, dec);
  for (let i = 0; i < MIRROR_KEEP_EPOCHS; i++) {
    enc.nextEpoch();
    enc.add(other); // still in use
  }
  assert.deepEqual(enc.stats(), { maps: 2, entries: 2, bytes: 10 }, "kept for as many epochs");
  assert.equal(enc.takeDrop(), null, "nothing to drop yet");
  enc.nextEpoch();
  assert.deepEqual(enc.stats(), { maps: 1, entries: 1, bytes: 5 }, "the map and its entry");
  const drop = enc.takeDrop();
  assert.deepEqual(drop, { maps: [id], entries: [ids.of(a)] });
  dec.drop(drop!);
  assert.equal(enc.takeDrop(), null, "told once");
  assert.throws(() => dec.map(id), /unknown map/);
  assert.equal(dec.size, 1);
  assert.equal(enc.add(view), id);
  ship(enc, dec);
  assert.equal(dec.map(id).get("a")!.version, "1");
});

Deno.test("MirrorEncoder: a map in use for many pushes keeps its entries, so the next map sharing them sends only its new one", () => {
  const a = entry("1", "alpha"), b = entry("2", "beta");
  const enc = new MirrorEncoder(new MirrorIds()), dec = new MirrorDecoder();
  const view: ResourceMap = new Map([["a", a], ["b", b]]);
  enc.add(view);
  ship(enc, dec);
  for (let i = 0; i < MIRROR_KEEP_EPOCHS + 2; i++) {
    enc.nextEpoch();
    enc.add(view); // the same view, push after push
  }
  assert.equal(enc.takeDrop(), null, "nothing forgotten");
  assert.deepEqual(enc.stats(), { maps: 1, entries: 2, bytes: 9 });
  // one resource changes: the new view shares a's entry
  const next = new Map([["a", a], ["b", entry("3", "beta-2")]]);
  const id = enc.add(next);
  const d = enc.take();
  assert.deepEqual(d.versions, ["3"], "only the changed entry crosses");
  dec.apply(structuredClone(d));
  assert.deepEqual([...dec.map(id)].map(([n, e]) => [n, e.version]), [["a", "1"], ["b", "3"]]);
});

Deno.test("MirrorEncoder: a map forgotten while another keeps its entries is still told to the worker", () => {
  const a = entry("1", "alpha");
  const ids = new MirrorIds();
  const enc = new MirrorEncoder(ids), dec = new MirrorDecoder();
  const old: ResourceMap = new Map([["a", a]]);
  const next: ResourceMap = new Map([["a", a], ["c", entry("3", "gamma")]]);
  const id = enc.add(old);
  enc.add(next);
  ship(enc, dec);
  for (let i = 0; i <= MIRROR_KEEP_EPOCHS; i++) {
    enc.nextEpoch();
    enc.add(next);
  }
  assert.deepEqual(enc.takeDrop(), { maps: [id], entries: [] }, "a lives on in the other map");
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

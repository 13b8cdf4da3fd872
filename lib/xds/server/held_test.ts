import assert from "node:assert/strict";
import { Held } from "./held.ts";
import type { ResourceEntry } from "./types.ts";

const entry = (version: string): ResourceEntry => ({ version, bytes: new Uint8Array() });

Deno.test("Held.retain() drops names outside the set, whether in the shared view or not", () => {
  const view = new Map([["a", entry("1")], ["b", entry("1")]]);
  const keep = new Set(["a", "b", "c"]);
  const h = new Held();
  h.replace(view);
  h.set("c", "2");
  h.set("d", "2");
  h.retain(keep); // the view is within `keep`: only own names are checked
  assert.deepEqual([...h.entries()].sort(), [["a", "1"], ["b", "1"], ["c", "2"]]);
  h.retain(new Set(["b", "c"])); // the view is not
  assert.deepEqual([...h.entries()].sort(), [["b", "1"], ["c", "2"]]);
  assert.equal(view.size, 2, "the shared view is not changed");
});

Deno.test("Held: versions come from the shared view unless overridden; null hides a view entry", () => {
  const view = new Map([["a", entry("1")], ["b", entry("1")]]);
  const h = new Held();
  assert.equal(h.version("a"), undefined);
  assert.equal(h.has("a"), false);
  assert.equal(h.size, 0);
  h.replace(view);
  h.set("a", "1"); // no overrides yet, and none needed
  assert.equal(h.overrides, undefined);
  assert.equal(h.version("a"), "1");
  assert.equal(h.has("b"), true);
  h.set("a", "2"); // differs from the view: an override
  h.set("b", "1"); // same as the view: nothing to remember
  h.set("c", "3"); // outside the view
  assert.deepEqual([...h.overrides!], [["a", "2"], ["c", "3"]]);
  assert.equal(h.version("a"), "2");
  h.delete("b"); // in the view: hidden
  h.delete("c"); // an override only: forgotten
  h.delete("zz"); // held nowhere
  assert.deepEqual([...h.overrides!], [["a", "2"], ["b", null]]);
  assert.equal(h.version("b"), undefined);
  assert.equal(h.has("b"), false);
  assert.equal(h.has("c"), false);
  assert.deepEqual([...h.entries()], [["a", "2"]]);
  assert.deepEqual([...h.names()], ["a"]);
  assert.equal(h.size, 1);
  h.set("a", "1"); // back to the view's version: the override goes
  h.set("b", "1");
  assert.equal(h.overrides!.size, 0);
  assert.deepEqual([...h.entries()], [["a", "1"], ["b", "1"]]);
  assert.equal(view.size, 2, "the shared view is never changed");
  h.clear();
  assert.equal(h.view, undefined);
  assert.equal(h.overrides, undefined);
  assert.equal(h.size, 0);
  h.delete("a"); // nothing held: nothing to hide
  assert.equal(h.overrides, undefined);
});

Deno.test("Held: replace() shares the view and drops the overrides", () => {
  const h = new Held();
  h.set("x", "1");
  const view = new Map([["a", entry("1")]]);
  h.replace(view);
  assert.equal(h.view, view);
  assert.equal(h.overrides, undefined);
  assert.deepEqual([...h.entries()], [["a", "1"]]);
});

Deno.test("Held.sameAs(): the same names at the same versions, with or without a view", () => {
  const view = new Map([["a", entry("1")], ["b", entry("1")]]);
  const h = new Held();
  assert.equal(h.sameAs(new Map()), true);
  assert.equal(h.sameAs(view), false);
  h.replace(view);
  assert.equal(h.sameAs(view), true);
  assert.equal(h.sameAs(new Map(view)), true, "a copy with the same entries");
  assert.equal(h.sameAs(new Map([["a", entry("1")]])), false, "fewer names");
  assert.equal(h.sameAs(new Map([...view, ["c", entry("1")]])), false, "more names");
  assert.equal(h.sameAs(new Map([["a", entry("1")], ["b", entry("2")]])), false, "a version");
  h.set("b", "2");
  assert.equal(h.sameAs(view), false, "an override differs from the view itself");
  assert.equal(h.sameAs(new Map([["a", entry("1")], ["b", entry("2")]])), true);
  h.set("b", "1");
  h.delete("b");
  assert.equal(h.sameAs(view), false, "a hidden name");
  assert.equal(h.sameAs(new Map([["a", entry("1")]])), true);
  const own = new Held();
  own.set("a", "1");
  assert.equal(own.sameAs(new Map([["a", entry("1")]])), true, "no view at all");
  assert.equal(own.sameAs(new Map([["a", entry("2")]])), false);
});

Deno.test("Held.retain() keeps hidden names hidden and an unchanged holder untouched", () => {
  const view = new Map([["a", entry("1")], ["b", entry("1")]]);
  const keep = new Set(["a", "b"]);
  const h = new Held();
  h.replace(view);
  h.delete("b");
  h.retain(keep);
  assert.deepEqual([...h.entries()], [["a", "1"]]);
  assert.deepEqual([...h.overrides!], [["b", null]]);
  h.retain(new Set(["b"])); // the view is not within: "a" goes too
  assert.deepEqual([...h.entries()], []);
  const none = new Held();
  none.set("x", "1");
  none.retain(new Set(["x"]));
  assert.deepEqual([...none.entries()], [["x", "1"]]);
  none.retain(new Set());
  assert.deepEqual([...none.entries()], []);
});

import assert from "node:assert/strict";
import { contentVersion, ResourceCache } from "./cache.ts";
import { bytes } from "./_test_util.ts";

const T = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

Deno.test("ResourceCache.set() keeps the same entry when the bytes did not change", () => {
  const c = new ResourceCache();
  const a = c.set(T, "c1", bytes("x"));
  assert.equal(c.set(T, "c1", bytes("x")), a);
  const b = c.set(T, "c1", bytes("y"));
  assert.notEqual(b, a);
  assert.notEqual(b.version, a.version);
  assert.equal(b.version, contentVersion(bytes("y")));
  assert.match(b.version, /^[0-9a-f]{16}$/);
});

Deno.test("ResourceCache.replaceType() reports changed and removed keys", () => {
  const c = new ResourceCache();
  c.replaceType(T, [{ name: "a", bytes: bytes("1") }, { name: "b", bytes: bytes("2") }]);
  const r = c.replaceType(T, [{ name: "a", bytes: bytes("1") }, { name: "c", bytes: bytes("3") }]);
  assert.deepEqual(r, { changed: ["c"], removed: ["b"] });
  assert.deepEqual(c.keys(T), ["a", "c"]);
  assert.equal(c.size(T), 2);
});

Deno.test("ResourceCache.select() maps keys to names and shares entries", () => {
  const c = new ResourceCache();
  const e = c.set(T, "80", bytes("r"), "80|ns=default");
  c.set(T, "80", bytes("s"), "80|ns=other");
  const view = c.select(T, ["80|ns=default", "missing"]);
  assert.deepEqual([...view.keys()], ["80"]);
  assert.equal(view.get("80"), e);
  assert.equal(c.select(T, null).size, 1, "wildcard view: one resource per name");
  assert.equal(c.select("other", null).size, 0);
});

Deno.test("ResourceCache.set() rejects an empty name", () => {
  assert.throws(() => new ResourceCache().set(T, "", bytes("x")), /Resource name is empty/);
});

Deno.test("ResourceCache.set() makes a new entry for other bytes of the same length, or another name under the key", () => {
  const c = new ResourceCache();
  const a = c.set(T, "c1", bytes("ab"));
  const b = c.set(T, "c1", bytes("ac"));
  assert.notEqual(b, a, "same length, other content");
  assert.notEqual(c.set(T, "c1", bytes("acd")), b, "longer");
  const k = c.set(T, "80", bytes("r"), "80|ns=a");
  const renamed = c.set(T, "81", bytes("r"), "80|ns=a");
  assert.notEqual(renamed, k);
  assert.equal(renamed.name, "81");
  assert.equal(renamed.version, k.version, "the version is the content's");
  assert.equal(c.get(T, "80|ns=a"), renamed);
  assert.ok(Object.isFrozen(renamed));
  const same = new Uint8Array([1, 2, 3]);
  const s = c.set(T, "s", same);
  assert.equal(c.set(T, "s", same), s, "the same bytes object");
});

Deno.test("ResourceCache: get, delete, keys, size and select of a type never set", () => {
  const c = new ResourceCache();
  assert.equal(c.get(T, "x"), undefined);
  assert.equal(c.delete(T, "x"), false);
  assert.deepEqual(c.keys(T), []);
  assert.equal(c.size(T), 0);
  assert.equal(c.select(T, ["x"]).size, 0);
  c.set(T, "x", bytes("1"));
  assert.equal(c.get(T, "x")?.name, "x");
  assert.equal(c.get("other", "x"), undefined, "types are separate");
  assert.equal(c.delete(T, "x"), true);
  assert.equal(c.delete(T, "x"), false);
  assert.equal(c.get(T, "x"), undefined);
});

Deno.test("ResourceCache.replaceType() with keys: a changed entry and a new key are changed, absent keys removed", () => {
  const c = new ResourceCache();
  c.replaceType(T, [
    { key: "80|a", name: "80", bytes: bytes("1") },
    { key: "80|b", name: "80", bytes: bytes("2") },
  ]);
  const r = c.replaceType(T, [
    { key: "80|a", name: "80", bytes: bytes("1b") },
    { key: "81|a", name: "81", bytes: bytes("3") },
  ]);
  assert.deepEqual(r, { changed: ["80|a", "81|a"], removed: ["80|b"] });
  assert.deepEqual(c.keys(T), ["80|a", "81|a"]);
  assert.deepEqual(c.replaceType(T, []), { changed: [], removed: ["80|a", "81|a"] });
  assert.equal(c.size(T), 0);
});

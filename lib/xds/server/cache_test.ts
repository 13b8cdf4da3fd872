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

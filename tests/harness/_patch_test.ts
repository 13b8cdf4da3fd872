import assert from "node:assert/strict";
import { type Json, jsonPatch, mergePatch, PatchError, strategicMergePatch } from "./_patch.ts";

Deno.test("mergePatch() removes null keys and merges objects recursively", () => {
  assert.deepEqual(mergePatch({ a: 1, b: { c: 2, d: 3 } }, { a: null, b: { c: 4 }, e: [1] }), {
    b: { c: 4, d: 3 },
    e: [1],
  });
});

Deno.test("jsonPatch() applies add, remove, replace, move, copy and fails a test op with 422", () => {
  const out = jsonPatch({ a: [1, 2], b: { c: 1 } }, [
    { op: "add", path: "/a/-", value: 3 },
    { op: "remove", path: "/a/0" },
    { op: "replace", path: "/b/c", value: 9 },
    { op: "copy", from: "/b", path: "/d" },
    { op: "move", from: "/d/c", path: "/e" },
    { op: "test", path: "/e", value: 9 },
  ]);
  assert.deepEqual(out, { a: [2, 3], b: { c: 9 }, d: {}, e: 9 });
  assert.throws(
    () => jsonPatch({ a: 1 }, [{ op: "test", path: "/a", value: 2 }]),
    (e: unknown) => e instanceof PatchError && e.code === 422,
  );
  assert.throws(() => jsonPatch({}, [{ op: "remove", path: "/x" }]), /path "\/x" does not exist/);
});

Deno.test("strategicMergePatch() merges keyed lists and honours $patch delete and $setElementOrder", () => {
  const live = {
    spec: {
      ports: [{ name: "http", port: 80, protocol: "TCP" }, {
        name: "grpc",
        port: 90,
        protocol: "TCP",
      }],
      selector: { app: "web", tier: "x" },
    },
  };
  const patch: Json = {
    spec: {
      "$setElementOrder/ports": [{ port: 91 }, { port: 80 }],
      ports: [{ port: 91, name: "grpc2" }, { $patch: "delete", port: 90 }],
      selector: { tier: null },
    },
  };
  assert.deepEqual(strategicMergePatch(live, patch), {
    spec: {
      ports: [{ port: 91, name: "grpc2" }, { name: "http", port: 80, protocol: "TCP" }],
      selector: { app: "web" },
    },
  });
  assert.deepEqual(strategicMergePatch({ args: ["a", "b"] }, { args: ["c"] }), { args: ["c"] });
  assert.deepEqual(
    strategicMergePatch({ finalizers: ["a", "b"] }, {
      "$deleteFromPrimitiveList/finalizers": ["a"],
    }),
    { finalizers: ["b"] },
  );
});

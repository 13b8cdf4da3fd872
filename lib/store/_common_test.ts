import assert from "node:assert/strict";
import { createMemoryStore } from "./memory.ts";
import { deepEqual } from "./_common.ts";
import { ConflictError, NotFoundError, ValidationError } from "./types.ts";

const vs = (kind: unknown, name: unknown, namespace?: unknown) => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind,
  metadata: { name, namespace },
  spec: {},
});

Deno.test("store validation errors name the object, quoting odd names so they cannot forge log lines", async () => {
  const store = createMemoryStore();
  const message = async (raw: unknown) => {
    const err = await store.create(raw as never).then(() => undefined, (e) => e);
    assert.ok(err instanceof ValidationError);
    assert.equal(err.name, "ValidationError");
    assert.ok(!err.message.includes("\n"), err.message);
    return err.message.split(": ").slice(0, 2).join(": ");
  };
  assert.equal(
    await message(vs("VirtualService", "bad\nname", "ns")),
    'Invalid config: VirtualService/ns/"bad\\nname"',
  );
  assert.equal(
    await message(vs("Virtual Service\n", "ok", "n s")),
    'Invalid config: "Virtual Service\\n"/"n s"/ok',
  );
  assert.match(
    await message(vs("VirtualService", "x".repeat(254), "ns")),
    /^Invalid config: VirtualService\/ns\/"x{80}\.\.\."$/,
  );
  assert.equal(await message(vs("VirtualService", 7)), "Invalid config: VirtualService");
  assert.equal(await message(vs(7, "a", "ns")), "Invalid config: object/ns/a");
  assert.equal(await message("text"), "Invalid config: object");
  // the other store errors carry their own names
  assert.equal(new ConflictError("x").name, "ConflictError");
  assert.equal(new NotFoundError("x").name, "NotFoundError");
});

Deno.test("deepEqual() compares JSON values structurally, ignoring key order and undefined fields", () => {
  assert.ok(deepEqual({ a: [1, { b: 2 }], c: null }, { c: null, a: [1, { b: 2 }] }));
  assert.ok(deepEqual([], []));
  assert.ok(!deepEqual([1, 2], [1, 2, 3]));
  assert.ok(!deepEqual([1, 2], [2, 1]));
  assert.ok(!deepEqual({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(!deepEqual({ a: 1, b: 2 }, { a: 1 }));
  assert.ok(!deepEqual({ a: 1 }, { b: 1 }));
  assert.ok(deepEqual({ a: undefined, b: 1 }, { b: 1 })); // as in JSON: undefined is absent
  assert.ok(!deepEqual([], {}));
  assert.ok(!deepEqual({}, []));
  assert.ok(!deepEqual({ 0: "a" }, ["a"]));
  assert.ok(!deepEqual(null, {}));
  assert.ok(!deepEqual({}, null));
  assert.ok(!deepEqual(1, "1"));
  assert.ok(!deepEqual({ a: { b: 1 } }, { a: { b: 2 } }));
});

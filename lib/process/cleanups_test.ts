import assert from "node:assert/strict";
import { Cleanups } from "./cleanups.ts";

Deno.test("Cleanups.run() runs the steps newest first, each once", async () => {
  const order: string[] = [];
  const c = new Cleanups();
  c.push(() => void order.push("a"));
  c.push(async () => {
    await Promise.resolve();
    order.push("b");
  });
  c.push(() => void order.push("c"));
  assert.equal(c.size, 3);
  const first = c.run();
  assert.equal(c.run(), first);
  await first;
  await c.run();
  assert.deepEqual(order, ["c", "b", "a"]);
  assert.equal(c.size, 0);
});

Deno.test("Cleanups.run() reports a failed step to onError and runs the others", async () => {
  const order: string[] = [];
  const errors: string[] = [];
  const c = new Cleanups({ onError: (e) => errors.push((e as Error).message) });
  c.push(() => void order.push("a"));
  c.push(() => {
    throw new Error("boom");
  });
  c.push(() => void order.push("c"));
  await c.run();
  assert.deepEqual(order, ["c", "a"]);
  assert.deepEqual(errors, ["boom"]);
});

Deno.test("Cleanups.run() rejects with the first error after every step ran when no onError", async () => {
  const order: string[] = [];
  const c = new Cleanups();
  c.push(() => void order.push("a"));
  c.push(() => Promise.reject(new Error("second")));
  c.push(() => {
    throw new Error("first");
  });
  await assert.rejects(c.run(), /first/);
  assert.deepEqual(order, ["a"]);
});

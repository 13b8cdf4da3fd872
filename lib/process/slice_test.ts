import assert from "node:assert/strict";
import { TimeSlicer } from "./slice.ts";

/** Busy-waits `ms` (work that holds the event loop). */
function work(ms: number) {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* busy */ }
}

Deno.test("TimeSlicer.pause() lets a timer run once the budget is spent, not before", async () => {
  const pauses: number[] = [];
  const slicer = new TimeSlicer(10, () => pauses.push(1));
  let fired = false;
  setTimeout(() => fired = true, 0);
  await slicer.pause(); // budget not spent: no macrotask
  assert.equal(fired, false);
  work(15);
  await slicer.pause();
  assert.equal(fired, true);
  assert.equal(pauses.length, 1);
});

Deno.test("TimeSlicer.due says whether pause() would wait: budget spent or a pause pending", async () => {
  const slicer = new TimeSlicer(10);
  assert.equal(slicer.due, false);
  work(15);
  assert.equal(slicer.due, true);
  const pausing = slicer.pause();
  assert.equal(slicer.due, true, "pending: a caller must wait for it too");
  await pausing;
  assert.equal(slicer.due, false, "the budget starts again");
  const never = new TimeSlicer(null);
  work(15);
  assert.equal(never.due, false);
});

Deno.test("TimeSlicer.pause() never yields with a null budget", async () => {
  const slicer = new TimeSlicer(null, () => assert.fail("no pause expected"));
  let fired = false;
  const t = setTimeout(() => fired = true, 0);
  work(15);
  await slicer.pause();
  assert.equal(fired, false);
  clearTimeout(t);
});

Deno.test("TimeSlicer.pause() shared by concurrent tasks: they pause together and share the next budget", async () => {
  const slicer = new TimeSlicer(10);
  let ticks = 0;
  const iv = setInterval(() => ticks++, 0);
  /** Work done between two timer ticks, ms (the longest stretch the event loop was held). */
  const held = new Map<number, number>();
  const task = async () => {
    for (let i = 0; i < 20; i++) {
      work(2);
      held.set(ticks, (held.get(ticks) ?? 0) + 2);
      await slicer.pause();
    }
  };
  await Promise.all([task(), task(), task(), task()]);
  clearInterval(iv);
  // 160 ms of work in 10 ms budgets: never 4 tasks × a budget in one stretch
  assert.ok(Math.max(...held.values()) <= 20, `held ${JSON.stringify([...held])}`);
});

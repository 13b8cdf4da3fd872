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

Deno.test("TimeSlicer.pause() never yields with a null budget", async () => {
  const slicer = new TimeSlicer(null, () => assert.fail("no pause expected"));
  let fired = false;
  const t = setTimeout(() => fired = true, 0);
  work(15);
  await slicer.pause();
  assert.equal(fired, false);
  clearTimeout(t);
});

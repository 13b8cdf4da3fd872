import assert from "node:assert/strict";
import { Debouncer, type MergedPush, mergePush } from "./debounce.ts";
import type { PushEvent } from "./types.ts";
import { FakeClock } from "./_test_util.ts";

function setup(after = 100, max = 300) {
  const clock = new FakeClock();
  const flushed: MergedPush[] = [];
  const d = new Debouncer((p) => flushed.push(p), { after, max, clock });
  return { clock, flushed, d };
}

Deno.test("Debouncer merges events until none arrived for debounceAfter", () => {
  const { clock, flushed, d } = setup();
  d.push({ kind: "eds", clusters: ["a"] });
  clock.advance(60);
  d.push({ kind: "config", types: ["t1"] });
  clock.advance(60);
  d.push({ kind: "eds", clusters: ["b"] });
  clock.advance(99);
  assert.equal(flushed.length, 0);
  clock.advance(1);
  assert.equal(flushed.length, 1);
  assert.deepEqual(
    { ...flushed[0], types: [...flushed[0].types], edsClusters: [...flushed[0].edsClusters] },
    { full: false, types: ["t1"], edsClusters: ["a", "b"], events: 3, firstEventAt: clock.t - 220 },
  );
  assert.equal(clock.timers, 0);
});

Deno.test("Debouncer flushes at debounceMax when events keep coming", () => {
  const { clock, flushed, d } = setup(100, 300);
  const start = clock.t;
  let flushedAt = -1;
  for (let i = 0; i < 10; i++) {
    d.push({ kind: "full" });
    clock.advance(50);
    if (flushed.length === 1 && flushedAt < 0) flushedAt = clock.t - start;
  }
  assert.equal(flushed.length, 1);
  assert.equal(flushedAt, 300, "flushed debounceMax after the first event");
  assert.equal(flushed[0].events, 6, "events at 0..250 ms are merged");
  assert.equal(flushed[0].full, true);
  d.stop();
  assert.equal(clock.timers, 0);
});

Deno.test("Debouncer treats a config event without types as full", () => {
  const { clock, flushed, d } = setup();
  d.push({ kind: "config" });
  clock.advance(100);
  assert.equal(flushed[0].full, true);
});

Deno.test("new Debouncer() rejects a negative debounceAfter and a max below after", () => {
  assert.throws(() => new Debouncer(() => {}, { after: -1 }), /Invalid debounceAfter -1/);
  assert.throws(() => new Debouncer(() => {}, { after: 100, max: 50 }), /Invalid debounceMax 50/);
});

Deno.test("Debouncer: stop() drops pending events; flushNow() flushes them once; a later event starts afresh", () => {
  const { clock, flushed, d } = setup();
  d.push({ kind: "eds", clusters: ["a"] });
  assert.equal(d.pending, true);
  d.stop();
  assert.equal(d.pending, false);
  assert.equal(clock.timers, 0);
  clock.advance(1000);
  assert.equal(flushed.length, 0, "stopped events are never flushed");
  d.flushNow();
  assert.equal(flushed.length, 0, "nothing pending: nothing flushed");
  clock.advance(50);
  d.push({ kind: "eds", clusters: ["b"] });
  d.flushNow();
  assert.equal(flushed.length, 1);
  assert.deepEqual([...flushed[0].edsClusters], ["b"]);
  assert.equal(flushed[0].events, 1);
  assert.equal(flushed[0].firstEventAt, clock.t);
  assert.equal(clock.timers, 0, "flushNow() clears the timer");
  clock.advance(1000);
  assert.equal(flushed.length, 1);
});

Deno.test("Debouncer: debounceAfter 0 flushes on the next tick; default settings are 100 and 1000 ms", () => {
  const { clock, flushed, d } = setup(0, 0);
  d.push({ kind: "full" });
  assert.equal(flushed.length, 0, "not synchronously");
  clock.advance(0);
  assert.equal(flushed.length, 1);
  const dd = new Debouncer(() => {}, { clock });
  assert.deepEqual([dd.after, dd.max], [100, 1000]);
  assert.throws(() => new Debouncer(() => {}, { after: NaN }), /Invalid debounceAfter NaN/);
  assert.throws(() => new Debouncer(() => {}, { max: Infinity }), /Invalid debounceMax Infinity/);
  assert.doesNotThrow(() => new Debouncer(() => {}, { after: 0, max: 0 }));
  assert.doesNotThrow(() => new Debouncer(() => {}, { after: 50, max: 50 }));
});

Deno.test("mergePush(): full wins, config types and EDS clusters accumulate, unknown kinds are refused", () => {
  const into = {
    full: false,
    types: new Set<string>(),
    edsClusters: new Set<string>(),
    events: 0,
    firstEventAt: 0,
  };
  mergePush(into, { kind: "config", types: ["t1", "t2"] });
  mergePush(into, { kind: "config", types: ["t2"] });
  mergePush(into, { kind: "eds", clusters: ["a"] });
  assert.deepEqual([into.full, [...into.types], [...into.edsClusters], into.events], [
    false,
    ["t1", "t2"],
    ["a"],
    3,
  ]);
  mergePush(into, { kind: "full" });
  assert.equal(into.full, true);
  assert.throws(
    () => mergePush(into, { kind: "bogus" } as unknown as PushEvent),
    /Unknown push event kind "bogus"/,
  );
});

Deno.test("Debouncer: endpoint-only events flush after maxEds under continuous churn; a config event among them waits for max", () => {
  const clock = new FakeClock();
  const flushed: MergedPush[] = [];
  const d = new Debouncer((p) => flushed.push(p), { after: 100, max: 1000, maxEds: 250, clock });
  for (let t = 0; t < 250; t += 50) {
    d.push({ kind: "eds", clusters: [`c${t}`] });
    clock.advance(50);
  }
  assert.equal(flushed.length, 1, "flushed at 250 ms although events kept coming every 50 ms");
  assert.equal(flushed[0].edsClusters.size, 5);
  d.push({ kind: "eds", clusters: ["x"] });
  clock.advance(50);
  d.push({ kind: "config", types: ["t1"] });
  for (let t = 0; t < 900; t += 50) {
    clock.advance(50);
    d.push({ kind: "eds", clusters: [`y${t}`] });
  }
  assert.equal(flushed.length, 1, "a push with a config event waits up to max");
  clock.advance(50);
  assert.equal(flushed.length, 2);
  assert.equal(flushed[1].types.size, 1);
  assert.throws(
    () => new Debouncer(() => {}, { after: 100, max: 1000, maxEds: 50 }),
    /Invalid debounceMaxEds 50/,
  );
  assert.equal(new Debouncer(() => {}, { max: 700 }).maxEds, 700, "default: max");
});

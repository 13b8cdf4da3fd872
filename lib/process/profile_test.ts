import assert from "node:assert/strict";
import { startAllocationProfile, startCpuProfile } from "./profile.ts";

Deno.test("startCpuProfile() records a V8 profile and refuses a second one at the same time", async () => {
  const p = await startCpuProfile();
  await assert.rejects(startCpuProfile(), /already being recorded/);
  let x = 0;
  for (let i = 0; i < 1e6; i++) x += i;
  const profile = await p.stop();
  assert.ok(x > 0);
  assert.ok(Array.isArray(profile.nodes) && profile.nodes.length > 0, "profile has nodes");
  assert.ok(Array.isArray(profile.samples), "profile has samples");
  // Stopped: a new one may start.
  await (await startCpuProfile()).stop();
});

/** Bytes of `profile`'s samples allocated in functions named `name` (self, not callees). */
function selfBytes(profile: Record<string, unknown>, name: string): number {
  let total = 0;
  const walk = (n: { callFrame: { functionName: string }; selfSize: number; children: [] }) => {
    if (n.callFrame.functionName === name) total += n.selfSize;
    for (const c of n.children) walk(c);
  };
  walk(profile.head as never);
  return total;
}

Deno.test("startAllocationProfile() counts what was allocated and freed since, one at a time", async () => {
  const p = await startAllocationProfile(1024);
  await assert.rejects(startAllocationProfile(), /An allocation profile is already being recorded/);
  // A CPU profile is another kind: both at once.
  await (await startCpuProfile()).stop();
  let kept = 0;
  function allocatesTenMegabytes() {
    // Arrays of 125 small integers: ~1 kB each, in V8's heap (a typed array's bytes are not).
    for (let i = 0; i < 10_000; i++) kept += new Array(125).fill(i).length;
  }
  allocatesTenMegabytes();
  // Garbage now: the profile still counts it.
  const profile = await p.stop();
  assert.equal(kept, 1_250_000);
  const bytes = selfBytes(profile, "allocatesTenMegabytes") + selfBytes(profile, "Array");
  assert.ok(bytes > 5e6 && bytes < 20e6, `~10 MB sampled, got ${bytes}`);
  assert.ok(Array.isArray(profile.samples), "profile has samples");
  // Stopped: a new one may start.
  await (await startAllocationProfile()).stop();
  assert.throws(() => startAllocationProfile(0), /samplingInterval must be a positive integer/);
});

import assert from "node:assert/strict";
import { startCpuProfile } from "./profile.ts";

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

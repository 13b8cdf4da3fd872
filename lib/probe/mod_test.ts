import assert from "node:assert/strict";
import { join } from "node:path";
import { waitUntil } from "../process/mod.ts";
import { checkProbe, PROBE_MARGIN_MS, startProbeUpdater } from "./mod.ts";
import { withTempDir } from "../../tests/harness/procs.ts";

async function exists(p: string): Promise<boolean> {
  try {
    await Deno.stat(p);
    return true;
  } catch {
    return false;
  }
}

Deno.test("checkProbe() passes when the file was modified within the interval", async () => {
  await withTempDir(async (dir) => {
    const p = join(dir, "health");
    await Deno.writeTextFile(p, "");
    assert.deepEqual(await checkProbe(p, 60_000), { ok: true });
  });
});

Deno.test("checkProbe() fails naming a missing file", async () => {
  await withTempDir(async (dir) => {
    const p = join(dir, "health");
    assert.deepEqual(await checkProbe(p, 1000), {
      ok: false,
      reason: `probe file "${p}" does not exist`,
    });
  });
});

Deno.test("checkProbe() fails naming a stale file and its age", async () => {
  await withTempDir(async (dir) => {
    const p = join(dir, "health");
    await Deno.writeTextFile(p, "");
    const mtime = new Date(Date.now() - 5000);
    await Deno.utime(p, mtime, mtime);
    const r = await checkProbe(p, 2000, () => mtime.getTime() + 3500);
    assert.deepEqual(r, {
      ok: false,
      reason: `probe file "${p}" is stale: last modified 3.5s ago, want within 2.01s`,
    });
    // Within interval + margin passes.
    assert.deepEqual(await checkProbe(p, 2000, () => mtime.getTime() + 2000 + PROBE_MARGIN_MS), {
      ok: true,
    });
  });
});

Deno.test("checkProbe() with interval 0 only requires the file to exist", async () => {
  await withTempDir(async (dir) => {
    const p = join(dir, "health");
    assert.deepEqual(await checkProbe(p, 0), {
      ok: false,
      reason: `probe file "${p}" does not exist`,
    });
    await Deno.writeTextFile(p, "");
    const old = new Date(Date.now() - 3_600_000);
    await Deno.utime(p, old, old);
    assert.deepEqual(await checkProbe(p, 0), { ok: true });
    // A positive interval still checks the modification time.
    assert.equal((await checkProbe(p, 1000)).ok, false);
  });
});

Deno.test("checkProbe() rejects an empty path", async () => {
  await assert.rejects(checkProbe("", 1000), { message: "probe path is empty (set --probe-path)" });
});

Deno.test("startProbeUpdater() keeps the file fresh while available and removes it when not", async () => {
  await withTempDir(async (dir) => {
    const p = join(dir, "liveness");
    let available = true;
    const updater = startProbeUpdater({ path: p, intervalMs: 100, available: () => available });
    try {
      await waitUntil(() => exists(p), { what: "probe file" });
      const first = (await Deno.stat(p)).mtime!.getTime();
      await waitUntil(async () => (await Deno.stat(p)).mtime!.getTime() > first, {
        what: "probe file refresh",
      });
      assert.deepEqual(await checkProbe(p, 100), { ok: true });
      available = false;
      await waitUntil(async () => !(await exists(p)), { what: "probe file removal" });
      assert.equal((await checkProbe(p, 100)).ok, false);
      available = true;
      await waitUntil(() => exists(p), { what: "probe file to come back" });
      const leftovers = [...Deno.readDirSync(dir)].map((e) => e.name);
      assert.deepEqual(leftovers, ["liveness"], "no temporary files left behind");
    } finally {
      await updater.stop();
    }
    assert.equal(await exists(p), false, "stop() removes the file");
  });
});

Deno.test("startProbeUpdater() rejects a non-positive interval", () => {
  assert.throws(() => startProbeUpdater({ path: "/tmp/x", intervalMs: 0, available: () => true }), {
    message: "invalid probe interval 0ms: must be positive",
  });
});

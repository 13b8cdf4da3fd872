/**
 * Live mesh configuration: a valid edit is applied with one line naming what changed, an invalid
 * edit or a removed file keeps the last good configuration and says why.
 */

import assert from "node:assert/strict";
import type { Logger } from "../../lib/log/mod.ts";
import { defaultMeshConfig } from "../../lib/model/mod.ts";
import { withTempDir } from "../../tests/harness/procs.ts";
import { changedMeshFields, describeMeshChange, watchMeshConfig } from "./mesh_config_watch.ts";

function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const add = (level: string) => (m: string) => void lines.push(`${level} ${m}`);
  return { lines, debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") };
}

/** Runs `fn` with the path of a mesh configuration file holding `text` (in a temp dir) and a log. */
async function withMeshFile(
  text: string,
  fn: (path: string, log: ReturnType<typeof recorder>) => Promise<void>,
): Promise<void> {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/mesh`, text);
    await fn(`${dir}/mesh`, recorder());
  });
}

Deno.test("watchMeshConfig() applies a valid edit once and logs the field that changed", async () => {
  await withMeshFile("authPolicy: NONE\n", async (path, log) => {
    const seen: string[][] = [];
    const w = watchMeshConfig({
      path,
      initial: defaultMeshConfig(),
      logger: log,
      intervalMs: 60_000,
      onChange: (mc, changed) => seen.push([mc.authPolicy, ...changed]),
    });
    try {
      await w.check();
      assert.deepEqual(seen, []);
      await Deno.writeTextFile(path, "authPolicy: MUTUAL_TLS\n");
      await w.check();
      await w.check();
      assert.deepEqual(seen, [["MUTUAL_TLS", "authPolicy"]]);
      assert.deepEqual(log.lines, [
        `info Mesh configuration ${path} changed: authPolicy NONE → MUTUAL_TLS (applied live)`,
      ]);
    } finally {
      w.close();
    }
  });
});

Deno.test("watchMeshConfig() keeps the last good configuration on a bad edit and a removed file", async () => {
  await withMeshFile("authPolicy: MUTUAL_TLS\n", async (path, log) => {
    let applied = 0;
    const initial = { ...defaultMeshConfig(), authPolicy: "MUTUAL_TLS" as const };
    const w = watchMeshConfig({
      path,
      initial,
      logger: log,
      intervalMs: 60_000,
      onChange: () => applied++,
    });
    try {
      await w.check();
      await Deno.writeTextFile(path, "authPolicy: SOMETIMES\n");
      await w.check();
      await w.check();
      await Deno.remove(path);
      await w.check();
      assert.equal(applied, 0);
      assert.equal(log.lines.length, 2, log.lines.join("\n"));
      assert.match(log.lines[0], /^warn .*authPolicy.*keeping the last good configuration$/);
      assert.match(log.lines[1], /disappeared; keeping the last good configuration$/);
    } finally {
      w.close();
    }
  });
});

Deno.test("watchMeshConfig(): a read error is said once, and what comes after it is compared with what was read before it (a file missing all along did not disappear)", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/mesh`;
    const log = recorder();
    const seen: string[] = [];
    const w = watchMeshConfig({
      path,
      initial: defaultMeshConfig(),
      logger: log,
      intervalMs: 60_000,
      onChange: (mc) => seen.push(mc.authPolicy),
    });
    try {
      await w.check(); // missing at start-up: the defaults
      await Deno.mkdir(path); // unreadable now (a directory), as out of file descriptors
      await w.check();
      await w.check();
      await Deno.remove(path); // missing again, as it was before the error
      await w.check();
      assert.equal(log.lines.length, 1, log.lines.join("\n"));
      assert.match(log.lines[0], /^warn Cannot read mesh configuration .*keeping the last good/);
      // a file with the same content before and after an error is not applied again
      await Deno.writeTextFile(path, "authPolicy: MUTUAL_TLS\n");
      await w.check();
      assert.deepEqual(seen, ["MUTUAL_TLS"]);
      await Deno.remove(path);
      await Deno.mkdir(path);
      await w.check();
      await Deno.remove(path);
      await Deno.writeTextFile(path, "authPolicy: MUTUAL_TLS\n");
      await w.check();
      assert.deepEqual(seen, ["MUTUAL_TLS"]);
      assert.equal(log.lines.filter((l) => l.startsWith("warn Cannot read")).length, 2);
      assert.ok(!log.lines.some((l) => /disappeared/.test(l)), log.lines.join("\n"));
    } finally {
      w.close();
    }
  });
});

Deno.test("describeMeshChange() names fields that need a restart apart from live ones", () => {
  const a = defaultMeshConfig();
  const b = { ...a, authPolicy: "MUTUAL_TLS" as const, ingressService: "gw" };
  const changed = changedMeshFields(a, b);
  assert.deepEqual(changed, ["authPolicy", "ingressService"]);
  assert.match(
    describeMeshChange("m", a, b, changed),
    /authPolicy NONE → MUTUAL_TLS \(applied live\); ingressService .* → gw \(takes effect after a restart\)$/,
  );
});

Deno.test("watchMeshConfig() follows a config map volume update (the kubelet's ..data symlink swap)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // <dir>/mesh → ..data/mesh, ..data → ..v1; an update writes ..v2 and swaps ..data by rename
    await Deno.mkdir(`${dir}/..v1`);
    await Deno.writeTextFile(`${dir}/..v1/mesh`, "authPolicy: NONE\n");
    await Deno.symlink("..v1", `${dir}/..data`);
    await Deno.symlink("..data/mesh", `${dir}/mesh`);
    const log = recorder();
    const seen: string[] = [];
    const w = watchMeshConfig({
      path: `${dir}/mesh`,
      initial: defaultMeshConfig(),
      logger: log,
      intervalMs: 60_000,
      onChange: (mc) => seen.push(mc.authPolicy),
    });
    try {
      await w.check();
      await Deno.mkdir(`${dir}/..v2`);
      await Deno.writeTextFile(`${dir}/..v2/mesh`, "authPolicy: MUTUAL_TLS\n");
      await Deno.symlink("..v2", `${dir}/..data_tmp`);
      await Deno.rename(`${dir}/..data_tmp`, `${dir}/..data`);
      await w.check();
      assert.deepEqual(seen, ["MUTUAL_TLS"]);
    } finally {
      w.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

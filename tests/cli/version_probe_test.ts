import assert from "node:assert/strict";
import { runInProcess, runProgram } from "./_run.ts";

Deno.test("version prints the long form, and the short form with --short or -s", async () => {
  const long = await runProgram("meshctl", ["version"]);
  assert.equal(long.code, 0, long.stderr);
  assert.equal(long.stderr, "");
  assert.match(long.stdout, /^Version: \S+\n/);
  const [short, s] = await Promise.all([
    runProgram("mesh_ca", ["version", "--short"]),
    runInProcess("mesh-policy", ["version", "-s"]),
  ]);
  for (const r of [short, s]) {
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim().split("\n").length, 1);
  }
  const version = long.stdout.match(/^Version: (\S+)/)![1];
  assert.equal(short.stdout, `${version}\n`);
  assert.equal(s.stdout, `${version}\n`);
  for (const program of ["mesh-discovery", "sidecar-injector", "mesh-agent"]) {
    const r = await runInProcess(program, ["version", "-s"]);
    assert.equal(r.stdout, `${version}\n`, program);
  }
});

Deno.test("probe succeeds for a fresh file and fails with one line for a missing or stale one", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/ready`;
    await Deno.writeTextFile(file, "ok");
    const ok = await runProgram("sidecar-injector", [
      "probe",
      "--probe-path",
      file,
      "--interval",
      "1m0s",
    ]);
    assert.deepEqual(ok, { code: 0, stdout: "", stderr: "" });
    const missing = await runInProcess("mesh_ca", [
      "probe",
      "--probe-path",
      `${dir}/nope`,
      "--interval=1s",
    ]);
    assert.equal(missing.code, 1);
    assert.equal(missing.stdout, "");
    assert.match(missing.stderr, /^Error: .*nope.*\n$/);
    const old = new Date(Date.now() - 60_000);
    await Deno.utime(file, old, old);
    const stale = await runInProcess("mesh-policy", [
      "probe",
      "--probe-path",
      file,
      "--interval",
      "1s",
    ]);
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /^Error: [^\n]+\n$/);
    // The default --interval (0s) only requires the file to exist.
    const existing = await runInProcess("mesh-policy", ["probe", "--probe-path", file]);
    assert.deepEqual(existing, { code: 0, stdout: "", stderr: "" });
    const noFile = await runInProcess("mesh-policy", ["probe", "--probe-path", `${dir}/nope`]);
    assert.equal(noFile.code, 1);
    assert.match(noFile.stderr, /^Error: .*nope.* does not exist\n$/);
    const noPath = await runInProcess("mesh-policy", ["probe"]);
    assert.deepEqual(noPath, {
      code: 2,
      stdout: "",
      stderr: "Error: Flag --probe-path is required\nRun 'mesh-policy probe --help' for usage.\n",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

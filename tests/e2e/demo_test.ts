import assert from "node:assert/strict";
import { freePort, spawnProgram, waitUntil, withTempDir } from "../harness/procs.ts";

const CONFIG = new URL("../../docs/demo/config/", import.meta.url);
const SPLIT = /last 1s: v1 (\d+)% \(\d+\)\s+v2 (\d+)% \(\d+\)/g;

function splits(text: string): [number, number][] {
  return [...text.matchAll(SPLIT)].map((m) => [Number(m[1]), Number(m[2])]);
}

Deno.test("demo prints the split, follows a weight edit and stops cleanly on SIGINT", async () => {
  await withTempDir(async (dir) => {
    for await (const e of Deno.readDir(CONFIG)) {
      await Deno.copyFile(new URL(e.name, CONFIG), `${dir}/${e.name}`);
    }
    const grpcPort = freePort();
    const demo = spawnProgram("cli/demo.ts", [
      "--configDir",
      dir,
      "--grpcPort",
      String(grpcPort),
      "--httpPort",
      String(freePort()),
      "--monitoringPort",
      String(freePort()),
      "--ctrlzPort",
      String(freePort()),
    ]);
    try {
      const started = await demo.waitFor(/mesh-discovery \(pid (\d+)\)/, 30_000, "stdout");
      const pid = Number(started.match(/\d+/)![0]);
      // Sample config: 80/20. Wait for a full second of traffic close to it.
      await demo.waitFor(
        (out) => splits(out).some(([v1, v2]) => v1 >= 70 && v1 <= 90 && v2 >= 10 && v2 <= 30),
        30_000,
        "stdout",
      );

      const vs = `${dir}/hello-virtualservice.yaml`;
      const text = await Deno.readTextFile(vs);
      const edited = text.replace("weight: 80", "weight: 10").replace("weight: 20", "weight: 90");
      assert.notEqual(edited, text);
      const offset = demo.stdout().length;
      const changedAt = Date.now();
      await Deno.writeTextFile(`${vs}.tmp`, edited);
      await Deno.rename(`${vs}.tmp`, vs);
      await demo.waitFor(
        (out) => splits(out.slice(offset)).some(([v1, v2]) => v1 <= 20 && v2 >= 80),
        5_000,
        "stdout",
      );
      // The printed split follows within about a second (plus one reporting interval).
      assert.ok(Date.now() - changedAt < 5_000);

      // A broken edit is rejected by mesh-discovery; the demo says why (without --verbose).
      await Deno.writeTextFile(`${vs}.tmp`, edited.replace(/hosts:\n(\s+)- .*\n/, "hosts: x\n"));
      await Deno.rename(`${vs}.tmp`, vs);
      const rejected = await demo.waitFor(/^demo: Config file error.*$/m, 10_000, "stderr");
      assert.match(rejected, /hello-virtualservice\.yaml.*spec\.hosts: must be a list/);
      assert.equal(demo.stderr().match(/Config file error/g)?.length, 1, "one line, no log noise");

      // Ctrl-C may arrive twice (deno task forwards it): one "stopping" line, exit 0.
      demo.kill("SIGINT");
      demo.kill("SIGINT");
      const status = await demo.status;
      assert.equal(status.code, 0, demo.output());
      assert.equal(demo.stdout().match(/demo: stopping/g)?.length, 1, demo.stdout());
      // The mesh-discovery child is gone and its port closed.
      await waitUntil(
        async () => {
          try {
            await Deno.stat(`/proc/${pid}`);
            return false;
          } catch {
            return true;
          }
        },
        5_000,
        `mesh-discovery (pid ${pid}) to exit`,
      );
      await assert.rejects(Deno.connect({ hostname: "127.0.0.1", port: grpcPort }));
    } finally {
      await demo.stop();
    }
  });
});

Deno.test("demo rejects a bad flag with exit code 2", async () => {
  const demo = spawnProgram("cli/demo.ts", ["--grpcPort", "70000"]);
  const status = await demo.status;
  assert.equal(status.code, 2);
  assert.equal(
    demo.stderr(),
    'Error: Invalid value for --grpcPort: must be a port from 1 to 65535, got "70000"\n' +
      'Run "deno task demo --help" for usage.\n',
  );
});

Deno.test("demo with default ports beside a demo's ports and Mock endpoints already in use picks free ones", async () => {
  // what a first demo holds: its discovery ports and the Mock endpoints of hello's grpc port
  const held = [
    Deno.listen({ hostname: "127.0.0.1", port: 25010 }),
    Deno.listen({ hostname: "127.0.1.1", port: 17070 }),
  ];
  const demo = spawnProgram("cli/demo.ts", []);
  try {
    const line = await demo.waitFor(/demo: default ports busy, using .*/, 30_000, "stdout");
    assert.match(line, /--grpcPort \d+/);
    assert.match(line, /--mockPortOffset \d+/);
    await demo.waitFor(SPLIT, 30_000, "stdout");
  } finally {
    for (const l of held) l.close();
    await demo.stop();
  }
  // a busy offset the user gave fails naming the flag
  const busy = Deno.listen({ hostname: "127.0.1.1", port: 7070 + 30123 });
  try {
    const d2 = spawnProgram("cli/demo.ts", ["--mockPortOffset", "30123"]);
    await d2.waitFor(/Error: Cannot listen/, 30_000, "stderr").finally(() => d2.stop());
    assert.match(
      d2.stderr(),
      /Error: Cannot listen on 127\.0\.1\.1:37193 \(Mock endpoint of hello v1\): address already in use; give another --mockPortOffset/,
    );
  } finally {
    busy.close();
  }
});

import assert from "node:assert/strict";
import { startCoreProber } from "./_core_prober.ts";
import { NODE } from "../tests/e2e/_config_load.ts";
import { startDiscovery } from "../tests/e2e/discovery_harness.ts";

Deno.test("the C-core prober of the benches times /ready, REST CDS and ADS CDS of a running discovery until told to stop", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-cfgload-prober-" });
  const d = await startDiscovery(["--configDir", dir, "--registries", "Mock"]);
  try {
    const log = `${dir}/probes.log`;
    const before = Date.now();
    const prober = await startCoreProber(d, { node: NODE, pauseMs: 20, log });
    await new Promise((r) => setTimeout(r, 300));
    const slowest = await prober.stop();
    assert.deepEqual(Object.keys(slowest).sort(), ["ads", "ready", "rest"]);
    for (const [kind, ms] of Object.entries(slowest)) {
      assert.ok(ms > 0 && ms < 10_000, `${kind} timed: ${ms} ms`);
    }
    // the probe log: every probe after the warm-up, "<epoch ms at its start> <kind> <ms>"
    const lines = (await Deno.readTextFile(log)).trim().split("\n").map((l) => l.split(" "));
    assert.deepEqual(new Set(lines.map((l) => l[1])), new Set(["ready", "rest", "ads"]));
    for (const [at, , ms] of lines) {
      assert.ok(Number(at) >= before && Number(at) <= Date.now(), `start ${at}`);
      assert.ok(Number(ms) <= slowest.ready + slowest.rest + slowest.ads, `${ms} ms`);
    }
    // a second prober appending to the same log tells only its own probes
    const again = await startCoreProber(d, { node: NODE, pauseMs: 20, log });
    await new Promise((r) => setTimeout(r, 300));
    const told = await again.end();
    for (const kind of ["ready", "rest", "ads"] as const) {
      assert.equal(told.times[kind].length, told.counts[kind], kind);
    }
  } finally {
    await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the C-core prober of the benches says why when its probes fail: stop() throws, end() tells", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-cfgload-prober-" });
  const d = await startDiscovery(["--configDir", dir, "--registries", "Mock"]);
  try {
    // HTTP probes to a port nobody listens on: each one is refused
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    l.close();
    const wrong = { ...d, http: `127.0.0.1:${l.addr.port}` };
    const o = { node: NODE, pauseMs: 20 };
    await assert.rejects(
      async () => (await startCoreProber(wrong, o)).stop(),
      /probes failed:\nready: .*refused/i,
    );
    const prober = await startCoreProber(wrong, o);
    await new Promise((r) => setTimeout(r, 300));
    const told = await prober.end();
    assert.match(told.errors, /^ready: .*refused/i);
    // the ADS probes go to the right port: only the HTTP ones (/ready, REST CDS) fail
    assert.ok(!/^ads:/m.test(told.errors), told.errors);
    assert.ok(told.counts.ready >= 1 && told.counts.ads >= 1, JSON.stringify(told.counts));
    // every probe's time, of each kind (the log file of its own is gone)
    for (const kind of ["ready", "rest", "ads"] as const) {
      assert.equal(told.times[kind].length, told.counts[kind], kind);
      assert.ok(Math.max(...told.times[kind]) <= told.slowest[kind] + 0.1, kind);
    }
  } finally {
    await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

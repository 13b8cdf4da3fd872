import assert from "node:assert/strict";
import { startCoreProber } from "./config_load.ts";
import { startDiscovery } from "../tests/e2e/discovery_harness.ts";

Deno.test("the C-core prober of bench config_load times /ready, REST CDS and ADS CDS of a running discovery until told to stop", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-cfgload-prober-" });
  const d = await startDiscovery(["--configDir", dir, "--registries", "Mock"]);
  try {
    const log = `${dir}/probes.log`;
    const before = Date.now();
    const prober = await startCoreProber(d, log);
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
  } finally {
    await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the C-core prober of bench config_load says why when its probes fail", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-cfgload-prober-" });
  const d = await startDiscovery(["--configDir", dir, "--registries", "Mock"]);
  try {
    // HTTP probes to a port nobody listens on: each one is refused
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    l.close();
    const wrong = { ...d, http: `127.0.0.1:${l.addr.port}` };
    await assert.rejects(
      async () => (await startCoreProber(wrong)).stop(),
      /probes failed:\nready: .*refused/i,
    );
  } finally {
    await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

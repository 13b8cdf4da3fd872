import assert from "node:assert/strict";
import { discoveryFlags } from "../../servers/discovery/_test_util.ts";
import { start, toConfig } from "../../servers/discovery/mod.ts";
import { withTempDir } from "../harness/procs.ts";
import { curlLater, hold } from "../harness/probe.ts";

Deno.test("mesh-discovery answers /ready on both HTTP ports while its serving isolate is held, and the rest waits for it", async () => {
  await withTempDir(async (dir) => {
    const config = toConfig(
      discoveryFlags({
        configDir: dir,
        meshConfig: `${dir}/none`,
        registries: ["Mock"],
        grpcAddr: "127.0.0.1:0",
        secureGrpcAddr: "",
        httpAddress: "127.0.0.1",
        port: 0,
        monitoringPort: 0,
        ctrlz_port: 0,
      }),
      {},
    );
    const d = await start(config);
    try {
      await d.ready;
      // synced: /ready says so at once, not at the next heartbeat
      const first = await fetch(`http://${d.addresses.http}/ready`);
      assert.equal(first.status, 200);
      assert.equal(await first.text(), "ready\n");
      // this isolate is discovery's serving isolate: hold it as 10,000 proxies' pushes would
      const probes = [d.addresses.http, d.addresses.monitoring].map((a) =>
        curlLater(`http://${a}/ready`, 0.3)
      );
      const version = curlLater(`http://${d.addresses.http}/version`, 0.3);
      hold(1500);
      for (const p of probes) {
        const r = await p;
        assert.equal(r.status, 200);
        assert.equal(r.body, "ready\n");
        assert.ok(r.secs < 0.5, `/ready took ${r.secs} s`);
      }
      const v = await version;
      assert.equal(v.status, 200);
      assert.match(v.body, /^Version: /m);
      assert.ok(v.secs > 0.5, `/version took ${v.secs} s: it is answered by the serving isolate`);
    } finally {
      await d.shutdown();
    }
    // shut down: the ports are closed
    await assert.rejects(fetch(`http://${d.addresses.http}/ready`));
  });
});

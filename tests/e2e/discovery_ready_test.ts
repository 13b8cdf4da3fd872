import assert from "node:assert/strict";
import { discoveryFlags } from "../../servers/discovery/_test_util.ts";
import { start, toConfig } from "../../servers/discovery/mod.ts";
import { freePort, withTempDir } from "../harness/procs.ts";
import { curlLater, hold } from "../harness/probe.ts";

/** mesh-discovery's flags for an in-process start on 127.0.0.1 with the Mock registry. */
function flags(dir: string, over: Parameters<typeof discoveryFlags>[0] = {}) {
  return toConfig(
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
      ...over,
    }),
    {},
  );
}

Deno.test("mesh-discovery answers /ready on both HTTP ports while its serving isolate is held, and the rest waits for it", async () => {
  await withTempDir(async (dir) => {
    const d = await start(flags(dir));
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

Deno.test("mesh-discovery that cannot start closes the HTTP front it had started", async () => {
  await withTempDir(async (dir) => {
    const held = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = freePort();
    try {
      // the front binds --port first; --grpcAddr, bound later, is taken
      await assert.rejects(
        start(flags(dir, { port, grpcAddr: `127.0.0.1:${held.addr.port}` })),
        /Cannot listen on --grpcAddr .*: address already in use/,
      );
      await assert.rejects(fetch(`http://127.0.0.1:${port}/ready`), /refused/i);
    } finally {
      held.close();
    }
  });
});

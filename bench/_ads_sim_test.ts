import assert from "node:assert/strict";
import { connectSession, type SimProxy, SimProxy as Sim } from "./_ads_sim.ts";
import { XDS_TYPES } from "../lib/xds/server/types.ts";
import { resource, sidecarCache, startTestAds } from "./_ads_testing.ts";

async function until(ok: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

for (const kind of ["lean", "node-http2"] as const) {
  Deno.test(`a simulated sidecar (${kind} client) syncs, and its ~30 kB EDS requests reach the real ADS server whole`, async () => {
    // 600 clusters with long names: each SotW EDS request and ACK names all of them (~30 kB),
    // sent as shared chunks and cut into several DATA frames
    const names = Array.from(
      { length: 600 },
      (_, i) => `outbound|8080||service-${i}.namespace-${i % 7}.svc.cluster.local`,
    );
    const cache = sidecarCache(names, "r1");
    const ads = await startTestAds(cache);
    const { server } = ads;
    const session = await connectSession(ads.port, kind);
    const got: string[] = [];
    const sims: SimProxy[] = [];
    try {
      // two sidecars on one connection (the bench's --per-session 2): their streams' requests
      // and ACKs are written in the same flushes
      for (const id of ["p", "q"]) {
        sims.push(
          new Sim({
            session,
            nodeId: `sidecar~10.0.0.1~${id}.default~default.svc.cluster.local`,
            delta: false,
            routeNames: ["r1"],
            onResponse: (_p, r) => got.push(r.type),
          }),
        );
      }
      await until(() => sims.every((x) => x.synced), "CDS, EDS, LDS and RDS");
      for (const x of sims) assert.equal(x.edsNames.length, 600);
      // the last cluster of the request's names: reached only if the server read them all
      for (const [i, n] of [[1, names[599]], [2, names[0]]] as const) {
        cache.set(XDS_TYPES.endpoint, n, resource(n, `10.0.0.${i + 1}`));
        server.push({ kind: "eds", clusters: [n] });
        await server.flush();
        await until(() => sims.every((x) => x.received.eds === 1 + i), `EDS push ${i}`);
      }
      for (const x of sims) {
        assert.equal(x.ended, undefined, "the server accepted every request and ACK");
      }
      assert.equal(got.filter((t) => t === "eds").length, 6);
    } finally {
      for (const x of sims) x.close();
      session.destroy();
      await ads.close();
    }
  });
}

import assert from "node:assert/strict";
import {
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
  MemoryStream,
  ResourceCache,
  XDS_TYPES,
  XdsServer,
} from "../../lib/xds/server/mod.ts";
import { createMetrics } from "./metrics.ts";
import { quietLogger } from "../../lib/log/testing.ts";

const CDS = XDS_TYPES.cluster;

/** The value of a sample line `name value` in a Prometheus text exposition. */
function sample(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  assert.ok(m, `${name} in the exposition`);
  return Number(m[1]);
}

/** A sidecar's first request on a stream: the clusters. */
const FIRST_CDS = {
  node: { id: "sidecar~10.0.0.1~a.default~default.svc.cluster.local" },
  type_url: CDS,
};

/** Metrics wired to an xDS server over a cache holding one cluster `c1`. */
async function serverWithMetrics() {
  const metrics = await createMetrics(
    () => ({ services: 0, virtualServices: 0, configsByKind: {}, conflictsTcpOverHttp: 0 }),
    () => 1,
  );
  const cache = new ResourceCache();
  cache.set(CDS, "c1", new TextEncoder().encode("a"));
  const server = new XdsServer<{ id: string }>({
    parseNode: (n) => ({ id: n.id }),
    resourcesFor: (_p, t, names) => cache.select(t, names),
    metrics: metrics.xds,
    debounceAfter: 0,
    logger: quietLogger,
  });
  return { metrics, cache, server };
}

Deno.test("/metrics reads the listeners' state at each scrape: accepting, refused, throttled and shed connections", async () => {
  let state = { accepting: true, refused: 0, throttled: 0, shed: 0 };
  const metrics = await createMetrics(
    () => ({ services: 0, virtualServices: 0, configsByKind: {}, conflictsTcpOverHttp: 0 }),
    () => 0,
    () => state,
  );
  try {
    const lines = async () =>
      (await metrics.text()).split("\n").filter((l) =>
        /^mesh_xds_(accepting|\w+_connections) /.test(l)
      ).sort();
    assert.deepEqual(await lines(), [
      "mesh_xds_accepting 1",
      "mesh_xds_refused_connections 0",
      "mesh_xds_shed_connections 0",
      "mesh_xds_throttled_connections 0",
    ]);
    state = { accepting: false, refused: 3, throttled: 2, shed: 7 };
    assert.deepEqual(await lines(), [
      "mesh_xds_accepting 0",
      "mesh_xds_refused_connections 3",
      "mesh_xds_shed_connections 7",
      "mesh_xds_throttled_connections 2",
    ]);
  } finally {
    metrics.close();
  }
});

Deno.test("/metrics push and convergence histograms are in seconds with a sum above 0 after pushes", async () => {
  const { metrics, cache, server } = await serverWithMetrics();
  const s = new MemoryStream<DiscoveryResponse>();
  const h = server.openSotw(s);
  h.receive(FIRST_CDS);
  let r = await s.next();
  for (let i = 0; i < 2; i++) {
    h.receive({ type_url: CDS, version_info: r.version_info, response_nonce: r.nonce });
    cache.set(CDS, "c1", new TextEncoder().encode(`v${i}`));
    server.push({ kind: "config", types: [CDS] });
    await server.flush();
    r = await s.next();
  }
  const text = await metrics.text();
  assert.equal(sample(text, "mesh_xds_push_time_count"), 2);
  const sum = sample(text, "mesh_xds_push_time_sum");
  assert.ok(sum > 0 && sum < 1, `push time sum ${sum} s`);
  assert.ok(sample(text, "mesh_xds_convergence_time_sum") > 0);
  assert.match(text, /^mesh_xds_push_time_bucket\{le="0\.0001"\} \d+$/m);
  server.close();
  metrics.close();
  await s.waitEnded();
});

Deno.test("/metrics counts a delta NACK in mesh_xds_rejects and ignores a stale one", async () => {
  const { metrics, server } = await serverWithMetrics();
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive(FIRST_CDS);
  const d1 = await s.next();
  h.receive({ type_url: CDS, response_nonce: d1.nonce, error_detail: { message: "bad" } });
  h.receive({ type_url: CDS, response_nonce: "stale", error_detail: { message: "bad" } });
  await server.flush();
  assert.equal(sample(await metrics.text(), 'mesh_xds_rejects\\{type="cds"\\}'), 1);
  server.close();
  metrics.close();
  await s.waitEnded();
});

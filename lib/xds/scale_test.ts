import assert from "node:assert/strict";
import {
  buildClusters,
  buildEndpoints,
  buildListeners,
  buildRoutes,
  decodeAny,
  encodeAny,
  loadXdsProtos,
  parseNodeId,
  TYPE_URLS,
} from "./mod.ts";
import { bigContext } from "./testdata/big.ts";

// How long this takes is measured by `deno task bench generate`, not asserted here.
Deno.test("builders generate and encode a sidecar's whole view of 1000 services × 5 endpoints", async () => {
  const ctx = bigContext();
  const proxy = parseNodeId("sidecar~172.16.0.1~a.ns0~ns0.svc.cluster.local");
  const clusters = buildClusters(ctx, proxy);
  const listeners = buildListeners(ctx, proxy);
  const routes = buildRoutes(ctx, proxy, ["80", "7070"]);
  const endpoints = buildEndpoints(
    ctx,
    clusters.filter((c) => c.type === "EDS").map((c) => c.name),
  );
  // 3 ports × 1000 services, plus the proxy's own and the BlackHole/Passthrough clusters.
  assert.equal(clusters.length, 3000 + 3 + 2);
  assert.equal(new Set(clusters.map((c) => c.name)).size, clusters.length, "unique names");
  assert.equal(endpoints.length, 3000);
  assert.ok(
    endpoints.every((e) =>
      e.endpoints.flatMap((l: { lb_endpoints: unknown[] }) => l.lb_endpoints).length === 5
    ),
  );
  assert.equal(routes[0].virtual_hosts.length, 1000);
  assert.ok(listeners.length >= 1000 + 2);

  await loadXdsProtos();
  const all: [string, { name?: string; cluster_name?: string }[]][] = [
    [TYPE_URLS.cluster, clusters],
    [TYPE_URLS.listener, listeners],
    [TYPE_URLS.route, routes],
    [TYPE_URLS.endpoint, endpoints],
  ];
  for (const [type, resources] of all) {
    for (const r of resources) {
      const back = decodeAny(encodeAny(type, r)) as { name?: string; cluster_name?: string };
      assert.equal(back.name ?? back.cluster_name, r.name ?? r.cluster_name);
    }
  }
});

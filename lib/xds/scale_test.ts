import assert from "node:assert/strict";
import type { Service, ServiceInstance, ServicePort } from "../model/types.ts";
import {
  buildClusters,
  buildEndpoints,
  buildListeners,
  buildRoutes,
  DEFAULT_XDS_MESH_CONFIG,
  encodeAny,
  loadXdsProtos,
  parseNodeId,
  type PushContext,
  TYPE_URLS,
} from "./mod.ts";

/** 1000 services (http 80, grpc 7070, tcp 9000) × 5 endpoints each. */
function bigContext(): PushContext {
  const ports: ServicePort[] = [
    { name: "http", port: 80, protocol: "HTTP" },
    { name: "grpc", port: 7070, protocol: "GRPC" },
    { name: "tcp", port: 9000, protocol: "TCP" },
  ];
  const services: Service[] = [];
  const instances: ServiceInstance[] = [];
  for (let i = 0; i < 1000; i++) {
    const hostname = `svc${i}.ns${i % 10}.svc.cluster.local`;
    services.push({
      hostname,
      address: `10.${(i >> 8) & 255}.${i & 255}.1`,
      ports,
      namespace: `ns${i % 10}`,
      meshExternal: false,
      resolution: "ClientSideLB",
      serviceAccounts: [],
      registry: "Mock",
    });
    for (let e = 0; e < 5; e++) {
      for (const p of ports) {
        instances.push({
          hostname,
          servicePort: p,
          address: `172.16.${i & 255}.${e + 1 + ((i >> 8) * 5)}`,
          port: p.port + 10000,
          labels: { version: `v${e % 2}` },
          locality: `r/z${e % 3}`,
          serviceAccount: "",
        });
      }
    }
  }
  return {
    services,
    instances,
    configs: {
      virtualServices: [],
      destinationRules: [],
      gateways: [],
      policies: [],
      serviceRoles: [],
      serviceRoleBindings: [],
      ingresses: [],
    },
    meshConfig: DEFAULT_XDS_MESH_CONFIG,
    domain: "cluster.local",
  };
}

Deno.test("builders generate a sidecar's view of 1000 services × 5 endpoints in under a second", async () => {
  const ctx = bigContext();
  const proxy = parseNodeId("sidecar~172.16.0.1~a.ns0~ns0.svc.cluster.local");
  const t0 = performance.now();
  const clusters = buildClusters(ctx, proxy);
  const listeners = buildListeners(ctx, proxy);
  const routes = buildRoutes(ctx, proxy, ["80", "7070"]);
  const endpoints = buildEndpoints(
    ctx,
    clusters.filter((c) => c.type === "EDS").map((c) => c.name),
  );
  const genMs = performance.now() - t0;
  assert.equal(clusters.length, 3000 + 3 + 2);
  assert.equal(endpoints.length, 3000);
  assert.equal(routes[0].virtual_hosts.length, 1000);
  assert.ok(listeners.length >= 1000 + 2);
  assert.ok(genMs < 1000, `generation took ${genMs.toFixed(0)} ms`);

  await loadXdsProtos();
  const t1 = performance.now();
  for (const c of clusters) encodeAny(TYPE_URLS.cluster, c);
  for (const l of listeners) encodeAny(TYPE_URLS.listener, l);
  for (const r of routes) encodeAny(TYPE_URLS.route, r);
  for (const e of endpoints) encodeAny(TYPE_URLS.endpoint, e);
  const encMs = performance.now() - t1;
  console.log(
    `generate ${genMs.toFixed(0)} ms, encode ${encMs.toFixed(0)} ms for ` +
      `${clusters.length} clusters, ${listeners.length} listeners, ${routes.length} routes, ` +
      `${endpoints.length} assignments`,
  );
});

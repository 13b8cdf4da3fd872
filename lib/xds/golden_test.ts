import assert from "node:assert/strict";
import * as path from "node:path";
import {
  buildApiListener,
  buildClusters,
  buildEndpoints,
  buildListeners,
  buildRoutes,
  loadXdsProtos,
  parseNodeId,
  type Proxy,
  type PushContext,
  TYPE_URLS,
  type XdsResource,
} from "./mod.ts";
import {
  DB_ENTRIES,
  ECHO_INGRESS,
  model,
  PUBLIC_GW,
  PUBLIC_VS,
  RBAC_BINDING,
  RBAC_ROLE,
  WORLD_DR,
  WORLD_GRPC_PERMISSIVE,
  WORLD_TCP_PLAINTEXT,
  WORLD_VS,
} from "./testdata/model.ts";
import { roundTripProblems } from "./testdata/roundtrip.ts";

const TESTDATA = new URL("./testdata", import.meta.url).pathname;
const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";

/** Route names referenced by listeners (RDS) and EDS cluster names. */
function referenced(listeners: XdsResource[], clusters: XdsResource[]) {
  const routes = new Set<string>();
  const walk = (o: unknown) => {
    if (!o || typeof o !== "object") return;
    const r = o as Record<string, unknown>;
    if (typeof r.route_config_name === "string") routes.add(r.route_config_name);
    for (const v of Object.values(r)) walk(v);
  };
  walk(listeners);
  const eds = clusters.filter((c) => c.type === "EDS").map((c) =>
    c.eds_cluster_config.service_name
  );
  return { routes: [...routes], eds };
}

function snapshot(ctx: PushContext, proxy: Proxy, apiNames: string[] = []) {
  const clusters = buildClusters(ctx, proxy);
  const listeners = [
    ...buildListeners(ctx, proxy),
    ...apiNames.map((n) => buildApiListener(ctx, proxy, n)!),
  ];
  const ref = referenced(listeners, clusters);
  return {
    listeners,
    routes: buildRoutes(ctx, proxy, ref.routes),
    clusters,
    endpoints: buildEndpoints(ctx, ref.eds),
  };
}

async function checkGolden(name: string, snap: ReturnType<typeof snapshot>) {
  await loadXdsProtos();
  const problems = [
    ...snap.listeners.flatMap((r) => roundTripProblems(TYPE_URLS.listener, r)),
    ...snap.routes.flatMap((r) => roundTripProblems(TYPE_URLS.route, r)),
    ...snap.clusters.flatMap((r) => roundTripProblems(TYPE_URLS.cluster, r)),
    ...snap.endpoints.flatMap((r) => roundTripProblems(TYPE_URLS.endpoint, r)),
  ];
  assert.deepEqual(problems, [], "every resource encodes without losing fields");
  const file = path.join(TESTDATA, `${name}.json`);
  const text = JSON.stringify(snap, null, 2) + "\n";
  if (UPDATE) {
    await Deno.writeTextFile(file, text);
    return;
  }
  const want = await Deno.readTextFile(file);
  assert.deepEqual(JSON.parse(text), JSON.parse(want), `${name}.json differs (UPDATE_GOLDEN=1)`);
}

const HELLO_V1 = () =>
  parseNodeId("sidecar~10.0.1.1~hello-v1.default~default.svc.cluster.local", {
    labels: { app: "hello", version: "v1" },
  });

Deno.test("buildListeners/Routes/Clusters/Endpoints() match sidecar.json for a sidecar with routing rules", async () => {
  const ctx = model({ configs: { virtualServices: [WORLD_VS], destinationRules: [WORLD_DR] } });
  await checkGolden("sidecar", snapshot(ctx, HELLO_V1()));
});

Deno.test("builders match proxyless.json for proxyless gRPC targets", async () => {
  const ctx = model({ configs: { virtualServices: [WORLD_VS], destinationRules: [WORLD_DR] } });
  const proxy = parseNodeId("sidecar~10.0.7.7~client.default~default.svc.cluster.local");
  const snap = snapshot(ctx, proxy, ["world:7070", "hello.default.svc.cluster.local:7070"]);
  await checkGolden("proxyless", {
    listeners: snap.listeners.filter((l) => l.api_listener),
    routes: snap.routes.filter((r) => r.name.includes(":")),
    clusters: snap.clusters.filter((c) => c.name.includes("|7070|")),
    endpoints: snap.endpoints.filter((e) => e.cluster_name.includes("|7070|")),
  });
});

Deno.test("builders match gateway.json for a router selected by a Gateway", async () => {
  const ctx = model({ configs: { virtualServices: [PUBLIC_VS], gateways: [PUBLIC_GW] } });
  const proxy = parseNodeId("router~10.0.9.9~gw.mesh-system~mesh-system.svc.cluster.local", {
    labels: { mesh: "ingressgateway" },
  });
  const snap = snapshot(ctx, proxy);
  await checkGolden("gateway", { ...snap, clusters: [], endpoints: [] });
});

Deno.test("builders match ingress.json for an ingress proxy and an Ingress object", async () => {
  const ctx = model({ configs: { ingresses: [ECHO_INGRESS] } });
  const proxy = parseNodeId("ingress~10.0.9.8~ingress.mesh-system~mesh-system.svc.cluster.local");
  const snap = snapshot(ctx, proxy);
  await checkGolden("ingress", { ...snap, clusters: [], endpoints: [] });
});

Deno.test("builders match mtls.json when the mesh requires mutual TLS", async () => {
  const ctx = model({
    configs: { policies: [WORLD_TCP_PLAINTEXT, WORLD_GRPC_PERMISSIVE] },
    mesh: { authPolicy: "MUTUAL_TLS" },
  });
  const proxy = parseNodeId("sidecar~10.0.2.1~world-v1.default~default.svc.cluster.local");
  const snap = snapshot(ctx, proxy);
  await checkGolden("mtls", {
    listeners: snap.listeners.filter((l) => l.name.startsWith("10.0.2.1_")),
    routes: [],
    clusters: snap.clusters.filter((c) => c.name.includes("world")),
    endpoints: [],
  });
});

Deno.test("builders match rbac.json when a ServiceRole names the service", async () => {
  const ctx = model({
    configs: { serviceRoles: [RBAC_ROLE], serviceRoleBindings: [RBAC_BINDING] },
  });
  const snap = snapshot(ctx, HELLO_V1());
  await checkGolden("rbac", {
    listeners: snap.listeners.filter((l) => l.name.startsWith("10.0.1.1_")),
    routes: [],
    clusters: [],
    endpoints: [],
  });
});

Deno.test("builders match serviceentry.json for CIDR addresses and unix socket endpoints", async () => {
  const ctx = model({ serviceEntries: DB_ENTRIES });
  const snap = snapshot(ctx, HELLO_V1());
  const ours = (n: string) => n.includes(".internal");
  await checkGolden("serviceentry", {
    listeners: snap.listeners.filter((l) => /_(3306|9091)$/.test(l.name)),
    routes: [],
    clusters: snap.clusters.filter((c) => ours(c.name)),
    endpoints: snap.endpoints.filter((e) => ours(e.cluster_name)),
  });
});

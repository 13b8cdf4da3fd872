/**
 * Golden xDS for today's networking fields (issue 24): each case writes an Istio object as users
 * do (networking.istio.io/v1), normalizes it as meshctl and the stores do (so the schema must
 * accept it), generates the resources the field touches, checks that they encode without losing
 * fields and pass Envoy's validation rules, and compares them with
 * `testdata/fields/<case>.json` (UPDATE_GOLDEN=1 rewrites).
 */

import assert from "node:assert/strict";
import * as path from "node:path";
import { formatIssues, normalizeObject } from "../../model/mod.ts";
import type { ConfigObject } from "../../model/types.ts";
import { checkGolden } from "../../../tests/harness/golden.ts";
import { loadXdsProtos, TYPE_URLS } from "../mod.ts";
import { pgvProblems } from "../pgv.ts";
import { roundTripProblems } from "../testdata/roundtrip.ts";
import { model } from "../testdata/model.ts";
import { gatewayRouter, helloV1 } from "../testdata/scenarios.ts";
import { parseNodeId } from "../node.ts";
import { buildClusters } from "./clusters.ts";
import { buildEndpoints } from "./endpoints.ts";
import { gatewayListeners, gatewayRouteConfig, selectedGateways } from "./gateway.ts";
import { buildRoutes } from "./routes.ts";
import { buildListeners } from "./listeners.ts";
import { scopeFor } from "./sidecar_scope.ts";
import { convertServiceEntries } from "../../registry/serviceentry.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const TESTDATA = new URL("./testdata/fields", import.meta.url).pathname;
const WORLD_80 = "outbound|80||world.default.svc.cluster.local";

/** Normalizes an Istio object (the schema must accept it). */
function accepted(kind: string, name: string, spec: unknown, namespace = "default"): ConfigObject {
  const r = normalizeObject(
    { apiVersion: "networking.istio.io/v1", kind, metadata: { name, namespace }, spec },
    `${kind}/${name}`,
  );
  assert.ok(r.object, formatIssues(r.issues));
  return r.object;
}

async function golden(name: string, typeUrl: string, resources: unknown[]): Promise<void> {
  await loadXdsProtos();
  const type = typeUrl.split("/").at(-1)!;
  assert.deepEqual(resources.flatMap((r) => roundTripProblems(typeUrl, r)), [], "round trip");
  assert.deepEqual(resources.flatMap((r) => pgvProblems(type, r)), [], "Envoy's rules");
  await checkGolden(
    path.join(TESTDATA, `${name}.json`),
    JSON.stringify(resources, null, 2) + "\n",
    {
      equal: (got, want) =>
        assert.deepEqual(
          JSON.parse(got),
          JSON.parse(want),
          `${name}.json differs (UPDATE_GOLDEN=1)`,
        ),
    },
  );
}

/** The sidecar route configuration `80` for world's VirtualService made of `http`. */
function worldRoutes(http: unknown[], drs: ConfigObject[] = []) {
  const ctx = model({
    configs: {
      virtualServices: [accepted("VirtualService", "world", { hosts: ["world"], http })],
      destinationRules: drs,
    },
  });
  // world's virtual host only: the other services' hosts do not change
  return buildRoutes(ctx, helloV1(), ["80"]).map((rc) => ({
    ...rc,
    virtual_hosts: rc.virtual_hosts.filter((h: { name: string }) => h.name.startsWith("world")),
  }));
}

/** The outbound clusters of world:80 for a DestinationRule with `spec`. */
function worldClusters(spec: unknown) {
  const ctx = model({
    configs: { destinationRules: [accepted("DestinationRule", "world", spec)] },
  });
  return buildClusters(ctx, helloV1()).filter((c) =>
    c.name.startsWith("outbound|80|") && c.name.endsWith("|world.default.svc.cluster.local")
  );
}

const TO_WORLD = [{ destination: { host: "world" } }];

Deno.test("http[].name and match[].name name the Envoy routes (golden http-name.json)", async () => {
  const rc = worldRoutes([
    {
      name: "canary",
      match: [{ name: "beta-users", headers: { "x-beta": { exact: "1" } } }, {
        uri: { prefix: "/canary" },
      }],
      route: TO_WORLD,
    },
    { name: "world-default", route: TO_WORLD },
  ]);
  assert.deepEqual(
    rc[0].virtual_hosts[0].routes.map((r: { name: string }) => r.name),
    ["canary.beta-users", "canary", "world-default"],
  );
  await golden("http-name", TYPE_URLS.route, rc);
});

Deno.test("headers: request and response set/add/remove, on the route and per destination (golden headers.json)", async () => {
  await golden(
    "headers",
    TYPE_URLS.route,
    worldRoutes([{
      match: [{ uri: { prefix: "/single" } }],
      route: [{ destination: { host: "world" }, headers: { request: { remove: ["cookie"] } } }],
    }, {
      headers: {
        request: { set: { "x-env": "prod" }, add: { "x-trace": "on" }, remove: ["x-debug"] },
        response: { set: { "cache-control": "no-store" }, remove: ["server"] },
      },
      route: [
        {
          destination: { host: "world", subset: "v1" },
          weight: 90,
          headers: { request: { set: { "x-subset": "v1" } } },
        },
        {
          destination: { host: "world", subset: "v2" },
          weight: 10,
          headers: { response: { add: { "x-canary": "true" } } },
        },
      ],
    }]),
  );
});

Deno.test("corsPolicy.allowOrigins takes StringMatch values (golden cors-allow-origins.json)", async () => {
  await golden(
    "cors-allow-origins",
    TYPE_URLS.route,
    worldRoutes([{
      corsPolicy: {
        allowOrigins: [{ exact: "https://example.com" }, { regex: "https://.*\\.example\\.org" }],
        allowMethods: ["GET", "POST"],
        maxAge: "24h",
      },
      route: TO_WORLD,
    }]),
  );
});

Deno.test("fault percentage, retries.retryOn and mirrorPercentage (golden fault-retry-mirror.json)", async () => {
  await golden(
    "fault-retry-mirror",
    TYPE_URLS.route,
    worldRoutes([{
      fault: {
        delay: { percentage: { value: 0.1 }, fixedDelay: "5s" },
        abort: { percentage: { value: 50 }, httpStatus: 503 },
      },
      retries: { attempts: 3, perTryTimeout: "2s", retryOn: "gateway-error,connect-failure" },
      mirror: { host: "hello" },
      mirrorPercentage: { value: 25.5 },
      route: TO_WORLD,
    }]),
  );
});

Deno.test("LEAST_REQUEST, query-parameter hashing, h2UpgradePolicy and today's outlier detection (golden traffic-policy.json)", async () => {
  const clusters = worldClusters({
    host: "world",
    trafficPolicy: {
      loadBalancer: { simple: "LEAST_REQUEST" },
      connectionPool: { http: { h2UpgradePolicy: "UPGRADE", idleTimeout: "30s" } },
      outlierDetection: {
        consecutive5xxErrors: 7,
        consecutiveGatewayErrors: 3,
        splitExternalLocalOriginErrors: true,
        consecutiveLocalOriginFailures: 4,
        interval: "10s",
        baseEjectionTime: "1m",
        maxEjectionPercent: 50,
        minHealthPercent: 30,
      },
    },
    subsets: [{
      name: "sticky",
      labels: { version: "v1" },
      trafficPolicy: { loadBalancer: { consistentHash: { httpQueryParameterName: "user" } } },
    }],
  });
  const plain = clusters.find((c) => c.name === WORLD_80)!;
  assert.equal(plain.lb_policy, "LEAST_REQUEST");
  await golden("traffic-policy", TYPE_URLS.cluster, clusters);
  const routes = worldRoutes([{ route: [{ destination: { host: "world", subset: "sticky" } }] }], [
    accepted("DestinationRule", "world", {
      host: "world",
      subsets: [{
        name: "sticky",
        labels: { version: "v1" },
        trafficPolicy: { loadBalancer: { consistentHash: { httpQueryParameterName: "user" } } },
      }],
    }),
  ]);
  const route = routes[0].virtual_hosts.flatMap((h: { routes: unknown[] }) => h.routes)
    .find((r: { route?: { cluster?: string } }) => r.route?.cluster?.includes("|sticky|"));
  assert.deepEqual(route.route.hash_policy, [{ query_parameter: { name: "user" } }]);
});

Deno.test("<namespace>/<gateway> references and namespace/host Gateway hosts (golden gateway-refs.json)", async () => {
  const gw = accepted("Gateway", "public", {
    selector: { mesh: "ingressgateway" },
    servers: [
      {
        port: { number: 80, name: "http", protocol: "HTTP" },
        hosts: ["default/world.example.com"],
      },
      {
        port: { number: 443, name: "https", protocol: "HTTPS" },
        hosts: ["./secure.example.com"],
        tls: { mode: "SIMPLE", serverCertificate: "/gw/cert.pem", privateKey: "/gw/key.pem" },
      },
    ],
  }, "edge");
  const vs = accepted("VirtualService", "world", {
    hosts: ["world.example.com"],
    gateways: ["edge/public"],
    http: [{ match: [{ gateways: ["edge/public"] }], route: TO_WORLD }],
  });
  // bound too, but from a namespace the server's host (`default/...`) does not admit
  const other = accepted("VirtualService", "other", {
    hosts: ["other.example.com"],
    gateways: ["edge/public"],
    http: [{ route: TO_WORLD }],
  }, "elsewhere");
  const ctx = model({ configs: { gateways: [gw], virtualServices: [vs, other] } });
  const router = gatewayRouter();
  const rc = gatewayRouteConfig(ctx, router, selectedGateways(ctx, router), 80)!;
  assert.equal(rc.virtual_hosts.length, 1, "the VirtualService of another namespace is left out");
  assert.deepEqual(rc.virtual_hosts[0].domains, ["world.example.com", "world.example.com:80"]);
  const tls = gatewayListeners(ctx, router).find((l) => l.name.endsWith("_443"));
  assert.deepEqual(tls?.filter_chains[0].filter_chain_match, {
    server_names: ["secure.example.com"],
  });
  await golden("gateway-refs", TYPE_URLS.route, [rc]);
});

Deno.test("tls routes by SNI on a Gateway's passthrough server (golden tls-routes.json)", async () => {
  const gw = accepted("Gateway", "passthrough", {
    selector: { mesh: "ingressgateway" },
    servers: [{
      port: { number: 443, name: "tls", protocol: "TLS" },
      hosts: ["*.example.com"],
      tls: { mode: "PASSTHROUGH" },
    }],
  });
  const vs = accepted("VirtualService", "sni", {
    hosts: ["*.example.com"],
    gateways: ["passthrough"],
    tls: [
      {
        match: [{ port: 443, sniHosts: ["world.example.com"] }],
        route: [{ destination: { host: "world", port: { number: 80 } } }],
      },
      {
        match: [{ sniHosts: ["split.example.com", "world.example.com"] }],
        route: [
          { destination: { host: "world", subset: "v1" }, weight: 80 },
          { destination: { host: "hello" }, weight: 20 },
        ],
      },
    ],
  });
  const ctx = model({ configs: { gateways: [gw], virtualServices: [vs] } });
  const listeners = gatewayListeners(ctx, gatewayRouter());
  const l = listeners.find((x) => x.name === "0.0.0.0_443")!;
  assert.deepEqual(
    l.filter_chains.map((c: { filter_chain_match: { server_names: string[] } }) =>
      c.filter_chain_match.server_names
    ),
    [["world.example.com"], ["split.example.com"]],
    "an SNI claimed by an earlier route is not claimed again",
  );
  await golden("tls-routes", TYPE_URLS.listener, [l]);
});

Deno.test("ServiceEntry ports[].targetPort, endpoints[].locality and weight (golden serviceentry-endpoints.json)", async () => {
  const se = accepted("ServiceEntry", "db", {
    hosts: ["db.internal"],
    location: "MESH_INTERNAL",
    resolution: "STATIC",
    ports: [{ number: 5432, name: "tcp-pg", protocol: "TCP", targetPort: 15432 }],
    endpoints: [
      { address: "10.1.0.1", locality: "us-east1/us-east1-b/rack1", weight: 3 },
      { address: "10.1.0.3", locality: "us-east1/us-east1-b" },
      { address: "10.1.0.2", locality: "us-west1/us-west1-a", ports: { "tcp-pg": 6432 } },
    ],
  });
  const ctx = model({ serviceEntries: [se] });
  const eds = buildEndpoints(ctx, ["outbound|5432||db.internal"]);
  const ports = eds[0].endpoints.flatMap((g: { lb_endpoints: Any[] }) =>
    g.lb_endpoints.map((e) => e.endpoint.address.socket_address.port_value)
  );
  assert.deepEqual(
    ports.sort(),
    [15432, 15432, 6432].sort(),
    "targetPort unless the endpoint names a port",
  );
  assert.deepEqual(eds[0].endpoints.map((g: Any) => g.load_balancing_weight.value), [4, 1]);
  await golden("serviceentry-endpoints", TYPE_URLS.endpoint, eds);
});

Deno.test("VirtualService exportTo: a proxy of another namespace gets the default route (golden export-to.json)", async () => {
  const vs = (name: string, namespace: string, exportTo: string[], subset: string) =>
    accepted("VirtualService", name, {
      hosts: ["world.default.svc.cluster.local"],
      exportTo,
      http: [{ route: [{ destination: { host: "world.default.svc.cluster.local", subset } }] }],
    }, namespace);
  const ctx = model({
    configs: {
      virtualServices: [vs("own", "default", ["."], "v1"), vs("for-prod", "tools", ["prod"], "v2")],
    },
  });
  const world = (proxy: ReturnType<typeof helloV1>) =>
    buildRoutes(ctx, proxy, ["80"])[0].virtual_hosts.find((h: { name: string }) =>
      h.name.startsWith("world")
    );
  const inDefault = world(helloV1());
  const inProd = world(parseNodeId("sidecar~10.9.9.9~c.prod~prod.svc.cluster.local"));
  const inOther = world(parseNodeId("sidecar~10.9.9.8~c.other~other.svc.cluster.local"));
  assert.equal(inDefault.routes[0].route.cluster, "outbound|80|v1|world.default.svc.cluster.local");
  assert.equal(inProd.routes[0].route.cluster, "outbound|80|v2|world.default.svc.cluster.local");
  assert.equal(inOther.routes[0].route.cluster, WORLD_80, "no VirtualService exported here");
  await golden("export-to", TYPE_URLS.route, [
    { name: "default", virtual_hosts: [inDefault] },
    { name: "prod", virtual_hosts: [inProd] },
    { name: "other", virtual_hosts: [inOther] },
  ]);
});

Deno.test("http[].delegate: the delegate's routes under the parent's match, destinations in its namespace (golden delegate.json)", async () => {
  const parent = accepted("VirtualService", "world", {
    hosts: ["world"],
    http: [
      { match: [{ uri: { prefix: "/api" } }], delegate: { name: "world-api", namespace: "team" } },
      { match: [{ uri: { prefix: "/gone" } }], delegate: { name: "nosuch" } },
      { route: TO_WORLD },
    ],
  });
  const child = accepted("VirtualService", "world-api", {
    http: [
      {
        match: [{ uri: { prefix: "/api/v2" }, headers: { "x-beta": { exact: "1" } } }],
        route: [{ destination: { host: "world.default.svc.cluster.local", subset: "v2" } }],
      },
      { route: [{ destination: { host: "hello.default.svc.cluster.local" } }] },
    ],
  }, "team");
  const ctx = model({ configs: { virtualServices: [parent, child] } });
  const rc = buildRoutes(ctx, helloV1(), ["80"]).map((r) => ({
    ...r,
    virtual_hosts: r.virtual_hosts.filter((h: { name: string }) => h.name.startsWith("world")),
  }));
  const routes = rc[0].virtual_hosts[0].routes;
  assert.deepEqual(routes.map((r: Any) => r.match.prefix), ["/api/v2", "/api", "/gone", "/"]);
  assert.equal(routes[2].direct_response.status, 503, "a missing delegate answers 503");
  await golden("delegate", TYPE_URLS.route, rc);
});

Deno.test("AUTO_PASSTHROUGH: a filter chain per outbound cluster by its SNI (golden auto-passthrough.json)", async () => {
  const gw = accepted("Gateway", "cross-network", {
    selector: { mesh: "ingressgateway" },
    servers: [{
      port: { number: 15443, name: "tls", protocol: "TLS" },
      hosts: ["*.local"],
      tls: { mode: "AUTO_PASSTHROUGH" },
    }],
  });
  const dr = accepted("DestinationRule", "world", {
    host: "world",
    subsets: [{ name: "v1", labels: { version: "v1" } }],
  });
  const ctx = model({ configs: { gateways: [gw], destinationRules: [dr] } });
  const l = gatewayListeners(ctx, gatewayRouter()).find((x) => x.name === "0.0.0.0_15443")!;
  const world = l.filter_chains.filter((c: Any) =>
    c.filter_chain_match.server_names[0].endsWith("_.world.default.svc.cluster.local")
  );
  assert.ok(
    world.some((c: Any) =>
      c.filter_chain_match.server_names[0] ===
        "outbound_.80_.v1_.world.default.svc.cluster.local" &&
      c.filters[0].typed_config.cluster === "outbound|80|v1|world.default.svc.cluster.local"
    ),
  );
  await golden("auto-passthrough", TYPE_URLS.listener, [{ ...l, filter_chains: world }]);
});

Deno.test("Sidecar: a proxy's outbound clusters and listeners hold only what its egress allows, ALLOW_ANY to the passthrough (golden sidecar-scope-*.json)", async () => {
  const sidecar = accepted("Sidecar", "default", {
    egress: [{ hosts: ["./world.default.svc.cluster.local"] }],
    outboundTrafficPolicy: { mode: "ALLOW_ANY" },
  });
  const ctx = model({ configs: { sidecars: [sidecar] } });
  const scope = scopeFor(ctx, helloV1());
  assert.equal(scope.sidecar, sidecar);
  const clusters = buildClusters(scope.ctx, helloV1()).filter((c: Any) =>
    !String(c.name).startsWith("inbound|")
  );
  assert.ok(clusters.every((c: Any) => !String(c.name).includes("hello.default")));
  assert.ok(clusters.every((c: Any) => !String(c.name).includes("api.example.com")));
  await golden("sidecar-scope-clusters", TYPE_URLS.cluster, clusters);
  const listeners = buildListeners(scope.ctx, helloV1()).filter((l: Any) =>
    l.traffic_direction !== "INBOUND"
  );
  await golden("sidecar-scope-listeners", TYPE_URLS.listener, listeners);
});

Deno.test("credentialName: a Gateway server and a DestinationRule read the mounted Secret's files (golden credential-name-*.json)", async () => {
  const gw = accepted("Gateway", "public", {
    selector: { mesh: "ingressgateway" },
    servers: [{
      port: { number: 443, protocol: "HTTPS", name: "https" },
      hosts: ["bookinfo.example.com"],
      tls: { mode: "MUTUAL", credentialName: "bookinfo-cert" },
    }],
  });
  const dr = accepted("DestinationRule", "world-tls", {
    host: "world.default.svc.cluster.local",
    trafficPolicy: { tls: { mode: "MUTUAL", credentialName: "world-client", sni: "world" } },
  });
  const ctx = model({ configs: { gateways: [gw], destinationRules: [dr] } });
  await golden(
    "credential-name-gateway",
    TYPE_URLS.listener,
    gatewayListeners(ctx, gatewayRouter()),
  );
  const cluster = buildClusters(ctx, helloV1()).filter((c: Any) => c.name === WORLD_80);
  assert.equal(cluster.length, 1);
  await golden("credential-name-cluster", TYPE_URLS.cluster, cluster);
});

Deno.test("WorkloadEntry: the entries a ServiceEntry selects are its endpoints (golden workload-entry.json)", async () => {
  const se = accepted("ServiceEntry", "details", {
    hosts: ["details.bookinfo.com"],
    location: "MESH_INTERNAL",
    ports: [{ number: 80, name: "http", protocol: "HTTP", targetPort: 8080 }],
    resolution: "STATIC",
    workloadSelector: { labels: { app: "details-legacy" } },
  });
  const entries = [
    accepted("WorkloadEntry", "vm-1", {
      address: "2.2.2.2",
      labels: { app: "details-legacy", version: "v1" },
      serviceAccount: "details-legacy",
      locality: "us-east/zone-a",
      weight: 3,
    }),
    accepted("WorkloadEntry", "vm-2", {
      address: "3.3.3.3",
      ports: { http: 9080 },
      labels: { app: "details-legacy", version: "v2" },
      locality: "us-east/zone-b",
    }),
    accepted("WorkloadEntry", "unselected", { address: "4.4.4.4", labels: { app: "other" } }),
  ];
  const converted = convertServiceEntries([se], "cluster.local", entries);
  const ctx = { ...model(), services: converted.services, instances: converted.instances };
  const eds = buildEndpoints(ctx, ["outbound|80||details.bookinfo.com"]);
  await golden("workload-entry", TYPE_URLS.endpoint, eds);
});

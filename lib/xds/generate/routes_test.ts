import assert from "node:assert/strict";
import { parseNodeId, proxyFromNode } from "../node.ts";
import { model, PUBLIC_GW, PUBLIC_VS, WORLD_DR, WORLD_VS } from "../testdata/model.ts";
import { gatewayRouter } from "../testdata/scenarios.ts";
import { indexOf } from "./context.ts";
import { pgvProblems } from "../pgv.ts";
import { EXT_TYPE_URLS } from "../protos.ts";
import { buildRoutes } from "./routes.ts";
import {
  corsConfig,
  destinationCluster,
  faultConfig,
  fractionalPercent,
  resolveTarget,
  routeMatch,
  type RouteScope,
  translateHttpRoutes,
} from "./route_translate.ts";

// deno-lint-ignore no-explicit-any
type RouteLike = { match: { headers?: any[] } };

const typeName = (url: string) => url.slice(url.lastIndexOf("/") + 1);

const scope: RouteScope = {
  port: 80,
  gateways: new Set(["mesh"]),
  labels: { app: "a" },
  sidecar: true,
  headerMatcher: "string_match",
};

Deno.test("routeMatch() maps uri, headers, authority, method and scheme", () => {
  assert.deepEqual(
    routeMatch({
      uri: { regex: "/v[0-9]+/.*" },
      headers: { "X-User": { prefix: "adm" } },
      authority: { exact: "a.example.com" },
      method: { exact: "GET" },
      scheme: { exact: "https" },
    }, scope),
    {
      safe_regex: { regex: "/v[0-9]+/.*" },
      headers: [
        { name: "x-user", string_match: { prefix: "adm" } },
        { name: ":authority", string_match: { exact: "a.example.com" } },
        { name: ":method", string_match: { exact: "GET" } },
        { name: ":scheme", string_match: { exact: "https" } },
      ],
    },
  );
  assert.deepEqual(routeMatch({ uri: { exact: "/x" } }, scope), { path: "/x" });
});

Deno.test("routeMatch() writes the older oneof fields for clients without string_match", () => {
  const legacy: RouteScope = { ...scope, headerMatcher: "legacy" };
  assert.deepEqual(
    routeMatch({
      headers: { "X-User": { prefix: "adm" }, "x-end": { suffix: "z" }, "x-re": { regex: "a.*" } },
      authority: { exact: "a.example.com" },
      method: { exact: "GET" },
    }, legacy),
    {
      prefix: "/",
      headers: [
        { name: "x-user", prefix_match: "adm" },
        { name: "x-end", suffix_match: "z" },
        { name: "x-re", safe_regex_match: { regex: "a.*" } },
        { name: ":authority", exact_match: "a.example.com" },
        { name: ":method", exact_match: "GET" },
      ],
    },
  );
  for (const h of routeMatch({ headers: { a: { exact: "b" } } }, legacy)!.headers) {
    assert.deepEqual(pgvProblems("envoy.config.route.v3.HeaderMatcher", h), []);
  }
});

Deno.test("routeMatch() writes an empty prefix or suffix as a presence match, valid in both forms", () => {
  for (const form of ["string_match", "legacy"] as const) {
    const m = routeMatch({
      headers: { a: { prefix: "" }, b: { suffix: "" } },
      scheme: { prefix: "" },
    }, { ...scope, headerMatcher: form })!;
    assert.deepEqual(m.headers, [
      { name: "a", present_match: true },
      { name: "b", present_match: true },
      { name: ":scheme", present_match: true },
    ]);
    for (const h of m.headers) {
      assert.deepEqual(pgvProblems("envoy.config.route.v3.HeaderMatcher", h), []);
    }
  }
});

Deno.test("routeMatch() writes an empty regex as an exact match of the empty value", () => {
  for (const form of ["string_match", "legacy"] as const) {
    const m = routeMatch({ headers: { a: { regex: "" } } }, { ...scope, headerMatcher: form })!;
    const h = m.headers[0];
    assert.deepEqual(
      h,
      form === "legacy" ? { name: "a", exact_match: "" } : {
        name: "a",
        string_match: { exact: "" },
      },
    );
    assert.deepEqual(pgvProblems("envoy.config.route.v3.HeaderMatcher", h), []);
  }
  const uri = routeMatch({ uri: { regex: "" } }, scope)!;
  assert.deepEqual(uri, { path: "" });
  assert.deepEqual(pgvProblems("envoy.config.route.v3.RouteMatch", uri), []);
});

Deno.test("buildRoutes() writes header matchers per client: Envoy 1.20+ string_match, gRPC C-core 1.51 the older fields", () => {
  const ctx = model({ configs: { virtualServices: [WORLD_VS], destinationRules: [WORLD_DR] } });
  const node = (ua: Record<string, unknown>) =>
    proxyFromNode({ id: "sidecar~10.0.1.1~hello-v1.default~default.svc.cluster.local", ...ua });
  const headersOf = (p: ReturnType<typeof parseNodeId>) =>
    buildRoutes(ctx, p, ["world:7070"])[0].virtual_hosts[0].routes.flatMap((r: RouteLike) =>
      r.match.headers ?? []
    );
  const envoy = node({
    user_agent_name: "envoy",
    user_agent_build_version: { version: { major_number: 1, minor_number: 27, patch: 0 } },
  });
  const core = node({
    user_agent_name: "gRPC C-core linux Python",
    user_agent_version: "C-core 29.0.0 Python 1.51.1",
  });
  assert.ok(headersOf(envoy).length > 0);
  assert.ok(headersOf(envoy).every((h: Record<string, unknown>) => "string_match" in h));
  assert.deepEqual(
    headersOf(core),
    headersOf(envoy).map((h: { name: string; string_match: { exact: string } }) => ({
      name: h.name,
      exact_match: h.string_match.exact,
    })),
  );
});

Deno.test("routeMatch() decides authority and method in proxyless configs: calls are POSTs to the requested name", () => {
  const api: RouteScope = { ...scope, proxylessAuthority: "world:7070", headerMatcher: "legacy" };
  // holds: the matcher is dropped, other matchers stay
  assert.deepEqual(
    routeMatch({ authority: { prefix: "world" }, method: { exact: "POST" } }, api),
    { prefix: "/" },
  );
  assert.deepEqual(
    routeMatch({ authority: { regex: "wor.*:7070" }, headers: { a: { exact: "b" } } }, api),
    { prefix: "/", headers: [{ name: "a", exact_match: "b" }] },
  );
  // cannot hold: the match is left out
  assert.equal(routeMatch({ authority: { exact: "elsewhere" } }, api), undefined);
  assert.equal(routeMatch({ method: { exact: "GET" } }, api), undefined);
  assert.equal(routeMatch({ authority: { suffix: ":80" } }, api), undefined);
  // sidecars keep them as header matchers
  assert.deepEqual(routeMatch({ method: { exact: "GET" } }, scope), {
    prefix: "/",
    headers: [{ name: ":method", string_match: { exact: "GET" } }],
  });
});

Deno.test("buildRoutes() leaves out proxyless routes whose authority or method cannot match", () => {
  const vs = {
    ...WORLD_VS,
    spec: {
      hosts: ["world"],
      http: [
        {
          match: [{ method: { exact: "GET" } }],
          route: [{ destination: { host: "world", subset: "v1" } }],
        },
        {
          match: [{ authority: { exact: "nope" } }, { authority: { prefix: "world:" } }],
          route: [{ destination: { host: "world", subset: "v2" } }],
        },
      ],
    },
  };
  const ctx = model({ configs: { virtualServices: [vs], destinationRules: [WORLD_DR] } });
  const proxy = parseNodeId("sidecar~10.0.7.7~client.default~default.svc.cluster.local");
  const [rc] = buildRoutes(ctx, proxy, ["world:7070"]);
  assert.deepEqual(
    rc.virtual_hosts[0].routes.map((
      r: { match: unknown; route: { cluster: string } },
    ) => [r.match, r.route.cluster]),
    [
      [{ prefix: "/" }, "outbound|7070|v2|world.default.svc.cluster.local"],
    ],
  );
});

Deno.test("routeMatch() drops a match for another port, gateway or source", () => {
  assert.equal(routeMatch({ port: 81 }, scope), undefined);
  assert.equal(routeMatch({ gateways: ["gw.default.svc.cluster.local"] }, scope), undefined);
  assert.equal(routeMatch({ sourceLabels: { app: "b" } }, scope), undefined);
  assert.deepEqual(routeMatch({ port: 80, sourceLabels: { app: "a" } }, scope), { prefix: "/" });
});

Deno.test("faultConfig() uses HUNDRED for whole percents and MILLION for fractions", () => {
  assert.deepEqual(fractionalPercent(10), { numerator: 10, denominator: "HUNDRED" });
  assert.deepEqual(fractionalPercent(0.5), { numerator: 5000, denominator: "MILLION" });
  const f = faultConfig({ abort: { percent: 50, grpcStatus: "UNAVAILABLE" } });
  assert.deepEqual(f?.abort, {
    percentage: { numerator: 50, denominator: "HUNDRED" },
    grpc_status: 14,
  });
  assert.equal(faultConfig({}), undefined);
});

Deno.test("destinationCluster() picks the port by number, name, or the only/current port", () => {
  const ctx = model();
  const w = "world.default.svc.cluster.local";
  assert.equal(
    destinationCluster(ctx, { host: "world", port: { name: "grpc" } }, "default", 80),
    `outbound|7070||${w}`,
  );
  assert.equal(
    destinationCluster(ctx, { host: "world", subset: "v1" }, "default", 9000),
    `outbound|9000|v1|${w}`,
  );
  assert.equal(
    destinationCluster(ctx, { host: "api.example.com" }, "default", 80),
    "outbound|443||api.example.com",
  );
});

Deno.test("translateHttpRoutes() makes one route per match and weighted clusters for splits", () => {
  const ctx = model({ configs: { virtualServices: [WORLD_VS], destinationRules: [WORLD_DR] } });
  const vss = indexOf(ctx).meshVsByHost.get("world.default.svc.cluster.local")!;
  const routes = translateHttpRoutes(ctx, vss, { ...scope, port: 7070 }, true);
  assert.equal(routes.length, 2);
  assert.equal(routes[0].route.cluster, "outbound|7070|v2|world.default.svc.cluster.local");
  assert.deepEqual(
    routes[1].route.weighted_clusters.clusters.map((c: { weight: { value: number } }) =>
      c.weight.value
    ),
    [80, 20],
  );
  assert.match(routes[1].route.retry_policy.retry_on, /unavailable/);
});

Deno.test("buildRoutes() answers <port> and <host>:<port> names and skips unknown ones", () => {
  const ctx = model({ configs: { virtualServices: [WORLD_VS] } });
  const proxy = parseNodeId("sidecar~10.9.9.9~c.default~default.svc.cluster.local");
  const out = buildRoutes(ctx, proxy, ["80", "world:7070", "nope:1", "bogus", "9000", "81"]);
  assert.deepEqual(out.map((r) => r.name), ["80", "world:7070"], "9000 is TCP, 81 unused");
  assert.equal(out[1].virtual_hosts[0].domains[0], "world:7070");
  assert.equal(out[0].virtual_hosts.length, 2);
});

Deno.test("buildRoutes() serves a router only the ports of its HTTP Gateway servers", () => {
  const ctx = model({ configs: { virtualServices: [PUBLIC_VS], gateways: [PUBLIC_GW] } });
  const out = buildRoutes(ctx, gatewayRouter(), ["80", "443", "8080", "9000"]);
  assert.deepEqual(out.map((r) => r.name), ["80", "443"]);
});

Deno.test("resolveTarget() resolves FQDN and short hosts relative to the proxy's domain", () => {
  const ctx = model();
  const proxy = parseNodeId("sidecar~10.9.9.9~c.default~default.svc.cluster.local");
  assert.equal(
    resolveTarget(ctx, proxy, "hello:80")?.service.hostname,
    "hello.default.svc.cluster.local",
  );
  assert.equal(resolveTarget(ctx, proxy, "hello.default:7070")?.port.name, "grpc");
  assert.equal(resolveTarget(ctx, proxy, "hello.default.svc.cluster.local:9000")?.port.name, "tcp");
  assert.equal(resolveTarget(ctx, proxy, "hello:81"), undefined);
  assert.equal(resolveTarget(ctx, proxy, "hello"), undefined);
});

Deno.test("translateHttpRoutes() retries gRPC on unavailable, cancelled, resource-exhausted only", () => {
  const ctx = model({ configs: { virtualServices: [WORLD_VS], destinationRules: [WORLD_DR] } });
  const vss = indexOf(ctx).meshVsByHost.get("world.default.svc.cluster.local")!;
  const grpc = translateHttpRoutes(ctx, vss, { ...scope, port: 7070 }, true)[1].route.retry_policy;
  assert.equal(
    grpc.retry_on,
    "5xx,connect-failure,refused-stream,unavailable,cancelled,resource-exhausted",
  );
  const http = translateHttpRoutes(ctx, vss, scope, false)[1].route.retry_policy;
  assert.equal(http.retry_on, "5xx,connect-failure,refused-stream");
});

Deno.test("buildRoutes() disables the route timeout unless a VirtualService sets one", () => {
  const ctx = model({ configs: { virtualServices: [WORLD_VS] } });
  const proxy = parseNodeId("sidecar~10.9.9.9~c.default~default.svc.cluster.local");
  const [rc] = buildRoutes(ctx, proxy, ["80"]);
  const byHost = new Map(
    rc.virtual_hosts.map((vh: { name: string; routes: unknown[] }) => [vh.name, vh.routes]),
  );
  // hello has no VirtualService: the default route; world's first route sets no timeout.
  const hello = byHost.get("hello.default.svc.cluster.local:80") as { route: unknown }[];
  const world = byHost.get("world.default.svc.cluster.local:80") as { route: unknown }[];
  assert.deepEqual(hello[0].route, {
    cluster: "outbound|80||hello.default.svc.cluster.local",
    timeout: { seconds: 0 },
  });
  assert.deepEqual((world[0].route as { timeout: unknown }).timeout, { seconds: 0 });
  assert.deepEqual((world[1].route as { timeout: unknown }).timeout, { seconds: 10 });
});

Deno.test('corsConfig() keeps Istio\'s any-origin "*" as {exact: "*"}, Envoy\'s any-origin form', () => {
  const c = corsConfig({ allowOrigin: ["*", "https://a.example.com"], allowMethods: ["GET"] });
  assert.deepEqual(c?.allow_origin_string_match, [
    { exact: "*" },
    { exact: "https://a.example.com" },
  ]);
  assert.deepEqual(pgvProblems(typeName(EXT_TYPE_URLS.corsPolicy), c), []);
});

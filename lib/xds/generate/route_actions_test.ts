/**
 * What a VirtualService HTTP route becomes in Envoy, field by field: redirects, rewrites, mirrors,
 * websockets, added headers, retries, timeouts, faults, CORS and consistent-hash policies, and the
 * route configurations sidecars and proxyless clients get.
 */

import assert from "node:assert/strict";
import type { ConfigObject } from "../../model/types.ts";
import { parseNodeId } from "../node.ts";
import { cfg, model } from "../testdata/model.ts";
import { EXT_TYPE_URLS } from "../protos.ts";
import { indexOf } from "./context.ts";
import { apiRouteConfig, buildRoutes, defaultRoute } from "./routes.ts";
import {
  corsConfig,
  dedupeDomains,
  destinationCluster,
  faultConfig,
  hashPolicy,
  type RouteScope,
  stringMatches,
  translateHttpRoutes,
} from "./route_translate.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const WORLD = "world.default.svc.cluster.local";
const CORS_POLICY = "type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy";
const HELLO = "hello.default.svc.cluster.local";
const CLIENT = parseNodeId("sidecar~10.9.9.9~c.default~default.svc.cluster.local");
const SCOPE: RouteScope = {
  port: 80,
  gateways: new Set(["mesh"]),
  labels: {},
  sidecar: true,
  headerMatcher: "string_match",
};

/** The Envoy routes of world's VirtualService made of `http`, on port 80 (or `port`). */
function routes(http: unknown[], port = 80, drs: ConfigObject[] = [], grpc = false): Any[] {
  const ctx = model({
    configs: {
      virtualServices: [cfg("VirtualService", "world", { hosts: ["world"], http })],
      destinationRules: drs,
    },
  });
  const vss = indexOf(ctx).meshVsByHost.get(WORLD)!;
  return translateHttpRoutes(ctx, vss, { ...SCOPE, port }, grpc);
}

const TO_WORLD = [{ destination: { host: "world" } }];

Deno.test("a redirect route answers with the new path and authority, and routes nowhere", () => {
  const [r] = routes([{ redirect: { uri: "/new", authority: "b.example.com" }, route: TO_WORLD }]);
  assert.deepEqual(r.redirect, { path_redirect: "/new", host_redirect: "b.example.com" });
  assert.equal(r.route, undefined);
  const [only] = routes([{ redirect: { uri: "/x", authority: 3 } }]);
  assert.deepEqual(only.redirect, { path_redirect: "/x" });
  const [host] = routes([{ redirect: { authority: "c.example.com" } }]);
  assert.deepEqual(host.redirect, { host_redirect: "c.example.com" });
});

Deno.test("rewrite, mirror, websocket upgrade and added request headers", () => {
  const [r] = routes([{
    route: TO_WORLD,
    rewrite: { uri: "/v2/", authority: "internal.world" },
    mirror: { host: "hello", subset: "shadow" },
    websocketUpgrade: true,
    appendHeaders: { "x-a": "1", "x-b": 2, "x-c": "3" },
  }]);
  assert.equal(r.route.cluster, `outbound|80||${WORLD}`);
  assert.equal(r.route.prefix_rewrite, "/v2/");
  assert.equal(r.route.host_rewrite_literal, "internal.world");
  assert.deepEqual(r.route.request_mirror_policies, [{ cluster: `outbound|80|shadow|${HELLO}` }]);
  assert.deepEqual(r.route.upgrade_configs, [{ upgrade_type: "websocket" }]);
  assert.deepEqual(r.request_headers_to_add, [
    { header: { key: "x-a", value: "1" } },
    { header: { key: "x-c", value: "3" } },
  ]);
  const [plain] = routes([{
    route: TO_WORLD,
    rewrite: { uri: 1 },
    websocketUpgrade: "yes",
    appendHeaders: { "x-b": 2 },
    mirror: "hello",
  }]);
  assert.deepEqual(plain.route, { cluster: `outbound|80||${WORLD}`, timeout: { seconds: 0 } });
  assert.equal(plain.request_headers_to_add, undefined);
  assert.equal(plain.typed_per_filter_config, undefined);
});

Deno.test("weights: zero-weight destinations are dropped; one left is a plain cluster; none is a 503", () => {
  const [one] = routes([{
    route: [
      { destination: { host: "world", subset: "v1" }, weight: 100 },
      { destination: { host: "world", subset: "v2" }, weight: 0 },
      { destination: { host: "world", subset: "v3" } },
    ],
  }]);
  assert.equal(one.route.cluster, `outbound|80|v1|${WORLD}`);
  assert.equal(one.route.weighted_clusters, undefined);
  const [none] = routes([{
    route: [{ destination: { host: "world", subset: "v1" } }, {
      destination: { host: "world", subset: "v2" },
    }],
  }]);
  assert.deepEqual(none, { match: { prefix: "/" }, direct_response: { status: 503 } });
  const [empty] = routes([{ route: [{ weight: 100 }] }]);
  assert.deepEqual(empty.direct_response, { status: 503 });
  const [split] = routes([{
    route: [
      { destination: { host: "world", subset: "v1" }, weight: 60 },
      { destination: { host: "world", subset: "v2" }, weight: 40 },
    ],
  }]);
  assert.deepEqual(split.route.weighted_clusters, {
    clusters: [
      { name: `outbound|80|v1|${WORLD}`, weight: { value: 60 } },
      { name: `outbound|80|v2|${WORLD}`, weight: { value: 40 } },
    ],
  });
});

Deno.test("retries: attempts, retryOn given or by protocol, per-try timeout; timeout from the route", () => {
  const [r] = routes([{
    route: TO_WORLD,
    retries: { attempts: 4, retryOn: "gateway-error" },
    timeout: "1.5s",
  }]);
  assert.deepEqual(r.route.retry_policy, { retry_on: "gateway-error", num_retries: { value: 4 } });
  assert.deepEqual(r.route.timeout, { seconds: 1, nanos: 500_000_000 });
  const [g] = routes(
    [{ route: TO_WORLD, retries: { attempts: 2, perTryTimeout: "250ms" } }],
    7070,
    [],
    true,
  );
  assert.deepEqual(g.route.retry_policy, {
    retry_on: "5xx,connect-failure,refused-stream,unavailable,cancelled,resource-exhausted",
    num_retries: { value: 2 },
    per_try_timeout: { seconds: 0, nanos: 250_000_000 },
  });
  const [none] = routes([{ route: TO_WORLD, retries: { perTryTimeout: "1s" } }]);
  assert.equal(none.route.retry_policy, undefined);
});

Deno.test("faultConfig(): delays and aborts with percentages; gRPC statuses by number or name", () => {
  assert.deepEqual(faultConfig({ delay: { fixedDelay: "2s", percentage: { value: 12.5 } } }), {
    "@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
    delay: {
      fixed_delay: { seconds: 2 },
      percentage: { numerator: 125000, denominator: "MILLION" },
    },
  });
  assert.deepEqual(faultConfig({ delay: { fixedDelay: "1s" } })?.delay.percentage, {
    numerator: 100,
    denominator: "HUNDRED",
  });
  assert.equal(faultConfig({ delay: { percent: 5 } }), undefined, "no fixedDelay: no delay");
  assert.equal(faultConfig({ delay: "1s", abort: 503 }), undefined);
  assert.deepEqual(faultConfig({ abort: { httpStatus: 503, grpcStatus: 14, percent: 1 } })?.abort, {
    percentage: { numerator: 1, denominator: "HUNDRED" },
    http_status: 503,
  });
  assert.equal(faultConfig({ abort: { grpcStatus: 7 } })?.abort.grpc_status, 7);
  assert.equal(faultConfig({ abort: { grpcStatus: "permission_denied" } })?.abort.grpc_status, 7);
  assert.equal(faultConfig({ abort: { grpcStatus: "NOPE" } }), undefined);
  assert.equal(faultConfig({ abort: { percent: 10 } }), undefined);
  assert.equal(faultConfig(null), undefined);
  const [r] = routes([{ route: TO_WORLD, fault: { abort: { httpStatus: 418 } } }]);
  assert.equal(r.typed_per_filter_config["envoy.filters.http.fault"].abort.http_status, 418);
});

Deno.test("corsConfig(): every field; the route wraps it as an optional filter config", () => {
  assert.deepEqual(
    corsConfig({
      allowOrigin: ["https://a", 3],
      allowMethods: ["GET", "PUT"],
      allowHeaders: ["x-a", "x-b"],
      exposeHeaders: ["x-c"],
      maxAge: "90s",
      allowCredentials: false,
    }),
    {
      "@type": CORS_POLICY,
      allow_origin_string_match: [{ exact: "https://a" }],
      allow_methods: "GET,PUT",
      allow_headers: "x-a,x-b",
      expose_headers: "x-c",
      max_age: "90",
      allow_credentials: { value: false },
    },
  );
  assert.deepEqual(corsConfig({ allowOrigin: "x", allowMethods: [], maxAge: "" }), {
    "@type": CORS_POLICY,
  });
  assert.equal(corsConfig(null), undefined);
  const [r] = routes([{ route: TO_WORLD, corsPolicy: { allowOrigin: ["*"] } }]);
  assert.deepEqual(r.typed_per_filter_config["envoy.filters.http.cors"], {
    "@type": EXT_TYPE_URLS.routeFilterConfig,
    config: {
      "@type": CORS_POLICY,
      allow_origin_string_match: [{ exact: "*" }],
    },
    is_optional: true,
  });
});

Deno.test("hashPolicy(): header, cookie (ttl, path) or source IP from the subset, port or top level", () => {
  const dr = (
    trafficPolicy: unknown,
    subsets: unknown[] = [],
  ) => [cfg("DestinationRule", "world", { host: "world", trafficPolicy, subsets })];
  const hp = (drs: ConfigObject[], cluster = `outbound|80||${WORLD}`) =>
    hashPolicy(model({ configs: { destinationRules: drs } }), cluster);
  const ch = (consistentHash: unknown) => ({ loadBalancer: { consistentHash } });
  assert.deepEqual(hp(dr(ch({ httpHeader: "x-user" }))), [{ header: { header_name: "x-user" } }]);
  assert.deepEqual(hp(dr(ch({ httpHeaderName: "x-id" }))), [{ header: { header_name: "x-id" } }]);
  assert.deepEqual(hp(dr(ch({ httpCookie: { name: "s", ttl: "10s", path: "/a" } }))), [{
    cookie: { name: "s", ttl: { seconds: 10 }, path: "/a" },
  }]);
  assert.deepEqual(hp(dr(ch({ httpCookie: { name: "s" } }))), [{ cookie: { name: "s" } }]);
  assert.equal(hp(dr(ch({ httpCookie: { ttl: "1s" } }))), undefined);
  assert.deepEqual(hp(dr(ch({ useSourceIp: true }))), [{
    connection_properties: { source_ip: true },
  }]);
  assert.equal(hp(dr(ch({ useSourceIp: false }))), undefined);
  assert.equal(hp(dr({ loadBalancer: { simple: "RANDOM" } })), undefined);
  assert.equal(hp([]), undefined);
  assert.equal(hp(dr(ch({ httpHeader: "x" })), "BlackHoleCluster"), undefined);
  // an empty name is proto3's "not set" and Envoy refuses it (min_len 1): nothing is hashed
  assert.equal(hp(dr(ch({ httpHeaderName: "" }))), undefined);
  assert.equal(hp(dr(ch({ httpHeader: "" }))), undefined);
  assert.equal(hp(dr(ch({ httpQueryParameterName: "" }))), undefined);
  // port level replaces the top level for its port
  const ported = dr({
    ...ch({ httpHeader: "x-top" }),
    portLevelSettings: [{ port: { number: 7070 }, ...ch({ httpHeader: "x-grpc" }) }],
  });
  assert.deepEqual(hp(ported, `outbound|7070||${WORLD}`), [{ header: { header_name: "x-grpc" } }]);
  assert.deepEqual(hp(ported, `outbound|80||${WORLD}`), [{ header: { header_name: "x-top" } }]);
  // a subset's simple policy turns hashing off, its consistentHash turns it on
  const subsets = dr(ch({ httpHeader: "x-top" }), [
    { name: "rr", trafficPolicy: { loadBalancer: { simple: "ROUND_ROBIN" } } },
    { name: "ip", trafficPolicy: ch({ useSourceIp: true }) },
    { name: "plain" },
  ]);
  assert.equal(hp(subsets, `outbound|80|rr|${WORLD}`), undefined);
  assert.deepEqual(hp(subsets, `outbound|80|ip|${WORLD}`), [{
    connection_properties: { source_ip: true },
  }]);
  assert.deepEqual(hp(subsets, `outbound|80|plain|${WORLD}`), [{
    header: { header_name: "x-top" },
  }]);
  // the route to a hashed cluster carries it (weighted: the first cluster's)
  const [r] = routes([{ route: TO_WORLD }], 80, dr(ch({ httpHeader: "x-user" })));
  assert.deepEqual(r.route.hash_policy, [{ header: { header_name: "x-user" } }]);
  assert.deepEqual(
    defaultRoute(
      WORLD,
      80,
      model({ configs: { destinationRules: dr(ch({ httpHeader: "x-user" })) } }),
    ).route.hash_policy,
    [{ header: { header_name: "x-user" } }],
  );
  assert.deepEqual(defaultRoute(WORLD, 80), {
    match: { prefix: "/" },
    route: { cluster: `outbound|80||${WORLD}`, timeout: { seconds: 0 } },
  });
});

Deno.test("destinationCluster(): unknown hosts and ports keep the route's port; several ports: the current, then HTTP", () => {
  const ctx = model();
  assert.equal(
    destinationCluster(ctx, { host: "nope.example" }, "default", 8080),
    "outbound|8080||nope.example",
  );
  assert.equal(
    destinationCluster(ctx, { host: "world", port: { name: "nope" } }, "default", 9000),
    `outbound|9000||${WORLD}`,
  );
  assert.equal(
    destinationCluster(ctx, { host: "world" }, "default", 1234),
    `outbound|80||${WORLD}`,
  );
  assert.equal(
    destinationCluster(ctx, { host: "world", port: { number: 1 } }, "default", 80),
    `outbound|1||${WORLD}`,
  );
  assert.equal(
    destinationCluster(ctx, { host: "world", subset: 3 }, "default", 80),
    `outbound|80||${WORLD}`,
  );
  assert.equal(
    destinationCluster(ctx, { host: "world" }, "prod", 80),
    "outbound|80||world.prod.svc.cluster.local",
  );
});

Deno.test("stringMatches() decides exact, prefix, suffix and whole-value regex matches", () => {
  assert.equal(stringMatches(undefined, "x"), true);
  assert.equal(stringMatches({ exact: "POST" }, "POST"), true);
  assert.equal(stringMatches({ exact: "POST" }, "POSTX"), false);
  assert.equal(stringMatches({ prefix: "he" }, "hello"), true);
  assert.equal(stringMatches({ prefix: "he" }, "ahe"), false);
  assert.equal(stringMatches({ suffix: ":7070" }, "world:7070"), true);
  assert.equal(stringMatches({ suffix: ":7070" }, "world:70"), false);
  assert.equal(stringMatches({ regex: "wor.d:[0-9]+" }, "world:7070"), true);
  assert.equal(stringMatches({ regex: "wor" }, "world"), false, "the whole value");
  assert.equal(stringMatches({ regex: "a|b" }, "ab"), false);
  assert.equal(stringMatches({ regex: "(" }, "("), false, "not a regex: never");
});

Deno.test("dedupeDomains() keeps each domain on its first virtual host and drops emptied ones", () => {
  assert.deepEqual(
    dedupeDomains([
      { name: "a", domains: ["x", "y"] },
      { name: "b", domains: ["y", "z"] },
      { name: "c", domains: ["x", "z"] },
    ]),
    [{ name: "a", domains: ["x", "y"] }, { name: "b", domains: ["z"] }],
  );
});

Deno.test("sidecar route configurations: a virtual host per HTTP service of the port, domains for the proxy's namespace", () => {
  const [rc] = buildRoutes(model(), CLIENT, ["7070"]);
  assert.equal(rc.name, "7070");
  assert.deepEqual(rc.validate_clusters, { value: false });
  assert.deepEqual(rc.virtual_hosts.map((v: Any) => [v.name, v.domains]), [
    [`${HELLO}:7070`, [
      HELLO,
      `${HELLO}:7070`,
      "hello",
      "hello:7070",
      "hello.default",
      "hello.default:7070",
      "hello.default.svc",
      "hello.default.svc:7070",
      "10.1.0.1",
      "10.1.0.1:7070",
    ]],
    [`${WORLD}:7070`, [
      WORLD,
      `${WORLD}:7070`,
      "world",
      "world:7070",
      "world.default",
      "world.default:7070",
      "world.default.svc",
      "world.default.svc:7070",
      "10.2.0.1",
      "10.2.0.1:7070",
    ]],
  ]);
  assert.deepEqual(rc.virtual_hosts[0].routes, [defaultRoute(HELLO, 7070)]);
  assert.deepEqual(
    buildRoutes(model(), CLIENT, ["9000", "443"]),
    [],
    "TCP and HTTPS ports have no route",
  );
});

Deno.test("apiRouteConfig(): the requested name first in the domains, routes of the VirtualService", () => {
  const ctx = model({
    configs: {
      virtualServices: [
        cfg("VirtualService", "world", {
          hosts: ["world"],
          http: [{ route: [{ destination: { host: "world", subset: "v1" } }] }],
        }),
      ],
    },
  });
  const rc = apiRouteConfig(ctx, CLIENT, "world:7070")!;
  assert.equal(rc.name, "world:7070");
  assert.equal(rc.virtual_hosts.length, 1);
  const vh = rc.virtual_hosts[0];
  assert.equal(vh.name, `${WORLD}:7070`);
  assert.deepEqual(vh.domains.slice(0, 3), ["world:7070", WORLD, `${WORLD}:7070`]);
  assert.equal(vh.domains.filter((d: string) => d === "world:7070").length, 1);
  assert.equal(vh.routes[0].route.cluster, `outbound|7070|v1|${WORLD}`);
  assert.equal(apiRouteConfig(ctx, CLIENT, "world:1"), undefined);
  // a proxy outside any domain resolves short names in default
  const bare = { ...CLIENT, domain: "" };
  assert.equal(apiRouteConfig(ctx, bare, "hello:80")?.virtual_hosts[0].name, `${HELLO}:80`);
});

Deno.test("routes: matches for mesh and a gateway apply to sidecars; empty header matches are left out", () => {
  const out = routes([
    {
      match: [{ gateways: ["mesh", "gw"], headers: { "x-empty": {}, "X-Ver": { exact: "2" } } }],
      route: TO_WORLD,
    },
    { match: [{ gateways: ["mesh"] }], route: TO_WORLD },
    null,
    { route: TO_WORLD, redirect: "/x", appendHeaders: "ab" },
  ]);
  assert.deepEqual(out.map((r) => r.match), [
    { prefix: "/", headers: [{ name: "x-ver", string_match: { exact: "2" } }] },
    { prefix: "/" },
    { prefix: "/" },
  ]);
  assert.equal(out[2].redirect, undefined);
  assert.equal(out[2].route.cluster, `outbound|80||${WORLD}`);
  assert.equal(out[2].request_headers_to_add, undefined);
  // a sidecar's route configuration keeps a route matching gateway "mesh"
  const ctx = model({
    configs: {
      virtualServices: [cfg("VirtualService", "world", {
        hosts: ["world"],
        http: [{ match: [{ gateways: ["mesh"], uri: { prefix: "/m" } }], route: TO_WORLD }],
      })],
    },
  });
  const [rc] = buildRoutes(ctx, CLIENT, ["80"]);
  const vh = rc.virtual_hosts.find((v: Any) => v.name === `${WORLD}:80`);
  assert.deepEqual(vh.routes[0].match, { prefix: "/m" });
});

Deno.test("destinationCluster(): a port name of an unknown host, a host with no HTTP port", () => {
  const base = model();
  const tcp2 = {
    ...base.services[1],
    hostname: "db.default.svc.cluster.local",
    ports: [{ name: "a", port: 5432, protocol: "TCP" as const }, {
      name: "b",
      port: 5433,
      protocol: "TCP" as const,
    }],
  };
  const ctx = { ...base, services: [...base.services, tcp2] };
  assert.equal(
    destinationCluster(ctx, { host: "nope.example", port: { name: "http" } }, "default", 8080),
    "outbound|8080||nope.example",
  );
  assert.equal(
    destinationCluster(ctx, { host: "db" }, "default", 80),
    "outbound|80||db.default.svc.cluster.local",
  );
});

Deno.test("hashPolicy(): DestinationRules without subsets, without a load balancer, or for a host with no service", () => {
  const dr = (host: string, spec: Record<string, unknown>) =>
    cfg("DestinationRule", host, { host, ...spec });
  const hp = (d: ConfigObject, cluster: string) =>
    hashPolicy(model({ configs: { destinationRules: [d] } }), cluster);
  const ch = { loadBalancer: { consistentHash: { httpHeader: "x-u" } } };
  assert.deepEqual(hp(dr("world", { trafficPolicy: ch }), `outbound|80|v1|${WORLD}`), [{
    header: { header_name: "x-u" },
  }]);
  assert.equal(
    hp(
      dr("world", { trafficPolicy: { connectionPool: { tcp: { maxConnections: 1 } } } }),
      `outbound|80||${WORLD}`,
    ),
    undefined,
  );
  assert.deepEqual(
    hp(dr("ghost", { trafficPolicy: ch }), "outbound|80||ghost.default.svc.cluster.local"),
    [{ header: { header_name: "x-u" } }],
  );
});

Deno.test("corsConfig(): not an object is no policy; exposed headers joined with commas", () => {
  assert.equal(corsConfig("x"), undefined);
  assert.equal(corsConfig({ exposeHeaders: ["a", "b"] })?.expose_headers, "a,b");
});

Deno.test("resolveTarget(): the port must end the name", () => {
  assert.equal(apiRouteConfig(model(), CLIENT, "hello:80x"), undefined);
  assert.equal(apiRouteConfig(model(), CLIENT, "hello:123456"), undefined);
});

import assert from "node:assert/strict";
import { pgvEncode, pgvFromProtoJson, pgvLoadProtoFiles, pgvProblems } from "./pgv.ts";
import { scenarios, snapshot } from "./testdata/scenarios.ts";
import { decodeAny, loadXdsProtos, TYPE_URLS } from "./protos.ts";
import { ProtoJson } from "./json.ts";
import type { XdsResource } from "./types.ts";

const TYPES = {
  listeners: TYPE_URLS.listener,
  routes: TYPE_URLS.route,
  clusters: TYPE_URLS.cluster,
  endpoints: TYPE_URLS.endpoint,
} as const;

const typeName = (url: string) => url.slice(url.lastIndexOf("/") + 1);

Deno.test("every resource of every golden and extra scenario passes Envoy's PGV rules", () => {
  const all = scenarios();
  assert.ok(Object.keys(all).length >= 10);
  const problems: string[] = [];
  let checked = 0;
  for (const [name, s] of Object.entries(all)) {
    const snap = snapshot(s.ctx, s.proxy, s.apiNames);
    for (const [kind, url] of Object.entries(TYPES)) {
      for (const r of snap[kind as keyof typeof TYPES] as XdsResource[]) {
        problems.push(...pgvProblems(typeName(url), r, `${name} ${r.name ?? r.cluster_name}`));
        checked++;
      }
    }
  }
  assert.ok(checked > 100, `checked ${checked} resources`);
  assert.deepEqual(problems, []);
});

const CLUSTER = typeName(TYPE_URLS.cluster);
const LISTENER = typeName(TYPE_URLS.listener);
const ROUTE = typeName(TYPE_URLS.route);

/** A valid EDS cluster to plant errors into. */
const goodCluster = (): XdsResource => ({
  name: "outbound|80||hello.default.svc.cluster.local",
  type: "EDS",
  connect_timeout: { seconds: 1 },
  lb_policy: "ROUND_ROBIN",
  eds_cluster_config: { eds_config: { ads: {}, resource_api_version: "V3" }, service_name: "x" },
});

Deno.test("pgvProblems() accepts a valid cluster", () => {
  assert.deepEqual(pgvProblems(CLUSTER, goodCluster()), []);
});

Deno.test("pgvProblems() reports a zero connect_timeout (duration gt 0)", () => {
  const c = { ...goodCluster(), connect_timeout: { seconds: 0 } };
  assert.deepEqual(pgvProblems(CLUSTER, c), [
    'Cluster.connect_timeout: duration gt 0s, got {"seconds":0}',
  ]);
});

Deno.test("pgvProblems() reports an enum value Envoy does not define", () => {
  assert.deepEqual(pgvProblems(CLUSTER, { ...goodCluster(), lb_policy: 42 }), [
    "Cluster.lb_policy: enum defined_only, got 42",
  ]);
  assert.deepEqual(pgvProblems(CLUSTER, { ...goodCluster(), lb_policy: "FASTEST" }), [
    'Cluster.lb_policy: "FASTEST" is not a value of LbPolicy',
  ]);
});

Deno.test("pgvProblems() reports an empty string where min_len 1 applies", () => {
  assert.deepEqual(pgvProblems(CLUSTER, { ...goodCluster(), name: "" }), [
    'Cluster.name: string min_len 1, got ""',
  ]);
});

Deno.test("pgvProblems() reports port 70000 in a socket address", () => {
  const l = {
    name: "l",
    address: { socket_address: { address: "0.0.0.0", port_value: 70000 } },
  };
  assert.deepEqual(pgvProblems(LISTENER, l), [
    "Listener.address.socket_address.port_value: uint32 lte 65535, got 70000",
  ]);
});

Deno.test("pgvProblems() checks nested typed_config, required oneofs and unknown fields", () => {
  const route = {
    name: "80",
    virtual_hosts: [{
      name: "vh",
      domains: ["*"],
      routes: [{
        match: {},
        route: { cluster: "c" },
        typed_per_filter_config: {
          "envoy.filters.http.cors": {
            "@type": "type.googleapis.com/envoy.config.route.v3.FilterConfig",
            config: {
              "@type": "type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy",
              allow_origin_string_match: [{ prefix: "" }],
            },
          },
        },
        bogus: 1,
      }],
    }],
  };
  const cors = "RouteConfiguration.virtual_hosts[0].routes[0].typed_per_filter_config" +
    '["envoy.filters.http.cors"]<FilterConfig>.config<CorsPolicy>';
  assert.deepEqual(pgvProblems(ROUTE, route), [
    "RouteConfiguration.virtual_hosts[0].routes[0].bogus: unknown field of envoy.config.route.v3.Route",
    "RouteConfiguration.virtual_hosts[0].routes[0].match: oneof path_specifier is required",
    `${cors}.allow_origin_string_match[0].prefix: string min_len 1, got ""`,
  ]);
});

Deno.test("pgvProblems() reports a missing required message and too few repeated items", () => {
  const l = {
    name: "l",
    address: { socket_address: { address: "0.0.0.0", port_value: 80 } },
    filter_chains: [{ filters: [{ name: "f" }] }],
  };
  assert.deepEqual(pgvProblems(LISTENER, l), []);
  const route = { name: "r", virtual_hosts: [{ name: "vh", domains: [] }] };
  assert.deepEqual(pgvProblems(ROUTE, route), [
    "RouteConfiguration.virtual_hosts[0].domains: repeated min_items 1, got 0",
  ]);
});

Deno.test("pgvFromProtoJson() reads the proto3 JSON of every golden resource back to a message that prints the same", async () => {
  const pj = new ProtoJson(await loadXdsProtos());
  let n = 0;
  for (const s of Object.values(scenarios())) {
    const snap = snapshot(s.ctx, s.proxy, s.apiNames);
    for (const [kind, url] of Object.entries(TYPES)) {
      for (const r of snap[kind as keyof typeof TYPES] as XdsResource[]) {
        const type = typeName(url);
        const json = JSON.parse(JSON.stringify(pj.message(type, r)));
        const bytes = pgvEncode(type, pgvFromProtoJson(type, json));
        const back = pj.message(type, decodeAny({ type_url: url, value: bytes }));
        assert.deepEqual(back, json, `${kind} ${r.name ?? r.cluster_name}`);
        n++;
      }
    }
  }
  assert.ok(n > 100, `read ${n} resources`);
});

Deno.test("pgvFromProtoJson() keeps unknown fields for pgvProblems and reads lowerCamelCase names", () => {
  const json = { name: "c", connectTimeout: "0.250s", typo: 1, type: "EDS" };
  const obj = pgvFromProtoJson(CLUSTER, json);
  assert.deepEqual(obj, {
    name: "c",
    connect_timeout: { seconds: "0", nanos: 250_000_000 },
    typo: 1,
    type: "EDS",
  });
  assert.deepEqual(pgvProblems(CLUSTER, obj), [
    "Cluster.typo: unknown field of envoy.config.cluster.v3.Cluster",
  ]);
  assert.throws(
    () => pgvFromProtoJson(CLUSTER, { connect_timeout: 5 }),
    /^Error: Cluster\.connect_timeout: want a duration like "1\.5s", got 5$/,
  );
});

Deno.test("pgvFromProtoJson() keeps Struct values so pgvEncode writes them (node metadata)", () => {
  pgvLoadProtoFiles(["envoy/config/bootstrap/v3/bootstrap.proto"]);
  const size = (role: string) =>
    pgvEncode(
      "envoy.config.bootstrap.v3.Bootstrap",
      pgvFromProtoJson("envoy.config.bootstrap.v3.Bootstrap", {
        node: { id: "n", metadata: { MESH_ROLE: role } },
      }),
    ).length;
  assert.equal(size("sidecar") - size(""), "sidecar".length);
});

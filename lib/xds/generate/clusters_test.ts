import assert from "node:assert/strict";
import { formatIssues, normalizeObject } from "../../model/mod.ts";
import { pgvProblems } from "../pgv.ts";
import { parseNodeId } from "../node.ts";
import { ENVOY_1_27, GRPC_CORE_1_51, helloV1, withClient } from "../testdata/scenarios.ts";
import { model, modelWithInstances, UDP_5353 } from "../testdata/model.ts";
import { buildClusters, MAX_RING_SIZE } from "./clusters.ts";

const ringDr = (minimumRingSize: number) => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "DestinationRule",
  metadata: { name: "world", namespace: "default" },
  spec: {
    host: "world",
    trafficPolicy: { loadBalancer: { consistentHash: { httpHeader: "x-user", minimumRingSize } } },
  },
});

Deno.test("buildClusters() clamps minimumRingSize to Envoy's 8388608 when a config bypassed the schema", () => {
  const ctx = model({ configs: { destinationRules: [ringDr(50_000_000)] } });
  const c = buildClusters(ctx, helloV1()).find((c) =>
    c.name === "outbound|80||world.default.svc.cluster.local"
  )!;
  assert.equal(c.lb_policy, "RING_HASH");
  assert.deepEqual(c.ring_hash_lb_config, { minimum_ring_size: { value: MAX_RING_SIZE } });
  assert.deepEqual(pgvProblems("envoy.config.cluster.v3.Cluster", c), []);
});

Deno.test("DestinationRule schema rejects minimumRingSize above 8388608", () => {
  const { issues } = normalizeObject(ringDr(8_388_609), "dr.yaml");
  assert.match(
    formatIssues(issues),
    /spec\.trafficPolicy\.loadBalancer\.consistentHash\.minimumRingSize: must be between 0 and 8388608, got 8388609/,
  );
  assert.deepEqual(normalizeObject(ringDr(8_388_608), "dr.yaml").issues, []);
});

Deno.test("buildClusters() gives round robin instead of ring hash to C-core 1.50-1.52, which crash on it", () => {
  const ctx = model({ configs: { destinationRules: [ringDr(1024)] } });
  const world = (p: ReturnType<typeof helloV1>) =>
    buildClusters(ctx, p).find((c) => c.name === "outbound|80||world.default.svc.cluster.local")!;
  const core151 = withClient(helloV1(), GRPC_CORE_1_51);
  assert.equal(world(core151).lb_policy, undefined); // ROUND_ROBIN, the default
  assert.equal(world(core151).ring_hash_lb_config, undefined);
  const core153 = withClient(helloV1(), { ...GRPC_CORE_1_51, version: [1, 53, 0] });
  assert.equal(world(core153).lb_policy, "RING_HASH");
  assert.equal(world(withClient(helloV1(), ENVOY_1_27)).lb_policy, "RING_HASH");
});

Deno.test("buildClusters() checks the service account of a VM registered by meshctl register (ServiceEntry annotation)", () => {
  const vm = {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "ServiceEntry",
    metadata: {
      name: "vm-web",
      namespace: "default",
      annotations: { "alpha.mesh.io/orchestrator-serviceaccounts": "vm-sa" },
    },
    spec: {
      hosts: ["vm-web.default.svc.cluster.local"],
      ports: [{ number: 80, protocol: "HTTP", name: "http" }],
      location: "MESH_INTERNAL",
      resolution: "STATIC",
      endpoints: [{ address: "10.0.0.5", ports: { http: 80 } }],
    },
  };
  const ctx = model({ mesh: { authPolicy: "MUTUAL_TLS" }, serviceEntries: [vm] });
  const c = buildClusters(ctx, helloV1()).find((c) =>
    c.name === "outbound|80||vm-web.default.svc.cluster.local"
  )!;
  const sans = JSON.stringify(
    c.transport_socket.typed_config.common_tls_context.combined_validation_context
      ?.default_validation_context ??
      c.transport_socket.typed_config.common_tls_context.validation_context,
  );
  assert.match(sans, /spiffe:\/\/cluster\.local\/ns\/default\/sa\/vm-sa/);
});

// deno-lint-ignore no-explicit-any
type Any = any;
const HELLO = "hello.default.svc.cluster.local";
const WORLD = "world.default.svc.cluster.local";
const byName = (cs: Any[]) => new Map(cs.map((c) => [c.name, c]));

Deno.test("buildClusters(): EDS outbound clusters with the mesh connect timeout, STATIC inbound clusters on 127.0.0.1", () => {
  const cs = buildClusters(model({ mesh: { connectTimeoutMs: 2500 } }), helloV1());
  const m = byName(cs);
  const out = m.get(`outbound|80||${WORLD}`);
  assert.deepEqual(out, {
    name: `outbound|80||${WORLD}`,
    connect_timeout: { seconds: 2, nanos: 500_000_000 },
    type: "EDS",
    eds_cluster_config: {
      eds_config: { ads: {}, resource_api_version: "V3" },
      service_name: `outbound|80||${WORLD}`,
    },
    lb_policy: "ROUND_ROBIN",
  });
  assert.deepEqual(m.get(`inbound|80||${HELLO}`), {
    name: `inbound|80||${HELLO}`,
    type: "STATIC",
    connect_timeout: { seconds: 2, nanos: 500_000_000 },
    lb_policy: "ROUND_ROBIN",
    load_assignment: {
      cluster_name: `inbound|80||${HELLO}`,
      endpoints: [{
        lb_endpoints: [{
          endpoint: { address: { socket_address: { address: "127.0.0.1", port_value: 8080 } } },
        }],
      }],
    },
  });
  // only the proxy's own instances get inbound clusters; the last two are the fixed ones
  assert.deepEqual(cs.filter((c) => c.name.startsWith("inbound|")).map((c) => c.name), [
    `inbound|80||${HELLO}`,
    `inbound|7070||${HELLO}`,
    `inbound|9000||${HELLO}`,
  ]);
  assert.deepEqual(cs.slice(-2), [
    { name: "BlackHoleCluster", type: "STATIC", connect_timeout: { seconds: 5 } },
    {
      name: "PassthroughCluster",
      type: "ORIGINAL_DST",
      lb_policy: "CLUSTER_PROVIDED",
      connect_timeout: { seconds: 2, nanos: 500_000_000 },
    },
  ]);
  assert.deepEqual(
    buildClusters(model({ mesh: { connectTimeoutMs: 0 } }), helloV1()).at(-1)!.connect_timeout,
    { seconds: 1 },
  );
  // routers have no inbound clusters
  const router = parseNodeId("router~10.0.1.1~gw.default~default.svc.cluster.local");
  assert.equal(
    buildClusters(model(), router).filter((c) => c.name.startsWith("inbound|")).length,
    0,
  );
});

Deno.test("buildClusters(): HTTP/2 upstreams for gRPC ports (outbound and inbound); HTTP/1 options only with a pool setting", () => {
  const h2 = {
    "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
      "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
      explicit_http_config: {
        http2_protocol_options: { max_concurrent_streams: { value: 1073741824 } },
      },
    },
  };
  const m = byName(buildClusters(model(), helloV1()));
  assert.deepEqual(m.get(`outbound|7070||${WORLD}`).typed_extension_protocol_options, h2);
  assert.deepEqual(m.get(`inbound|7070||${HELLO}`).typed_extension_protocol_options, h2);
  assert.equal(m.get(`outbound|80||${WORLD}`).typed_extension_protocol_options, undefined);
  assert.equal(m.get(`outbound|9000||${WORLD}`).typed_extension_protocol_options, undefined);
  const pool = {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "DestinationRule",
    metadata: { name: "hello", namespace: "default" },
    spec: {
      host: "hello",
      trafficPolicy: { connectionPool: { http: { maxRequestsPerConnection: 1 } } },
    },
  };
  const p = byName(buildClusters(model({ configs: { destinationRules: [pool] } }), helloV1()));
  const http1 = (c: Any) =>
    c.typed_extension_protocol_options?.["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"];
  for (const name of [`outbound|80||${HELLO}`, `inbound|80||${HELLO}`]) {
    assert.deepEqual(http1(p.get(name)), {
      "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
      common_http_protocol_options: { max_requests_per_connection: { value: 1 } },
      explicit_http_config: { http_protocol_options: {} },
    }, name);
  }
  assert.deepEqual(http1(p.get(`outbound|7070||${HELLO}`)).common_http_protocol_options, {
    max_requests_per_connection: { value: 1 },
  });
  assert.equal(p.get(`outbound|9000||${HELLO}`).typed_extension_protocol_options, undefined, "TCP");
});

Deno.test("buildClusters(): mesh mTLS upstream except for excluded, external and original-destination services", () => {
  const se = [{
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "ServiceEntry",
    metadata: { name: "pt", namespace: "default" },
    spec: {
      hosts: ["pt.internal"],
      ports: [{ number: 5000, name: "tcp", protocol: "TCP" }],
      location: "MESH_INTERNAL",
      resolution: "NONE",
    },
  }];
  const ctx = model({
    mesh: { authPolicy: "MUTUAL_TLS", mtlsExcludedServices: [HELLO] },
    serviceEntries: se,
  });
  const m = byName(buildClusters(ctx, helloV1()));
  const w = m.get(`outbound|7070||${WORLD}`).transport_socket.typed_config;
  assert.deepEqual(w.common_tls_context.alpn_protocols, ["istio", "h2"]);
  assert.deepEqual(w.common_tls_context.validation_context.match_typed_subject_alt_names, [{
    san_type: "URI",
    matcher: { exact: "spiffe://cluster.local/ns/default/sa/world" },
  }]);
  assert.deepEqual(
    m.get(`outbound|80||${WORLD}`).transport_socket.typed_config.common_tls_context.alpn_protocols,
    ["istio"],
  );
  assert.equal(m.get(`outbound|80||${HELLO}`).transport_socket, undefined, "excluded");
  assert.equal(m.get("outbound|443||api.example.com").transport_socket, undefined, "mesh-external");
  const pt = m.get("outbound|5000||pt.internal");
  assert.equal(pt.type, "ORIGINAL_DST");
  assert.equal(pt.lb_policy, "CLUSTER_PROVIDED");
  assert.equal(pt.transport_socket, undefined, "original destination");
  assert.equal(pt.eds_cluster_config, undefined);
});

Deno.test("buildClusters(): DNS services resolve their endpoints (per subset) with STRICT_DNS, IPv4 only", () => {
  const dr = {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "DestinationRule",
    metadata: { name: "api", namespace: "default" },
    spec: {
      host: "api.example.com",
      subsets: [{ name: "none", labels: { v: "x" } }, { name: "all" }, { name: "" }, {
        labels: {},
      }],
    },
  };
  const m = byName(buildClusters(model({ configs: { destinationRules: [dr] } }), helloV1()));
  const api = m.get("outbound|443||api.example.com");
  assert.equal(api.type, "STRICT_DNS");
  assert.equal(api.dns_lookup_family, "V4_ONLY");
  assert.equal(api.lb_policy, "ROUND_ROBIN");
  assert.deepEqual(api.load_assignment, {
    cluster_name: "outbound|443||api.example.com",
    endpoints: [{
      lb_endpoints: [{
        endpoint: { address: { socket_address: { address: "api.example.com", port_value: 443 } } },
      }],
    }],
  });
  assert.deepEqual(m.get("outbound|443|none|api.example.com").load_assignment.endpoints, [{
    lb_endpoints: [],
  }]);
  assert.equal(
    m.get("outbound|443|none|api.example.com").type,
    "STRICT_DNS",
    "no endpoints: not STATIC",
  );
  assert.deepEqual(
    m.get("outbound|443|all|api.example.com").load_assignment.endpoints,
    api.load_assignment.endpoints,
  );
  assert.deepEqual([...m.keys()].filter((n) => n.includes("api.example.com")), [
    "outbound|443||api.example.com",
    "outbound|443|none|api.example.com",
    "outbound|443|all|api.example.com",
  ], "subsets without a name are skipped");
});

Deno.test("buildClusters(): a subset's traffic policy is applied over the host's; UDP ports and duplicate hosts skipped", () => {
  const dr = {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "DestinationRule",
    metadata: { name: "world", namespace: "default" },
    spec: {
      host: "world",
      trafficPolicy: {
        loadBalancer: { simple: "RANDOM" },
        connectionPool: { tcp: { maxConnections: 7 } },
      },
      subsets: [{
        name: "v1",
        labels: { version: "v1" },
        trafficPolicy: { loadBalancer: { simple: "LEAST_CONN" } },
      }, { name: "v2" }],
    },
  };
  const base = model({ configs: { destinationRules: [dr] } });
  const udp = {
    hostname: "dns.default.svc.cluster.local",
    address: "10.3.0.1",
    ports: [{ name: "udp", port: 53, protocol: "UDP" as const }],
    namespace: "default",
    meshExternal: false,
    resolution: "ClientSideLB" as const,
    serviceAccounts: [],
    registry: "Mock",
  };
  const dup = { ...base.services[1], ports: [{ name: "x", port: 1111, protocol: "TCP" as const }] };
  const m = byName(buildClusters({ ...base, services: [...base.services, udp, dup] }, helloV1()));
  assert.equal(m.get(`outbound|80|v1|${WORLD}`).lb_policy, "LEAST_REQUEST");
  assert.deepEqual(m.get(`outbound|80|v1|${WORLD}`).circuit_breakers, {
    thresholds: [{ max_connections: { value: 7 } }],
  });
  assert.equal(m.get(`outbound|80|v2|${WORLD}`).lb_policy, "RANDOM");
  assert.equal(m.get(`outbound|80||${WORLD}`).lb_policy, "RANDOM");
  assert.equal(m.get("outbound|53||dns.default.svc.cluster.local"), undefined);
  assert.equal(
    m.has("outbound|1111||world.default.svc.cluster.local"),
    false,
    "the first world wins",
  );
});

const drOf = (host: string, spec: Record<string, unknown>) => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "DestinationRule",
  metadata: { name: host, namespace: "default" },
  spec: { host, ...spec },
});

Deno.test("buildClusters(): a subset's ROUND_ROBIN replaces the host's policy; SIMPLE TLS sends no client certificate", () => {
  const m = byName(buildClusters(
    model({
      configs: {
        destinationRules: [drOf("world", {
          trafficPolicy: {
            loadBalancer: { simple: "RANDOM" },
            tls: {
              mode: "SIMPLE",
              clientCertificate: "/c.pem",
              privateKey: "/k.pem",
              caCertificates: "/ca.pem",
            },
          },
          subsets: [{ name: "rr", trafficPolicy: { loadBalancer: { simple: "ROUND_ROBIN" } } }],
        })],
      },
    }),
    helloV1(),
  ));
  assert.equal(m.get(`outbound|80|rr|${WORLD}`).lb_policy, "ROUND_ROBIN");
  const tls = m.get(`outbound|80||${WORLD}`).transport_socket.typed_config.common_tls_context;
  assert.equal(tls.tls_certificates, undefined);
  assert.deepEqual(tls.validation_context, { trusted_ca: { filename: "/ca.pem" } });
});

Deno.test("buildClusters(): a tls block without a mode keeps mesh mTLS", () => {
  const m = byName(buildClusters(
    model({
      mesh: { authPolicy: "MUTUAL_TLS" },
      configs: { destinationRules: [drOf("world", { trafficPolicy: { tls: { sni: "x" } } })] },
    }),
    helloV1(),
  ));
  assert.deepEqual(
    m.get(`outbound|80||${WORLD}`).transport_socket.typed_config.common_tls_context.alpn_protocols,
    [
      "istio",
    ],
  );
});

Deno.test("buildClusters(): DNS subsets take the endpoints with their labels; mixed unix and IP endpoints are resolved", () => {
  const entries = [{
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "ServiceEntry",
    metadata: { name: "dns", namespace: "default" },
    spec: {
      hosts: ["dns.example.com"],
      ports: [{ number: 8080, name: "tcp", protocol: "TCP" }],
      location: "MESH_EXTERNAL",
      resolution: "DNS",
      endpoints: [
        { address: "a.example.com", labels: { v: "1" } },
        { address: "b.example.com", labels: { v: "2" } },
        { address: "unix:///run/c.sock", labels: { v: "3" } },
      ],
    },
  }];
  const dr = drOf("dns.example.com", {
    subsets: [{ name: "v1", labels: { v: "1" } }, { name: "" }],
  });
  const cs = buildClusters(
    model({ serviceEntries: entries, configs: { destinationRules: [dr] } }),
    helloV1(),
  );
  const addrs = (c: Any) =>
    c.load_assignment.endpoints[0].lb_endpoints.map((e: Any) =>
      e.endpoint.address.socket_address?.address ?? e.endpoint.address.pipe.path
    );
  const all = cs.filter((c) => c.name.endsWith("|dns.example.com"));
  assert.deepEqual(all.map((c) => c.name), [
    "outbound|8080||dns.example.com",
    "outbound|8080|v1|dns.example.com",
  ]);
  assert.equal(all[0].type, "STRICT_DNS");
  assert.deepEqual(addrs(all[0]), ["a.example.com", "b.example.com", "/run/c.sock"]);
  assert.deepEqual(addrs(all[1]), ["a.example.com"]);
});

Deno.test("buildClusters(): one inbound cluster per service port of the proxy, none for UDP", () => {
  const ctx = modelWithInstances({ port: 18080 }, UDP_5353);
  assert.deepEqual(
    buildClusters(ctx, helloV1()).filter((c) => c.name.startsWith("inbound|")).map((c) => c.name),
    [
      `inbound|80||${HELLO}`,
      `inbound|7070||${HELLO}`,
      `inbound|9000||${HELLO}`,
    ],
  );
});

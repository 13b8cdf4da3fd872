import assert from "node:assert/strict";
import { parseNodeId } from "../node.ts";
import type { ConfigObject } from "../../model/types.ts";
import {
  DB_ENTRIES,
  model,
  modelWithInstances,
  RBAC_BINDING,
  RBAC_ROLE,
  UDP_5353,
  WORLD_GRPC_PERMISSIVE,
} from "../testdata/model.ts";
import { buildApiListener, buildListeners, cidrRange, virtualListener } from "./listeners.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const CLIENT = parseNodeId("sidecar~10.9.9.9~c.default~default.svc.cluster.local");

function tcpCluster(chain: Any): string {
  return chain.filters[0].typed_config.cluster;
}

Deno.test("buildListeners() gives each CIDR address its own filter chain on 0.0.0.0_<port>", () => {
  const ls = buildListeners(model({ serviceEntries: DB_ENTRIES }), CLIENT);
  const wild = ls.find((l) => l.name === "0.0.0.0_3306")!;
  assert.deepEqual(
    wild.filter_chains.map((c: Any) => [c.filter_chain_match?.prefix_ranges, tcpCluster(c)]),
    [
      [[cidrRange("172.16.0.0/12")], "outbound|3306||mariadb.internal"],
      [[cidrRange("192.168.0.0/16")], "outbound|3306||mysql.internal"],
      [undefined, "BlackHoleCluster"],
    ],
  );
  assert.deepEqual(cidrRange("192.168.0.0/16"), {
    address_prefix: "192.168.0.0",
    prefix_len: { value: 16 },
  });
  // The plain IP of mysql gets its own listener matching /32.
  const vip = ls.find((l) => l.name === "10.20.0.5_3306")!;
  assert.deepEqual(vip.filter_chains[0].filter_chain_match.prefix_ranges, [{
    address_prefix: "10.20.0.5",
    prefix_len: { value: 32 },
  }]);
});

Deno.test("buildListeners() sends other traffic on a CIDR port to PassthroughCluster with ALLOW_ANY", () => {
  const ctx = model({ serviceEntries: DB_ENTRIES, mesh: { outboundTrafficPolicy: "ALLOW_ANY" } });
  const wild = buildListeners(ctx, CLIENT).find((l) => l.name === "0.0.0.0_3306")!;
  const last = wild.filter_chains.at(-1);
  assert.equal(last.filter_chain_match, undefined);
  assert.equal(tcpCluster(last), "PassthroughCluster");
});

Deno.test("buildListeners() matches PERMISSIVE mesh mTLS by ALPN and leaves other TLS to the plain chain", () => {
  const ctx = model({ configs: { policies: [WORLD_GRPC_PERMISSIVE] } });
  const proxy = parseNodeId("sidecar~10.0.2.1~world-v1.default~default.svc.cluster.local");
  const l = buildListeners(ctx, proxy).find((x) => x.name === "10.0.2.1_7070")!;
  assert.deepEqual(l.listener_filters.map((f: Any) => f.name), [
    "envoy.filters.listener.tls_inspector",
  ]);
  const [mtls, plain] = l.filter_chains;
  assert.deepEqual(mtls.filter_chain_match, { application_protocols: ["istio"] });
  assert.deepEqual(mtls.transport_socket.typed_config.require_client_certificate, { value: true });
  // No transport_protocol anywhere: an application's own TLS (ALPN h2, http/1.1...) must reach
  // the catch-all chain, which has no TLS context, instead of being terminated by the sidecar.
  assert.equal(plain.filter_chain_match, undefined);
  assert.equal(plain.transport_socket, undefined);
  assert.equal(l.filter_chains.length, 2);
});

const HELLO_V1 = parseNodeId("sidecar~10.0.1.1~hello-v1.default~default.svc.cluster.local");

function vs(name: string, spec: Record<string, unknown>): ConfigObject {
  return {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "VirtualService",
    metadata: { name, namespace: "default" },
    spec,
  };
}

Deno.test("virtualListener(): proxyListenPort (15001 by default), original destination, TPROXY", () => {
  const l = virtualListener(model(), HELLO_V1);
  assert.equal(l.name, "virtualOutbound");
  assert.deepEqual(l.address, { socket_address: { address: "0.0.0.0", port_value: 15001 } });
  assert.deepEqual(l.use_original_dst, { value: true });
  assert.equal(l.traffic_direction, "OUTBOUND");
  assert.equal(l.transparent, undefined);
  assert.equal(tcpCluster(l.filter_chains[0]), "BlackHoleCluster");
  const custom = virtualListener(model({ mesh: { proxyListenPort: 16001 } }), {
    ...HELLO_V1,
    metadata: { INTERCEPTION_MODE: "TPROXY" },
  });
  assert.equal(custom.address.socket_address.port_value, 16001);
  assert.deepEqual(custom.transparent, { value: true });
  const redirect = virtualListener(model(), {
    ...HELLO_V1,
    metadata: { INTERCEPTION_MODE: "REDIRECT" },
  });
  assert.equal(redirect.transparent, undefined);
});

Deno.test("buildListeners(): a sidecar's inbound listeners, HTTP through an HCM to its inbound cluster, TCP proxied", () => {
  const ls = buildListeners(model({ mesh: { accessLogFile: "/var/log/access.log" } }), HELLO_V1);
  const names = ls.map((l) => l.name);
  assert.deepEqual(names.slice(0, 4), [
    "virtualOutbound",
    "10.0.1.1_8080",
    "10.0.1.1_7070",
    "10.0.1.1_9000",
  ]);
  const http = ls[1];
  assert.deepEqual(http.address, { socket_address: { address: "10.0.1.1", port_value: 8080 } });
  assert.deepEqual(http.bind_to_port, { value: false });
  assert.equal(http.traffic_direction, "INBOUND");
  assert.equal(http.filter_chains.length, 1);
  assert.equal(http.filter_chains[0].transport_socket, undefined);
  const hcm = http.filter_chains[0].filters[0].typed_config;
  assert.equal(hcm.stat_prefix, "inbound_8080");
  assert.equal(hcm.codec_type, "AUTO");
  assert.equal(hcm.rds, undefined);
  assert.deepEqual(hcm.route_config, {
    name: "inbound|80||hello.default.svc.cluster.local",
    virtual_hosts: [{
      name: "inbound|http|80",
      domains: ["*"],
      routes: [{
        match: { prefix: "/" },
        route: { cluster: "inbound|80||hello.default.svc.cluster.local", timeout: { seconds: 0 } },
        decorator: { operation: "default-route" },
      }],
    }],
  });
  assert.deepEqual(hcm.http_filters.map((f: Any) => f.name), ["envoy.filters.http.router"]);
  assert.deepEqual(hcm.access_log, [{
    name: "envoy.access_loggers.file",
    typed_config: {
      "@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
      path: "/var/log/access.log",
    },
  }]);
  assert.equal(hcm.use_remote_address, undefined);
  const tcp = ls[3].filter_chains[0].filters[0];
  assert.equal(tcp.name, "envoy.filters.network.tcp_proxy");
  assert.equal(tcp.typed_config.cluster, "inbound|9000||hello.default.svc.cluster.local");
  assert.equal(tcp.typed_config.stat_prefix, "inbound|9000||hello.default.svc.cluster.local");
  // STRICT: one chain, mTLS required; no access log without a file
  const strict =
    buildListeners(model({ mesh: { authPolicy: "MUTUAL_TLS", accessLogFile: "" } }), HELLO_V1)[1];
  assert.equal(strict.filter_chains.length, 1);
  assert.equal(strict.filter_chains[0].filter_chain_match, undefined);
  assert.deepEqual(
    strict.filter_chains[0].transport_socket.typed_config.require_client_certificate,
    {
      value: true,
    },
  );
  assert.equal(strict.listener_filters, undefined);
  assert.equal(strict.filter_chains[0].filters[0].typed_config.access_log, undefined);
});

Deno.test("buildListeners(): the RBAC filter goes before the router of a service's inbound HTTP listener", () => {
  const ctx = model({
    configs: { serviceRoles: [RBAC_ROLE], serviceRoleBindings: [RBAC_BINDING] },
  });
  const ls = buildListeners(ctx, HELLO_V1);
  const filters = (name: string) =>
    ls.find((l) => l.name === name)!.filter_chains[0].filters[0].typed_config.http_filters.map((
      f: Any,
    ) => f.name);
  assert.deepEqual(filters("10.0.1.1_8080"), [
    "envoy.filters.http.rbac",
    "envoy.filters.http.router",
  ]);
  // the world sidecar: no role names world
  const world = parseNodeId("sidecar~10.0.2.1~world-v1.default~default.svc.cluster.local");
  const wl = buildListeners(ctx, world).find((l) => l.name === "10.0.2.1_8080")!;
  assert.deepEqual(
    wl.filter_chains[0].filters[0].typed_config.http_filters.map((f: Any) => f.name),
    ["envoy.filters.http.router"],
  );
});

Deno.test("buildListeners(): outbound TCP listeners per VIP and port; tcp routes of VirtualServices pick the cluster", () => {
  const split = vs("world", {
    hosts: ["world"],
    tcp: [
      { match: [{ port: 7777 }], route: [{ destination: { host: "hello" } }] },
      { match: [{}], route: [] },
      {
        route: [
          { destination: { host: "world", subset: "v1" }, weight: 70 },
          { destination: { host: "world", subset: "v2" }, weight: 30 },
          { destination: { host: "world", subset: "v3" } },
        ],
      },
    ],
  });
  const one = vs("hello", {
    hosts: ["hello"],
    tcp: [{
      route: [
        { destination: { host: "hello", subset: "v1" }, weight: 100 },
        { destination: { host: "hello", subset: "v2" }, weight: 0 },
      ],
    }],
  });
  const ls = buildListeners(model({ configs: { virtualServices: [split, one] } }), CLIENT);
  const l = (name: string) => ls.find((x) => x.name === name)!;
  const world = l("10.2.0.1_9000");
  assert.deepEqual(world.address, { socket_address: { address: "10.2.0.1", port_value: 9000 } });
  assert.deepEqual(world.bind_to_port, { value: false });
  assert.equal(world.traffic_direction, "OUTBOUND");
  assert.deepEqual(world.filter_chains[0].filter_chain_match, {
    prefix_ranges: [{ address_prefix: "10.2.0.1", prefix_len: { value: 32 } }],
  });
  const cfg = world.filter_chains[0].filters[0].typed_config;
  assert.deepEqual(cfg.weighted_clusters, {
    clusters: [
      { name: "outbound|9000|v1|world.default.svc.cluster.local", weight: 70 },
      { name: "outbound|9000|v2|world.default.svc.cluster.local", weight: 30 },
    ],
  });
  assert.equal(cfg.stat_prefix, "outbound|9000||world.default.svc.cluster.local");
  assert.equal(
    tcpCluster(l("10.1.0.1_9000").filter_chains[0]),
    "outbound|9000|v1|hello.default.svc.cluster.local",
  );
  // HTTP ports are not TCP listeners; an HTTP listener per port with RDS, sorted
  assert.equal(ls.find((x) => x.name === "10.2.0.1_80"), undefined);
  // (0.0.0.0_443 is api.example.com's TCP listener: HTTPS is not served through the HCM)
  const https = ls.filter((x) => /^0\.0\.0\.0_/.test(x.name)).map((x) => x.name);
  assert.deepEqual(https, ["0.0.0.0_443", "0.0.0.0_80", "0.0.0.0_7070"]);
  const h = l("0.0.0.0_80");
  assert.deepEqual(h.bind_to_port, { value: false });
  assert.equal(h.traffic_direction, "OUTBOUND");
  const hcm = h.filter_chains[0].filters[0].typed_config;
  assert.equal(hcm.stat_prefix, "http");
  assert.deepEqual(hcm.rds, {
    config_source: { ads: {}, resource_api_version: "V3" },
    route_config_name: "80",
  });
  assert.deepEqual(hcm.http_filters.map((f: Any) => f.name), [
    "envoy.filters.http.cors",
    "envoy.filters.http.fault",
    "envoy.filters.http.router",
  ]);
});

Deno.test("buildListeners(): external TLS services share a port through SNI; UDP ports get nothing", () => {
  const entries: ConfigObject[] = ["a.example.com", "b.example.com"].map((host) => ({
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "ServiceEntry",
    metadata: { name: host, namespace: "default" },
    spec: {
      hosts: [host],
      ports: [{ number: 8443, name: "tls", protocol: "TLS" }, {
        number: 53,
        name: "udp-dns",
        protocol: "UDP",
      }],
      location: "MESH_EXTERNAL",
      resolution: "DNS",
    },
  }));
  const ls = buildListeners(model({ serviceEntries: entries }), CLIENT);
  assert.equal(ls.find((x) => x.name.endsWith("_53")), undefined);
  const l = ls.find((x) => x.name === "0.0.0.0_8443")!;
  assert.deepEqual(l.filter_chains.map((c: Any) => [c.filter_chain_match, tcpCluster(c)]), [
    [{ server_names: ["a.example.com"] }, "outbound|8443||a.example.com"],
    [{ server_names: ["b.example.com"] }, "outbound|8443||b.example.com"],
  ]);
  assert.deepEqual(l.listener_filters.map((f: Any) => f.name), [
    "envoy.filters.listener.tls_inspector",
  ]);
});

Deno.test("buildApiListener(): an api_listener for a known <host>:<port> with fault and router", () => {
  const ctx = model();
  assert.equal(buildApiListener(ctx, CLIENT, "nope:7070"), undefined);
  assert.deepEqual(buildApiListener(ctx, CLIENT, "world:7070"), {
    name: "world:7070",
    api_listener: {
      api_listener: {
        "@type":
          "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        stat_prefix: "world:7070",
        rds: {
          config_source: { ads: {}, resource_api_version: "V3" },
          route_config_name: "world:7070",
        },
        http_filters: [
          {
            name: "envoy.filters.http.fault",
            typed_config: {
              "@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
            },
          },
          {
            name: "envoy.filters.http.router",
            typed_config: {
              "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
            },
          },
        ],
      },
    },
  });
  assert.deepEqual(cidrRange("fd00::/8"), { address_prefix: "fd00::", prefix_len: { value: 8 } });
  assert.deepEqual(cidrRange("fd00::1"), { address_prefix: "fd00::1", prefix_len: { value: 128 } });
});

function se(name: string, spec: Record<string, unknown>): ConfigObject {
  return {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "ServiceEntry",
    metadata: { name, namespace: "default" },
    spec: { hosts: [name], location: "MESH_EXTERNAL", ...spec },
  };
}

Deno.test("buildListeners(): one catch-all chain per port (the first service wins), no fallback beside it", () => {
  const entries = [
    se("a.internal", {
      ports: [{ number: 8000, name: "tcp", protocol: "TCP" }],
      resolution: "DNS",
    }),
    se("b.internal", {
      ports: [{ number: 8000, name: "tcp", protocol: "TCP" }],
      resolution: "DNS",
    }),
    se("net.internal", {
      addresses: ["192.168.0.0/16"],
      ports: [{ number: 8000, name: "tcp", protocol: "TCP" }],
      resolution: "NONE",
    }),
  ];
  const l = buildListeners(model({ serviceEntries: entries }), CLIENT).find((x) =>
    x.name === "0.0.0.0_8000"
  )!;
  assert.deepEqual(l.filter_chains.map((c: Any) => [c.filter_chain_match, tcpCluster(c)]), [
    [undefined, "outbound|8000||a.internal"],
    [{ prefix_ranges: [cidrRange("192.168.0.0/16")] }, "outbound|8000||net.internal"],
  ]);
});

Deno.test("buildListeners(): CIDR and SNI chains on one port get the fallback chain", () => {
  const entries = [
    se("net.internal", {
      addresses: ["192.168.0.0/16"],
      ports: [{ number: 8443, name: "tcp", protocol: "TCP" }],
      resolution: "NONE",
    }),
    se("tls.example.com", {
      ports: [{ number: 8443, name: "tls", protocol: "TLS" }],
      resolution: "DNS",
    }),
  ];
  const l = buildListeners(model({ serviceEntries: entries }), CLIENT).find((x) =>
    x.name === "0.0.0.0_8443"
  )!;
  assert.deepEqual(l.filter_chains.map((c: Any) => [c.filter_chain_match, tcpCluster(c)]), [
    [{ prefix_ranges: [cidrRange("192.168.0.0/16")] }, "outbound|8443||net.internal"],
    [{ server_names: ["tls.example.com"] }, "outbound|8443||tls.example.com"],
    [undefined, "BlackHoleCluster"],
  ]);
});

Deno.test("buildListeners(): a TCP listener keeps its name against an HTTP port of the same number; HTTP ports sorted", () => {
  const entries = [
    se("raw.internal", {
      ports: [{ number: 80, name: "tcp", protocol: "TCP" }],
      resolution: "DNS",
    }),
    se("aaa.internal", {
      ports: [{ number: 9090, name: "http", protocol: "HTTP" }],
      resolution: "DNS",
    }),
  ];
  const ls = buildListeners(model({ serviceEntries: entries }), CLIENT);
  const wild = ls.filter((x) => x.name.startsWith("0.0.0.0_")).map((x) => x.name);
  assert.deepEqual(wild, ["0.0.0.0_443", "0.0.0.0_80", "0.0.0.0_7070", "0.0.0.0_9090"]);
  assert.equal(
    tcpCluster(ls.find((x) => x.name === "0.0.0.0_80")!.filter_chains[0]),
    "outbound|80||raw.internal",
  );
});

Deno.test("buildListeners(): no inbound listener for UDP instances or instances of unknown services", () => {
  const ctx = modelWithInstances(UDP_5353, {
    hostname: "ghost.default.svc.cluster.local",
    port: 6000,
  });
  const names = buildListeners(ctx, HELLO_V1).map((l) => l.name).filter((n) =>
    n.startsWith("10.0.1.1_")
  );
  assert.deepEqual(names, ["10.0.1.1_8080", "10.0.1.1_7070", "10.0.1.1_9000"]);
});

Deno.test("buildListeners(): tcp routes: any listed port matches; unweighted or empty splits fall through", () => {
  const v = vs("world", {
    hosts: ["world"],
    tcp: [
      {
        match: [{ port: 7777 }, { port: 9000 }],
        route: [{ destination: { host: "hello", subset: "a" } }, {}],
      },
    ],
  });
  const ls = buildListeners(model({ configs: { virtualServices: [v] } }), CLIENT);
  assert.equal(
    tcpCluster(ls.find((x) => x.name === "10.2.0.1_9000")!.filter_chains[0]),
    "outbound|9000|a|hello.default.svc.cluster.local",
  );
  const zero = vs("world", {
    hosts: ["world"],
    tcp: [{
      route: [{ destination: { host: "world", subset: "v1" } }, {
        destination: { host: "world", subset: "v2" },
      }],
    }],
  });
  const l = buildListeners(model({ configs: { virtualServices: [zero] } }), CLIENT).find((x) =>
    x.name === "10.2.0.1_9000"
  )!;
  assert.equal(tcpCluster(l.filter_chains[0]), "outbound|9000||world.default.svc.cluster.local");
});

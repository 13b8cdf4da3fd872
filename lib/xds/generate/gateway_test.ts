/**
 * Gateway listeners and route configurations of a router: which Gateways select it, which servers
 * are HTTP, TLS termination (certificates, SNI, client certificates, SANs), TCP forwarding, and the
 * virtual hosts of the VirtualServices bound to the Gateway.
 */

import assert from "node:assert/strict";
import type { ConfigObject } from "../../model/types.ts";
import { parseNodeId } from "../node.ts";
import { cfg, model } from "../testdata/model.ts";
import { gatewayRouter } from "../testdata/scenarios.ts";
import { gatewayListeners, gatewayRouteConfig, selectedGateways } from "./gateway.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const gw = (name: string, servers: unknown[], selector: unknown = { mesh: "ingressgateway" }) =>
  cfg("Gateway", name, { selector, servers });
const server = (number: number, protocol: string, hosts = ["*"], tls?: unknown) => ({
  port: { number, protocol, name: `p${number}` },
  hosts,
  ...(tls ? { tls } : {}),
});
const CERTS = { serverCertificate: "/gw/cert.pem", privateKey: "/gw/key.pem" };

function listeners(gateways: ConfigObject[], virtualServices: ConfigObject[] = []): Any[] {
  return gatewayListeners(model({ configs: { gateways, virtualServices } }), gatewayRouter());
}

Deno.test("selectedGateways(): every selector label must match; no selector selects every router", () => {
  const ctx = model({
    configs: {
      gateways: [
        gw("a", [], { mesh: "ingressgateway" }),
        gw("b", [], { mesh: "ingressgateway", zone: "x" }),
        gw("c", [], { mesh: "other" }),
        gw("d", [], null),
        gw("e", [], "mesh"),
      ],
    },
  });
  assert.deepEqual(selectedGateways(ctx, gatewayRouter()).map((g) => g.config.metadata.name), [
    "a",
    "d",
    "e",
  ]);
  const plain = parseNodeId("router~10.0.9.9~gw.mesh-system~mesh-system.svc.cluster.local", {
    labels: { app: "x" },
  });
  assert.deepEqual(selectedGateways(ctx, plain).map((g) => g.config.metadata.name), ["d", "e"]);
});

Deno.test("gatewayListeners(): one listener per port, sorted; HTTP, HTTP2, gRPC and HTTPS are HTTP", () => {
  const ls = listeners([gw("a", [
    server(9443, "https", ["*"], { mode: "PASSTHROUGH" }),
    server(8443, "HTTPS", ["*"], { mode: "SIMPLE", ...CERTS }),
    server(8080, "http2"),
    server(80, "HTTP"),
    server(9090, "GRPC"),
    server(9000, "TCP"),
    { port: { number: "81", protocol: "HTTP" } },
    null,
  ])]);
  // TCP servers without a route to forward to have no listener
  assert.deepEqual(ls.map((l) => l.name), [
    "0.0.0.0_80",
    "0.0.0.0_8080",
    "0.0.0.0_8443",
    "0.0.0.0_9090",
  ]);
  const l80 = ls[0];
  assert.deepEqual(l80.address, { socket_address: { address: "0.0.0.0", port_value: 80 } });
  assert.equal(l80.filter_chains.length, 1);
  const hcm = l80.filter_chains[0].filters[0].typed_config;
  assert.equal(hcm.stat_prefix, "gateway_80");
  assert.equal(hcm.rds.route_config_name, "80");
  assert.deepEqual(hcm.use_remote_address, { value: true });
  assert.deepEqual(hcm.http_filters.map((f: Any) => f.name), [
    "envoy.filters.http.cors",
    "envoy.filters.http.fault",
    "envoy.filters.http.router",
  ]);
  assert.equal(l80.listener_filters, undefined);
  assert.equal(l80.filter_chains[0].transport_socket, undefined);
});

Deno.test("gatewayListeners(): HTTPS servers terminate TLS with their certificates, per SNI host", () => {
  const ls = listeners([gw("a", [
    server(443, "HTTPS", ["a.example.com"], { mode: "SIMPLE", ...CERTS }),
    server(443, "HTTPS", ["b.example.com", "c.example.com"], {
      mode: "MUTUAL",
      serverCertificate: "/b/cert.pem",
      privateKey: "/b/key.pem",
      caCertificates: "/b/ca.pem",
      subjectAltNames: ["spiffe://td/ns/x/sa/y"],
    }),
    server(443, "HTTPS", ["a.example.com"], { ...CERTS }),
  ])]);
  assert.equal(ls.length, 1);
  const l = ls[0];
  assert.deepEqual(l.listener_filters.map((f: Any) => f.name), [
    "envoy.filters.listener.tls_inspector",
  ]);
  assert.equal(l.filter_chains.length, 2, "the third server repeats the first's SNI match");
  const [a, b] = l.filter_chains;
  assert.deepEqual(a.filter_chain_match, { server_names: ["a.example.com"] });
  assert.deepEqual(a.transport_socket.typed_config.common_tls_context, {
    tls_certificates: [{
      certificate_chain: { filename: "/gw/cert.pem" },
      private_key: { filename: "/gw/key.pem" },
    }],
    alpn_protocols: ["h2", "http/1.1"],
  });
  assert.equal(a.transport_socket.typed_config.require_client_certificate, undefined);
  assert.deepEqual(b.filter_chain_match, { server_names: ["b.example.com", "c.example.com"] });
  assert.deepEqual(b.transport_socket.typed_config.common_tls_context.validation_context, {
    trusted_ca: { filename: "/b/ca.pem" },
    match_typed_subject_alt_names: [{
      san_type: "URI",
      matcher: { exact: "spiffe://td/ns/x/sa/y" },
    }],
  });
  assert.deepEqual(b.transport_socket.typed_config.require_client_certificate, { value: true });
});

Deno.test("gatewayListeners(): no termination without both files or in another mode; * hosts need no SNI", () => {
  const ls = listeners([gw("a", [
    server(443, "HTTPS", ["*"], { mode: "SIMPLE", ...CERTS }),
    server(8443, "HTTPS", ["a.example.com"], { mode: "SIMPLE", serverCertificate: "/c.pem" }),
    server(8444, "HTTPS", ["a.example.com"], { mode: "SIMPLE", privateKey: "/k.pem" }),
    server(8445, "HTTPS", ["a.example.com"], { mode: "ISTIO_MUTUAL", ...CERTS }),
    server(8446, "HTTPS", [7, "*.example.com"] as Any, { mode: "SIMPLE", ...CERTS }),
  ])]);
  const [l443, l8443, l8444, l8445, l8446] = ls;
  assert.equal(l443.filter_chains[0].filter_chain_match, undefined);
  assert.ok(l443.filter_chains[0].transport_socket);
  assert.equal(l443.listener_filters, undefined);
  for (const l of [l8443, l8444, l8445]) {
    assert.equal(l.filter_chains[0].transport_socket, undefined, l.name);
    assert.equal(l.filter_chains[0].filter_chain_match, undefined, l.name);
  }
  assert.deepEqual(l8446.filter_chains[0].filter_chain_match, { server_names: ["*.example.com"] });
});

Deno.test("gatewayListeners(): a TCP server forwards to the first tcp route of a VirtualService bound to it", () => {
  const g = gw("tcp-gw", [server(9000, "TCP"), server(9001, "TLS"), server(9002, "MONGO")]);
  const vs = (name: string, tcp: unknown, gateways = ["tcp-gw"]) =>
    cfg("VirtualService", name, { hosts: ["*"], gateways, tcp });
  const ls = listeners([g], [
    vs("other-gw", [{ route: [{ destination: { host: "hello", port: { number: 9000 } } }] }], [
      "x",
    ]),
    vs("a", [
      {
        match: [{ port: 9001 }, { port: 9005 }],
        route: [{ destination: { host: "world", port: { number: 9000 } } }],
      },
      {
        match: [{ port: 9000 }],
        route: [{}, { destination: { host: "world", subset: "v1", port: { number: 9000 } } }],
      },
    ]),
    vs("b", [{ route: [{ destination: { host: "hello", port: { number: 9000 } } }] }]),
    vs("c", "nope"),
  ]);
  const target = (l: Any) => l.filter_chains[0].filters[0].typed_config.cluster;
  assert.deepEqual(ls.map((l) => [l.name, target(l)]), [
    ["0.0.0.0_9000", "outbound|9000|v1|world.default.svc.cluster.local"],
    ["0.0.0.0_9001", "outbound|9000||world.default.svc.cluster.local"],
    ["0.0.0.0_9002", "outbound|9000||hello.default.svc.cluster.local"],
  ]);
  assert.deepEqual(ls[0].address, { socket_address: { address: "0.0.0.0", port_value: 9000 } });
  assert.equal(ls[0].filter_chains[0].filters[0].typed_config.stat_prefix, target(ls[0]));
});

Deno.test("gatewayRouteConfig(): a virtual host per bound VirtualService, host and host:port; TLS required on redirect", () => {
  const g = gw("gw", [
    server(80, "HTTP", ["*"], { httpsRedirect: true }),
    server(8080, "HTTP"),
    server(9000, "TCP"),
  ]);
  const route = [{ route: [{ destination: { host: "hello", port: { number: 80 } } }] }];
  const vss = [
    cfg("VirtualService", "a", { hosts: ["a.example.com", "*"], gateways: ["gw"], http: route }),
    cfg("VirtualService", "b", {
      hosts: ["a.example.com", "b.example.com"],
      gateways: ["gw"],
      http: route,
    }),
    cfg("VirtualService", "mesh-only", { hosts: ["c.example.com"], http: route }),
    cfg("VirtualService", "no-routes", { hosts: ["d.example.com"], gateways: ["gw"], http: [] }),
  ];
  const ctx = model({ configs: { gateways: [g], virtualServices: vss } });
  const gws = selectedGateways(ctx, gatewayRouter());
  const rc = gatewayRouteConfig(ctx, gatewayRouter(), gws, 80)!;
  assert.equal(rc.name, "80");
  assert.deepEqual(rc.validate_clusters, { value: false });
  assert.deepEqual(rc.virtual_hosts.map((v: Any) => [v.name, v.domains, v.require_tls]), [
    ["a:80", ["a.example.com", "a.example.com:80", "*"], "ALL"],
    ["b:80", ["b.example.com", "b.example.com:80"], "ALL"],
  ]);
  assert.deepEqual(
    rc.virtual_hosts[0].routes[0].route.cluster,
    "outbound|80||hello.default.svc.cluster.local",
  );
  const rc8080 = gatewayRouteConfig(ctx, gatewayRouter(), gws, 8080)!;
  assert.equal(rc8080.virtual_hosts[0].require_tls, undefined);
  assert.deepEqual(rc8080.virtual_hosts[0].domains, ["a.example.com", "a.example.com:8080", "*"]);
  assert.equal(gatewayRouteConfig(ctx, gatewayRouter(), gws, 9000), undefined);
  assert.equal(gatewayRouteConfig(ctx, gatewayRouter(), gws, 81), undefined);
});

Deno.test("gatewayRouteConfig(): no bound VirtualService with routes: a blackhole answering 404", () => {
  const ctx = model({ configs: { gateways: [gw("gw", [server(80, "HTTP")])] } });
  const rc = gatewayRouteConfig(ctx, gatewayRouter(), selectedGateways(ctx, gatewayRouter()), 80)!;
  assert.deepEqual(rc.virtual_hosts, [{
    name: "blackhole:80",
    domains: ["*"],
    routes: [{ match: { prefix: "/" }, direct_response: { status: 404 } }],
  }]);
});

Deno.test("gateway routes: short gateway names in matches, HTTP retries, redirect when any server of the port asks", () => {
  const g = gw("gw", [
    server(80, "HTTP", ["a.example.com"], { httpsRedirect: true }),
    server(80, "HTTP", ["b.example.com"]),
  ]);
  const vs = cfg("VirtualService", "a", {
    hosts: ["a.example.com"],
    gateways: ["gw", "mesh"],
    http: [{
      match: [{ gateways: ["gw"], uri: { prefix: "/x" } }, { gateways: ["other"] }],
      route: [{ destination: { host: "hello", port: { number: 80 } } }],
      retries: { attempts: 2 },
    }],
  });
  const ctx = model({ configs: { gateways: [g], virtualServices: [vs] } });
  const rc = gatewayRouteConfig(ctx, gatewayRouter(), selectedGateways(ctx, gatewayRouter()), 80)!;
  const [vh] = rc.virtual_hosts;
  assert.equal(vh.require_tls, "ALL");
  assert.deepEqual(vh.routes.map((r: Any) => r.match), [{ prefix: "/x" }]);
  assert.equal(vh.routes[0].route.retry_policy.retry_on, "5xx,connect-failure,refused-stream");
});

Deno.test("gateway TCP forwarding: a VirtualService bound to the Gateway and others; routes without destinations skipped", () => {
  const g = gw("tcp-gw", [server(9000, "TCP")]);
  const vs = cfg("VirtualService", "a", {
    hosts: ["*"],
    gateways: ["tcp-gw", "mesh"],
    tcp: [{ route: [] }, { route: [{ destination: { host: "world", port: { number: 9000 } } }] }],
  });
  const [l] = listeners([g], [vs]);
  assert.equal(
    l.filter_chains[0].filters[0].typed_config.cluster,
    `outbound|9000||world.default.svc.cluster.local`,
  );
});

Deno.test("selectedGateways(): Ingress gateways are not for routers whose labels do not match", () => {
  const ingress: ConfigObject = {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      name: "i",
      namespace: "default",
      annotations: { "kubernetes.io/ingress.class": "mesh" },
    },
    spec: {
      rules: [{ http: { paths: [{ backend: { serviceName: "hello", servicePort: 80 } }] } }],
    },
  };
  const ctx = model({ configs: { ingresses: [ingress] } });
  const other = parseNodeId("router~10.0.9.9~gw.mesh-system~mesh-system.svc.cluster.local", {
    labels: { app: "x" },
  });
  assert.deepEqual(selectedGateways(ctx, other), []);
  assert.equal(selectedGateways(ctx, gatewayRouter()).length, 1);
});

/**
 * Proxyless gRPC server listeners (gRFC A36) and TLS from the certificate provider (A29): names,
 * filter chain, mTLS decisions, RBAC, and the clusters proxyless clients get.
 */

import assert from "node:assert/strict";
import type { ConfigObject } from "../../model/types.ts";
import { model } from "../testdata/model.ts";
import { decodeAny, encodeAny, loadXdsProtos, TYPE_URLS } from "../protos.ts";
import type { Proxy } from "../types.ts";
import { buildClusters } from "./clusters.ts";
import { GRPC_SERVER_LISTENER_PREFIX } from "../grpc_bootstrap.ts";
import { buildServerListener, parseListeningAddress } from "./grpc_server.ts";
import { isProxyless } from "./grpc_tls.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const proxy = (
  ip = "10.0.1.1",
  metadata: Record<string, unknown> = { GENERATOR: "grpc" },
): Proxy => ({
  type: "sidecar",
  ip,
  id: "hello-v1.default",
  domain: "default.svc.cluster.local",
  metadata,
});

const name = (addr: string) => GRPC_SERVER_LISTENER_PREFIX + addr;

function cfg(kind: string, n: string, spec: unknown): ConfigObject {
  return {
    apiVersion: "x/v1",
    kind,
    metadata: { name: n, namespace: "default" },
    spec: spec as Any,
  };
}

Deno.test("parseListeningAddress() reads IPv4 and bracketed IPv6 addresses with a port", () => {
  assert.deepEqual(parseListeningAddress(name("10.0.1.1:7070")), { host: "10.0.1.1", port: 7070 });
  assert.deepEqual(parseListeningAddress(name("[::]:7070")), { host: "::", port: 7070 });
  assert.deepEqual(parseListeningAddress(name("[fd00::1]:80")), { host: "fd00::1", port: 80 });
});

Deno.test("parseListeningAddress() refuses malformed addresses and other names", () => {
  for (
    const bad of [
      "10.0.1.1",
      "10.0.1.1:0",
      "10.0.1.1:70000",
      "300.0.1.1:80",
      "hello:80",
      "[::1::2]:80",
      "10.0.1.1:80x",
      "",
    ]
  ) assert.equal(parseListeningAddress(name(bad)), undefined, bad);
  assert.equal(parseListeningAddress("10.0.1.1:80"), undefined);
});

Deno.test("buildServerListener() serves the instances at the address with non-forwarding routes and the router last", () => {
  const l = buildServerListener(model(), proxy(), name("10.0.1.1:7070"))!;
  assert.equal(l.name, name("10.0.1.1:7070"));
  assert.deepEqual(l.address, { socket_address: { address: "10.0.1.1", port_value: 7070 } });
  assert.equal(l.filter_chains.length, 1);
  const chain = l.filter_chains[0];
  assert.equal(chain.filter_chain_match, undefined);
  assert.equal(chain.transport_socket, undefined);
  const hcm = chain.filters[0].typed_config;
  assert.equal(hcm.http_filters.at(-1).name, "envoy.filters.http.router");
  const vhs = hcm.route_config.virtual_hosts;
  assert.ok(vhs[0].domains.includes("hello.default.svc.cluster.local:7070"));
  assert.deepEqual(vhs.at(-1).domains, ["*"]);
  for (const vh of vhs) {
    assert.deepEqual(vh.routes, [{ match: { prefix: "/" }, non_forwarding_action: {} }]);
  }
});

Deno.test("buildServerListener() uses the proxy's IP for a wildcard address and keeps the address as asked", () => {
  const l = buildServerListener(model(), proxy("10.0.1.2"), name("0.0.0.0:7070"))!;
  assert.deepEqual(l.address, { socket_address: { address: "0.0.0.0", port_value: 7070 } });
  assert.equal(buildServerListener(model(), proxy("10.9.9.9"), name("0.0.0.0:7070")), undefined);
});

Deno.test("buildServerListener() gives no resource for an unknown port or a malformed address", () => {
  assert.equal(buildServerListener(model(), proxy(), name("10.0.1.1:7071")), undefined);
  assert.equal(buildServerListener(model(), proxy(), name("10.0.1.1:x")), undefined);
  assert.equal(buildServerListener(model(), proxy(), "grpc/server?other=1"), undefined);
});

Deno.test("buildServerListener() requires client certificates from provider default when the mesh is MUTUAL_TLS", () => {
  const l = buildServerListener(
    model({ mesh: { authPolicy: "MUTUAL_TLS" } }),
    proxy(),
    name("10.0.1.1:7070"),
  )!;
  const tls = l.filter_chains[0].transport_socket.typed_config;
  assert.equal(
    tls["@type"],
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
  );
  assert.deepEqual(tls.require_client_certificate, { value: true });
  assert.deepEqual(tls.common_tls_context, {
    tls_certificate_provider_instance: { instance_name: "default" },
    validation_context: { ca_certificate_provider_instance: { instance_name: "default" } },
  });
});

Deno.test("buildServerListener() follows a Policy: STRICT peer mTLS → TLS, PERMISSIVE → plaintext (one raw_buffer chain)", () => {
  const policy = (mtls: unknown) =>
    model({
      configs: {
        policies: [cfg("Policy", "p", { targets: [{ name: "hello" }], peers: [{ mtls }] })],
      },
    });
  const strict = buildServerListener(policy({}), proxy(), name("10.0.1.1:7070"))!;
  assert.ok(strict.filter_chains[0].transport_socket);
  const permissive = buildServerListener(
    policy({ mode: "PERMISSIVE" }),
    proxy(),
    name("10.0.1.1:7070"),
  )!;
  assert.equal(permissive.filter_chains.length, 1);
  assert.equal(permissive.filter_chains[0].transport_socket, undefined);
  // world is not targeted: plaintext
  const world = buildServerListener(policy({}), proxy("10.0.2.1"), name("10.0.2.1:7070"))!;
  assert.equal(world.filter_chains[0].transport_socket, undefined);
});

Deno.test("buildServerListener() puts the RBAC filter of the service's roles before the router", () => {
  const ctx = model({
    configs: {
      serviceRoles: [
        cfg("ServiceRole", "caller", {
          rules: [{ services: ["hello"], paths: ["/mesh.demo.WhoAmI/Get"] }],
        }),
      ],
      serviceRoleBindings: [
        cfg("ServiceRoleBinding", "b", {
          roleRef: { kind: "ServiceRole", name: "caller" },
          subjects: [{ user: "cluster.local/ns/default/sa/world" }],
        }),
      ],
    },
  });
  const hcm = buildServerListener(ctx, proxy(), name("10.0.1.1:7070"))!.filter_chains[0].filters[0]
    .typed_config;
  assert.deepEqual(hcm.http_filters.map((f: Any) => f.name), [
    "envoy.filters.http.rbac",
    "envoy.filters.http.router",
  ]);
  const pol = hcm.http_filters[0].typed_config.rules.policies.caller;
  assert.deepEqual(pol.permissions, [{ url_path: { path: { exact: "/mesh.demo.WhoAmI/Get" } } }]);
  assert.deepEqual(pol.principals, [{
    authenticated: { principal_name: { exact: "spiffe://cluster.local/ns/default/sa/world" } },
  }]);
  // world is named by no role: no filter
  const w = buildServerListener(ctx, proxy("10.0.2.1"), name("10.0.2.1:7070"))!;
  assert.deepEqual(
    w.filter_chains[0].filters[0].typed_config.http_filters.map((f: Any) => f.name),
    [
      "envoy.filters.http.router",
    ],
  );
});

Deno.test("buildServerListener() output encodes as an xDS Listener", async () => {
  await loadXdsProtos();
  const ctx = model({ mesh: { authPolicy: "MUTUAL_TLS" } });
  const l = buildServerListener(ctx, proxy(), name("10.0.1.1:7070"))!;
  const back = decodeAny(encodeAny(TYPE_URLS.listener, l)) as Any;
  assert.equal(back.name, l.name);
});

Deno.test("isProxyless() is true for GENERATOR grpc and gRPC xDS clients, false for Envoy", () => {
  assert.equal(isProxyless(proxy()), true);
  assert.equal(isProxyless(proxy("10.0.1.1", {})), false);
  assert.equal(
    isProxyless({ ...proxy("10.0.1.1", {}), client: { kind: "grpc-js", name: "grpc-js" } }),
    true,
  );
  assert.equal(
    isProxyless({ ...proxy("10.0.1.1", {}), client: { kind: "envoy", name: "envoy" } }),
    false,
  );
});

Deno.test("buildClusters() gives proxyless clients provider TLS with SPIFFE SANs for STRICT services only", () => {
  const strict = buildClusters(model({ mesh: { authPolicy: "MUTUAL_TLS" } }), proxy("10.9.9.9"));
  const c = strict.find((x) => x.name === "outbound|7070||hello.default.svc.cluster.local")!;
  assert.deepEqual(c.transport_socket.typed_config.common_tls_context, {
    tls_certificate_provider_instance: { instance_name: "default" },
    validation_context: {
      ca_certificate_provider_instance: { instance_name: "default" },
      match_subject_alt_names: [{ exact: "spiffe://cluster.local/ns/default/sa/hello" }],
    },
  });
  const permissive = buildClusters(
    model({
      configs: { policies: [cfg("Policy", "p", { peers: [{ mtls: { mode: "PERMISSIVE" } }] })] },
    }),
    proxy("10.9.9.9"),
  );
  assert.equal(
    permissive.find((x) => x.name === "outbound|7070||hello.default.svc.cluster.local")!
      .transport_socket,
    undefined,
  );
  // Envoy sidecars keep the file-based mesh mTLS socket
  const envoy = buildClusters(model({ mesh: { authPolicy: "MUTUAL_TLS" } }), proxy("10.9.9.9", {}));
  const e = envoy.find((x) => x.name === "outbound|7070||hello.default.svc.cluster.local")!;
  assert.ok(e.transport_socket.typed_config.common_tls_context.tls_certificates);
});

Deno.test("buildClusters() gives proxyless clients provider TLS for a DestinationRule ISTIO_MUTUAL", () => {
  const dr = cfg("DestinationRule", "hello", {
    host: "hello",
    trafficPolicy: { tls: { mode: "ISTIO_MUTUAL" } },
  });
  const cs = buildClusters(model({ configs: { destinationRules: [dr] } }), proxy("10.9.9.9"));
  const c = cs.find((x) => x.name === "outbound|7070||hello.default.svc.cluster.local")!;
  assert.deepEqual(
    c.transport_socket.typed_config.common_tls_context.tls_certificate_provider_instance,
    {
      instance_name: "default",
    },
  );
});

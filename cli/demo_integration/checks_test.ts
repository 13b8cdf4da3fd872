import assert from "node:assert/strict";
import {
  captured,
  inboundTls,
  initCaptureRanges,
  routeClusterFor,
  servesHttp,
  servesTcp,
  upstreamTls,
} from "./checks.ts";

const HCM = { name: "envoy.filters.network.http_connection_manager" };
const TCP = { name: "envoy.filters.network.tcp_proxy" };
const TLS = (require: unknown) => ({
  name: "envoy.transport_sockets.tls",
  typed_config: {
    common_tls_context: {
      validation_context: { trusted_ca: { filename: "/etc/certs/root-cert.pem" } },
    },
    ...(require === undefined ? {} : { require_client_certificate: require }),
  },
});

Deno.test("routeClusterFor() follows exact and prefix matches, first route first", () => {
  const rc = {
    virtual_hosts: [{
      routes: [
        { match: { path: "/echo" }, route: { cluster: "a" } },
        { match: { prefix: "/" }, route: { cluster: "b" } },
      ],
    }],
  };
  assert.equal(routeClusterFor(rc, "/echo"), "a");
  assert.equal(routeClusterFor(rc, "/echo/x"), "b");
  assert.equal(routeClusterFor({ virtual_hosts: [] }, "/echo"), undefined);
  assert.equal(routeClusterFor(undefined, "/echo"), undefined);
});

Deno.test("servesHttp() and servesTcp() tell an HTTP listener from a TCP one", () => {
  const http = { filter_chains: [{ filters: [HCM] }] };
  const tcp = { filter_chains: [{ filters: [TCP] }] };
  assert.equal(servesHttp(http), true);
  assert.equal(servesTcp(http), false);
  assert.equal(servesTcp(tcp), true);
  assert.equal(servesHttp(tcp), false);
  assert.equal(servesTcp(undefined), false);
});

Deno.test("inboundTls() requires client certificates only when every chain does (wrapped or bare bool)", () => {
  assert.deepEqual(
    inboundTls({ filter_chains: [{ filters: [HCM], transport_socket: TLS(true) }] }),
    {
      requiresClientCert: true,
      acceptsPlaintext: false,
      trustedCa: ["/etc/certs/root-cert.pem"],
    },
  );
  assert.equal(
    inboundTls({ filter_chains: [{ transport_socket: TLS({ value: true }) }] }).requiresClientCert,
    true,
  );
  const permissive = inboundTls({
    filter_chains: [{ transport_socket: TLS(true) }, { filters: [HCM] }],
  });
  assert.equal(permissive.requiresClientCert, false);
  assert.equal(permissive.acceptsPlaintext, true);
  assert.equal(
    inboundTls({ filter_chains: [{ transport_socket: TLS(undefined) }] }).requiresClientCert,
    false,
  );
  assert.equal(inboundTls(undefined).requiresClientCert, false);
});

Deno.test("upstreamTls() reads the certificate presented and the SANs checked; undefined without TLS", () => {
  const cluster = {
    transport_socket: {
      name: "envoy.transport_sockets.tls",
      typed_config: {
        common_tls_context: {
          tls_certificates: [{ certificate_chain: { filename: "/etc/certs/cert-chain.pem" } }],
          validation_context: {
            match_typed_subject_alt_names: [{ san_type: "URI", matcher: { exact: "spiffe://x" } }],
          },
        },
      },
    },
  };
  assert.deepEqual(upstreamTls(cluster), {
    presents: ["/etc/certs/cert-chain.pem"],
    sans: ["spiffe://x"],
  });
  assert.equal(upstreamTls({ name: "c" }), undefined);
});

Deno.test("captured() follows -i and -x of the init container", () => {
  const r = initCaptureRanges([
    "-p",
    "15001",
    "-i",
    "10.0.0.0/8,172.16.0.0/12",
    "-x",
    "10.1.0.0/16",
  ]);
  assert.deepEqual(r, { include: "10.0.0.0/8,172.16.0.0/12", exclude: "10.1.0.0/16" });
  assert.equal(captured("10.96.0.20", r.include, r.exclude), true);
  assert.equal(captured("172.31.255.1", r.include, r.exclude), true);
  assert.equal(captured("10.1.2.3", r.include, r.exclude), false, "excluded");
  assert.equal(captured("203.0.113.10", r.include, r.exclude), false, "outside");
  assert.equal(captured("203.0.113.10", "*"), true);
  assert.equal(captured("203.0.113.10", ""), false);
  assert.equal(captured("0.0.0.1", "0.0.0.0/0"), true);
});

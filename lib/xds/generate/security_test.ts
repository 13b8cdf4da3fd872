/**
 * Peer authentication decisions (which Policy applies to a service port and what it asks for)
 * and the TLS contexts sidecars and gateways get: certificates, trusted CA, SAN checks, SNI,
 * ALPN and client certificate requirement.
 */

import assert from "node:assert/strict";
import { authnPolicy as policy, model, SERVICES } from "../testdata/model.ts";
import {
  downstreamTlsSocket,
  meshMtlsDownstream,
  meshMtlsUpstream,
  mtlsModeOf,
  upstreamTlsSocket,
} from "./security.ts";

const HELLO = SERVICES[0];
const [HTTP, GRPC, TCP] = HELLO.ports;
const UP = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext";
const DOWN = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext";

const modeWith = (spec: unknown, port = HTTP, svc = HELLO) =>
  mtlsModeOf(model({ configs: { policies: [policy("p", spec)] } }), svc, port);

Deno.test("mtlsModeOf(): what a Policy's peers ask for", () => {
  assert.equal(modeWith({ peers: [{ mtls: {} }] }), "STRICT");
  assert.equal(modeWith({ peers: [{ mtls: null }] }), "STRICT");
  assert.equal(modeWith({ peers: [{ mtls: { mode: "STRICT" } }] }), "STRICT");
  assert.equal(modeWith({ peers: [{ mtls: { mode: "PERMISSIVE" } }] }), "PERMISSIVE");
  assert.equal(modeWith({ peers: [{ mtls: { mode: "TLS_PERMISSIVE" } }] }), "PERMISSIVE");
  assert.equal(modeWith({ peers: [{ mtls: { allowTls: true } }] }), "PERMISSIVE");
  assert.equal(modeWith({ peers: [{ mtls: { allowTls: false } }] }), "STRICT");
  assert.equal(modeWith({ peers: [{ jwt: {} }, { mtls: {} }] }), "STRICT", "first peer with mtls");
  assert.equal(modeWith({ peers: [null, { jwt: {} }] }), "NONE");
  assert.equal(modeWith({ peers: "mtls" }), "NONE");
  assert.equal(modeWith({}), "NONE", "a Policy without peers turns mTLS off");
});

Deno.test("mtlsModeOf(): targets by short or full name, port number or name; others ignored", () => {
  const strict = { peers: [{ mtls: {} }] };
  const t = (targets: unknown[]) => ({ targets, ...strict });
  assert.equal(modeWith(t([{ name: "hello" }]), TCP), "STRICT");
  assert.equal(modeWith(t([{ name: HELLO.hostname, ports: [] }]), TCP), "STRICT");
  assert.equal(modeWith(t([{ name: "hello", ports: [{ name: "grpc" }] }]), GRPC), "STRICT");
  assert.equal(modeWith(t([{ name: "hello", ports: [{ name: "grpc" }] }]), HTTP), "NONE");
  assert.equal(modeWith(t([{ name: "hello", ports: [{ number: 7070 }] }]), HTTP), "NONE");
  assert.equal(modeWith(t([{ name: "world" }]), HTTP), "NONE");
  assert.equal(modeWith(t([{ name: 5 }, null, { ports: [] }]), HTTP), "NONE");
  assert.equal(modeWith(t([{ name: "hello", ports: [null, { name: "" }] }]), HTTP), "NONE");
  // a targeted Policy wins over a namespace-wide one listed before it, whatever the order
  const ctx = model({
    configs: {
      policies: [
        policy("all", { peers: [{ mtls: { mode: "PERMISSIVE" } }] }),
        policy("all2", strict),
        policy("hello", t([{ name: "hello" }])),
      ],
    },
  });
  assert.equal(mtlsModeOf(ctx, HELLO, HTTP), "STRICT");
  assert.equal(mtlsModeOf(ctx, SERVICES[1], HTTP), "PERMISSIVE", "the first namespace-wide one");
});

Deno.test("mtlsModeOf(): the namespace comes from the host when the service has none", () => {
  const svc = { ...HELLO, namespace: "" };
  assert.equal(modeWith({ peers: [{ mtls: {} }] }, HTTP, svc), "STRICT");
  const prod = model({ configs: { policies: [policy("p", { peers: [{ mtls: {} }] }, "prod")] } });
  assert.equal(mtlsModeOf(prod, svc, HTTP), "NONE");
  const noNs = model({
    configs: { policies: [{ ...policy("p", { peers: [{ mtls: {} }] }), metadata: { name: "p" } }] },
  });
  assert.equal(mtlsModeOf(noNs, svc, HTTP), "NONE");
});

Deno.test("mtlsModeOf(): the auth.mesh.io/<port> attribute of the port only, before the mesh default", () => {
  const svc = {
    ...HELLO,
    attributes: { "auth.mesh.io/80": "MUTUAL_TLS", "auth.mesh.io/7070": "NONE" },
  };
  assert.equal(mtlsModeOf(model(), svc, HTTP), "STRICT");
  assert.equal(mtlsModeOf(model(), svc, TCP), "NONE");
  const mutual = model({ mesh: { authPolicy: "MUTUAL_TLS" } });
  assert.equal(mtlsModeOf(mutual, svc, GRPC), "NONE");
  assert.equal(mtlsModeOf(mutual, svc, TCP), "STRICT");
});

Deno.test("upstreamTlsSocket() sets only what is given: client certificate pair, CA, SANs, SNI, ALPN", () => {
  assert.deepEqual(upstreamTlsSocket({}), {
    name: "envoy.transport_sockets.tls",
    typed_config: { "@type": UP, common_tls_context: {} },
  });
  assert.deepEqual(upstreamTlsSocket({ certChain: "/c.pem", sans: [] }).typed_config, {
    "@type": UP,
    common_tls_context: {},
  }, "a chain without a key is no client certificate; no SANs, no validation");
  assert.deepEqual(
    upstreamTlsSocket({ privateKey: "/k.pem", alpn: [] }).typed_config.common_tls_context,
    {},
  );
  assert.deepEqual(
    upstreamTlsSocket({
      certChain: "/c.pem",
      privateKey: "/k.pem",
      sans: ["spiffe://td/ns/a/sa/b"],
      sni: "db.example.com",
      alpn: ["h2"],
    }).typed_config,
    {
      "@type": UP,
      common_tls_context: {
        tls_certificates: [{
          certificate_chain: { filename: "/c.pem" },
          private_key: { filename: "/k.pem" },
        }],
        validation_context: {
          match_typed_subject_alt_names: [{
            san_type: "URI",
            matcher: { exact: "spiffe://td/ns/a/sa/b" },
          }],
        },
        alpn_protocols: ["h2"],
      },
      sni: "db.example.com",
    },
  );
  assert.deepEqual(
    upstreamTlsSocket({ caCertificates: "/ca.pem" }).typed_config.common_tls_context,
    {
      validation_context: { trusted_ca: { filename: "/ca.pem" } },
    },
  );
});

Deno.test("meshMtlsUpstream() uses the workload certificates, the SANs given and ALPN istio (+h2)", () => {
  const sans = ["spiffe://cluster.local/ns/default/sa/world"];
  const tc = meshMtlsUpstream(sans, false).typed_config;
  assert.deepEqual(tc.common_tls_context, {
    tls_certificates: [{
      certificate_chain: { filename: "/etc/certs/cert-chain.pem" },
      private_key: { filename: "/etc/certs/key.pem" },
    }],
    validation_context: {
      trusted_ca: { filename: "/etc/certs/root-cert.pem" },
      match_typed_subject_alt_names: [{ san_type: "URI", matcher: { exact: sans[0] } }],
    },
    alpn_protocols: ["istio"],
  });
  assert.equal(tc.sni, undefined);
  const h2 = meshMtlsUpstream(sans, true, "world.example").typed_config;
  assert.deepEqual(h2.common_tls_context.alpn_protocols, ["istio", "h2"]);
  assert.equal(h2.sni, "world.example");
});

Deno.test("downstreamTlsSocket(): SANs are checked only with a CA; client certificates required on demand", () => {
  const base = { certChain: "/c.pem", privateKey: "/k.pem" };
  const certs = [{
    certificate_chain: { filename: "/c.pem" },
    private_key: { filename: "/k.pem" },
  }];
  assert.deepEqual(
    downstreamTlsSocket({ ...base, requireClientCertificate: false, sans: ["x"], alpn: [] }),
    {
      name: "envoy.transport_sockets.tls",
      typed_config: { "@type": DOWN, common_tls_context: { tls_certificates: certs } },
    },
  );
  assert.deepEqual(
    downstreamTlsSocket({
      ...base,
      caCertificates: "/ca.pem",
      requireClientCertificate: true,
      sans: ["spiffe://td/ns/a/sa/b"],
      alpn: ["h2"],
    }).typed_config,
    {
      "@type": DOWN,
      common_tls_context: {
        tls_certificates: certs,
        validation_context: {
          trusted_ca: { filename: "/ca.pem" },
          match_typed_subject_alt_names: [{
            san_type: "URI",
            matcher: { exact: "spiffe://td/ns/a/sa/b" },
          }],
        },
        alpn_protocols: ["h2"],
      },
      require_client_certificate: { value: true },
    },
  );
  assert.deepEqual(
    downstreamTlsSocket({
      ...base,
      caCertificates: "/ca.pem",
      requireClientCertificate: false,
      sans: [],
    })
      .typed_config.common_tls_context.validation_context,
    { trusted_ca: { filename: "/ca.pem" } },
  );
});

Deno.test("meshMtlsDownstream() uses the workload certificates and ALPN h2, http/1.1", () => {
  for (const require of [true, false]) {
    const tc = meshMtlsDownstream(require).typed_config;
    assert.deepEqual(tc.common_tls_context, {
      tls_certificates: [{
        certificate_chain: { filename: "/etc/certs/cert-chain.pem" },
        private_key: { filename: "/etc/certs/key.pem" },
      }],
      validation_context: { trusted_ca: { filename: "/etc/certs/root-cert.pem" } },
      alpn_protocols: ["h2", "http/1.1"],
    });
    assert.deepEqual(tc.require_client_certificate, require ? { value: true } : undefined);
  }
});

Deno.test("mtlsModeOf() skips malformed Policies and peers", () => {
  assert.equal(modeWith({ peers: ["mtls", 7, { mtls: {} }] }), "STRICT");
  assert.equal(modeWith(null), "NONE", "a Policy without a spec: namespace-wide, no peers");
  // a service outside any namespace is governed by Policies without a namespace
  const bare = { ...HELLO, hostname: "hello", namespace: "" };
  const noNs = { ...policy("p", { peers: [{ mtls: {} }] }), metadata: { name: "p" } };
  assert.equal(mtlsModeOf(model({ configs: { policies: [noNs] } }), bare, HTTP), "STRICT");
});

Deno.test("mtlsModeOf(): any listed port selects; peers without mtls leave mTLS off", () => {
  const t = {
    targets: [{ name: "hello", ports: [{ number: 80 }, { number: 7070 }] }],
    peers: [{ mtls: {} }],
  };
  assert.equal(modeWith(t, HTTP), "STRICT");
  assert.equal(modeWith(t, GRPC), "STRICT");
  assert.equal(modeWith(t, TCP), "NONE");
  assert.equal(modeWith({ peers: [{ jwt: { issuer: "x" } }] }), "NONE");
});

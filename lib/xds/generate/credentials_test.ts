import assert from "node:assert/strict";
import { cfg, model } from "../testdata/model.ts";
import { gatewayRouter, helloV1 } from "../testdata/scenarios.ts";
import { buildClusters } from "./clusters.ts";
import { credentialFiles, withClientCredential, withServerCredential } from "./credentials.ts";
import { gatewayListeners } from "./gateway.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

Deno.test("withServerCredential() fills the mounted Secret's files in where no path is given", () => {
  assert.deepEqual(withServerCredential({ mode: "SIMPLE", credentialName: "bookinfo" }), {
    mode: "SIMPLE",
    credentialName: "bookinfo",
    serverCertificate: "/etc/mesh/credentials/bookinfo/tls.crt",
    privateKey: "/etc/mesh/credentials/bookinfo/tls.key",
  });
  const mutual = withServerCredential({
    mode: "MUTUAL",
    credentialName: "c",
    serverCertificate: "/own.pem",
  });
  assert.equal(mutual.serverCertificate, "/own.pem");
  assert.equal(mutual.caCertificates, credentialFiles("c").ca);
  const plain = { mode: "SIMPLE", serverCertificate: "/a", privateKey: "/b" };
  assert.equal(withServerCredential(plain), plain);
  // a name that would leave the directory is not turned into a path
  assert.equal(withServerCredential({ credentialName: "../x" }).serverCertificate, undefined);
});

Deno.test("withClientCredential() gives SIMPLE the CA and MUTUAL the client certificate too", () => {
  assert.deepEqual(withClientCredential({ mode: "SIMPLE", credentialName: "db" }), {
    mode: "SIMPLE",
    credentialName: "db",
    caCertificates: "/etc/mesh/credentials/db/ca.crt",
  });
  const m = withClientCredential({ mode: "MUTUAL", credentialName: "db" });
  assert.equal(m.clientCertificate, "/etc/mesh/credentials/db/tls.crt");
  assert.equal(m.privateKey, "/etc/mesh/credentials/db/tls.key");
  const istio = { mode: "ISTIO_MUTUAL", credentialName: "db" };
  assert.equal(withClientCredential(istio), istio);
});

Deno.test("gatewayListeners() terminates an HTTPS server that names only a credentialName", () => {
  const gw = cfg("Gateway", "public", {
    selector: { mesh: "ingressgateway" },
    servers: [{
      port: { number: 443, protocol: "HTTPS", name: "https" },
      hosts: ["bookinfo.example.com"],
      tls: { mode: "SIMPLE", credentialName: "bookinfo-cert" },
    }],
  });
  const ls: Any[] = gatewayListeners(model({ configs: { gateways: [gw] } }), gatewayRouter());
  const chain = ls.find((l) => l.name === "0.0.0.0_443")?.filter_chains?.[0];
  assert.ok(chain, "a listener on 443");
  const common = chain.transport_socket.typed_config.common_tls_context;
  assert.deepEqual(common.tls_certificates[0], {
    certificate_chain: { filename: "/etc/mesh/credentials/bookinfo-cert/tls.crt" },
    private_key: { filename: "/etc/mesh/credentials/bookinfo-cert/tls.key" },
  });
  assert.deepEqual(chain.filter_chain_match, { server_names: ["bookinfo.example.com"] });
});

Deno.test("buildClusters() gives a DestinationRule's MUTUAL credentialName the mounted files", () => {
  const dr = cfg("DestinationRule", "world-tls", {
    host: "world.default.svc.cluster.local",
    trafficPolicy: { tls: { mode: "MUTUAL", credentialName: "world-client" } },
  });
  const c: Any = buildClusters(model({ configs: { destinationRules: [dr] } }), helloV1()).find((
    x,
  ) => x.name === "outbound|80||world.default.svc.cluster.local");
  const common = c.transport_socket.typed_config.common_tls_context;
  assert.equal(
    common.tls_certificates[0].certificate_chain.filename,
    "/etc/mesh/credentials/world-client/tls.crt",
  );
  assert.equal(
    common.validation_context.trusted_ca.filename,
    "/etc/mesh/credentials/world-client/ca.crt",
  );
});

import assert from "node:assert/strict";
import { certDirOf, withCertDir } from "./cert_dir.ts";
import { meshMtlsDownstream, meshMtlsUpstream, upstreamTlsSocket } from "./security.ts";

const meta = (CERT_DIR: unknown) => ({ metadata: { CERT_DIR } });

Deno.test("certDirOf() takes a clean absolute directory and ignores the default and bad values", () => {
  assert.equal(certDirOf(meta("/home/me/web/certs/")), "/home/me/web/certs");
  assert.equal(certDirOf(meta("/etc/certs")), undefined);
  assert.equal(certDirOf(meta("/etc/certs/")), undefined);
  assert.equal(certDirOf({ metadata: {} }), undefined);
  for (const bad of ["certs", "/a/../etc", "/a\nb", 42, "/" + "x".repeat(1024)]) {
    assert.equal(certDirOf(meta(bad)), undefined, String(bad));
  }
});

Deno.test("withCertDir() moves mesh mTLS files to the proxy's directory and copies what it changes", () => {
  const cluster = {
    name: "outbound|80||a",
    transport_socket: meshMtlsUpstream(["spiffe://x"], false),
  };
  const own = {
    name: "outbound|80|own|a",
    transport_socket: upstreamTlsSocket({ certChain: "/my/c.pem", privateKey: "/my/k.pem" }),
  };
  const listener = {
    name: "10.0.0.1_80",
    filter_chains: [{ filters: [] }, { filters: [], transport_socket: meshMtlsDownstream(true) }],
  };
  const before = structuredClone([cluster, own, listener]);
  const out = withCertDir([cluster, own, listener], meta("/vm/certs"));
  assert.deepEqual([cluster, own, listener], before, "inputs untouched");
  assert.equal(out[1], own, "a context with other files is the same object");
  const up = out[0].transport_socket.typed_config.common_tls_context;
  assert.deepEqual(up.tls_certificates, [{
    certificate_chain: { filename: "/vm/certs/cert-chain.pem" },
    private_key: { filename: "/vm/certs/key.pem" },
  }]);
  assert.deepEqual(up.validation_context.trusted_ca, { filename: "/vm/certs/root-cert.pem" });
  const down = out[2].filter_chains[1].transport_socket.typed_config.common_tls_context;
  assert.equal(down.tls_certificates[0].certificate_chain.filename, "/vm/certs/cert-chain.pem");
  assert.equal(down.validation_context.trusted_ca.filename, "/vm/certs/root-cert.pem");
  const same = [cluster];
  assert.equal(withCertDir(same, { metadata: {} }), same);
});

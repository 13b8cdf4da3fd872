/**
 * End-to-end: the TLS ADS port (`--secureGrpcAddr`) of mesh-discovery with certificates from
 * `MESH_CERT_DIR`, and its absence when the files are missing.
 */

import assert from "node:assert/strict";
import { makeTestPki } from "../harness/certs.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { tlsServed } from "../../lib/xds/server/_test_util.ts";
import { adsClient, tlsCreds } from "./_ads_client.ts";
import { type RunningDiscovery, startDiscovery } from "./discovery_harness.ts";

/** Discovery with the Mock registry, `dir` as config folder and the TLS port on a free port. */
function startWithTls(dir: string, certDir: string): Promise<RunningDiscovery> {
  return startDiscovery(
    ["--registries", "Mock", "--configDir", dir, "--secureGrpcAddr", "127.0.0.1:0"],
    { MESH_CERT_DIR: certDir },
  );
}

Deno.test("mesh-discovery serves ADS over TLS when the cert files exist, verifying client certificates when presented", async () => {
  const pki = await makeTestPki();
  const other = await makeTestPki();
  const certDir = await Deno.makeTempDir({ prefix: "mesh-certs-" });
  const cfg = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  const server = await pki.issue("discovery", { ips: ["127.0.0.1"], dns: ["localhost"] });
  await Deno.copyFile(server.cert, `${certDir}/cert-chain.pem`);
  await Deno.copyFile(server.key, `${certDir}/key.pem`);
  await Deno.copyFile(pki.caCert, `${certDir}/root-cert.pem`);
  const client = await pki.issue("client", {
    uris: ["spiffe://cluster.local/ns/default/sa/hello"],
  });
  const { proc, secureGrpc } = await startWithTls(cfg, certDir);
  try {
    assert.ok(secureGrpc, proc.output().slice(-2000));
    // With a mesh certificate, and without one (client certificates are verified when presented).
    for (
      const creds of [
        await tlsCreds(pki.caCert, client.cert, client.key),
        await tlsCreds(pki.caCert),
      ]
    ) {
      const ads = adsClient(secureGrpc, creds, { "grpc.ssl_target_name_override": "localhost" });
      const stream = ads.open();
      try {
        stream.send({
          node: { id: "sidecar~127.0.1.1~hello-v1.default~default.svc.cluster.local" },
          type_url: TYPE_URLS.cluster,
        });
        const cds = await stream.next(TYPE_URLS.cluster, 10_000);
        assert.ok(
          cds.resources.some((c) => c.name === "outbound|80||hello.default.svc.cluster.local"),
        );
      } finally {
        await stream.close();
        ads.close();
      }
    }
    // A certificate from another CA is refused (a raw TLS connection: the server closes it
    // instead of starting HTTP/2 with its SETTINGS frame).
    const [, port] = secureGrpc.split(":");
    const stranger = await other.issue("stranger", {
      uris: ["spiffe://cluster.local/ns/default/sa/stranger"],
    });
    const served = await tlsServed(Number(port), {
      ca: await Deno.readTextFile(pki.caCert),
      cert: await Deno.readTextFile(stranger.cert),
      key: await Deno.readTextFile(stranger.key),
    });
    assert.equal(served, false, "a client certificate from another CA was accepted");
    await proc.waitFor(/certificate not verified|TLS handshake failed/, 5_000);
  } finally {
    const status = await proc.stop();
    await pki.remove();
    await other.remove();
    await Deno.remove(certDir, { recursive: true });
    await Deno.remove(cfg, { recursive: true });
    assert.equal(status.code, 0, proc.output().slice(-2000));
  }
});

Deno.test("mesh-discovery does not start the TLS port and says why when the cert files are missing", async () => {
  const cfg = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  const { proc, listening } = await startWithTls(cfg, `${cfg}/nocerts`);
  try {
    assert.doesNotMatch(listening, /secureGrpc=/);
    assert.match(
      proc.output(),
      /Secure gRPC \(--secureGrpcAddr\) not started: .*cert-chain\.pem does not exist/,
    );
  } finally {
    const status = await proc.stop();
    await Deno.remove(cfg, { recursive: true });
    assert.equal(status.code, 0, proc.output().slice(-2000));
  }
});

Deno.test("mesh-discovery starts the TLS port when the cert files appear after start-up", async () => {
  const pki = await makeTestPki();
  const cfg = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  const certDir = `${cfg}/certs`;
  const { proc, listening } = await startWithTls(cfg, certDir);
  try {
    assert.doesNotMatch(listening, /secureGrpc=/);
    await proc.waitFor(/it starts once the certificate files appear in/, 5_000);
    // written as the agent would, the key last
    const server = await pki.issue("discovery", { ips: ["127.0.0.1"], dns: ["localhost"] });
    await Deno.mkdir(certDir);
    await Deno.copyFile(pki.caCert, `${certDir}/root-cert.pem`);
    await Deno.copyFile(server.cert, `${certDir}/cert-chain.pem`);
    await Deno.copyFile(server.key, `${certDir}/key.pem`);
    const line = await proc.waitFor(/Secure gRPC started: listening secureGrpc=\S+/, 10_000);
    const secureGrpc = /secureGrpc=(\S+)/.exec(line)![1].replace(/^0\.0\.0\.0/, "127.0.0.1");
    const ads = adsClient(secureGrpc, await tlsCreds(pki.caCert), {
      "grpc.ssl_target_name_override": "localhost",
    });
    const stream = ads.open();
    try {
      stream.send({
        node: { id: "sidecar~127.0.1.1~hello-v1.default~default.svc.cluster.local" },
        type_url: TYPE_URLS.cluster,
      });
      const cds = await stream.next(TYPE_URLS.cluster, 10_000);
      assert.ok(cds.resources.length > 0);
    } finally {
      await stream.close();
      ads.close();
    }
  } finally {
    const status = await proc.stop();
    await pki.remove();
    await Deno.remove(cfg, { recursive: true });
    assert.equal(status.code, 0, proc.output().slice(-2000));
  }
});

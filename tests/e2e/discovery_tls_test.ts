/**
 * End-to-end: the TLS ADS port (`--secureGrpcAddr`) of mesh-discovery with certificates from
 * `MESH_CERT_DIR`, and its absence when the files are missing.
 */

import assert from "node:assert/strict";
import { makeTestPki } from "../harness/certs.ts";
import { spawnProgram } from "../harness/procs.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { adsClient, tlsCreds } from "./_ads_client.ts";
const DISCOVERY_SCRIPT = new URL("../../cli/mesh-discovery.ts", import.meta.url).pathname;

function args(dir: string): string[] {
  return [
    "discovery",
    "--registries",
    "Mock",
    "--configDir",
    dir,
    "--meshConfig",
    `${dir}/none`,
    "--port",
    "0",
    "--grpcAddr",
    "127.0.0.1:0",
    "--secureGrpcAddr",
    "127.0.0.1:0",
    "--monitoringPort",
    "0",
    "--ctrlz_port",
    "0",
  ];
}

Deno.test("mesh-discovery serves ADS over TLS to a client with a mesh certificate when the cert files exist", async () => {
  const pki = await makeTestPki();
  const certDir = await Deno.makeTempDir({ prefix: "mesh-certs-" });
  const cfg = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  const server = await pki.issue("discovery", { ips: ["127.0.0.1"], dns: ["localhost"] });
  await Deno.copyFile(server.cert, `${certDir}/cert-chain.pem`);
  await Deno.copyFile(server.key, `${certDir}/key.pem`);
  await Deno.copyFile(pki.caCert, `${certDir}/root-cert.pem`);
  const client = await pki.issue("client", {
    uris: ["spiffe://cluster.local/ns/default/sa/hello"],
  });
  const proc = spawnProgram(DISCOVERY_SCRIPT, args(cfg), { env: { MESH_CERT_DIR: certDir } });
  try {
    const line = await proc.waitFor(/secureGrpc=\S+:(\d+)/, 20_000);
    const port = /secureGrpc=\S+:(\d+)/.exec(line)![1];
    const ads = adsClient(
      `127.0.0.1:${port}`,
      await tlsCreds(pki.caCert, client.cert, client.key),
      {
        "grpc.ssl_target_name_override": "localhost",
      },
    );
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
  } finally {
    const status = await proc.stop();
    await pki.remove();
    await Deno.remove(certDir, { recursive: true });
    await Deno.remove(cfg, { recursive: true });
    assert.equal(status.code, 0, proc.output().slice(-2000));
  }
});

Deno.test("mesh-discovery does not start the TLS port and says why when the cert files are missing", async () => {
  const cfg = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  const proc = spawnProgram(DISCOVERY_SCRIPT, args(cfg), {
    env: { MESH_CERT_DIR: `${cfg}/nocerts` },
  });
  try {
    const line = await proc.waitFor(/listening http=.*/, 20_000);
    assert.doesNotMatch(line, /secureGrpc=/);
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

/**
 * End-to-end: the TLS ADS port (`--secureGrpcAddr`) of mesh-discovery with certificates from
 * `MESH_CERT_DIR`, and its absence when the files are missing.
 */

import assert from "node:assert/strict";
import { assertServed, makeTestPki } from "../harness/certs.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { tlsServed } from "../../lib/xds/server/_test_util.ts";
import { adsClient, type Response, tlsCreds } from "./_ads_client.ts";
import { dbServiceEntry, type RunningDiscovery, startDiscovery } from "./discovery_harness.ts";

/**
 * Discovery with the Mock registry, `dir` as config folder and the TLS port on a free port; with
 * `workers` > 1, both ADS ports served by that many worker isolates.
 */
function startWithTls(dir: string, certDir: string, workers = 1): Promise<RunningDiscovery> {
  return startDiscovery(
    [
      "--registries",
      "Mock",
      "--configDir",
      dir,
      "--secureGrpcAddr",
      "127.0.0.1:0",
      ...(workers > 1 ? ["--workers", String(workers)] : []),
    ],
    { MESH_CERT_DIR: certDir },
  );
}

/** A sidecar's CDS over the TLS port `secureGrpc` with `creds` (its stream then closed). */
async function cdsOverTls(
  secureGrpc: string,
  creds: Awaited<ReturnType<typeof tlsCreds>>,
): Promise<Response> {
  const ads = adsClient(secureGrpc, creds, { "grpc.ssl_target_name_override": "localhost" });
  const stream = ads.open();
  try {
    stream.send({
      node: { id: "sidecar~127.0.1.1~hello-v1.default~default.svc.cluster.local" },
      type_url: TYPE_URLS.cluster,
    });
    return await stream.next(TYPE_URLS.cluster, 10_000);
  } finally {
    await stream.close();
    ads.close();
  }
}

/** " --workers N" in a test's name, when N > 1. */
const withWorkers = (n: number) => n > 1 ? ` --workers ${n}` : "";

for (const workers of [1, 2]) {
  Deno.test(`mesh-discovery${withWorkers(workers)} serves ADS over TLS when the cert files exist, verifying client certificates when presented`, async () => {
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
    const { proc, secureGrpc } = await startWithTls(cfg, certDir, workers);
    try {
      assert.ok(secureGrpc, proc.output().slice(-2000));
      if (workers > 1) {
        assert.match(proc.output(), /ADS: --secureGrpcAddr \S+ served by 2 worker isolates/);
        assert.equal(proc.output().match(/ADS: listening on \S+ \(port \d+, TLS\)/g)?.length, 2);
      }
      // With a mesh certificate, and without one (client certificates are verified when presented).
      for (
        const creds of [
          await tlsCreds(pki.caCert, client.cert, client.key),
          await tlsCreds(pki.caCert),
        ]
      ) {
        const cds = await cdsOverTls(secureGrpc, creds);
        assert.ok(
          cds.resources.some((c) => c.name === "outbound|80||hello.default.svc.cluster.local"),
        );
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
}

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

for (const workers of [1, 2]) {
  Deno.test(`mesh-discovery${withWorkers(workers)} starts the TLS port when the cert files appear after start-up`, async () => {
    const pki = await makeTestPki();
    const cfg = await Deno.makeTempDir({ prefix: "mesh-disc-" });
    const certDir = `${cfg}/certs`;
    const { proc, listening } = await startWithTls(cfg, certDir, workers);
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
      const cds = await cdsOverTls(secureGrpc, await tlsCreds(pki.caCert));
      assert.ok(cds.resources.length > 0);
    } finally {
      const status = await proc.stop();
      await pki.remove();
      await Deno.remove(cfg, { recursive: true });
      assert.equal(status.code, 0, proc.output().slice(-2000));
    }
  });
}

for (const workers of [1, 2]) {
  Deno.test(`mesh-discovery${withWorkers(workers)} serves rotated cert files to new TLS connections, keeps established streams, and keeps the old ones while the files are bad`, async () => {
    const pki = await makeTestPki();
    const next = await makeTestPki();
    const cfg = await Deno.makeTempDir({ prefix: "mesh-disc-" });
    const certDir = `${cfg}/certs`;
    await Deno.mkdir(certDir);
    const first = await pki.issue("discovery", { ips: ["127.0.0.1"], dns: ["localhost"] });
    await Deno.copyFile(first.cert, `${certDir}/cert-chain.pem`);
    await Deno.copyFile(first.key, `${certDir}/key.pem`);
    await Deno.copyFile(pki.caCert, `${certDir}/root-cert.pem`);
    const { proc, secureGrpc } = await startWithTls(cfg, certDir, workers);
    const ads = adsClient(secureGrpc!, await tlsCreds(pki.caCert), {
      "grpc.ssl_target_name_override": "localhost",
    });
    const stream = ads.open();
    try {
      assert.ok(secureGrpc, proc.output().slice(-2000));
      const port = Number(secureGrpc.split(":")[1]);
      stream.send({
        node: { id: "sidecar~127.0.1.1~hello-v1.default~default.svc.cluster.local" },
        type_url: TYPE_URLS.cluster,
      });
      const cds = await stream.next(TYPE_URLS.cluster, 10_000);
      stream.send({
        type_url: TYPE_URLS.cluster,
        response_nonce: cds.nonce,
        version_info: cds.version_info,
      });
      await assertServed(port, first.cert);

      // A half-written certificate: the old material stays in force, and it is said once.
      const second = await next.issue("discovery", { ips: ["127.0.0.1"], dns: ["localhost"] });
      const pem = await Deno.readTextFile(second.cert);
      await Deno.writeTextFile(`${certDir}/cert-chain.pem`, pem.slice(0, pem.length / 2));
      await proc.waitFor(/Secure gRPC keeps its certificates: Invalid .*cert-chain\.pem/, 10_000);
      await new Promise((r) => setTimeout(r, 2500)); // a few re-reads of the same bad file
      assert.equal(proc.output().match(/Secure gRPC keeps its certificates/g)?.length, 1);
      await assertServed(port, first.cert);

      // The rotation completes (chain, then key, then root, as an agent writes them).
      await Deno.copyFile(second.cert, `${certDir}/cert-chain.pem`);
      await Deno.copyFile(second.key, `${certDir}/key.pem`);
      await Deno.copyFile(next.caCert, `${certDir}/root-cert.pem`);
      await proc.waitFor(/Secure gRPC: certificates reloaded from/, 10_000);
      await assertServed(port, second.cert);
      assert.equal(proc.output().match(/certificates reloaded/g)?.length, 1, "one reload");

      // The stream opened before the rotation still receives pushes.
      await Deno.writeTextFile(
        `${cfg}/db.yaml`,
        dbServiceEntry("10.5.0.1"),
      );
      const pushed = await stream.next(TYPE_URLS.cluster, 10_000);
      assert.ok(
        pushed.resources.some((c) => c.name === "outbound|5432||db.example.internal"),
        JSON.stringify(pushed.resources.map((c) => c.name)),
      );
    } finally {
      await stream.close();
      ads.close();
      const status = await proc.stop();
      await pki.remove();
      await next.remove();
      await Deno.remove(cfg, { recursive: true });
      assert.equal(status.code, 0, proc.output().slice(-2000));
    }
  });
}

Deno.test("mesh-discovery waits with the TLS port while the cert files at start-up do not match, and starts it once they do", async () => {
  const pki = await makeTestPki();
  const cfg = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  const certDir = `${cfg}/certs`;
  await Deno.mkdir(certDir);
  const a = await pki.issue("a", { ips: ["127.0.0.1"], dns: ["localhost"] });
  const b = await pki.issue("b", { ips: ["127.0.0.1"], dns: ["localhost"] });
  await Deno.copyFile(a.cert, `${certDir}/cert-chain.pem`);
  await Deno.copyFile(b.key, `${certDir}/key.pem`);
  await Deno.copyFile(pki.caCert, `${certDir}/root-cert.pem`);
  const { proc, listening } = await startWithTls(cfg, certDir);
  try {
    assert.doesNotMatch(listening, /secureGrpc=/);
    assert.match(
      proc.output(),
      /Secure gRPC \(--secureGrpcAddr\) not started: .*key\.pem is not the key/,
    );
    await new Promise((r) => setTimeout(r, 1500)); // re-reads of the same files say nothing more
    assert.equal(proc.output().match(/is not the key/g)?.length, 1);
    await Deno.copyFile(a.key, `${certDir}/key.pem`);
    const line = await proc.waitFor(/Secure gRPC started: listening secureGrpc=\S+/, 10_000);
    const port = Number(/secureGrpc=\S+:(\d+)/.exec(line)![1]);
    await assertServed(port, a.cert);
  } finally {
    const status = await proc.stop();
    await pki.remove();
    await Deno.remove(cfg, { recursive: true });
    assert.equal(status.code, 0, proc.output().slice(-2000));
  }
});

/**
 * mesh-agent `--proxyless` end to end: a real mesh_ca and mesh-discovery on 127.0.0.1; the agent
 * gets the workload certificate, writes the gRPC bootstrap and renews the certificate; a
 * grpc-js-xds client started with `GRPC_XDS_BOOTSTRAP=<that file>` calls a WhoAmI backend
 * through discovery's configuration, and so does a gRPC C-core client (python3-grpcio) with the
 * same file; SIGTERM removes the bootstrap.
 */

import assert from "node:assert/strict";
import { startWhoAmI } from "../../cli/demo/whoami.ts";
import { exportPrivateKey, parseCertificates, subjectAltNames } from "../../lib/pki/mod.ts";
import { createCertificate } from "../harness/ca_client.ts";
import { csrFor } from "../../servers/ca/_testutil.ts";
import { runProgram, waitUntil, withTempDir } from "../harness/procs.ts";
import { startMeshCa, startProxylessAgent } from "../harness/mesh_agent.ts";
import { startXdsClient } from "../harness/xds_client.ts";
import { startDiscovery } from "./discovery_harness.ts";

const exists = async (p: string) => {
  try {
    await Deno.stat(p);
    return true;
  } catch {
    return false;
  }
};

Deno.test("mesh-agent --proxyless writes the certificate and a gRPC bootstrap, renews the certificate and removes the bootstrap on SIGTERM", async () => {
  await withTempDir(async (dir) => {
    await using ca = await startMeshCa(dir);
    const agent = await startProxylessAgent({
      ca,
      dir: `${dir}/web`,
      sa: "web",
      ns: "shop",
      discovery: "127.0.0.1:15010",
      env: { MESH_CA_CERT_TTL: "4", MESH_META_APP: "web", MESH_CERT_REFRESH_INTERVAL: "2s" },
      flags: ["--availabilityZone", "zone-a", "--serviceCluster", "web"],
    });
    try {
      const boot = JSON.parse(await Deno.readTextFile(agent.bootstrap));
      const certs = agent.certDir;
      assert.deepEqual(boot, {
        xds_servers: [{
          server_uri: "127.0.0.1:15010",
          channel_creds: [{ type: "insecure" }],
          server_features: ["xds_v3"],
        }],
        node: {
          id: "sidecar~127.0.0.1~web-1.shop~shop.svc.cluster.local",
          cluster: "web",
          metadata: { APP: "web", NAMESPACE: "shop", GENERATOR: "grpc" },
          locality: { zone: "zone-a" },
        },
        certificate_providers: {
          default: {
            plugin_name: "file_watcher",
            config: {
              certificate_file: `${certs}/cert-chain.pem`,
              private_key_file: `${certs}/key.pem`,
              ca_certificate_file: `${certs}/root-cert.pem`,
              refresh_interval: "2s",
            },
          },
        },
        server_listener_resource_name_template: "grpc/server?xds.resource.listening_address=%s",
      });
      // the files the provider watches: our identity from mesh_ca, its root, a private key
      const chain = await Deno.readTextFile(`${certs}/cert-chain.pem`);
      assert.deepEqual(subjectAltNames(parseCertificates(chain)[0]).uris, [
        "spiffe://cluster.local/ns/shop/sa/web",
      ]);
      assert.equal(
        await Deno.readTextFile(`${certs}/root-cert.pem`),
        await Deno.readTextFile(ca.rootFile),
      );
      assert.equal((await Deno.stat(`${certs}/key.pem`)).mode! & 0o777, 0o600);
      assert.equal(
        agent.proc.output().match(/gRPC bootstrap written/g)?.length,
        1,
        agent.proc.output(),
      );
      // the 4 s certificate is renewed at half its life; the bootstrap is not written again
      await waitUntil(
        async () => (await Deno.readTextFile(`${certs}/cert-chain.pem`)) !== chain,
        30_000,
        "a renewed certificate",
      );
      assert.equal(agent.proc.output().match(/gRPC bootstrap written/g)?.length, 1);
      agent.proc.kill("SIGTERM");
      assert.equal((await agent.proc.status).code, 0, agent.proc.output());
      assert.equal(await exists(agent.bootstrap), false);
      assert.ok(await exists(`${certs}/cert-chain.pem`));
    } finally {
      await agent[Symbol.asyncDispose]();
    }
  });
});

Deno.test("grpc-js-xds and gRPC C-core clients started with GRPC_XDS_BOOTSTRAP from mesh-agent --proxyless call a backend through mesh-discovery", async () => {
  await withTempDir(async (dir) => {
    const backend = await startWhoAmI({ host: "127.0.0.1", port: 0, version: "v1" });
    try {
      await Deno.mkdir(`${dir}/config`);
      await Deno.writeTextFile(
        `${dir}/config/whoami.yaml`,
        `apiVersion: networking.istio.io/v1alpha3
kind: ServiceEntry
metadata: {name: whoami, namespace: default}
spec:
  hosts: [whoami.test.example]
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  location: MESH_INTERNAL
  resolution: STATIC
  endpoints: [{address: 127.0.0.1, ports: {grpc: ${backend.port}}, labels: {version: v1}}]
`,
      );
      await using ca = await startMeshCa(dir);
      const d = await startDiscovery(["--registries", "Mock", "--configDir", `${dir}/config`]);
      try {
        await using agent = await startProxylessAgent({
          ca,
          dir: `${dir}/client`,
          sa: "client",
          discovery: d.grpc,
        });
        // both implementations read the same file: grpc-js-xds and gRPC C-core (python3-grpcio)
        for (const impl of ["grpc-js", "grpc-core"] as const) {
          const served = backend.served();
          await using client = await startXdsClient({ bootstrapFile: agent.bootstrap, impl });
          const r = await client.callUntil(
            "xds:///whoami.test.example:7070",
            (r) => r.codes["0"] === 20,
            { n: 20, timeoutMs: 30_000 },
          );
          assert.deepEqual(r.versions, { v1: 20 }, impl);
          assert.deepEqual(r.addresses, { [backend.address]: 20 }, impl);
          assert.ok(backend.served() >= served + 20, impl);
        }
      } finally {
        await d.proc.stop();
      }
    } finally {
      await backend.shutdown();
    }
  });
});

Deno.test("mesh-agent --proxyless names --configPath and exits 1 when the bootstrap directory cannot be written", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/file`, "");
    const r = await runProgram("mesh-agent", [
      "proxy",
      "--proxyless",
      "--discoveryAddress",
      "127.0.0.1:15010",
      "--configPath",
      `${dir}/file/proxy`,
    ], { env: { POD_NAME: "a", POD_NAMESPACE: "default", INSTANCE_IP: "127.0.0.1" } });
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr.trim().split("\n").filter((l) => l.startsWith("Error:"));
    assert.equal(lines.length, 1, r.stderr);
    assert.match(
      lines[0],
      /^Error: Cannot write the gRPC bootstrap into --configPath .*\/file\/proxy: /,
    );
  });
});

Deno.test("mesh-agent --proxyless refuses a malformed --discoveryAddress and another role with exit 2", async () => {
  const env = { POD_NAME: "a", POD_NAMESPACE: "default", INSTANCE_IP: "127.0.0.1" };
  const bad = await runProgram("mesh-agent", [
    "proxy",
    "--proxyless",
    "--discoveryAddress",
    "discovery",
  ], { env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Invalid value "discovery" for --discoveryAddress: want <host>:<port>/);
  const router = await runProgram("mesh-agent", ["proxy", "router", "--proxyless"], { env });
  assert.equal(router.code, 2);
  assert.match(router.stderr, /--proxyless works with role sidecar only, not router/);
});

Deno.test("with MUTUAL_TLS the proxyless agent relays xDS to discovery's TLS port and checks discovery's identity", async () => {
  await withTempDir(async (dir) => {
    const backend = await startWhoAmI({ host: "127.0.0.1", port: 0, version: "v1" });
    try {
      await Deno.mkdir(`${dir}/config`);
      await Deno.writeTextFile(
        `${dir}/config/whoami.yaml`,
        `apiVersion: networking.istio.io/v1alpha3
kind: ServiceEntry
metadata: {name: whoami, namespace: default}
spec:
  hosts: [whoami.test.example]
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  location: MESH_EXTERNAL
  resolution: STATIC
  endpoints: [{address: 127.0.0.1, ports: {grpc: ${backend.port}}, labels: {version: v1}}]
`,
      );
      await using ca = await startMeshCa(dir);
      // discovery's own certificate from mesh_ca: default/mesh-discovery-service-account
      const root = await Deno.readTextFile(ca.rootFile);
      const { csr, keys } = await csrFor("default", "mesh-discovery-service-account");
      const issued = await createCertificate(
        {
          address: ca.address,
          root,
          token: await ca.issuer.token(
            "system:serviceaccount:default:mesh-discovery-service-account",
          ),
        },
        csr,
        3600,
      );
      assert.ok(issued.ok, JSON.stringify(issued));
      await Deno.mkdir(`${dir}/dcerts`);
      await Deno.writeTextFile(
        `${dir}/dcerts/cert-chain.pem`,
        issued.chain.map((c) => c.endsWith("\n") ? c : c + "\n").join(""),
      );
      await Deno.writeTextFile(`${dir}/dcerts/key.pem`, await exportPrivateKey(keys.privateKey));
      await Deno.writeTextFile(`${dir}/dcerts/root-cert.pem`, root);
      const d = await startDiscovery(
        ["--registries", "Mock", "--configDir", `${dir}/config`, "--secureGrpcAddr", "127.0.0.1:0"],
        { MESH_CERT_DIR: `${dir}/dcerts` },
      );
      try {
        assert.ok(d.secureGrpc, d.proc.output().slice(-1000));
        const flags = ["--controlPlaneAuthPolicy", "MUTUAL_TLS"];
        await using agent = await startProxylessAgent({
          ca,
          dir: `${dir}/client`,
          sa: "client",
          discovery: d.secureGrpc!,
          flags,
        });
        const boot = JSON.parse(await Deno.readTextFile(agent.bootstrap));
        assert.deepEqual(boot.xds_servers[0], {
          server_uri: `unix://${dir}/client/proxy/xds.sock`,
          channel_creds: [{ type: "insecure" }],
          server_features: ["xds_v3"],
        });
        for (const impl of ["grpc-js", "grpc-core"] as const) {
          await using client = await startXdsClient({ bootstrapFile: agent.bootstrap, impl });
          const r = await client.callUntil(
            "xds:///whoami.test.example:7070",
            (r) => r.codes["0"] === 20,
            { n: 20, timeoutMs: 30_000 },
          );
          assert.deepEqual(r.versions, { v1: 20 }, impl);
        }

        // an agent that expects discovery in another namespace refuses this one
        await using wrong = await startProxylessAgent({
          ca,
          dir: `${dir}/other`,
          sa: "other",
          ns: "shop",
          discovery: d.secureGrpc!,
          flags,
        });
        await using refused = await startXdsClient({ bootstrapFile: wrong.bootstrap });
        const bad = await refused.call("xds:///whoami.test.example:7070", {
          n: 2,
          deadlineMs: 3000,
        });
        assert.equal(bad.codes["0"], undefined, JSON.stringify(bad));
        await wrong.proc.waitFor(
          /xDS relay cannot reach discovery over mutual TLS .*not spiffe:\/\/cluster\.local\/ns\/shop\/sa\/mesh-discovery-service-account/,
          10_000,
        );
      } finally {
        await d.proc.stop();
      }
    } finally {
      await backend.shutdown();
    }
  });
});

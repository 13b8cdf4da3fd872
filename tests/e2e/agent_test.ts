/**
 * mesh-agent end to end, as a pod without an orchestrator runs it: mesh_ca (self-signed, JWTs)
 * and mesh-discovery (Mock registry) on 127.0.0.1, and `mesh-agent proxy --bootstrapv2` with the
 * stand-in proxy. The agent gets its certificate from mesh_ca, writes a bootstrap, runs epoch 0,
 * renews the short-lived certificate and hot-restarts into epoch 1; an ADS client configured from
 * the agent's bootstrap (node id, xds-grpc address) receives its clusters and listeners. Also:
 * REST-JSON xDS without --bootstrapv2, MUTUAL_TLS with the bootstrap's TLS files and identity
 * check against discovery's TLS port, and SDS rotation without a new epoch.
 */
import assert from "node:assert/strict";
import { freePort, spawnProgram, waitUntil, withTempDir } from "../harness/procs.ts";
import { createCertificate } from "../harness/ca_client.ts";
import { startMeshCa } from "../harness/mesh_agent.ts";
import { csrFor } from "../../servers/ca/_testutil.ts";
import { exportPrivateKey } from "../../lib/pki/mod.ts";

import { STANDIN_BINARY, standinEvents } from "../harness/proxy_standin.ts";
import { startDiscovery } from "./discovery_harness.ts";
import { adsClient } from "./_ads_client.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { parseCertificates, subjectAltNames } from "../../lib/pki/mod.ts";
import { decodeAny, xdsIncludeDirs, xdsProtoRoot } from "../../lib/xds/mod.ts";

/** mesh_ca (self-signed, JWTs) in `dir`; the agent's environment to use it. */
async function startCa(dir: string) {
  const ca = await startMeshCa(dir);
  await Deno.mkdir(`${dir}/certs`);
  await Deno.writeTextFile(
    `${dir}/token`,
    await ca.issuer.token("system:serviceaccount:default:hello"),
  );
  return {
    ca,
    issuer: ca.issuer,
    caAddress: ca.address,
    env: {
      POD_NAME: "hello-v1",
      POD_NAMESPACE: "default",
      INSTANCE_IP: "127.0.0.1",
      MESH_CERT_DIR: `${dir}/certs`,
      MESH_CA_ADDRESS: ca.address,
      MESH_CA_ROOT_CERT: ca.rootFile,
      MESH_CA_TOKEN_FILE: `${dir}/token`,
      MESH_CA_CERT_TTL: "4",
    },
  };
}

Deno.test("mesh-agent gets and renews its certificate from mesh_ca, and its bootstrap reaches discovery", async () => {
  await withTempDir(async (dir) => {
    const { ca: caProc, env } = await startCa(dir);
    await using _ca = caProc;
    await Deno.mkdir(`${dir}/config`);
    const d = await startDiscovery(["--registries", "Mock", "--configDir", `${dir}/config`]);
    try {
      const admin = freePort();
      await using agent = spawnProgram("mesh-agent", [
        "proxy",
        "--bootstrapv2",
        "--discoveryAddress",
        d.grpc,
        "--configPath",
        `${dir}/proxy`,
        "--binaryPath",
        STANDIN_BINARY,
        "--proxyAdminPort",
        String(admin),
        "--drainDuration",
        "1s",
        "--parentShutdownDuration",
        "1s",
      ], { env });
      const started = (n: number) =>
        standinEvents(`${dir}/proxy`).some((e) => e.event === "start" && e.epoch === n);
      await waitUntil(() => started(0), 30_000, "epoch 0");
      // the certificate: our identity, signed by mesh_ca, key 0600
      const chain = await Deno.readTextFile(`${dir}/certs/cert-chain.pem`);
      assert.deepEqual(subjectAltNames(parseCertificates(chain)[0]).uris, [
        "spiffe://cluster.local/ns/default/sa/hello",
      ]);
      assert.equal((await Deno.stat(`${dir}/certs/key.pem`)).mode! & 0o777, 0o600);

      // an ADS client configured from the agent's bootstrap receives its configuration
      const boot = JSON.parse(await Deno.readTextFile(`${dir}/proxy/envoy-rev0.json`));
      const xds = boot.static_resources.clusters.find((c: { name: string }) =>
        c.name === "xds-grpc"
      );
      const sa = xds.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
      assert.equal(`${sa.address}:${sa.port_value}`, d.grpc);
      assert.deepEqual(boot.dynamic_resources.cds_config, { ads: {}, resource_api_version: "V3" });
      const client = adsClient(`${sa.address}:${sa.port_value}`);
      const stream = client.open();
      try {
        stream.send({
          node: { id: boot.node.id, metadata: boot.node.metadata },
          type_url: TYPE_URLS.cluster,
        });
        const cds = await stream.next(TYPE_URLS.cluster, 10_000);
        assert.ok(
          cds.resources.some((c) => String(c.name).startsWith("outbound|")),
          JSON.stringify(cds.resources.map((c) => c.name)),
        );
        stream.send({ type_url: TYPE_URLS.listener });
        const lds = await stream.next(TYPE_URLS.listener, 10_000);
        assert.ok(lds.resources.length > 0);
      } finally {
        await stream.close();
        client.close();
      }

      // the 4 s certificate is renewed at half its life: new files, a new epoch
      await waitUntil(() => started(1), 30_000, "epoch 1 after the renewal");
      const renewed = await Deno.readTextFile(`${dir}/certs/cert-chain.pem`);
      assert.notEqual(renewed, chain);
      agent.kill("SIGTERM");
      assert.equal((await agent.status).code, 0, agent.output());
    } finally {
      await d.proc.stop();
    }
  });
});

Deno.test("with SDS a renewed certificate reaches the proxy over the agent's socket without a new epoch", async () => {
  await withTempDir(async (dir) => {
    const { ca: caProc, env } = await startCa(dir);
    await using _ca = caProc;
    await using agent = spawnProgram("mesh-agent", [
      "proxy",
      "--bootstrapv2",
      "--controlPlaneAuthPolicy",
      "MUTUAL_TLS",
      "--discoveryAddress",
      "127.0.0.1:1",
      "--configPath",
      `${dir}/proxy`,
      "--binaryPath",
      STANDIN_BINARY,
      "--proxyAdminPort",
      String(freePort()),
    ], { env: { ...env, MESH_AGENT_SDS: "true" } });
    await waitUntil(
      () => standinEvents(`${dir}/proxy`).some((e) => e.event === "start"),
      30_000,
      "epoch 0",
    );
    const boot = JSON.parse(await Deno.readTextFile(`${dir}/proxy/envoy-rev0.json`));
    const sdsCluster = boot.static_resources.clusters.find((c: { name: string }) =>
      c.name === "sds-grpc"
    );
    const pipe = sdsCluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.pipe.path;
    assert.equal(pipe, `${dir}/proxy/sds.sock`);

    // an SDS client (grpc-js) on the socket named by the bootstrap, as the proxy would be
    const grpc = await import("../../lib/deps/grpc.ts");
    const loader = await import("../../lib/deps/proto_loader.ts");
    const def = loader.loadSync(
      [`${xdsProtoRoot()}/envoy-api/envoy/service/secret/v3/sds.proto`],
      { keepCase: true, longs: String, enums: String, oneofs: true, includeDirs: xdsIncludeDirs() },
    );
    // deno-lint-ignore no-explicit-any
    const Sds = (grpc.loadPackageDefinition(def) as any).envoy.service.secret.v3
      .SecretDiscoveryService;
    const client = new Sds(`unix://${pipe}`, grpc.credentials.createInsecure());
    const call = client.StreamSecrets();
    const chains: string[] = [];
    const roots: string[] = [];
    // deno-lint-ignore no-explicit-any
    call.on("data", (r: any) => {
      for (const a of r.resources ?? []) {
        const secret = decodeAny({ type_url: a.type_url, value: new Uint8Array(a.value) });
        // deno-lint-ignore no-explicit-any
        const s = secret as any;
        if (s.tls_certificate) chains.push(s.tls_certificate.certificate_chain.inline_string);
        if (s.validation_context) roots.push(s.validation_context.trusted_ca.inline_string);
      }
      call.write({
        version_info: r.version_info,
        response_nonce: r.nonce,
        type_url: r.type_url,
        resource_names: ["default", "ROOTCA"],
      });
    });
    call.on("error", () => {});
    try {
      call.write({
        node: { id: boot.node.id },
        type_url: "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
        resource_names: ["default", "ROOTCA"],
      });
      await waitUntil(() => chains.length >= 1 && roots.length >= 1, 10_000, "first secrets");
      assert.equal(chains[0], await Deno.readTextFile(`${dir}/certs/cert-chain.pem`));
      assert.equal(roots[0], await Deno.readTextFile(`${dir}/ca-root.pem`));
      // the 4 s certificate is renewed at half its life and pushed on the same stream
      await waitUntil(() => new Set(chains).size >= 2, 30_000, "the renewed certificate over SDS");
      assert.equal(chains.at(-1), await Deno.readTextFile(`${dir}/certs/cert-chain.pem`));
      assert.deepEqual(
        standinEvents(`${dir}/proxy`).filter((e) => e.event === "start").map((e) => e.epoch),
        [0],
      );
    } finally {
      call.end();
      client.close();
    }
    agent.kill("SIGTERM");
    assert.equal((await agent.status).code, 0, agent.output());
  });
});

Deno.test("without --bootstrapv2 the bootstrap polls discovery's REST-JSON xDS, which answers its node", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/config`);
    const d = await startDiscovery(["--registries", "Mock", "--configDir", `${dir}/config`]);
    try {
      await using agent = spawnProgram("mesh-agent", [
        "proxy",
        "--discoveryAddress",
        d.http,
        "--discoveryRefreshDelay",
        "500ms",
        "--configPath",
        `${dir}/proxy`,
        "--binaryPath",
        STANDIN_BINARY,
        "--proxyAdminPort",
        String(freePort()),
      ], {
        env: { POD_NAME: "hello-v1", POD_NAMESPACE: "default", INSTANCE_IP: "127.0.0.1" },
      });
      await waitUntil(
        () => standinEvents(`${dir}/proxy`).some((e) => e.event === "start"),
        30_000,
        "epoch 0",
      );
      const boot = JSON.parse(await Deno.readTextFile(`${dir}/proxy/envoy-rev0.json`));
      const cds = boot.dynamic_resources.cds_config.api_config_source;
      assert.equal(cds.api_type, "REST");
      assert.equal(cds.refresh_delay, "0.500s");
      const http = boot.static_resources.clusters.find((c: { name: string }) =>
        c.name === cds.cluster_names[0]
      );
      const sa = http.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
      // what the proxy's REST poll sends: its node, to the cluster's address
      const r = await fetch(`http://${sa.address}:${sa.port_value}/v3/discovery:clusters`, {
        method: "POST",
        body: JSON.stringify({ node: boot.node }),
      });
      assert.equal(r.status, 200);
      const body = await r.json();
      assert.ok(
        body.resources.some((c: { name: string }) => c.name.startsWith("outbound|")),
        JSON.stringify(body).slice(0, 500),
      );
      agent.kill("SIGTERM");
      assert.equal((await agent.status).code, 0, agent.output());
    } finally {
      await d.proc.stop();
    }
  });
});

Deno.test("with MUTUAL_TLS the agent's certificate files and discovery's identity check reach discovery's TLS port", async () => {
  await withTempDir(async (dir) => {
    const { ca: caProc, env, issuer, caAddress } = await startCa(dir);
    await using _ca = caProc;
    // discovery's own certificate, from the same mesh_ca, for its service account
    const { csr, keys } = await csrFor("mesh-system", "mesh-discovery-service-account");
    const root = await Deno.readTextFile(`${dir}/ca-root.pem`);
    const issued = await createCertificate(
      {
        address: caAddress,
        root,
        token: await issuer.token(
          "system:serviceaccount:mesh-system:mesh-discovery-service-account",
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
    await Deno.mkdir(`${dir}/config`);
    const d = await startDiscovery(
      ["--registries", "Mock", "--configDir", `${dir}/config`, "--secureGrpcAddr", "127.0.0.1:0"],
      { MESH_CERT_DIR: `${dir}/dcerts` },
    );
    try {
      assert.ok(d.secureGrpc, d.proc.output().slice(-1000));
      await using agent = spawnProgram("mesh-agent", [
        "proxy",
        "--bootstrapv2",
        "--controlPlaneAuthPolicy",
        "MUTUAL_TLS",
        "--discoveryAddress",
        d.secureGrpc!,
        "--configPath",
        `${dir}/proxy`,
        "--binaryPath",
        STANDIN_BINARY,
        "--proxyAdminPort",
        String(freePort()),
      ], {
        env: {
          ...env,
          MESH_CA_CERT_TTL: "3600",
          MESH_AGENT_SDS: "false",
          POD_NAMESPACE: "mesh-system",
        },
      });
      await waitUntil(
        () => standinEvents(`${dir}/proxy`).some((e) => e.event === "start"),
        30_000,
        "epoch 0",
      );
      const boot = JSON.parse(await Deno.readTextFile(`${dir}/proxy/envoy-rev0.json`));
      const xds = boot.static_resources.clusters.find((c: { name: string }) =>
        c.name === "xds-grpc"
      );
      const sa = xds.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
      const tls = xds.transport_socket.typed_config.common_tls_context;
      const san = tls.validation_context.match_typed_subject_alt_names[0].matcher.exact;
      assert.equal(san, "spiffe://cluster.local/ns/mesh-system/sa/mesh-discovery-service-account");
      // a client with exactly the bootstrap's TLS files and identity check
      const grpc = await import("../../lib/deps/grpc.ts");
      const { Buffer } = await import("node:buffer");
      const seen: string[] = [];
      const creds = grpc.credentials.createSsl(
        Buffer.from(await Deno.readFile(tls.validation_context.trusted_ca.filename)),
        Buffer.from(await Deno.readFile(tls.tls_certificates[0].private_key.filename)),
        Buffer.from(await Deno.readFile(tls.tls_certificates[0].certificate_chain.filename)),
        {
          checkServerIdentity: (_host: string, cert: { subjectaltname?: string }) => {
            seen.push(cert.subjectaltname ?? "");
            return cert.subjectaltname === `URI:${san}`
              ? undefined
              : new Error(`server identity ${cert.subjectaltname} is not ${san}`);
          },
        },
      );
      // (grpc-js does not verify a server reached by IP unless a name overrides it)
      const client = adsClient(`${sa.address}:${sa.port_value}`, creds, {
        "grpc.ssl_target_name_override": "mesh-discovery.mesh-system",
      });
      const stream = client.open();
      try {
        stream.send({ node: { id: boot.node.id }, type_url: TYPE_URLS.cluster });
        const cds = await stream.next(TYPE_URLS.cluster, 10_000);
        assert.ok(cds.resources.length > 0);
        assert.deepEqual(seen, [`URI:${san}`]);
      } finally {
        await stream.close();
        client.close();
      }
      agent.kill("SIGTERM");
      assert.equal((await agent.status).code, 0, agent.output());
    } finally {
      await d.proc.stop();
    }
  });
});

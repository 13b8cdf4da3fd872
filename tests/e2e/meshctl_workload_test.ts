/**
 * `meshctl experimental workload bootstrap` end to end on `-p fs`: the command writes a JWKS, a
 * token and mesh-agent's environment; a real mesh_ca started with `--trusted-jwks <that JWKS>`
 * signs the CSR of a real `mesh-agent proxy --proxyless` that runs with nothing but that
 * environment file; a token of another key is refused.
 */

import assert from "node:assert/strict";
import { freePort, runProgram, spawnProgram, withTempDir } from "../harness/procs.ts";
import { createCertificate, testIssuer } from "../harness/ca_client.ts";
import { csrFor } from "../../servers/ca/_testutil.ts";
import { parseCertificates, subjectAltNames } from "../../lib/pki/mod.ts";

/** `KEY=value` lines of an env file (values quoted with '...' are unquoted). */
function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (!m) continue;
    out[m[1]] = m[2].startsWith("'") ? m[2].slice(1, -1).replaceAll(`'\\''`, "'") : m[2];
  }
  return out;
}

Deno.test("meshctl experimental workload bootstrap -p fs gives an agent an identity mesh_ca accepts", async () => {
  await withTempDir(async (dir) => {
    const caPort = freePort();
    const out = `${dir}/web`;
    const bootstrap = (extra: string[]) =>
      runProgram("meshctl", [
        "experimental",
        "workload",
        "bootstrap",
        "web",
        "-n",
        "shop",
        "-p",
        "fs",
        "-o",
        out,
        "--issuer-key",
        `${dir}/issuer-key.json`,
        "--ca-address",
        `127.0.0.1:${caPort}`,
        ...extra,
      ]);
    // 1. before mesh_ca runs: key, JWKS, token and environment; no root yet
    const first = await bootstrap([]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /Created the token signing key .*issuer-key\.json/);
    assert.match(first.stdout, /--trusted-jwks .*\/web\/jwks\.json/);
    assert.match(first.stdout, /mesh_ca's root is not known yet/);
    assert.equal((await Deno.stat(`${dir}/issuer-key.json`)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(`${out}/token`)).mode! & 0o777, 0o600);
    const jwks = JSON.parse(await Deno.readTextFile(`${out}/jwks.json`));
    assert.equal(jwks.keys.length, 1);
    assert.equal(jwks.keys[0].d, undefined, "the JWKS holds no private part");
    await assert.rejects(Deno.stat(`${out}/root-cert.pem`));

    // 2. mesh_ca trusting that JWKS
    await using ca = spawnProgram("mesh_ca", [
      "--self-signed-ca",
      "--local-storage-dir",
      `${dir}/ca`,
      "--trusted-jwks",
      `${out}/jwks.json`,
      "--grpc-port",
      String(caPort),
      "--monitoring-port",
      "0",
    ]);
    await ca.waitFor(/gRPC signing API listening/, 30_000);

    // 3. again with the root: same key (no new one), root-cert.pem written
    const second = await bootstrap(["--ca-root", `${dir}/ca/ca-cert.pem`]);
    assert.equal(second.code, 0, second.stderr);
    assert.doesNotMatch(second.stdout, /Created the token signing key/);
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${out}/jwks.json`)), jwks);
    assert.equal(
      await Deno.readTextFile(`${out}/root-cert.pem`),
      await Deno.readTextFile(`${dir}/ca/ca-cert.pem`),
    );
    const env = parseEnvFile(await Deno.readTextFile(`${out}/mesh-agent.env`));
    assert.deepEqual(env, {
      POD_NAME: "web",
      POD_NAMESPACE: "shop",
      INSTANCE_IP: "127.0.0.1",
      MESH_META_NAMESPACE: "shop",
      MESH_CERT_DIR: `${out}/certs`,
      MESH_CA_ADDRESS: `127.0.0.1:${caPort}`,
      MESH_CA_ROOT_CERT: `${out}/root-cert.pem`,
      MESH_CA_TOKEN_FILE: `${out}/token`,
    });

    // 4. the agent with nothing but that environment gets its certificate from mesh_ca
    await using agent = spawnProgram("mesh-agent", [
      "proxy",
      "--proxyless",
      "--discoveryAddress",
      "127.0.0.1:15010",
      "--configPath",
      `${out}/proxy`,
    ], { env, clearEnv: true });
    await agent.waitFor(/gRPC bootstrap written/, 30_000);
    const chain = await Deno.readTextFile(`${out}/certs/cert-chain.pem`);
    assert.deepEqual(subjectAltNames(parseCertificates(chain)[0]).uris, [
      "spiffe://cluster.local/ns/shop/sa/web",
    ]);

    // 5. a token of another key is refused by the same mesh_ca
    const other = await testIssuer("other");
    const r = await createCertificate({
      address: `127.0.0.1:${caPort}`,
      root: await Deno.readTextFile(`${out}/root-cert.pem`),
      token: await other.token("system:serviceaccount:shop:web"),
    }, (await csrFor("shop", "web")).csr);
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.code, 16, JSON.stringify(r));
  });
});

Deno.test("meshctl experimental workload bootstrap names bad arguments with exit 2", async () => {
  const cases: [string[], RegExp][] = [
    [["Web", "-p", "fs", "-o", "x"], /Invalid service account "Web": want a DNS label/],
    [["web", "-n", "a_b", "-p", "fs", "-o", "x"], /Invalid namespace "a_b"/],
    [["web", "-p", "fs"], /-o\/--output is required/],
    [["web", "-p", "fs", "-o", "x", "--ca-address", "ca"], /Invalid value "ca" for --ca-address/],
    [["web", "-p", "cloud", "-o", "x"], /Unknown platform "cloud"/],
  ];
  for (const [args, re] of cases) {
    const r = await runProgram("meshctl", ["experimental", "workload", "bootstrap", ...args]);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, re);
  }
});

Deno.test("meshctl experimental workload bootstrap -p orch takes the token from TokenRequest and the root from mesh-ca-secret; mesh_ca accepts it", async () => {
  await withTempDir(async (dir) => {
    const { startFakeKube } = await import("../harness/fake_kube.ts");
    await using kube = await startFakeKube({ namespaces: ["mesh-system", "shop"] });
    const caPort = freePort();
    await using ca = spawnProgram("mesh_ca", [
      "--self-signed-ca",
      "--orch-config",
      kube.kubeconfigPath,
      "--listened-namespace",
      "shop",
      "--grpc-port",
      String(caPort),
      "--monitoring-port",
      "0",
    ]);
    await ca.waitFor(/gRPC signing API listening/, 30_000);
    const out = `${dir}/web`;
    const args = [
      "experimental",
      "workload",
      "bootstrap",
      "web",
      "-n",
      "shop",
      "-c",
      kube.kubeconfigPath,
      "-o",
      out,
      "--ca-address",
      `127.0.0.1:${caPort}`,
      "--token-ttl",
      "1h",
    ];
    // no such service account yet: the orchestrator's answer, named
    const missing = await runProgram("meshctl", args);
    assert.equal(missing.code, 1, missing.stderr);
    assert.match(
      missing.stderr,
      /^Error: Cannot get a token for service account shop\/web: serviceaccounts "web" not found \(HTTP 404\)$/m,
    );
    kube.upsert({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "web", namespace: "shop" },
    });
    const r = await runProgram("meshctl", args);
    assert.equal(r.code, 0, r.stderr);
    await assert.rejects(Deno.stat(`${out}/jwks.json`), "no JWKS on the orchestrator");
    const secret = kube.get("secrets", "mesh-system", "mesh-ca-secret")! as unknown as {
      data: Record<string, string>;
    };
    assert.equal(await Deno.readTextFile(`${out}/root-cert.pem`), atob(secret.data["ca-cert.pem"]));
    const token = (await Deno.readTextFile(`${out}/token`)).trim();
    const claims = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    assert.equal(claims.sub, "system:serviceaccount:shop:web");
    assert.equal(claims.exp - claims.iat, 3600);

    const env = parseEnvFile(await Deno.readTextFile(`${out}/mesh-agent.env`));
    await using agent = spawnProgram("mesh-agent", [
      "proxy",
      "--proxyless",
      "--discoveryAddress",
      "127.0.0.1:15010",
      "--configPath",
      `${out}/proxy`,
    ], { env, clearEnv: true });
    await agent.waitFor(/gRPC bootstrap written/, 30_000);
    const chain = await Deno.readTextFile(`${out}/certs/cert-chain.pem`);
    assert.deepEqual(subjectAltNames(parseCertificates(chain)[0]).uris, [
      "spiffe://cluster.local/ns/shop/sa/web",
    ]);
  });
});

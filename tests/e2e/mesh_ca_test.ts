/**
 * mesh_ca as users run it: the real program on 127.0.0.1 with its flags; an independent client
 * (Python grpcio, gRPC C-core) signs a CSR; monitoring answers; the liveness probe file is kept
 * fresh and `mesh_ca probe` reads it; private keys never reach the logs.
 */
import assert from "node:assert/strict";
import { freePort, runProgram, spawnProgram, waitUntil, withTempDir } from "../harness/procs.ts";
import { selfSignedCaArgs, testIssuer } from "../harness/ca_client.ts";
import { csrFor, opensslVerify } from "../../servers/ca/_testutil.ts";

const PY_CLIENT = `
import sys, grpc
addr, root_file, token, csr_file = sys.argv[1:5]
csr = open(csr_file, "rb").read()
def varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7f) | 0x80]); n >>= 7
    return out + bytes([n])
req = b"\\x0a" + varint(len(csr)) + csr + b"\\x18" + varint(3600)
creds = grpc.ssl_channel_credentials(root_certificates=open(root_file, "rb").read())
ch = grpc.secure_channel(addr, creds, options=[("grpc.ssl_target_name_override", "mesh-ca")])
call = ch.unary_unary("/mesh.v1.auth.MeshCertificateService/CreateCertificate")
try:
    res = call(req, metadata=[("authorization", "Bearer " + token)] if token else None, timeout=10)
except grpc.RpcError as e:
    print("ERROR", e.code().name, e.details()); sys.exit(0)
i, certs = 0, []
while i < len(res):
    assert res[i] == 0x0a; i += 1
    n, shift = 0, 0
    while True:
        b = res[i]; i += 1; n |= (b & 0x7f) << shift; shift += 7
        if b < 0x80: break
    certs.append(res[i:i+n].decode()); i += n
print("CHAIN", len(certs))
sys.stdout.write("".join(certs))
`;

async function py(args: string[]): Promise<string> {
  const o = await new Deno.Command("/usr/bin/python3", { args: ["-c", PY_CLIENT, ...args] })
    .output();
  const td = new TextDecoder();
  assert.ok(o.success, td.decode(o.stderr));
  return td.decode(o.stdout);
}

Deno.test("mesh_ca serves CSRs to a Python grpcio client, reports metrics, keeps its probe file fresh, and never logs keys", async () => {
  await withTempDir(async (dir) => {
    const issuer = await testIssuer();
    const grpcPort = freePort();
    const monitoringPort = freePort();
    const probe = `${dir}/probe`;
    await using ca = spawnProgram(
      "mesh_ca",
      await selfSignedCaArgs(
        dir,
        issuer,
        { grpc: grpcPort, monitoring: monitoringPort },
        "--liveness-probe-path",
        probe,
        "--liveness-probe-interval",
        "1s",
        "--probe-check-interval",
        "300ms",
        "--log_output_level",
        "debug",
      ),
    );
    await ca.waitFor(/gRPC signing API listening/, 30_000);
    const root = await Deno.readTextFile(`${dir}/store/ca-cert.pem`);
    await Deno.writeTextFile(`${dir}/root.pem`, root);

    const { csr } = await csrFor("ns1", "web", { key: { kind: "rsa", bits: 2048 } });
    await Deno.writeTextFile(`${dir}/csr.pem`, csr);
    const token = await issuer.token("system:serviceaccount:ns1:web");
    const ok = await py([`127.0.0.1:${grpcPort}`, `${dir}/root.pem`, token, `${dir}/csr.pem`]);
    assert.match(ok, /^CHAIN 2\n/);
    const pems = ok.slice(ok.indexOf("\n") + 1).split(/(?<=-----END CERTIFICATE-----\n)/).filter((
      s,
    ) => s.trim());
    assert.match(await opensslVerify(pems), /leaf\.pem: OK$/);
    const denied = await py([`127.0.0.1:${grpcPort}`, `${dir}/root.pem`, "", `${dir}/csr.pem`]);
    assert.match(denied, /^ERROR UNAUTHENTICATED request authenticate failure/);

    // Liveness: the self-check passes, the file is fresh, `mesh_ca probe` succeeds.
    await waitUntil(
      async () => {
        const r = await runProgram("mesh_ca", ["probe", "--probe-path", probe, "--interval", "1s"]);
        return r.code === 0;
      },
      20_000,
      "mesh_ca probe to pass",
    );

    const metrics = await (await fetch(`http://127.0.0.1:${monitoringPort}/metrics`)).text();
    assert.match(metrics, /mesh_ca_certs_issued_total\{method="CreateCertificate"\} [1-9]/);
    assert.match(
      metrics,
      /mesh_ca_csr_errors_total\{method="CreateCertificate",reason="no-credentials"\} 1/,
    );
    assert.match(metrics, /mesh_ca_signing_duration_seconds_count [1-9]/);
    assert.match(metrics, /mesh_ca_self_checks_total\{result="ok"\} [1-9]/);
    assert.match(
      await (await fetch(`http://127.0.0.1:${monitoringPort}/version`)).text(),
      /Version: /,
    );
    const pprof = await fetch(`http://127.0.0.1:${monitoringPort}/debug/pprof/profile?seconds=1`);
    assert.equal(pprof.status, 404);
    assert.match(await pprof.text(), /--enable-profiling/);

    const status = await ca.stop();
    assert.equal(status.code, 0);
    // The probe file goes with the server: the probe now fails.
    const after = await runProgram("mesh_ca", ["probe", "--probe-path", probe, "--interval", "1s"]);
    assert.notEqual(after.code, 0);

    const logs = ca.output();
    const key = await Deno.readTextFile(`${dir}/store/ca-key.pem`);
    assert.ok(!logs.includes("PRIVATE KEY"), "no PEM private key in the logs");
    for (const line of key.split("\n").filter((l) => l.length > 20 && !l.startsWith("-----"))) {
      assert.ok(!logs.includes(line), "no line of the CA key in the logs");
    }
    assert.match(logs, /issued a certificate for spiffe:\/\/cluster.local\/ns\/ns1\/sa\/web/);
  });
});

Deno.test("mesh_ca --enable-profiling serves a CPU profile; a bad flag combination exits 2 with one line", async () => {
  await withTempDir(async (dir) => {
    const monitoringPort = freePort();
    await using ca = spawnProgram("mesh_ca", [
      "--self-signed-ca",
      "--local-storage-dir",
      dir,
      "--grpc-port",
      "0",
      "--monitoring-port",
      String(monitoringPort),
      "--enable-profiling",
    ]);
    await ca.waitFor(/monitoring listening/, 30_000);
    const r = await fetch(`http://127.0.0.1:${monitoringPort}/debug/pprof/profile?seconds=0.2`);
    assert.equal(r.status, 200);
    assert.ok(Array.isArray((await r.json()).nodes));
  });
  const bad = await runProgram("mesh_ca", [
    "--self-signed-ca",
    "--upstream-ca-address",
    "x:1",
    "--local-storage-dir",
    "/tmp/x",
  ]);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /^Error: Flags --self-signed-ca and --upstream-ca-address contradict: choose one\n/,
  );
  const unplugged = await runProgram("mesh_ca", [
    "--local-storage-dir",
    "/tmp/x",
    "--signing-cert",
    "/nope/c.pem",
    "--signing-key",
    "/nope/k.pem",
    "--root-cert",
    "/nope/r.pem",
    "--grpc-port",
    "0",
    "--monitoring-port",
    "0",
  ]);
  assert.equal(unplugged.code, 1);
  assert.match(
    unplugged.stderr + unplugged.stdout,
    /Cannot read --signing-cert "\/nope\/c.pem": no such file/,
  );
});

Deno.test("mesh_ca --orch-config keeps its root in mesh-ca-secret and a mesh.<sa> Secret per service account; outside the orchestrator without it, a clear error", async () => {
  const { startFakeKube } = await import("../harness/fake_kube.ts");
  await using kube = await startFakeKube({ namespaces: ["mesh-system", "shop"] });
  await using ca = spawnProgram("mesh_ca", [
    "--self-signed-ca",
    "--orch-config",
    kube.kubeconfigPath,
    "--listened-namespace",
    "shop",
    "--grpc-port",
    "0",
    "--monitoring-port",
    "0",
  ]);
  await ca.waitFor(/controller: watching service accounts in namespace shop/, 30_000);
  kube.upsert({
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "cart", namespace: "shop" },
  });
  await waitUntil(
    () => !!kube.get("secrets", "shop", "mesh.cart"),
    20_000,
    "Secret shop/mesh.cart",
  );
  const s = kube.get("secrets", "shop", "mesh.cart")! as unknown as {
    data: Record<string, string>;
  };
  const root = kube.get("secrets", "mesh-system", "mesh-ca-secret")! as unknown as {
    data: Record<string, string>;
  };
  assert.equal(atob(s.data["root-cert.pem"]), atob(root.data["ca-cert.pem"]));
  assert.match(
    await opensslVerify([atob(s.data["cert-chain.pem"])], atob(s.data["root-cert.pem"])),
    /OK$/,
  );
  assert.equal((await ca.stop()).code, 0);

  const outside = await runProgram("mesh_ca", ["--self-signed-ca"], {
    env: { KUBERNETES_SERVICE_HOST: "" },
  });
  assert.equal(outside.code, 2);
  assert.match(outside.stderr, /Flag --orch-config is required outside the orchestrator/);
});

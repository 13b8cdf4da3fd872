import assert from "node:assert/strict";
import { caFlags } from "./_testutil.ts";
import { ConfigError, toConfig } from "./mod.ts";

const problems = (f: Parameters<typeof caFlags>[0], env = {}) => {
  try {
    toConfig(caFlags(f), env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems.join("\n");
    throw e;
  }
  return "";
};

Deno.test("toConfig() without key material or orchestrator lists both problems", () => {
  const p = problems({});
  assert.match(
    p,
    /No key material: give --self-signed-ca, --upstream-ca-address, or the plugged files \(missing --signing-cert, --signing-key, --root-cert\)/,
  );
  assert.match(
    p,
    /Flag --orch-config is required outside the orchestrator \(to run without one, give --local-storage-dir\)/,
  );
});

Deno.test("toConfig() refuses contradictory key material flags", () => {
  assert.match(
    problems({ selfSignedCa: true, upstreamCaAddress: "up:8060", localStorageDir: "/d" }),
    /--self-signed-ca and --upstream-ca-address contradict/,
  );
  assert.match(
    problems({
      upstreamCaAddress: "up:8060",
      signingKey: "k",
      rootCert: "r",
      localStorageDir: "/d",
    }),
    /--upstream-ca-address gets the signing certificate from the upstream CA/,
  );
  assert.match(
    problems({ upstreamCaAddress: "up:8060", localStorageDir: "/d" }),
    /needs --root-cert/,
  );
  assert.match(
    problems({ upstreamCaAddress: "nope", rootCert: "r", localStorageDir: "/d" }),
    /Invalid value for --upstream-ca-address: want <host>:<port>, got "nope"/,
  );
});

Deno.test("toConfig() in self-signed mode ignores --signing-cert/--signing-key with a warning", () => {
  const c = toConfig(
    caFlags({ selfSignedCa: true, signingCert: "c", signingKey: "k", localStorageDir: "/d" }),
  );
  assert.equal(c.keys.kind, "self-signed");
  assert.deepEqual(c.warnings, ["--self-signed-ca is set: --signing-cert, --signing-key ignored"]);
});

Deno.test("toConfig() checks TTLs, ratios, ports, key size, DNS names and the liveness flags", () => {
  const base = { selfSignedCa: true, localStorageDir: "/d" };
  assert.match(
    problems({ ...base, workloadCertTtl: 3 * 3_600_000, maxWorkloadCertTtl: 3_600_000 }),
    /Invalid value for --workload-cert-ttl: 3h0m0s is greater than --max-workload-cert-ttl 1h0m0s/,
  );
  assert.match(
    problems({ ...base, workloadCertGracePeriodRatio: 1.5 }),
    /Invalid value for --workload-cert-grace-period-ratio: must be in \[0, 1\], got 1.5/,
  );
  assert.match(
    problems({ ...base, grpcPort: 70000 }),
    /Invalid value for --grpc-port: want a port number from 0 to 65535, got 70000/,
  );
  assert.match(problems({ ...base, grpcPort: 9000, monitoringPort: 9000 }), /must differ/);
  assert.match(
    problems({ ...base, keySize: 1024 }),
    /Invalid value for --key-size: want 2048 to 8192 bits, a multiple of 8, got 1024/,
  );
  assert.match(problems({ ...base, customDnsNames: "bad" }), /--custom-dns-names: bad entry "bad"/);
  assert.match(problems({ ...base, livenessProbePath: "/p" }), /go together: give both/);
  assert.match(
    problems({ ...base, livenessProbePath: "/p", livenessProbeInterval: 1000, grpcPort: 0 }),
    /needs --grpc-port/,
  );
});

Deno.test("toConfig() picks the orchestrator, listened namespace and host identities as the spec says", () => {
  const inCluster = toConfig(caFlags({ selfSignedCa: true }), {
    KUBERNETES_SERVICE_HOST: "10.0.0.1",
    NAMESPACE: "team",
  });
  assert.deepEqual(inCluster.orchestrator, { kubeconfig: "" });
  assert.equal(inCluster.listenedNamespace, "team");
  const flagWins = toConfig(
    caFlags({ selfSignedCa: true, orchConfig: "/k", listenedNamespace: "ns1" }),
    { NAMESPACE: "team" },
  );
  assert.equal(flagWins.listenedNamespace, "ns1");
  const all = toConfig(caFlags({ selfSignedCa: true, orchConfig: "/k" }));
  assert.equal(all.listenedNamespace, "");
  assert.match(
    problems({ selfSignedCa: true, orchConfig: "/k", trustedJwks: "/j" }),
    /--trusted-jwks is for running without an orchestrator/,
  );
  const old = toConfig(
    caFlags({ selfSignedCa: true, localStorageDir: "/d", grpcHostname: "legacy-ca" }),
  );
  assert.deepEqual(old.hostIdentities, ["legacy-ca", "mesh-ca", "mesh-citadel"]);
  assert.ok(old.warnings.includes("--grpc-hostname is deprecated: use --grpc-host-identities"));
  const off = toConfig(
    caFlags({ selfSignedCa: true, localStorageDir: "/d", grpcPort: 0, monitoringPort: 0 }),
  );
  assert.equal(off.grpcPort, null);
  assert.equal(off.monitoring, null);
});

Deno.test("upstreamServername() verifies the upstream by its DNS name, or mesh-ca for an IP", async () => {
  const { upstreamServername } = await import("./keys.ts");
  assert.equal(
    upstreamServername("mesh-ca.mesh-system.svc.cluster.local:8060"),
    "mesh-ca.mesh-system.svc.cluster.local",
  );
  assert.equal(upstreamServername("127.0.0.1:8060"), "mesh-ca");
  assert.equal(upstreamServername("[::1]:8060"), "mesh-ca");
});

Deno.test("toConfig() takes --signing-backend auto, openssl or webcrypto (default auto) and $MESH_CA_LIBCRYPTO", () => {
  const base = { selfSignedCa: true, localStorageDir: "/d" };
  assert.equal(toConfig(caFlags(base)).signingBackend, "auto");
  assert.equal(toConfig(caFlags(base)).libcrypto, undefined);
  for (const b of ["auto", "openssl", "webcrypto"]) {
    assert.equal(toConfig(caFlags({ ...base, signingBackend: b })).signingBackend, b);
  }
  assert.match(
    problems({ ...base, signingBackend: "boringssl" }),
    /^Invalid value for --signing-backend: want one of auto, openssl, webcrypto, got "boringssl"$/,
  );
  assert.deepEqual(
    toConfig(caFlags(base), { MESH_CA_LIBCRYPTO: "/opt/ssl/libcrypto.so.3" }).libcrypto,
    ["/opt/ssl/libcrypto.so.3"],
  );
});

Deno.test("toConfig() binds monitoring on --monitoring-address, every interface by default", () => {
  const base = { selfSignedCa: true, localStorageDir: "/d" };
  assert.equal(toConfig(caFlags(base)).monitoring?.address, "0.0.0.0");
  assert.equal(
    toConfig(caFlags({ ...base, monitoringAddress: "127.0.0.1" })).monitoring?.address,
    "127.0.0.1",
  );
});

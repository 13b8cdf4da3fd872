import assert from "node:assert/strict";
import { type FakeKube, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { createCertificate } from "../../tests/harness/ca_client.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { parseCertificates, spiffeId, subjectAltNames } from "../../lib/pki/mod.ts";
import { caFlags, csrFor, opensslVerify, orchCaConfig, recordingLogger } from "./_testutil.ts";
import { CA_SECRET, type CaHandle, start, WORKLOAD_SECRET } from "./mod.ts";

const HOUR = 3_600_000;

function sa(ns: string, name: string) {
  return { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: ns } };
}

async function withOrchCa(
  over: Parameters<typeof caFlags>[0],
  fn: (kube: FakeKube, ca: CaHandle, log: ReturnType<typeof recordingLogger>) => Promise<void>,
  kubeOpts: Parameters<typeof startFakeKube>[0] = {},
) {
  const kube = await startFakeKube({
    namespaces: ["default", "mesh-system", "ns1", "ns2"],
    ...kubeOpts,
  });
  const log = recordingLogger();
  try {
    const config = orchCaConfig(kube.kubeconfigPath, over);
    const ca = await start(config, { host: "127.0.0.1", grpcPort: 0, log, resyncMs: 200 });
    try {
      await ca.ready;
      await fn(kube, ca, log);
    } finally {
      await ca.shutdown();
    }
  } finally {
    await kube.close();
  }
}

const secretOf = (kube: FakeKube, ns: string, sa: string) =>
  kube.get("secrets", ns, `mesh.${sa}`) as
    | {
      type: string;
      data: Record<string, string>;
      metadata: { annotations?: Record<string, string> };
    }
    | undefined;

const leafOf = (s: { data: Record<string, string> }) =>
  parseCertificates(atob(s.data[WORKLOAD_SECRET.certChain]))[0];

Deno.test("the controller creates mesh.<sa> Secrets whose chain verifies, deletes them with the account and recreates a deleted one", async () => {
  await withOrchCa({}, async (kube, ca) => {
    kube.upsert(sa("ns1", "web"));
    await waitUntil(() => !!secretOf(kube, "ns1", "web"), 10_000, "Secret ns1/mesh.web");
    const s = secretOf(kube, "ns1", "web")!;
    assert.equal(s.type, "mesh.io/key-and-cert");
    assert.equal(s.metadata.annotations?.["mesh.io/service-account.name"], "web");
    assert.deepEqual(Object.keys(s.data).sort(), ["cert-chain.pem", "key.pem", "root-cert.pem"]);
    assert.equal(atob(s.data["root-cert.pem"]).trim(), ca.ca().rootPem.trim());
    assert.match(atob(s.data["key.pem"]), /BEGIN PRIVATE KEY/);
    const chain = atob(s.data["cert-chain.pem"]);
    assert.match(await opensslVerify([chain], atob(s.data["root-cert.pem"])), /OK$/);
    assert.deepEqual(subjectAltNames(leafOf(s)).uris, [spiffeId("ns1", "web")]);

    // Deleted while the account exists: recreated with a new certificate.
    const serial = leafOf(s).serialNumber;
    kube.remove("secrets", "ns1", "mesh.web");
    await waitUntil(
      () => {
        const again = secretOf(kube, "ns1", "web");
        return !!again && leafOf(again).serialNumber !== serial;
      },
      10_000,
      "recreated Secret",
    );

    // The account goes: so does its Secret.
    kube.remove("serviceaccounts", "ns1", "web");
    await waitUntil(() => !secretOf(kube, "ns1", "web"), 10_000, "Secret deleted");
  });
});

Deno.test("the controller rotates a Secret whose root differs and one within its grace period", async () => {
  await withOrchCa({
    workloadCertTtl: 3000,
    maxWorkloadCertTtl: HOUR,
    workloadCertMinGracePeriod: 0,
    workloadCertGracePeriodRatio: 0.5,
  }, async (kube) => {
    kube.upsert(sa("ns2", "api"));
    await waitUntil(() => !!secretOf(kube, "ns2", "api"), 10_000, "Secret ns2/mesh.api");
    const first = leafOf(secretOf(kube, "ns2", "api")!).serialNumber;
    // 3 s life, 1.5 s grace: rotated about 1.5 s after issue, found by the 200 ms resync.
    await waitUntil(
      () => leafOf(secretOf(kube, "ns2", "api")!).serialNumber !== first,
      10_000,
      "rotation within the grace period",
    );
  });
  await withOrchCa({}, async (kube, ca) => {
    kube.upsert(sa("ns2", "db"));
    await waitUntil(() => !!secretOf(kube, "ns2", "db"), 10_000, "Secret ns2/mesh.db");
    const s = kube.get("secrets", "ns2", "mesh.db")!;
    const serial = leafOf(s as never).serialNumber;
    (s.data as Record<string, string>)["root-cert.pem"] = btoa(
      "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    );
    kube.upsert(s);
    await waitUntil(
      () => {
        const now = secretOf(kube, "ns2", "db")!;
        return atob(now.data["root-cert.pem"]).trim() === ca.ca().rootPem.trim() &&
          leafOf(now).serialNumber !== serial;
      },
      10_000,
      "rotation after a root change",
    );
  });
});

Deno.test("--listened-namespace limits the controller to one namespace", async () => {
  await withOrchCa({ listenedNamespace: "ns1" }, async (kube) => {
    kube.upsert(sa("ns2", "other"));
    kube.upsert(sa("ns1", "mine"));
    await waitUntil(() => !!secretOf(kube, "ns1", "mine"), 10_000, "Secret ns1/mesh.mine");
    assert.equal(secretOf(kube, "ns2", "other"), undefined);
  });
});

Deno.test("with an orchestrator the self-signed root is kept in Secret mesh-ca-secret and reused at restart", async () => {
  const kube = await startFakeKube();
  try {
    const config = orchCaConfig(kube.kubeconfigPath);
    const a = await start(config, { host: "127.0.0.1", log: recordingLogger() });
    await a.ready;
    const root = a.ca().rootPem;
    await a.shutdown();
    const stored = kube.get("secrets", "mesh-system", CA_SECRET.name)!;
    assert.equal(stored.type, "mesh.io/ca-root");
    assert.equal(atob((stored.data as Record<string, string>)["ca-cert.pem"]).trim(), root.trim());
    const b = await start(config, { host: "127.0.0.1", log: recordingLogger() });
    await b.ready;
    assert.equal(b.ca().rootPem, root);
    await b.shutdown();
  } finally {
    await kube.close();
  }
});

Deno.test("with an orchestrator a service-account token is checked by a TokenReview", async () => {
  await withOrchCa({}, async (_kube, ca) => {
    const address = `127.0.0.1:${ca.addresses.grpc!.split(":")[1]}`;
    const root = ca.ca().rootPem;
    const ok = await createCertificate(
      { address, root, token: "tok-web" },
      (await csrFor("ns1", "web")).csr,
    );
    assert.ok(ok.ok, JSON.stringify(ok));
    const other = await createCertificate(
      { address, root, token: "tok-web" },
      (await csrFor("ns1", "db")).csr,
    );
    assert.ok(!other.ok && other.code === 7);
    const bad = await createCertificate(
      { address, root, token: "forged" },
      (await csrFor("ns1", "web")).csr,
    );
    assert.ok(!bad.ok && bad.code === 16, JSON.stringify(bad));
    assert.match(
      (bad as { details: string }).details,
      /token not authenticated by the orchestrator/,
    );
  }, { reviewTokens: { "tok-web": "system:serviceaccount:ns1:web" } });
});

import assert from "node:assert/strict";
import {
  CertAuthority,
  createCsr,
  createSelfSignedCa,
  exportPrivateKey,
  generateKeyPair,
  loadCaMaterial,
  parseCertificates,
  parseCsr,
  spiffeId,
} from "../../lib/pki/mod.ts";
import { decodeMeshCertificateResponse } from "../../lib/pki/ca_messages.ts";
import { createCertificateH2, testIssuer } from "../../tests/harness/ca_client.ts";
import { holdSharablePort, waitUntil, withTempDir } from "../../tests/harness/procs.ts";
import { caFlags, csrFor, recordingLogger, withCa } from "./_testutil.ts";
import { start, toConfig } from "./mod.ts";
import { startSigningWorkers } from "./workers.ts";

const HOUR = 3_600_000;

/** One CreateCertificate on a connection of its own (node:http2, closed after the call). */
async function sign(port: number, root: string, token: string, csr: string) {
  const r = await createCertificateH2({
    address: `127.0.0.1:${port}`,
    root,
    token,
    csr,
    timeoutMs: 30_000,
  });
  assert.equal(r.status, 0, r.message);
  return decodeMeshCertificateResponse(r.response!);
}

/** `mesh_ca_certs_issued_total` of one worker's registry JSON. */
function issued(json: unknown): number {
  const m = (json as { name: string; values: { value: number }[] }[])
    .find((x) => x.name === "mesh_ca_certs_issued_total");
  return (m?.values ?? []).reduce((n, v) => n + v.value, 0);
}

async function selfSigned(org: string): Promise<CertAuthority> {
  const pem = await createSelfSignedCa({ org, ttlMs: 24 * HOUR, key: { kind: "ec" } });
  return new CertAuthority(await loadCaMaterial(pem), { maxTtlMs: 24 * HOUR });
}

Deno.test("start() with workers 2 on port 0 serves every call on the port it picked, and /metrics sums the workers' counts", async () => {
  // monitoringPort 1: on (its port comes from deps)
  await withCa({ monitoringPort: 1, workers: 2, workloadCertTtl: HOUR }, async (ca, c) => {
    assert.ok(
      c.log.lines.some((l) => /listening on .* in 2 worker isolates/.test(l)),
      c.log.lines.join("\n"),
    );
    const port = Number(ca.addresses.grpc!.split(":")[1]);
    assert.ok(port > 0);
    const token = await c.token("system:serviceaccount:ns1:web");
    const { csr } = await csrFor("ns1", "web", { key: { kind: "ec" } });
    const n = 12;
    const chains = await Promise.all(
      Array.from({ length: n }, () => sign(port, ca.ca().rootPem, token, csr)),
    );
    for (const chain of chains) assert.equal(chain.at(-1), ca.ca().rootPem);
    const text = await (await fetch(`http://${ca.addresses.monitoring}/metrics`)).text();
    assert.match(
      text,
      new RegExp(`mesh_ca_certs_issued_total\\{method="CreateCertificate"\\} ${n}\\n`),
    );
    assert.match(
      text,
      new RegExp(`mesh_ca_csr_requests_total\\{method="CreateCertificate"\\} ${n}\\n`),
    );
    // The process metrics are the control isolate's alone (not summed per worker).
    assert.equal(text.match(/^process_start_time_seconds /gm)?.length, 1);
    // the workers' health
    assert.match(text, /^mesh_worker_isolates\{pool="signing API worker"\} 2$/m);
    assert.match(text, /^mesh_worker_restarts_total\{pool="signing API worker"\} 0$/m);
  }, { monitoringPort: 0 });
});

/** An intermediate CA (`O=<org>`) issued by `parent`. */
async function intermediate(org: string, parent: CertAuthority): Promise<CertAuthority> {
  const keys = await generateKeyPair({ kind: "ec" });
  const csr = await parseCsr(
    await createCsr({ keys, uris: [spiffeId("sys", "ca")], isCa: true, org }),
  );
  const mid = await parent.issue({
    publicKey: csr.publicKey,
    uris: csr.uris,
    ttlMs: 12 * HOUR,
    isCa: true,
    subject: `O=${org}`,
  });
  return new CertAuthority(
    await loadCaMaterial({
      signingCert: mid.certPem,
      signingKey: await exportPrivateKey(keys.privateKey),
      certChain: mid.chain.slice(1, -1).join(""), // the parent's own chain, without the root
      rootCert: parent.rootPem,
    }),
    { maxTtlMs: 24 * HOUR },
  );
}

/** The signing API's server certificate for the names `dns`, issued by `c`. */
async function tlsOf(c: CertAuthority, dns = ["mesh-ca"]) {
  const t = await c.issueWithKey({ uris: [], dns, ttlMs: HOUR }, { kind: "ec" });
  return { cert: t.chain.slice(0, -1).join(""), key: t.keyPem, ca: c.caChain.join("") };
}

/** `startSigningWorkers()` on a free port of 127.0.0.1 with `ca`, this test's policy, and `over`. */
async function signingWorkers(
  ca: () => CertAuthority,
  over: Partial<Parameters<typeof startSigningWorkers>[0]>,
) {
  return await startSigningWorkers({
    count: 2,
    host: "127.0.0.1",
    port: 0,
    ca,
    tls: await tlsOf(ca()),
    maxTtlMs: 24 * HOUR,
    backend: "webcrypto",
    libcrypto: undefined,
    policy: {
      workloadTtlMs: HOUR,
      maxTtlMs: 24 * HOUR,
      signCaCerts: false,
      dns: { custom: new Map(), appendWebhookNames: false, systemNamespace: "mesh-system" },
    },
    log: recordingLogger(),
    ...over,
  });
}

/** The DNS names of the server certificate a new TLS connection to `port` is shown (openssl). */
async function servedNames(port: number): Promise<string> {
  const out = await new Deno.Command("sh", {
    args: [
      "-c",
      `openssl s_client -connect 127.0.0.1:${port} -alpn h2 </dev/null 2>/dev/null | openssl x509 -noout -ext subjectAltName`,
    ],
  }).output();
  return new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!.trim();
}

Deno.test("startSigningWorkers() serves from every worker, and a new CA key reaches every worker", async () => {
  const issuer = await testIssuer();
  let ca = await selfSigned("first");
  const workers = await signingWorkers(() => ca, { jwks: issuer.jwks as { keys: unknown[] } });
  try {
    const token = await issuer.token("system:serviceaccount:ns1:web");
    const { csr } = await csrFor("ns1", "web", { key: { kind: "ec" } });
    // Until every worker has issued (new connections spread over the workers), from this CA.
    const untilEveryWorker = async (root: string) => {
      const before = (await workers.metrics()).map(issued);
      await waitUntil(
        async () => {
          const chain = await sign(workers.port, root, token, csr);
          assert.equal(chain.at(-1), root);
          const now = (await workers.metrics()).map(issued);
          return now.every((v, i) => v > before[i]);
        },
        60_000,
        "every worker to issue a certificate",
      );
    };
    await untilEveryWorker(ca.rootPem);
    const old = ca.rootPem;
    // the new CA is two levels under its root: the workers send its whole chain
    ca = await intermediate("second", await intermediate("middle", await selfSigned("root")));
    await workers.setCa(await tlsOf(ca));
    assert.notEqual(ca.rootPem, old);
    await untilEveryWorker(ca.rootPem);
    const chain = await sign(workers.port, ca.rootPem, token, csr);
    assert.equal(parseCertificates(chain[0])[0].issuer, "O=second");
    assert.equal(chain.length, 4);
    assert.deepEqual(chain.slice(1), ca.caChain);
    assert.equal(parseCertificates(chain[2])[0].subject, "O=middle");
  } finally {
    await workers.close();
  }
});

Deno.test("startSigningWorkers(): tokens are reviewed by the control isolate, a renewed server certificate reaches every worker and one started again, close() frees the port", async () => {
  const ca = await selfSigned("ca");
  const reviewed: string[] = [];
  const log = recordingLogger();
  const workers = await signingWorkers(() => ca, {
    log,
    restartDelayMs: 10,
    tokenReview: (token) => {
      reviewed.push(token);
      return Promise.resolve(
        token === "good"
          ? { authenticated: true, username: "system:serviceaccount:ns1:web" }
          : { authenticated: false, error: "token expired" },
      );
    },
  });
  const port = workers.port;
  try {
    const { csr } = await csrFor("ns1", "web", { key: { kind: "ec" } });
    const chain = await sign(port, ca.rootPem, "good", csr);
    assert.equal(chain.at(-1), ca.rootPem);
    const refused = await createCertificateH2({
      address: `127.0.0.1:${port}`,
      root: ca.rootPem,
      token: "stale",
      csr,
      timeoutMs: 30_000,
    });
    assert.equal(refused.status, 16, refused.message);
    assert.deepEqual(reviewed, ["good", "stale"]);

    assert.equal(await servedNames(port), "DNS:mesh-ca");
    await workers.setTls(await tlsOf(ca, ["mesh-ca", "renewed.mesh-ca"]));
    // every worker has it once setTls() resolved: each new connection, whichever worker takes it
    for (let i = 0; i < 6; i++) {
      assert.equal(await servedNames(port), "DNS:mesh-ca, DNS:renewed.mesh-ca");
    }
    // a worker started again after it died starts from the renewed certificate
    workers.pool.kill(0, "killed by the test");
    workers.pool.kill(1, "killed by the test");
    await waitUntil(
      async () => (await workers.metrics()).every((m) => m !== undefined),
      30_000,
      "both workers to be started again",
    );
    for (let i = 0; i < 6; i++) {
      assert.equal(await servedNames(port), "DNS:mesh-ca, DNS:renewed.mesh-ca");
    }
    assert.equal(await sign(port, ca.rootPem, "good", csr).then((c) => c.at(-1)), ca.rootPem);
    assert.ok(
      log.lines.some((l) =>
        l.includes("signing API worker 1 killed by the test; starting it again")
      ),
      log.lines.join("\n"),
    );
  } finally {
    await workers.close();
  }
  await assert.rejects(
    Deno.connect({ hostname: "127.0.0.1", port }),
    Deno.errors.ConnectionRefused,
  );
});

Deno.test("start() with workers 2 refuses a port already in use, even by a listener that allows sharing", async () => {
  await withTempDir(async (dir) => {
    const held = await holdSharablePort();
    const port = held.port;
    try {
      const config = toConfig(caFlags({
        selfSignedCa: true,
        localStorageDir: `${dir}/store`,
        monitoringPort: 0,
        workers: 2,
      }));
      await assert.rejects(
        start(config, { host: "127.0.0.1", grpcPort: port, log: recordingLogger() }),
        new RegExp(`Cannot serve gRPC on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`),
      );
    } finally {
      await held.close();
    }
  });
});

import assert from "node:assert/strict";
import { createCertificate, handleCsr, testIssuer } from "../../tests/harness/ca_client.ts";
import { withTempDir } from "../../tests/harness/procs.ts";
import { makeTestPki } from "../../tests/harness/certs.ts";
import { Buffer } from "node:buffer";
import {
  CertAuthority,
  createSelfSignedCa,
  loadCaMaterial,
  parseCertificates,
  spiffeId,
  subjectAltNames,
} from "../../lib/pki/mod.ts";
import { callUnary } from "../../lib/grpc/mod.ts";
import { recordingCall } from "../../lib/grpc/testing.ts";
import { encodeMeshCertificateRequest } from "../../lib/pki/ca_messages.ts";
import {
  caFlags,
  csrFor,
  opensslText,
  opensslVerify,
  recordingLogger,
  withCa,
} from "./_testutil.ts";
import { start, toConfig } from "./mod.ts";
import { CERTIFICATE_SERVICE, signingHandlers } from "./grpc.ts";
import { createAuthenticator, type TokenReviewResult } from "./signer.ts";

const HOUR = 3_600_000;
const UNAUTHENTICATED = 16, PERMISSION_DENIED = 7, INVALID_ARGUMENT = 3;

Deno.test("CreateCertificate with a trusted JWT signs RSA and ECDSA CSRs for the caller's identity; openssl verify accepts the chain", async () => {
  await withCa({ workloadCertTtl: 2 * HOUR, maxWorkloadCertTtl: 4 * HOUR }, async (_ca, c) => {
    const token = await c.token("system:serviceaccount:ns1:sa1");
    for (const key of [{ kind: "rsa" as const, bits: 2048 }, { kind: "ec" as const }]) {
      const { csr } = await csrFor("ns1", "sa1", { key });
      const r = await createCertificate({ address: c.address, root: c.root, token }, csr);
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.chain.length, 2);
      assert.equal(r.chain[1].trim(), c.root.trim());
      assert.match(await opensslVerify(r.chain), /leaf\.pem: OK$/);
      const [leaf] = parseCertificates(r.chain[0]);
      assert.deepEqual(subjectAltNames(leaf).uris, [spiffeId("ns1", "sa1")]);
      // No TTL asked: --workload-cert-ttl.
      const life = leaf.notAfter.getTime() - leaf.notBefore.getTime();
      assert.ok(life > 2 * HOUR - 5000 && life <= 2 * HOUR + 1000, `life ${life}`);
      assert.match(await opensslText(r.chain[0]), /URI:spiffe:\/\/cluster.local\/ns\/ns1\/sa\/sa1/);
    }
    // A shorter TTL is honoured, a longer one (below the max) is capped to --workload-cert-ttl.
    const { csr } = await csrFor("ns1", "sa1");
    const short = await createCertificate({ address: c.address, root: c.root, token }, csr, 600);
    assert.ok(short.ok);
    const s = parseCertificates(short.chain[0])[0];
    assert.ok(s.notAfter.getTime() - s.notBefore.getTime() <= 601_000);
    const long = await createCertificate(
      { address: c.address, root: c.root, token },
      csr,
      3 * 3600,
    );
    assert.ok(long.ok);
    const l = parseCertificates(long.chain[0])[0];
    assert.ok(l.notAfter.getTime() - l.notBefore.getTime() <= 2 * HOUR + 1000);
  });
});

Deno.test("CreateCertificate refuses: no credentials, untrusted JWT, other identity, bad CSR, TTL above the max, CA CSR", async () => {
  await withCa({ workloadCertTtl: HOUR, maxWorkloadCertTtl: 2 * HOUR }, async (_ca, c) => {
    const token = await c.token("system:serviceaccount:ns1:sa1");
    const { csr } = await csrFor("ns1", "sa1");
    const call = (o: { token?: string }, body: string, ttl = 0) =>
      createCertificate({ address: c.address, root: c.root, ...o }, body, ttl);

    let r = await call({}, csr);
    assert.deepEqual([r.ok, !r.ok && r.code], [false, UNAUTHENTICATED]);

    const other = await testIssuer("other");
    r = await call({ token: await other.token("system:serviceaccount:ns1:sa1") }, csr);
    assert.ok(!r.ok && r.code === UNAUTHENTICATED, JSON.stringify(r));
    assert.match((r as { details: string }).details, /JWT not verified/);

    r = await call({ token: await c.token("alice") }, csr);
    assert.ok(!r.ok && r.code === UNAUTHENTICATED);
    assert.match((r as { details: string }).details, /system:serviceaccount/);

    r = await call({ token }, (await csrFor("ns2", "sa2")).csr);
    assert.ok(!r.ok && r.code === PERMISSION_DENIED, JSON.stringify(r));
    assert.match(
      (r as { details: string }).details,
      /caller spiffe:\/\/cluster.local\/ns\/ns1\/sa\/sa1 may not request a certificate for spiffe:\/\/cluster.local\/ns\/ns2\/sa\/sa2/,
    );

    r = await call({ token }, (await csrFor("ns1", "sa1", { dns: ["evil.example.com"] })).csr);
    assert.ok(!r.ok && r.code === PERMISSION_DENIED);

    r = await call({ token }, "not a csr");
    assert.ok(!r.ok && r.code === INVALID_ARGUMENT);
    assert.match((r as { details: string }).details, /CSR parsing error/);

    r = await call({ token }, (await csrFor("ns1", "sa1", { uris: [] })).csr);
    assert.ok(!r.ok && r.code === INVALID_ARGUMENT);
    assert.match((r as { details: string }).details, /CSR identity extraction error/);

    r = await call({ token }, csr, 3 * 3600);
    assert.ok(!r.ok && r.code === INVALID_ARGUMENT);
    assert.equal(
      (r as { details: string }).details,
      "requested TTL 3h0m0s is greater than the max allowed TTL 2h0m0s",
    );

    r = await call({ token }, (await csrFor("ns1", "sa1", { isCa: true })).csr);
    assert.ok(!r.ok && r.code === PERMISSION_DENIED);
    assert.match((r as { details: string }).details, /--sign-ca-certs/);
  });
});

Deno.test("a client certificate issued by this CA authenticates without a token; one from another CA is refused", async () => {
  await withCa({}, async (ca, c) => {
    const issued = await ca.ca().issueWithKey({ uris: [spiffeId("ns3", "sa3")], ttlMs: HOUR }, {
      kind: "ec",
    });
    const mtls = {
      address: c.address,
      root: c.root,
      cert: issued.chain.slice(0, -1).join(""),
      key: issued.keyPem,
    };
    const r = await createCertificate(mtls, (await csrFor("ns3", "sa3")).csr);
    assert.ok(r.ok, JSON.stringify(r));
    assert.match(await opensslVerify(r.chain), /OK$/);
    const denied = await createCertificate(mtls, (await csrFor("ns1", "sa1")).csr);
    assert.ok(!denied.ok && denied.code === PERMISSION_DENIED);

    const pki = await makeTestPki();
    try {
      const foreign = await pki.issue("client", { uris: [spiffeId("ns3", "sa3")] });
      // (node:http2 here: grpc-js would leave its reconnect timer behind after the refusal.)
      const refused = await callUnary({
        address: c.address,
        path: "/mesh.v1.auth.MeshCertificateService/CreateCertificate",
        message: encodeMeshCertificateRequest({
          csr: (await csrFor("ns3", "sa3")).csr,
          validityDuration: 0,
        }),
        ca: c.root,
        servername: "mesh-ca",
        cert: await Deno.readTextFile(foreign.cert),
        key: await Deno.readTextFile(foreign.key),
      }).then((r) => `status ${r.status}`, (e) => `failed: ${(e as Error).message}`);
      assert.doesNotMatch(refused, /^status 0$/);
    } finally {
      await pki.remove();
    }
  });
});

Deno.test("HandleCSR (older shape) signs with the token in node_agent_credential and returns the CA chain", async () => {
  await withCa({}, async (_ca, c) => {
    const token = await c.token("system:serviceaccount:ns1:sa1");
    const { csr } = await csrFor("ns1", "sa1");
    const r = await handleCsr({ address: c.address, root: c.root }, {
      csr_pem: csr,
      node_agent_credential: token,
      requested_ttl_minutes: 30,
    });
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal((r.raw as { is_approved: boolean }).is_approved, true);
    assert.match(await opensslVerify([r.chain[0], r.chain[1]]), /OK$/);
    const leaf = parseCertificates(r.chain[0])[0];
    assert.ok(leaf.notAfter.getTime() - leaf.notBefore.getTime() <= 30 * 60_000 + 1000);
    const bad = await handleCsr({ address: c.address, root: c.root }, { csr_pem: csr });
    assert.ok(!bad.ok && bad.code === UNAUTHENTICATED);
  });
});

Deno.test("--sign-ca-certs allows a CA certificate whose chain verifies", async () => {
  await withCa({ signCaCerts: true }, async (_ca, c) => {
    const token = await c.token("system:serviceaccount:mesh-system:sub-ca");
    const r = await createCertificate(
      { address: c.address, root: c.root, token },
      (await csrFor("mesh-system", "sub-ca", { isCa: true })).csr,
      3600,
    );
    assert.ok(r.ok, JSON.stringify(r));
    assert.match(await opensslText(r.chain[0]), /CA:TRUE/);
  });
});

Deno.test("--custom-dns-names and --append-dns-names go into the identity's certificates", async () => {
  await withCa({
    customDnsNames: "sa1.ns1:api.example.com",
    appendDnsNames: true,
  }, async (_ca, c) => {
    let r = await createCertificate(
      { address: c.address, root: c.root, token: await c.token("system:serviceaccount:ns1:sa1") },
      (await csrFor("ns1", "sa1", { dns: ["api.example.com"] })).csr,
    );
    assert.ok(r.ok, JSON.stringify(r));
    assert.deepEqual(subjectAltNames(parseCertificates(r.chain[0])[0]).dns, ["api.example.com"]);
    r = await createCertificate(
      {
        address: c.address,
        root: c.root,
        token: await c.token(
          "system:serviceaccount:mesh-system:mesh-sidecar-injector-service-account",
        ),
      },
      (await csrFor("mesh-system", "mesh-sidecar-injector-service-account")).csr,
    );
    assert.ok(r.ok, JSON.stringify(r));
    assert.deepEqual(subjectAltNames(parseCertificates(r.chain[0])[0]).dns, [
      "mesh-sidecar-injector.mesh-system.svc",
      "mesh-sidecar-injector.mesh-system",
    ]);
  });
});

Deno.test("a restart with the same --local-storage-dir keeps the root; the key file is 0600 and never logged", async () => {
  await withTempDir(async (dir) => {
    const config = toConfig(
      caFlags({
        selfSignedCa: true,
        localStorageDir: dir,
        monitoringPort: 0,
        signingCert: "/x",
        signingKey: "/y",
      }),
    );
    const log = recordingLogger();
    const first = await start(config, { host: "127.0.0.1", grpcPort: 0, log });
    const root1 = first.ca().rootPem;
    await first.shutdown();
    const second = await start(config, { host: "127.0.0.1", grpcPort: 0, log });
    assert.equal(second.ca().rootPem, root1);
    await second.shutdown();
    assert.equal((await Deno.stat(`${dir}/ca-key.pem`)).mode! & 0o777, 0o600);
    const key = await Deno.readTextFile(`${dir}/ca-key.pem`);
    const keyLine = key.split("\n")[1];
    const all = log.lines.join("\n");
    assert.ok(!all.includes("PRIVATE KEY") && !all.includes(keyLine));
    assert.match(all, /--self-signed-ca is set: --signing-cert, --signing-key ignored/);
    assert.match(all, /using the self-signed root kept in directory/);
  });
});

/**
 * The signing handlers of an EC CA whose token reviews answer `review`: a function that makes a
 * call of CreateCertificate, and the error reasons and certificates the handlers count.
 */
async function handlersFor(review: () => Promise<TokenReviewResult>) {
  const ca = new CertAuthority(
    await loadCaMaterial(await createSelfSignedCa({ org: "o", ttlMs: HOUR, key: { kind: "ec" } })),
    { maxTtlMs: HOUR },
  );
  const errors: string[] = [];
  const issued: string[] = [];
  const handlers = signingHandlers({
    host: "127.0.0.1",
    port: 0,
    tls: { cert: "", key: "", ca: "" },
    ca: () => ca,
    auth: createAuthenticator({ ca: () => ca, tokenReview: review, tokenCacheMs: 1000 }),
    policy: {
      workloadTtlMs: HOUR,
      maxTtlMs: HOUR,
      signCaCerts: false,
      dns: { custom: new Map(), appendWebhookNames: false, systemNamespace: "mesh-system" },
    },
    metrics: {
      request() {},
      error: (_m, reason) => errors.push(reason),
      issued: (m) => issued.push(m),
    },
    log: recordingLogger(),
  });
  const { csr } = await csrFor("ns", "sa");
  const path = `/${CERTIFICATE_SERVICE}/CreateCertificate`;
  const body = Buffer.from(encodeMeshCertificateRequest({ csr, validityDuration: 600 }));
  /** A call of CreateCertificate with a bearer token, its request sent. */
  const call = () => {
    const c = recordingCall(path, [["authorization", "Bearer t"]]);
    handlers.get(path)!(c.call);
    c.call.onMessage(body);
    c.call.onEnd();
    return c;
  };
  return { call, errors, issued };
}

const ACCEPTED: TokenReviewResult = {
  authenticated: true,
  username: "system:serviceaccount:ns:sa",
};
const REFUSED: TokenReviewResult = { authenticated: false, error: "token expired" };

Deno.test("a signed certificate's trailers are queued with its answer, before the answer is written (one write, not two)", async () => {
  const { call } = await handlersFor(() => Promise.resolve(ACCEPTED));
  const { events, sent, written } = call();
  await sent; // signed
  await new Promise((r) => setTimeout(r, 0));
  // The write of the answer has not completed: the trailers were queued anyway.
  assert.deepEqual(events, ["send 1", "end 0"]);
  written();
});

Deno.test("a call cancelled while its token is reviewed is sent nothing, and its refusal is not counted", async () => {
  const until = async (what: string, ok: () => boolean) => {
    for (let i = 0; !ok(); i++) {
      if (i > 1000) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  for (const answer of [ACCEPTED, REFUSED]) {
    let decide!: () => void;
    const { call, errors, issued } = await handlersFor(() =>
      new Promise((r) => decide = () => r(answer))
    );
    const gone = call();
    gone.call.onCancel("RST_STREAM"); // the client gave up before the review answered
    decide();
    // a call that stays, with the same answer: once it is answered, so was the first
    const kept = call();
    decide(); // (an accepted token is cached: then nothing waits for this)
    await until(
      "the second call's answer",
      () => kept.events.some((e) => e.startsWith(answer.authenticated ? "end 0" : "end 16 ")),
    );
    await until("both certificates", () => issued.length === (answer.authenticated ? 2 : 0));
    await new Promise((r) => setTimeout(r, 0));
    assert.deepEqual(gone.events, [], JSON.stringify(answer));
    assert.deepEqual(errors, answer.authenticated ? [] : ["bad-token"], "the second call's");
  }
});

import assert from "node:assert/strict";
import {
  CertAuthority,
  createSelfSignedCa,
  decodePem,
  encodePem,
  loadCaMaterial,
  selectSigningBackend,
  spiffeId,
} from "../../lib/pki/mod.ts";
import { csrFor, opensslVerify } from "./_testutil.ts";
import { CallError, createAuthenticator, signForCaller } from "./signer.ts";

async function ca() {
  return new CertAuthority(
    await loadCaMaterial(await createSelfSignedCa({ org: "o", ttlMs: 3.6e6, key: { kind: "ec" } })),
    { maxTtlMs: 3.6e6 },
  );
}

Deno.test("authenticate() reviews a token once per cache period, then again", async () => {
  const c = await ca();
  let clock = 1_000_000;
  let reviews = 0;
  const auth = createAuthenticator({
    ca: () => c,
    tokenReview: (token) => {
      reviews++;
      return Promise.resolve(
        token === "good"
          ? { authenticated: true, username: "system:serviceaccount:ns:sa" }
          : { authenticated: false, error: "nope" },
      );
    },
    tokenCacheMs: 1000,
    now: () => clock,
  });
  const who = await auth.authenticate({ bearer: "good" });
  assert.equal(who.identity, "spiffe://cluster.local/ns/ns/sa/sa");
  await auth.authenticate({ bearer: "good" });
  assert.equal(reviews, 1);
  clock += 1001;
  await auth.authenticate({ bearer: "good" });
  assert.equal(reviews, 2);
  // Refusals are not remembered.
  await assert.rejects(auth.authenticate({ bearer: "bad" }), (e: CallError) => e.code === 16);
  await assert.rejects(auth.authenticate({ bearer: "bad" }), (e: CallError) => e.code === 16);
  assert.equal(reviews, 4);
  await assert.rejects(
    auth.authenticate({}),
    /no client certificate issued by this CA and no bearer token/,
  );
});

for (const backend of ["openssl", "webcrypto"] as const) {
  Deno.test(`signForCaller() with the ${backend} backend signs a good CSR and refuses one with a bad signature: INVALID_ARGUMENT`, async () => {
    const c = new CertAuthority(
      await loadCaMaterial(
        await createSelfSignedCa({ org: "o", ttlMs: 3.6e6, key: { kind: "ec" } }),
      ),
      { maxTtlMs: 3.6e6, backend: selectSigningBackend(backend) },
    );
    const caller = {
      identity: spiffeId("ns", "sa"),
      namespace: "ns",
      serviceAccount: "sa",
      via: "jwt" as const,
    };
    const policy = {
      workloadTtlMs: 3.6e6,
      maxTtlMs: 3.6e6,
      signCaCerts: false,
      dns: { custom: new Map(), appendWebhookNames: false, systemNamespace: "mesh-system" },
    };
    for (const key of [{ kind: "rsa", bits: 2048 } as const, { kind: "ec" } as const]) {
      const { csr } = await csrFor("ns", "sa", { key });
      const issued = await signForCaller(c, caller, csr, 0, policy);
      assert.match(await opensslVerify(issued.chain), /leaf\.pem: OK$/);
      const der = decodePem(csr)[0].der;
      der[der.length - 1] ^= 0x01;
      await assert.rejects(
        signForCaller(c, caller, encodePem("CERTIFICATE REQUEST", der), 0, policy),
        (e: CallError) =>
          e.code === 3 && e.reason === "bad-csr" &&
          e.message === "CSR parsing error (CSR signature does not verify)",
      );
    }
  });
}

import assert from "node:assert/strict";
import { CertAuthority, createSelfSignedCa, loadCaMaterial } from "../../lib/pki/mod.ts";
import { CallError, createAuthenticator } from "./signer.ts";

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

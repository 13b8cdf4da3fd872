import assert from "node:assert/strict";
import { startFakeKube } from "./fake_kube.ts";
import { FAKE_TOKEN_ISSUER } from "./fake_kube_tokenrequest.ts";

const body = (spec: Record<string, unknown>) =>
  JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec });

Deno.test("fake TokenRequest issues a service account JWT that TokenReview accepts, and refuses what the API server refuses", async () => {
  await using kube = await startFakeKube({ namespaces: ["shop"] });
  const url = `${kube.url}/api/v1/namespaces/shop/serviceaccounts/web/token`;
  const post = (u: string, b: string) =>
    fetch(u, { method: "POST", body: b, headers: { "content-type": "application/json" } });
  const missing = await post(url, body({}));
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).message, 'serviceaccounts "web" not found');
  kube.upsert({
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "web", namespace: "shop" },
  });
  const short = await post(url, body({ expirationSeconds: 60 }));
  assert.equal(short.status, 422);
  assert.match((await short.json()).message, /may not specify a duration less than 10 minutes/);
  const ok = await post(url, body({ audiences: ["mesh"], expirationSeconds: 900 }));
  assert.equal(ok.status, 201);
  const tr = await ok.json();
  assert.equal(tr.kind, "TokenRequest");
  const claims = JSON.parse(
    atob(tr.status.token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")),
  );
  assert.equal(claims.sub, "system:serviceaccount:shop:web");
  assert.deepEqual(claims.aud, ["mesh"]);
  assert.equal(claims.iss, FAKE_TOKEN_ISSUER);
  assert.equal(claims.exp - claims.iat, 900);
  const review = await post(
    `${kube.url}/apis/authentication.k8s.io/v1/tokenreviews`,
    JSON.stringify({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      spec: { token: tr.status.token },
    }),
  );
  assert.equal((await review.json()).status.user.username, "system:serviceaccount:shop:web");
});

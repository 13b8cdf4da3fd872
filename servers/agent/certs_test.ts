import assert from "node:assert/strict";
import { identityOfToken, loadWorkloadCert, renewAt } from "./certs.ts";
import { withTempDir } from "../../tests/harness/procs.ts";

const b64url = (o: unknown) =>
  btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");

Deno.test("identityOfToken() turns a service-account subject into a SPIFFE ID", async () => {
  const jwt = (sub: unknown) => `${b64url({ alg: "none" })}.${b64url({ sub })}.sig`;
  assert.equal(
    await identityOfToken(jwt("system:serviceaccount:shop:web")),
    "spiffe://cluster.local/ns/shop/sa/web",
  );
  await assert.rejects(
    identityOfToken(jwt("alice")),
    /subject "alice" is not system:serviceaccount/,
  );
  await assert.rejects(identityOfToken("not-a-jwt"), /is not a JWT/);
});

Deno.test("renewAt() is half-way through the certificate's life", () => {
  const c = { notBefore: new Date(1000), notAfter: new Date(5000) };
  assert.equal(renewAt(c), 3000);
});

Deno.test("loadWorkloadCert() needs all three files, parseable", async () => {
  await withTempDir(async (dir) => {
    assert.equal(await loadWorkloadCert(dir), undefined);
    for (const f of ["cert-chain.pem", "key.pem", "root-cert.pem"]) {
      await Deno.writeTextFile(`${dir}/${f}`, "garbage");
    }
    assert.equal(await loadWorkloadCert(dir), undefined);
  });
});

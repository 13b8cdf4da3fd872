import assert from "node:assert/strict";
import { makeTestPki } from "../../tests/harness/certs.ts";
import { checkMeshCerts, type MeshCerts } from "./certs.ts";

Deno.test("checkMeshCerts() accepts a matching set and names the file of a bad or mismatched one", async () => {
  const pki = await makeTestPki();
  try {
    const a = await pki.issue("a");
    const b = await pki.issue("b");
    const read = Deno.readTextFile;
    const good: MeshCerts = {
      certChain: await read(a.cert),
      key: await read(a.key),
      root: await read(pki.caCert),
    };
    await checkMeshCerts(good, "/certs");
    await assert.rejects(
      checkMeshCerts({ ...good, key: await read(b.key) }, "/certs"),
      /\/certs\/key\.pem is not the key of the certificate in \/certs\/cert-chain\.pem/,
    );
    await assert.rejects(
      checkMeshCerts({ ...good, root: good.root.slice(0, 100) }, "/certs"),
      /Invalid \/certs\/root-cert\.pem: no complete PEM certificate/,
    );
    await assert.rejects(
      checkMeshCerts({ ...good, key: good.key.slice(0, 60) }, "/certs"),
      /Invalid \/certs\/key\.pem: not a PEM private key/,
    );
  } finally {
    await pki.remove();
  }
});

import assert from "node:assert/strict";
import { ECDSA_P256, exportPrivateKey, importPrivateKey, RSA_SHA256 } from "./pem.ts";

/** A private key made by `openssl <command> -out <file> <args>`, as PEM text. */
async function opensslKey(command: string, ...args: string[]): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-pem-test-" });
  try {
    const out = await new Deno.Command("openssl", { args: [command, "-out", `${dir}/k`, ...args] })
      .output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return await Deno.readTextFile(`${dir}/k`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("importPrivateKey() reads PKCS#1, SEC 1 and PKCS#8 keys into signing keys", async () => {
  const pkcs1 = await opensslKey("genrsa", "-traditional", "2048");
  const sec1 = await opensslKey("ecparam", "-name", "prime256v1", "-genkey", "-noout");
  assert.match(pkcs1, /BEGIN RSA PRIVATE KEY/);
  assert.match(sec1, /BEGIN EC PRIVATE KEY/);
  for (const [pem, alg] of [[pkcs1, RSA_SHA256], [sec1, ECDSA_P256]] as const) {
    const key = await importPrivateKey(pem);
    assert.equal(key.algorithm.name, alg.name);
    assert.deepEqual(key.usages, ["sign"]);
    const again = await importPrivateKey(await exportPrivateKey(key)); // PKCS#8
    assert.equal(await exportPrivateKey(again), await exportPrivateKey(key));
    const data = new Uint8Array(32);
    assert.ok((await crypto.subtle.sign(alg, again, data)).byteLength > 0);
  }
});

Deno.test("importPrivateKey() refuses other curves and key types naming them, and bad blocks", async () => {
  await assert.rejects(
    importPrivateKey(await opensslKey("ecparam", "-name", "secp384r1", "-genkey", "-noout")),
    /only curve P-256 is supported, not secp384r1/,
  );
  await assert.rejects(
    importPrivateKey(await opensslKey("genpkey", "-algorithm", "ed25519")),
    /unsupported private key type ed25519/,
  );
  await assert.rejects(
    importPrivateKey(
      "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----",
    ),
    /unsupported private key block "ENCRYPTED PRIVATE KEY"/,
  );
  await assert.rejects(
    importPrivateKey("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"),
    /^PkiError: cannot import private key/,
  );
  await assert.rejects(importPrivateKey("nothing"), /no PRIVATE KEY PEM block/);
});

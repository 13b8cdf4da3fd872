import assert from "node:assert/strict";
import {
  createCsr,
  encodePem,
  generateKeyPair,
  type KeySpec,
  OpenSslError,
  parseCsr,
  PkiError,
  selectSigningBackend,
  type SigningBackend,
  spiffeId,
  webCryptoBackend,
} from "./mod.ts";
import { loadOpenSsl } from "./openssl_ffi.ts";

/** Loaded outside the tests: libcrypto stays loaded for the process (the resource sanitizer). */
const openssl = selectSigningBackend("openssl");
const BACKENDS: SigningBackend[] = [webCryptoBackend, openssl];
const KEYS: KeySpec[] = [{ kind: "rsa", bits: 2048 }, { kind: "ec" }];
const label = (k: KeySpec) => k.kind === "rsa" ? "RSA-2048" : "ECDSA P-256";

Deno.test("auto picks OpenSSL here (libcrypto is installed); webcrypto is Deno's", () => {
  assert.equal(selectSigningBackend("auto").name, "openssl");
  assert.match(
    selectSigningBackend("auto").description,
    /^openssl \(libcrypto\.so\.3 through FFI\)$/,
  );
  assert.equal(selectSigningBackend("webcrypto"), webCryptoBackend);
});

Deno.test("--signing-backend openssl without a loadable libcrypto is one clear line; auto falls back to WebCrypto saying why", () => {
  const libraries = ["/nonexistent/libcrypto.so.3"];
  assert.throws(
    () => selectSigningBackend("openssl", { libraries }),
    (e: Error) =>
      e instanceof PkiError && !e.message.includes("\n") &&
      /^--signing-backend openssl: cannot load OpenSSL libcrypto \(\/nonexistent\/libcrypto\.so\.3: .*No such file/
        .test(e.message),
  );
  const fallback = selectSigningBackend("auto", { libraries });
  assert.equal(fallback.name, "webcrypto");
  assert.match(fallback.description, /OpenSSL not used: cannot load OpenSSL libcrypto/);
  // A library that loads but is not OpenSSL 3 (no EVP_PKEY_get_size...) is refused the same way.
  assert.throws(
    () => loadOpenSsl({ libraries: ["libc.so.6"] }),
    (e: Error) => e instanceof OpenSslError && /libc\.so\.6: .*EVP_|symbol/.test(e.message),
  );
});

for (const ca of KEYS) {
  Deno.test(`${label(ca)} CA key: each backend's signatures verify with the other backend; tampered data does not`, async () => {
    const keys = await generateKeyPair(ca);
    const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
    const data = crypto.getRandomValues(new Uint8Array(500));
    const other = data.slice();
    other[7] ^= 1;
    for (const signer of BACKENDS) {
      const sig = await (await signer.signer(keys.privateKey)).sign(data);
      if (ca.kind === "ec") assert.equal(sig[0], 0x30, "ECDSA signatures are DER SEQUENCEs");
      else assert.equal(sig.length, 256);
      for (const verifier of BACKENDS) {
        const kind = ca.kind;
        const what = `${signer.name} -> ${verifier.name}`;
        assert.equal(await verifier.verify(spki, kind, "SHA-256", sig, data), true, what);
        assert.equal(await verifier.verify(spki, kind, "SHA-256", sig, other), false, what);
      }
    }
  });
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: CSRs (RSA and P-256 keys) parse; a flipped signature bit or a foreign key is refused`, async () => {
    for (const key of KEYS) {
      const keys = await generateKeyPair(key);
      const id = spiffeId("ns", "sa");
      const good = await createCsr({ keys, uris: [id] });
      const info = await parseCsr(good, backend);
      assert.deepEqual(info.uris, [id]);
      assert.equal(info.keyType, key.kind === "rsa" ? "RSA-2048" : "ECDSA-P-256");
      const der = Uint8Array.fromBase64(
        good.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, ""),
      );
      // The signature is the end of the DER: flip one bit of its last byte.
      const bad = der.slice();
      bad[bad.length - 1] ^= 0x01;
      await assert.rejects(
        parseCsr(encodePem("CERTIFICATE REQUEST", bad), backend),
        (e: Error) => e instanceof PkiError && /CSR signature does not verify/.test(e.message),
        `${label(key)} CSR with a flipped signature bit`,
      );
    }
    // A CSR signed with another key than the one it carries.
    const [a, b] = [await generateKeyPair({ kind: "ec" }), await generateKeyPair({ kind: "ec" })];
    const csr = await createCsr({ keys: { privateKey: b.privateKey, publicKey: a.publicKey } });
    await assert.rejects(parseCsr(csr, backend), /CSR signature does not verify/);
  });
}

Deno.test("OpenSSL: closing a key while signatures are in flight lets them finish, then frees it; later signs fail", async () => {
  const ssl = loadOpenSsl();
  const before = ssl.liveKeys();
  const keys = await generateKeyPair({ kind: "rsa", bits: 2048 });
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const der = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const key = ssl.privateKey(der);
  assert.ok(der.every((b) => b === 0), "the private key bytes are wiped once loaded");
  assert.equal(ssl.liveKeys(), before + 1);
  const data = new TextEncoder().encode("tbs");
  const inFlight = Array.from({ length: 16 }, () => key.sign(data));
  key.close();
  assert.equal(ssl.liveKeys(), before + 1, "not freed while signatures are in flight");
  for (const sig of await Promise.all(inFlight)) {
    assert.equal(await ssl.verify(spki, "SHA-256", sig, data), true);
  }
  assert.equal(ssl.liveKeys(), before, "freed once the last one finished");
  await assert.rejects(key.sign(data), /the signing key was closed/);
  key.close(); // idempotent
  assert.equal(ssl.liveKeys(), before);
});

Deno.test("OpenSSL: unreadable key and public-key material is an error that quotes no key bytes", async () => {
  const ssl = loadOpenSsl();
  const junk = crypto.getRandomValues(new Uint8Array(64));
  assert.throws(
    () => ssl.privateKey(junk.slice()),
    /^OpenSslError: OpenSSL cannot read the private key$/,
  );
  await assert.rejects(
    ssl.verify(Uint8Array.of(0x30, 0x03, 0x02, 0x01, 0x00), "SHA-256", junk, junk),
    /malformed public key/,
  );
  const keys = await generateKeyPair({ kind: "ec" });
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  spki[spki.length - 1] ^= 0x01; // no longer a point of the curve
  await assert.rejects(ssl.verify(spki, "SHA-256", junk, junk), /invalid EC public key/);
  await assert.rejects(ssl.verify(spki, "MD5", junk, junk), /unsupported hash MD5/);
});

Deno.test("OpenSSL: keys dropped without close() (a rotated CA) are freed by the garbage collector", async () => {
  // A child with --expose-gc: create keys, sign with them, drop them, collect, count.
  const code = `
    import { loadOpenSsl } from ${
    JSON.stringify(new URL("./openssl_ffi.ts", import.meta.url).href)
  };
    const ssl = loadOpenSsl();
    const keys = await crypto.subtle.generateKey(
      { name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
    const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
    for (let i = 0; i < 50; i++) await ssl.privateKey(pkcs8.slice()).sign(Uint8Array.of(i));
    const made = ssl.liveKeys();
    for (let i = 0; i < 50 && ssl.liveKeys() > 0; i++) {
      globalThis.gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    console.log(made, ssl.liveKeys());
  `;
  const o = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc", code],
  }).output();
  const td = new TextDecoder();
  assert.ok(o.success, td.decode(o.stderr));
  const [made, left] = td.decode(o.stdout).trim().split(" ").map(Number);
  assert.ok(made > 0, "keys are alive before the collection");
  assert.equal(left, 0);
});

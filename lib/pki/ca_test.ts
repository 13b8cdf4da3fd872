import assert from "node:assert/strict";
import {
  CertAuthority,
  createCsr,
  createSelfSignedCa,
  dnsNamesFor,
  generateKeyPair,
  importPrivateKey,
  loadCaMaterial,
  parseCertificates,
  parseCsr,
  parseCustomDnsNames,
  parseSpiffeId,
  PkiError,
  selectSigningBackend,
  spiffeId,
  subjectAltNames,
  webCryptoBackend,
  writeFileAtomic,
} from "./mod.ts";

const HOUR = 3_600_000;
/** Loaded outside the tests: libcrypto stays loaded for the process (the resource sanitizer). */
const BACKENDS = [webCryptoBackend, selectSigningBackend("openssl")];

async function openssl(args: string[], stdin?: string): Promise<{ ok: boolean; out: string }> {
  const p = new Deno.Command("openssl", {
    args,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = p.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const o = await p.output();
  const td = new TextDecoder();
  return { ok: o.success, out: td.decode(o.stdout) + td.decode(o.stderr) };
}

/** `openssl verify -CAfile root [-untrusted intermediates] leaf` on an issued chain. */
async function opensslVerify(chain: string[]): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-pki-test-" });
  try {
    await Deno.writeTextFile(`${dir}/root.pem`, chain[chain.length - 1]);
    await Deno.writeTextFile(`${dir}/leaf.pem`, chain[0]);
    const mid = chain.slice(1, -1).join("");
    const args = ["verify", "-CAfile", `${dir}/root.pem`];
    if (mid) {
      await Deno.writeTextFile(`${dir}/mid.pem`, mid);
      args.push("-untrusted", `${dir}/mid.pem`);
    }
    const r = await openssl([...args, `${dir}/leaf.pem`]);
    return r.out.trim();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** `openssl req` key options: RSA 2048 and EC P-256 keys. */
const NEW_KEY = {
  rsa: ["-newkey", "rsa:2048"],
  ec: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
};

/** A CSR made by `openssl req` for a new key (`keyArgs`), subject O=test, with the SAN if given. */
async function opensslCsr(keyArgs: string[], san?: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-pki-test-" });
  try {
    const r = await openssl([
      "req",
      "-new",
      ...keyArgs,
      "-nodes",
      "-keyout",
      `${dir}/k.pem`,
      "-subj",
      "/O=test",
      ...(san ? ["-addext", `subjectAltName=${san}`] : []),
      "-out",
      `${dir}/csr.pem`,
    ]);
    assert.ok(r.ok, r.out);
    return await Deno.readTextFile(`${dir}/csr.pem`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

for (const kind of ["rsa", "ec"] as const) {
  for (const backend of BACKENDS) {
    Deno.test(`CertAuthority.issue() with a self-signed ${kind} root and the ${backend.name} backend signs openssl CSRs (RSA and EC) that openssl verify accepts`, async () => {
      const key = kind === "rsa" ? { kind, bits: 2048 } : { kind };
      const ca = new CertAuthority(
        await loadCaMaterial(
          await createSelfSignedCa({ org: "orch.cluster.local", ttlMs: 24 * HOUR, key }),
        ),
        { maxTtlMs: 2 * HOUR, backend },
      );
      await ca.ready();
      assert.equal(ca.backend.name, backend.name);
      for (const csrKind of ["rsa", "ec"] as const) {
        const id = spiffeId("ns1", "sa1");
        const csr = await ca.parseCsr(await opensslCsr(NEW_KEY[csrKind], `URI:${id}`));
        assert.deepEqual(csr.uris, [id]);
        assert.equal(csr.keyType, csrKind === "rsa" ? "RSA-2048" : "ECDSA-P-256");
        const issued = await ca.issue({
          publicKey: csr.publicKey,
          uris: [id],
          dns: ["a.b.svc"],
          ttlMs: HOUR,
        });
        assert.equal(issued.chain.length, 2);
        assert.match(await opensslVerify(issued.chain), /leaf\.pem: OK$/);
        const [leaf] = parseCertificates(issued.certPem);
        assert.deepEqual(subjectAltNames(leaf).uris, [id]);
        assert.deepEqual(subjectAltNames(leaf).dns, ["a.b.svc"]);
        assert.equal(leaf.notAfter.getTime() - leaf.notBefore.getTime() <= HOUR + 1000, true);
        const text = (await openssl(["x509", "-noout", "-text"], issued.certPem)).out;
        assert.match(text, /CA:FALSE/);
        assert.match(text, /TLS Web Server Authentication, TLS Web Client Authentication/);
      }
    });
  }
}

/** A CA over a self-signed EC root of `org` valid `ttlMs`, issuing for at most `maxTtlMs`. */
async function selfSignedEcCa(org: string, ttlMs: number, maxTtlMs: number) {
  const material = await loadCaMaterial(
    await createSelfSignedCa({ org, ttlMs, key: { kind: "ec" } }),
  );
  return new CertAuthority(material, { maxTtlMs });
}

Deno.test("CertAuthority.issue() refuses a TTL above the maximum, naming both", async () => {
  const ca = await selfSignedEcCa("o", 24 * HOUR, 2 * HOUR);
  const keys = await generateKeyPair({ kind: "ec" });
  await assert.rejects(
    ca.issue({ publicKey: keys.publicKey, uris: [spiffeId("a", "b")], ttlMs: 3 * HOUR }),
    (e: Error) =>
      e instanceof PkiError &&
      /requested TTL 3h0m0s is greater than the max allowed TTL 2h0m0s/.test(e.message),
  );
});

Deno.test("CertAuthority.issue() ends no later than the signing certificate", async () => {
  const ca = await selfSignedEcCa("o", HOUR, 10 * HOUR);
  const keys = await generateKeyPair({ kind: "ec" });
  const issued = await ca.issue({
    publicKey: keys.publicKey,
    uris: [spiffeId("a", "b")],
    ttlMs: 5 * HOUR,
  });
  assert.ok(issued.notAfter.getTime() <= ca.notAfter.getTime());
});

Deno.test("an intermediate CA issued with isCa signs leaves that verify through the chain", async () => {
  const rootCa = await selfSignedEcCa("root", 24 * HOUR, 24 * HOUR);
  const keys = await generateKeyPair({ kind: "ec" });
  const csr = await parseCsr(
    await createCsr({ keys, uris: [spiffeId("sys", "ca")], isCa: true, org: "mid" }),
  );
  assert.equal(csr.isCa, true);
  const mid = await rootCa.issue({
    publicKey: csr.publicKey,
    uris: csr.uris,
    ttlMs: 12 * HOUR,
    isCa: true,
    subject: "O=mid",
  });
  const { exportPrivateKey } = await import("./pem.ts");
  const midCa = new CertAuthority(
    await loadCaMaterial({
      signingCert: mid.certPem,
      signingKey: await exportPrivateKey(keys.privateKey),
      certChain: mid.chain.slice(1).join(""),
      rootCert: rootCa.rootPem,
    }),
    { maxTtlMs: HOUR },
  );
  const leafKeys = await generateKeyPair({ kind: "rsa", bits: 2048 });
  const leaf = await midCa.issue({
    publicKey: leafKeys.publicKey,
    uris: [spiffeId("x", "y")],
    ttlMs: HOUR,
  });
  assert.equal(leaf.chain.length, 3);
  assert.match(await opensslVerify(leaf.chain), /leaf\.pem: OK$/);
});

Deno.test("loadCaMaterial() accepts openssl keys (PKCS#1, SEC 1) and names what is inconsistent", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-pki-test-" });
  try {
    const mk = async (name: string, keyArgs: (out: string) => string[]) => {
      assert.ok((await openssl([...keyArgs(`${dir}/${name}.key`)])).ok);
      const r = await openssl([
        "req",
        "-x509",
        "-new",
        "-key",
        `${dir}/${name}.key`,
        "-subj",
        `/O=${name}`,
        "-days",
        "2",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-out",
        `${dir}/${name}.pem`,
      ]);
      assert.ok(r.ok, r.out);
      return {
        cert: await Deno.readTextFile(`${dir}/${name}.pem`),
        key: await Deno.readTextFile(`${dir}/${name}.key`),
      };
    };
    const ec = await mk(
      "ec",
      (o) => ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", o],
    );
    assert.match(ec.key, /BEGIN EC PRIVATE KEY/);
    const rsa = await mk("rsa", (o) => ["genrsa", "-traditional", "-out", o, "2048"]);
    assert.match(rsa.key, /BEGIN RSA PRIVATE KEY/);
    for (const m of [ec, rsa]) {
      const loaded = await loadCaMaterial({
        signingCert: m.cert,
        signingKey: m.key,
        certChain: "",
        rootCert: m.cert,
      });
      assert.equal(loaded.root.subject, loaded.signingCert.subject);
    }
    await assert.rejects(
      loadCaMaterial({
        signingCert: ec.cert,
        signingKey: rsa.key,
        certChain: "",
        rootCert: ec.cert,
      }),
      /signing key does not match the signing certificate/,
    );
    await assert.rejects(
      loadCaMaterial({
        signingCert: ec.cert,
        signingKey: ec.key,
        certChain: "",
        rootCert: rsa.cert,
      }),
      /certificate chain does not lead to the root certificate: "O=ec" is not signed by "O=rsa"/,
    );
    await assert.rejects(
      loadCaMaterial({ signingCert: "junk", signingKey: ec.key, certChain: "", rootCert: ec.cert }),
      /signing certificate: no CERTIFICATE PEM block/,
    );
    await assert.rejects(importPrivateKey("nothing"), /no PRIVATE KEY PEM block/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseCsr() refuses garbage, a bad signature and small RSA keys (default backend)", async () => {
  await assert.rejects(parseCsr("hello"), /want one CERTIFICATE REQUEST PEM block, found 0/);
  await assert.rejects(
    parseCsr("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"),
    /malformed CSR/,
  );
  await assert.rejects(
    parseCsr(await opensslCsr(["-newkey", "rsa:1024"])),
    /RSA 1024 bits, want at least 2048/,
  );
  // Flip a byte of the signature (the end of the DER).
  const keys = await generateKeyPair({ kind: "ec" });
  const good = await createCsr({ keys, uris: [spiffeId("a", "b")] });
  const b64 = good.split("\n").filter((l) => l && !l.startsWith("-----")).join("");
  const der = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  der[der.length - 3] ^= 0xff;
  const { encodePem } = await import("./pem.ts");
  await assert.rejects(parseCsr(encodePem("CERTIFICATE REQUEST", der)), /signature/);
});

Deno.test("spiffeId() and parseSpiffeId() round-trip; other trust domains are not ours", () => {
  assert.equal(spiffeId("ns", "sa"), "spiffe://cluster.local/ns/ns/sa/sa");
  assert.deepEqual(parseSpiffeId("spiffe://cluster.local/ns/a/sa/b"), {
    namespace: "a",
    serviceAccount: "b",
  });
  assert.equal(parseSpiffeId("spiffe://other/ns/a/sa/b"), undefined);
  assert.equal(parseSpiffeId("spiffe://cluster.local/ns/a"), undefined);
});

Deno.test("parseCustomDnsNames() and dnsNamesFor() follow --custom-dns-names and --append-dns-names", () => {
  const custom = parseCustomDnsNames(
    "sa1.ns1:foo.example.com, sa1.ns1:bar.example.com,sa2.ns2:x.y",
  );
  assert.deepEqual(
    dnsNamesFor("ns1", "sa1", {
      custom,
      appendWebhookNames: false,
      systemNamespace: "mesh-system",
    }),
    [
      "foo.example.com",
      "bar.example.com",
    ],
  );
  assert.deepEqual(
    dnsNamesFor("mesh-system", "mesh-sidecar-injector-service-account", {
      custom,
      appendWebhookNames: true,
      systemNamespace: "mesh-system",
    }),
    ["mesh-sidecar-injector.mesh-system.svc", "mesh-sidecar-injector.mesh-system"],
  );
  assert.deepEqual(
    dnsNamesFor("mesh-system", "mesh-sidecar-injector-service-account", {
      custom,
      appendWebhookNames: false,
      systemNamespace: "mesh-system",
    }),
    [],
  );
  assert.throws(() => parseCustomDnsNames("nodot:foo"), /bad entry "nodot:foo"/);
  assert.throws(() => parseCustomDnsNames("a.b:bad_name!"), /bad DNS name "bad_name!"/);
});

Deno.test("writeFileAtomic() writes key files with mode 0600 and leaves no temporary file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-pki-test-" });
  try {
    await writeFileAtomic(`${dir}/sub/key.pem`, "secret");
    await writeFileAtomic(`${dir}/sub/key.pem`, "secret2");
    assert.equal((await Deno.stat(`${dir}/sub/key.pem`)).mode! & 0o777, 0o600);
    assert.equal(await Deno.readTextFile(`${dir}/sub/key.pem`), "secret2");
    assert.deepEqual([...Deno.readDirSync(`${dir}/sub`)].map((e) => e.name), ["key.pem"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseCsr() reads openssl CSRs by hand as the generic parser does; P-384 keys are refused naming the curve", async () => {
  const id = spiffeId("ns", "sa");
  for (const kind of ["rsa", "ec"] as const) {
    const pem = await opensslCsr(NEW_KEY[kind], `URI:${id},DNS:a.example.com`);
    const info = await parseCsr(pem);
    assert.deepEqual([info.uris, info.dns, info.isCa], [[id], ["a.example.com"], false]);
    // The public key is the CSR's SubjectPublicKeyInfo, byte for byte.
    const x509 = await import("../deps/x509.ts");
    const generic = new x509.Pkcs10CertificateRequest(pem);
    assert.deepEqual(info.publicKey, new Uint8Array(generic.publicKey.rawData));
  }
  await assert.rejects(
    parseCsr(await opensslCsr(["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:secp384r1"])),
    /EC curve P-384, want P-256/,
  );
});

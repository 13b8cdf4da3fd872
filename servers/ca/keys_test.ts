import assert from "node:assert/strict";
import { makeTestPki } from "../../tests/harness/certs.ts";
import { createCertificate, type TestIssuer, testIssuer } from "../../tests/harness/ca_client.ts";
import { waitUntil, withTempDir } from "../../tests/harness/procs.ts";
import { parseCertificates, spiffeId, subjectAltNames } from "../../lib/pki/mod.ts";
import { caFlags, csrFor, opensslVerify, recordingLogger, withCa } from "./_testutil.ts";
import type { CaConfig, CaFlags } from "./config.ts";
import { type CaHandle, start, toConfig } from "./mod.ts";

const HOUR = 3_600_000;

async function openssl(args: string[], cwd: string) {
  const o = await new Deno.Command("openssl", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  assert.ok(o.success, new TextDecoder().decode(o.stderr));
}

/** Root → intermediate (the signing CA) made with openssl. */
async function pluggedFiles(dir: string) {
  await openssl(
    ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "root-key.pem"],
    dir,
  );
  await openssl([
    "req",
    "-x509",
    "-new",
    "-key",
    "root-key.pem",
    "-subj",
    "/O=plug-root",
    "-days",
    "2",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
    "-out",
    "root-cert.pem",
  ], dir);
  await openssl(["genrsa", "-out", "ca-key.pem", "2048"], dir);
  await openssl(
    ["req", "-new", "-key", "ca-key.pem", "-subj", "/O=plug-mid", "-out", "ca.csr"],
    dir,
  );
  await Deno.writeTextFile(
    `${dir}/ext.cnf`,
    "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n",
  );
  await openssl([
    "x509",
    "-req",
    "-in",
    "ca.csr",
    "-CA",
    "root-cert.pem",
    "-CAkey",
    "root-key.pem",
    "-CAcreateserial",
    "-days",
    "1",
    "-extfile",
    "ext.cnf",
    "-out",
    "ca-cert.pem",
  ], dir);
  return {
    signingCert: `${dir}/ca-cert.pem`,
    signingKey: `${dir}/ca-key.pem`,
    certChain: `${dir}/ca-cert.pem`,
    rootCert: `${dir}/root-cert.pem`,
  };
}

Deno.test("plugged key material signs chains that openssl verifies up to the plugged root", async () => {
  await withTempDir(async (dir) => {
    const files = await pluggedFiles(dir);
    const issuer = await testIssuer();
    await Deno.writeTextFile(`${dir}/jwks.json`, JSON.stringify(issuer.jwks));
    const config = toConfig(
      caFlags({
        ...files,
        localStorageDir: `${dir}/state`,
        trustedJwks: `${dir}/jwks.json`,
        monitoringPort: 0,
      }),
    );
    const ca = await start(config, { host: "127.0.0.1", grpcPort: 0, log: recordingLogger() });
    try {
      const address = `127.0.0.1:${ca.addresses.grpc!.split(":")[1]}`;
      const root = await Deno.readTextFile(files.rootCert);
      const r = await createCertificate(
        { address, root, token: await issuer.token("system:serviceaccount:a:b") },
        (await csrFor("a", "b")).csr,
      );
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.chain.length, 3);
      assert.match(await opensslVerify(r.chain), /leaf\.pem: OK$/);
    } finally {
      await ca.shutdown();
    }
  });
});

Deno.test("plugged key material that is inconsistent stops the start with a message saying which", async () => {
  await withTempDir(async (dir) => {
    const files = await pluggedFiles(dir);
    const other = await makeTestPki();
    try {
      const cases: [Partial<typeof files>, RegExp][] = [
        [{ signingKey: other.caKey }, /signing key does not match the signing certificate/],
        [
          { rootCert: other.caCert },
          /certificate chain does not lead to the root certificate: "O=plug-mid" is not signed by "O=mesh-test, CN=mesh test root"/,
        ],
        [
          { signingCert: `${dir}/missing.pem` },
          /Cannot read --signing-cert ".*missing.pem": no such file/,
        ],
      ];
      for (const [over, want] of cases) {
        const config = toConfig(
          caFlags({ ...files, ...over, localStorageDir: dir, monitoringPort: 0 }),
        );
        await assert.rejects(
          start(config, { host: "127.0.0.1", grpcPort: 0, log: recordingLogger() }),
          want,
        );
      }
    } finally {
      await other.remove();
    }
  });
});

/** An upstream mesh_ca for a test: the handle, the JWT issuer it trusts and its gRPC address. */
interface Upstream {
  ca: CaHandle;
  issuer: TestIssuer;
  address: string;
}

/**
 * Runs `fn` with a self-signed upstream mesh_ca (flags `over`, see {@link withCa}) whose root is
 * in `dir/root.pem`, with a mesh-ca token in `dir/token` for the downstream CA.
 */
async function withUpstream(
  over: Partial<CaFlags>,
  fn: (up: Upstream, dir: string) => Promise<void>,
): Promise<void> {
  await withCa(over, async (ca, c) => {
    await Deno.writeTextFile(`${c.dir}/root.pem`, c.root);
    await Deno.writeTextFile(
      `${c.dir}/token`,
      await c.issuer.token("system:serviceaccount:mesh-system:mesh-ca"),
    );
    await fn({ ca, issuer: c.issuer, address: c.address }, c.dir);
  });
}

/** Asks the CA at `address` (rooted at `up`'s root) for an x/y workload certificate. */
async function workloadCert(up: Upstream, address: string, validitySeconds = 0) {
  return createCertificate(
    {
      address,
      root: up.ca.ca().rootPem,
      token: await up.issuer.token("system:serviceaccount:x:y"),
    },
    (await csrFor("x", "y")).csr,
    validitySeconds,
  );
}

/** The config of a CA (storage `dir/down`) whose signing certificate comes from `up`. */
function downstreamConfig(dir: string, up: Upstream, over: Partial<CaFlags>): CaConfig {
  return toConfig(
    caFlags({
      upstreamCaAddress: up.address,
      rootCert: `${dir}/root.pem`,
      localStorageDir: `${dir}/down`,
      monitoringPort: 0,
      ...over,
    }),
    { MESH_CA_UPSTREAM_TOKEN_FILE: `${dir}/token` },
  );
}

Deno.test("--upstream-ca-address gets this CA's signing certificate from an upstream mesh_ca; leaves verify through it", async () => {
  await withUpstream(
    { signCaCerts: true, maxWorkloadCertTtl: 48 * HOUR, workloadCertTtl: HOUR },
    async (up, dir) => {
      const upstream = up.ca;
      const down = await start(
        downstreamConfig(dir, up, {
          requestedCaCertTtl: 24 * HOUR,
          org: "downstream",
          trustedJwks: `${dir}/jwks.json`,
        }),
        { host: "127.0.0.1", grpcPort: 0, log: recordingLogger() },
      );
      try {
        const signing = down.ca().material.signingCert;
        assert.deepEqual(subjectAltNames(signing).uris, [spiffeId("mesh-system", "mesh-ca")]);
        assert.equal(down.ca().rootPem.trim(), upstream.ca().rootPem.trim());
        const address = `127.0.0.1:${down.addresses.grpc!.split(":")[1]}`;
        const r = await workloadCert(up, address);
        assert.ok(r.ok, JSON.stringify(r));
        assert.equal(r.chain.length, 3);
        assert.equal(parseCertificates(r.chain[1])[0].serialNumber, signing.serialNumber);
        assert.match(await opensslVerify(r.chain), /leaf\.pem: OK$/);
      } finally {
        await down.shutdown();
      }
    },
  );
});

Deno.test("an upstream that refuses CA certificates stops the start with its reason", async () => {
  await withUpstream({}, async (up, dir) => {
    const config = downstreamConfig(dir, up, { requestedCaCertTtl: HOUR });
    await assert.rejects(
      start(config, { host: "127.0.0.1", grpcPort: 0, log: recordingLogger() }),
      /Cannot get a CA certificate from the upstream CA: upstream CA .* refused the CSR \(status 7\): signing CA certificates is not allowed/,
    );
  });
});

Deno.test("an upstream-issued signing certificate is renewed before it expires and the API keeps serving", async () => {
  await withUpstream({ signCaCerts: true }, async (up, dir) => {
    const { ca: upstream, issuer } = up;
    const down = await start(
      downstreamConfig(dir, up, {
        requestedCaCertTtl: 4000,
        workloadCertMinGracePeriod: 0,
        trustedJwks: `${dir}/jwks.json`,
      }),
      { host: "127.0.0.1", grpcPort: 0, log: recordingLogger() },
    );
    try {
      assert.equal(down.ca().backend.name, "openssl");
      const first = down.ca().material.signingCert.serialNumber;
      const address = `127.0.0.1:${down.addresses.grpc!.split(":")[1]}`;
      // Calls keep arriving while the signing key is replaced: none may fail (the old key must
      // outlive the signatures in flight with it).
      const csr = (await csrFor("x", "y")).csr;
      const token = await issuer.token("system:serviceaccount:x:y");
      let renewed = false;
      const results: boolean[] = [];
      const load = Promise.all(Array.from({ length: 4 }, async () => {
        while (!renewed) {
          const r = await createCertificate(
            { address, root: upstream.ca().rootPem, token },
            csr,
            1,
          );
          results.push(r.ok);
        }
      }));
      try {
        await waitUntil(
          () => down.ca().material.signingCert.serialNumber !== first,
          30_000,
          "renewal",
        );
      } finally {
        renewed = true; // the load loops stop also when renewal never came (no hang)
        await load;
      }
      assert.ok(results.length > 0 && results.every((ok) => ok), JSON.stringify(results));
      const r = await workloadCert(up, address, 1);
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(
        parseCertificates(r.chain[1])[0].serialNumber,
        down.ca().material.signingCert.serialNumber,
      );
    } finally {
      await down.shutdown();
    }
  });
});

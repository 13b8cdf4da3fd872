/**
 * Throwaway PKI for tests, made with the real `openssl`: a root CA, and leaf certificates for
 * servers (SAN IP 127.0.0.1 and DNS localhost) and clients (optional SPIFFE URI SAN).
 * @module
 */

import assert from "node:assert/strict";

/** PEM files of a test PKI, all inside `dir`. */
export interface TestPki {
  dir: string;
  caCert: string;
  caKey: string;
  /** Issues a leaf; returns the paths of its certificate and key (PEM). */
  issue(name: string, opts?: { dns?: string[]; ips?: string[]; uris?: string[] }): Promise<{
    cert: string;
    key: string;
  }>;
  /** Removes the directory. */
  remove(): Promise<void>;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  const out = await new Deno.Command("openssl", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`openssl ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/** A TLS listener's options (`listenGrpc`): `leaf`'s certificate and key and `pki`'s root, as bytes. */
export function listenerTls(
  pki: TestPki,
  leaf: { cert: string; key: string },
): { cert: Uint8Array; key: Uint8Array; ca: Uint8Array } {
  const read = (p: string) => new TextEncoder().encode(Deno.readTextFileSync(p));
  return { cert: read(leaf.cert), key: read(leaf.key), ca: read(pki.caCert) };
}

/** Creates a root CA (EC P-256) in a new temp dir. */
export async function makeTestPki(): Promise<TestPki> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-pki-" });
  const caKey = `${dir}/ca-key.pem`;
  const caCert = `${dir}/ca.pem`;
  await openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", caKey], dir);
  await openssl([
    "req",
    "-x509",
    "-new",
    "-key",
    caKey,
    "-subj",
    "/O=mesh-test/CN=mesh test root",
    "-days",
    "2",
    "-out",
    caCert,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ], dir);
  let serial = 1;
  return {
    dir,
    caCert,
    caKey,
    async issue(name, opts = {}) {
      const key = `${dir}/${name}-key.pem`;
      const csr = `${dir}/${name}.csr`;
      const cert = `${dir}/${name}.pem`;
      const ext = `${dir}/${name}.ext`;
      const sans = [
        ...(opts.dns ?? ["localhost"]).map((d) => `DNS:${d}`),
        ...(opts.ips ?? ["127.0.0.1"]).map((i) => `IP:${i}`),
        ...(opts.uris ?? []).map((u) => `URI:${u}`),
      ];
      await Deno.writeTextFile(
        ext,
        `subjectAltName=${sans.join(",")}\nbasicConstraints=CA:FALSE\n` +
          `keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n`,
      );
      // genpkey writes PKCS#8, which every TLS stack here reads.
      await openssl(
        ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key],
        dir,
      );
      await openssl(["req", "-new", "-key", key, "-subj", `/CN=${name}`, "-out", csr], dir);
      await openssl([
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        caCert,
        "-CAkey",
        caKey,
        "-set_serial",
        String(serial++),
        "-days",
        "1",
        "-extfile",
        ext,
        "-out",
        cert,
      ], dir);
      return { cert, key };
    },
    remove: () => Deno.remove(dir, { recursive: true }),
  };
}

/** The SHA-256 fingerprint of the certificate a new TLS connection to `port` is served. */
export async function servedFingerprint(port: number): Promise<string> {
  const tls = await import("node:tls");
  return await new Promise((resolve, reject) => {
    const s = tls.connect({
      host: "127.0.0.1",
      port,
      servername: "localhost",
      rejectUnauthorized: false,
      ALPNProtocols: ["h2"],
    }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.destroy();
      resolve(fp);
    });
    s.on("error", reject);
  });
}

/**
 * Eight new TLS connections to `port` are each served `certFile` (with --workers, the kernel
 * spreads them over the workers: each must have the same certificate).
 */
export async function assertServed(port: number, certFile: string): Promise<void> {
  const want = await fingerprintOf(certFile);
  for (let i = 0; i < 8; i++) assert.equal(await servedFingerprint(port), want, `connection ${i}`);
}

/** The SHA-256 fingerprint of the certificate in `certFile` (PEM). */
export async function fingerprintOf(certFile: string): Promise<string> {
  const { X509Certificate } = await import("node:crypto");
  return new X509Certificate(await Deno.readTextFile(certFile)).fingerprint256;
}

/**
 * The certificate authority's core (reference: Istio 0.8 Citadel, §6.2): self-signed roots,
 * plugged key material checked as a bundle, CSR parsing and verification, and signing of
 * workload (and, when allowed, intermediate CA) certificates with SPIFFE URI SANs.
 * Uses @peculiar/x509 over WebCrypto (loaded lazily by the caller through `mod.ts`).
 * @module
 */

import * as x509 from "../deps/x509.ts";
import { formatDuration } from "../flags/mod.ts";
import { type CaSigner, type SigningBackend, webCryptoBackend } from "./backend.ts";
import { ascii, children, DerError, expectTag, oid, readTlv, time, tlv } from "./der.ts";
import {
  decodePem,
  encodePem,
  exportPrivateKey,
  generateKeyPair,
  importPrivateKey,
  keyAlgorithm,
  type KeySpec,
  PkiError,
} from "./pem.ts";

/** The trust domain of workload identities (hard-coded, as in Istio 0.8). */
export const TRUST_DOMAIN = "cluster.local";

/** `spiffe://cluster.local/ns/<ns>/sa/<sa>`. */
export function spiffeId(namespace: string, serviceAccount: string): string {
  return `spiffe://${TRUST_DOMAIN}/ns/${namespace}/sa/${serviceAccount}`;
}

/** The namespace and service account of a SPIFFE ID of our trust domain, or undefined. */
export function parseSpiffeId(
  uri: string,
): { namespace: string; serviceAccount: string } | undefined {
  const m = /^spiffe:\/\/([^/]+)\/ns\/([^/]+)\/sa\/([^/]+)$/.exec(uri);
  if (!m || m[1] !== TRUST_DOMAIN) return undefined;
  return { namespace: m[2], serviceAccount: m[3] };
}

/** Parses every CERTIFICATE block of a PEM text. */
export function parseCertificates(pem: string): x509.X509Certificate[] {
  return decodePem(pem).filter((b) => b.label === "CERTIFICATE").map((b) => {
    try {
      return new x509.X509Certificate(b.der as BufferSource);
    } catch (e) {
      throw new PkiError(`cannot parse certificate: ${(e as Error).message}`);
    }
  });
}

/** URI and DNS subject alternative names of a certificate or CSR. */
export function subjectAltNames(
  holder: x509.X509Certificate | x509.Pkcs10CertificateRequest,
): { uris: string[]; dns: string[]; ips: string[]; other: string[] } {
  const out = {
    uris: [] as string[],
    dns: [] as string[],
    ips: [] as string[],
    other: [] as string[],
  };
  for (const ext of holder.extensions) {
    if (ext.type !== "2.5.29.17") continue;
    const san = ext instanceof x509.SubjectAlternativeNameExtension
      ? ext
      : new x509.SubjectAlternativeNameExtension(ext.rawData);
    for (const n of san.names.items) {
      if (n.type === "url") out.uris.push(n.value);
      else if (n.type === "dns") out.dns.push(n.value);
      else if (n.type === "ip") out.ips.push(n.value);
      else out.other.push(`${n.type}:${n.value}`);
    }
  }
  return out;
}

function isCaCert(c: x509.X509Certificate | x509.Pkcs10CertificateRequest): boolean {
  const ext = c.extensions.find((e) => e.type === "2.5.29.19");
  if (!ext) return false;
  const bc = ext instanceof x509.BasicConstraintsExtension
    ? ext
    : new x509.BasicConstraintsExtension(ext.rawData);
  return bc.ca;
}

function randomSerial(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[0] &= 0x7f;
  b[0] |= 0x01;
  return [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
}

// ---- CSRs -------------------------------------------------------------------------------------

/** A parsed, signature-checked certificate signing request. */
export interface CsrInfo {
  /** The request's public key (SubjectPublicKeyInfo DER). */
  publicKey: Uint8Array;
  /** URI SANs asked for. */
  uris: string[];
  /** DNS SANs asked for. */
  dns: string[];
  /** Whether basic constraints CA:TRUE is asked for. */
  isCa: boolean;
  /** The subject, RFC 4514 text. */
  subject: string;
  /** `RSA-2048` or `ECDSA-P-256`. */
  keyType: string;
}

/**
 * Parses a PEM CSR, checks its signature and its key (RSA of at least 2048 bits, or ECDSA
 * P-256). The common shapes are verified with `backend` (default WebCrypto).
 * @throws PkiError saying why the CSR is not acceptable.
 */
export async function parseCsr(
  pem: string,
  backend: SigningBackend = webCryptoBackend,
): Promise<CsrInfo> {
  const blocks = decodePem(pem).filter((b) => /^(NEW )?CERTIFICATE REQUEST$/.test(b.label));
  if (blocks.length !== 1) {
    throw new PkiError(`want one CERTIFICATE REQUEST PEM block, found ${blocks.length}`);
  }
  const fast = await parseCsrFast(blocks[0].der, backend);
  if (fast) return fast;
  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(blocks[0].der as BufferSource);
  } catch (e) {
    throw new PkiError(`malformed CSR: ${(e as Error).message}`);
  }
  const alg = csr.publicKey.algorithm as { name: string; namedCurve?: string };
  let keyType: string;
  if (alg.name === "ECDSA" || alg.name === "ECDH") {
    if (alg.namedCurve !== "P-256") {
      throw new PkiError(`unsupported CSR key: EC curve ${alg.namedCurve}, want P-256`);
    }
    keyType = "ECDSA-P-256";
  } else if (alg.name.startsWith("RSA")) {
    const bits = rsaBits(new Uint8Array(csr.publicKey.rawData));
    if (bits < 2048) {
      throw new PkiError(`unsupported CSR key: RSA ${bits} bits, want at least 2048`);
    }
    keyType = `RSA-${bits}`;
  } else {
    throw new PkiError(`unsupported CSR key algorithm ${alg.name}: want RSA or ECDSA P-256`);
  }
  let ok = false;
  try {
    ok = await csr.verify();
  } catch (e) {
    throw new PkiError(`cannot verify CSR signature: ${(e as Error).message}`);
  }
  if (!ok) throw new PkiError("CSR signature does not verify");
  const san = subjectAltNames(csr);
  return {
    publicKey: new Uint8Array(csr.publicKey.rawData),
    uris: san.uris,
    dns: san.dns,
    isCa: isCaCert(csr),
    subject: csr.subject,
    keyType,
  };
}

/** Modulus length of an RSA public key, from its SubjectPublicKeyInfo. */
function rsaBits(key: x509.PublicKey | Uint8Array): number {
  // SPKI: SEQ { SEQ { OID, NULL }, BIT STRING { SEQ { INTEGER n, INTEGER e } } }; the modulus is
  // the largest INTEGER: its length is about the key size. Read its DER length.
  const d = key instanceof Uint8Array ? key : new Uint8Array(key.rawData);
  for (let i = 0; i < d.length - 4; i++) {
    if (d[i] !== 0x02) continue;
    let len = d[i + 1];
    let at = i + 2;
    if (len & 0x80) {
      const n = len & 0x7f;
      len = 0;
      for (let k = 0; k < n; k++) len = len * 256 + d[at + k];
      at += n;
    }
    if (len < 64) continue;
    const lead = d[at] === 0 ? 1 : 0;
    return (len - lead) * 8;
  }
  return 0;
}

const OID = {
  rsa: "1.2.840.113549.1.1.1",
  ec: "1.2.840.10045.2.1",
  p256: "1.2.840.10045.3.1.7",
  rsaSha256: "1.2.840.113549.1.1.11",
  rsaSha384: "1.2.840.113549.1.1.12",
  rsaSha512: "1.2.840.113549.1.1.13",
  ecdsaSha256: "1.2.840.10045.4.3.2",
  ecdsaSha384: "1.2.840.10045.4.3.3",
  extensionRequest: "1.2.840.113549.1.9.14",
  san: "2.5.29.17",
  basicConstraints: "2.5.29.19",
} as const;

const SIG_HASH: Record<string, string> = {
  [OID.rsaSha256]: "SHA-256",
  [OID.rsaSha384]: "SHA-384",
  [OID.rsaSha512]: "SHA-512",
  [OID.ecdsaSha256]: "SHA-256",
  [OID.ecdsaSha384]: "SHA-384",
};

/**
 * The common CSR shapes (RSA or P-256 key, RSA PKCS#1 v1.5 or ECDSA signature, SAN and basic
 * constraints in an extension request) parsed by hand. Returns undefined for anything else, which
 * then takes the generic path; throws PkiError for a CSR that is definitely unacceptable.
 */
async function parseCsrFast(
  der: Uint8Array,
  backend: SigningBackend,
): Promise<CsrInfo | undefined> {
  let info: Uint8Array, sigAlg: string, sig: Uint8Array, spki: Uint8Array, keyAlg: string;
  let curve = "";
  let attrs: Uint8Array | undefined;
  try {
    const top = children(expectTag(readTlv(der), 0x30, "CSR").value);
    if (top.length !== 3) return undefined;
    info = expectTag(top[0], 0x30, "CertificationRequestInfo").raw;
    sigAlg = oid(
      expectTag(children(expectTag(top[1], 0x30, "algorithm").value)[0], 0x06, "OID").value,
    );
    const bits = expectTag(top[2], 0x03, "signature").value;
    if (bits[0] !== 0) return undefined;
    sig = bits.subarray(1);
    const parts = children(top[0].value);
    expectTag(parts[0], 0x02, "version");
    expectTag(parts[1], 0x30, "subject");
    spki = expectTag(parts[2], 0x30, "subjectPKInfo").raw;
    const alg = children(expectTag(children(parts[2].value)[0], 0x30, "algorithm").value);
    keyAlg = oid(expectTag(alg[0], 0x06, "OID").value);
    if (alg[1]?.tag === 0x06) curve = oid(alg[1].value);
    if (parts[3]) attrs = expectTag(parts[3], 0xa0, "attributes").value;
    if (parts.length > 4) return undefined;
  } catch (e) {
    if (e instanceof DerError) return undefined;
    throw e;
  }
  const hash = SIG_HASH[sigAlg];
  if (!hash) return undefined;
  let keyType: string;
  if (keyAlg === OID.rsa) {
    if (!sigAlg.startsWith("1.2.840.113549.")) return undefined;
    const bits = rsaBits(spki);
    if (bits < 2048) {
      throw new PkiError(`unsupported CSR key: RSA ${bits} bits, want at least 2048`);
    }
    keyType = `RSA-${bits}`;
  } else if (keyAlg === OID.ec) {
    if (curve !== OID.p256) return undefined; // the generic path names the curve
    if (!sigAlg.startsWith("1.2.840.10045.")) return undefined;
    keyType = "ECDSA-P-256";
  } else return undefined;
  let uris: string[] = [], dns: string[] = [], isCa = false;
  try {
    for (const attr of attrs ? children(attrs) : []) {
      const [id, values] = children(expectTag(attr, 0x30, "attribute").value);
      if (oid(expectTag(id, 0x06, "OID").value) !== OID.extensionRequest) continue;
      for (const exts of children(expectTag(values, 0x31, "values").value)) {
        for (const ext of children(expectTag(exts, 0x30, "extensions").value)) {
          const e = children(expectTag(ext, 0x30, "extension").value);
          const extId = oid(expectTag(e[0], 0x06, "OID").value);
          const body = expectTag(e[e.length - 1], 0x04, "extnValue").value;
          if (extId === OID.san) {
            for (const n of children(expectTag(readTlv(body), 0x30, "SAN").value)) {
              const text = new TextDecoder().decode(n.value);
              if (n.tag === 0x86) uris.push(text);
              else if (n.tag === 0x82) dns.push(text);
            }
          } else if (extId === OID.basicConstraints) {
            const bc = children(expectTag(readTlv(body), 0x30, "basicConstraints").value);
            isCa = bc[0]?.tag === 0x01 && bc[0].value[0] !== 0;
          }
        }
      }
    }
  } catch (e) {
    if (e instanceof DerError) return undefined;
    throw e;
  }
  let ok: boolean;
  try {
    ok = await backend.verify(spki, keyAlg === OID.ec ? "ec" : "rsa", hash, sig, info);
  } catch (e) {
    throw new PkiError(`cannot verify CSR signature: ${(e as Error).message}`);
  }
  if (!ok) throw new PkiError("CSR signature does not verify");
  uris = [...uris];
  dns = [...dns];
  return { publicKey: new Uint8Array(spki), uris, dns, isCa, subject: "", keyType };
}

/** Options of {@link createCsr}. */
export interface CsrOptions {
  /** The key pair the CSR is for. */
  keys: CryptoKeyPair;
  /** URI SANs. */
  uris?: string[];
  /** DNS SANs. */
  dns?: string[];
  /** Organization of the subject. */
  org?: string;
  /** Ask for CA:TRUE. */
  isCa?: boolean;
}

/** Creates a PEM CSR. */
export async function createCsr(opts: CsrOptions): Promise<string> {
  const names: x509.JsonGeneralNames = [
    ...(opts.uris ?? []).map((value) => ({ type: "url" as const, value })),
    ...(opts.dns ?? []).map((value) => ({ type: "dns" as const, value })),
  ];
  const extensions: x509.Extension[] = [];
  if (names.length) extensions.push(new x509.SubjectAlternativeNameExtension(names, false));
  if (opts.isCa) extensions.push(new x509.BasicConstraintsExtension(true, undefined, true));
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: opts.org ? [{ O: [opts.org] }] : [],
    keys: opts.keys,
    signingAlgorithm: keyAlgorithm(opts.keys.privateKey),
    extensions,
  });
  return csr.toString("pem") + "\n";
}

// ---- key material -----------------------------------------------------------------------------

/** PEM texts of a CA's key material. */
export interface CaMaterialPem {
  /** The CA's signing certificate. */
  signingCert: string;
  /** Its private key. */
  signingKey: string;
  /** Intermediates between the signing certificate and the root (may be empty or include either end). */
  certChain: string;
  /** The root certificate. */
  rootCert: string;
}

/** Options of {@link createSelfSignedCa}. */
export interface SelfSignedOptions {
  /** Organization (subject and issuer O). */
  org: string;
  /** Validity in milliseconds. */
  ttlMs: number;
  /** Key to generate. */
  key: KeySpec;
  /** Current time (default now). */
  now?: Date;
}

/** Generates a self-signed root CA; the signing certificate is the root. */
export async function createSelfSignedCa(opts: SelfSignedOptions): Promise<CaMaterialPem> {
  const keys = await generateKeyPair(opts.key);
  const now = opts.now ?? new Date();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: [{ O: [opts.org] }],
    notBefore: now,
    notAfter: new Date(now.getTime() + opts.ttlMs),
    keys,
    signingAlgorithm: keyAlgorithm(keys.privateKey),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign |
          x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pem = cert.toString("pem") + "\n";
  return {
    signingCert: pem,
    signingKey: await exportPrivateKey(keys.privateKey),
    certChain: "",
    rootCert: pem,
  };
}

async function signedBy(
  cert: x509.X509Certificate,
  issuer: x509.X509Certificate,
): Promise<boolean> {
  try {
    return await cert.verify({ publicKey: issuer.publicKey, signatureOnly: true });
  } catch {
    return false;
  }
}

/** Loaded, checked key material of a CA. */
export interface CaMaterial {
  signingCert: x509.X509Certificate;
  signingKey: CryptoKey;
  /** Certificates from above the signing certificate up to (excluding) the root. */
  intermediates: x509.X509Certificate[];
  root: x509.X509Certificate;
}

/**
 * Loads and checks a CA's key material: the key matches the signing certificate, the signing
 * certificate is a CA, and signing certificate → chain → root verify one after the other,
 * ending at a self-signed root.
 * @throws PkiError saying which file and what is wrong (prefixed by the field name).
 */
export async function loadCaMaterial(pem: CaMaterialPem): Promise<CaMaterial> {
  const one = (what: string, text: string) => {
    let certs: x509.X509Certificate[];
    try {
      certs = parseCertificates(text);
    } catch (e) {
      throw new PkiError(`${what}: ${(e as Error).message}`);
    }
    if (!certs.length) throw new PkiError(`${what}: no CERTIFICATE PEM block`);
    return certs[0];
  };
  const signingCert = one("signing certificate", pem.signingCert);
  const root = one("root certificate", pem.rootCert);
  let signingKey: CryptoKey;
  try {
    signingKey = await importPrivateKey(pem.signingKey);
  } catch (e) {
    throw new PkiError(`signing key: ${(e as Error).message}`);
  }
  // The key matches the certificate: a signature made by the key verifies with the certificate's
  // public key.
  const probe = crypto.getRandomValues(new Uint8Array(32));
  const alg = keyAlgorithm(signingKey);
  const sig = await crypto.subtle.sign(alg, signingKey, probe);
  let matches = false;
  try {
    const pub = await signingCert.publicKey.export(alg, ["verify"]);
    matches = await crypto.subtle.verify(alg, pub, sig, probe);
  } catch {
    matches = false;
  }
  if (!matches) throw new PkiError("signing key does not match the signing certificate");
  if (!isCaCert(signingCert)) {
    throw new PkiError(`signing certificate "${signingCert.subject}" is not a CA certificate`);
  }
  let chain: x509.X509Certificate[];
  try {
    chain = pem.certChain ? parseCertificates(pem.certChain) : [];
  } catch (e) {
    throw new PkiError(`certificate chain: ${(e as Error).message}`);
  }
  const same = (a: x509.X509Certificate, b: x509.X509Certificate) =>
    a.toString("base64") === b.toString("base64");
  const intermediates = chain.filter((c) => !same(c, signingCert) && !same(c, root));
  if (!(await signedBy(root, root))) {
    throw new PkiError(`root certificate "${root.subject}" is not self-signed`);
  }
  const path = [signingCert, ...intermediates, root];
  for (let i = 0; i + 1 < path.length; i++) {
    if (same(path[i], root)) break;
    if (!(await signedBy(path[i], path[i + 1]))) {
      throw new PkiError(
        `certificate chain does not lead to the root certificate: "${path[i].subject}" is not ` +
          `signed by "${path[i + 1].subject}"`,
      );
    }
  }
  return { signingCert, signingKey, intermediates, root };
}

// ---- signing ----------------------------------------------------------------------------------

/** What to issue. */
export interface IssueRequest {
  /** The subject's public key: SubjectPublicKeyInfo DER (from a CSR), or a generated key. */
  publicKey: Uint8Array | x509.PublicKey | CryptoKey;
  /** URI SANs (the SPIFFE ID). */
  uris: string[];
  /** DNS SANs. */
  dns?: string[];
  /** Validity (ms). */
  ttlMs: number;
  /** Issue a CA certificate (for a downstream CA). */
  isCa?: boolean;
  /** Subject (default: empty, the identity is in the critical SAN). */
  subject?: string;
}

/** An issued certificate. */
export interface Issued {
  /** The leaf, PEM. */
  certPem: string;
  /** Leaf first, root last, PEM each. */
  chain: string[];
  notBefore: Date;
  notAfter: Date;
}

/** Options of {@link CertAuthority}. */
export interface CertAuthorityOptions {
  /** The largest TTL that may be issued (ms). */
  maxTtlMs: number;
  /**
   * Signs workload certificates and verifies CSRs (default WebCrypto). Other certificates (CA,
   * server) are rare and signed through @peculiar/x509 with WebCrypto.
   */
  backend?: SigningBackend;
  /** Clock (default `Date.now`). */
  now?: () => number;
}

/** A CA that signs with loaded key material. */
export class CertAuthority {
  /** The key material. */
  readonly material: CaMaterial;
  /** The root certificate, PEM. */
  readonly rootPem: string;
  /** Signing certificate, intermediates and root (PEM each), without duplicates. */
  readonly caChain: string[];
  readonly #opts: CertAuthorityOptions;
  readonly #signingAlg: ReturnType<typeof keyAlgorithm>;
  readonly #signer: Promise<CaSigner>;
  #aki: x509.Extension | undefined;
  /** DER pieces of the fast path (workload certificates), computed once. */
  readonly #der: { sigAlg: Uint8Array; issuer: Uint8Array; fixedExtensions: Uint8Array[] };

  constructor(material: CaMaterial, opts: CertAuthorityOptions) {
    this.material = material;
    this.#opts = opts;
    const pem = (c: x509.X509Certificate) => c.toString("pem") + "\n";
    this.rootPem = pem(material.root);
    const chain = [material.signingCert, ...material.intermediates, material.root].map(pem);
    this.caChain = chain.filter((c, i) => chain.indexOf(c) === i);
    this.#signingAlg = keyAlgorithm(material.signingKey);
    this.#signer = this.backend.signer(material.signingKey);
    this.#signer.catch(() => {}); // reported by ready() and issue()
    const ski = material.signingCert.extensions.find((e) => e.type === "2.5.29.14");
    if (ski) {
      const keyId = (ski instanceof x509.SubjectKeyIdentifierExtension
        ? ski
        : new x509.SubjectKeyIdentifierExtension(ski.rawData)).keyId;
      this.#aki = new x509.AuthorityKeyIdentifierExtension(keyId);
    }
    const raw = (e: x509.Extension) => new Uint8Array(e.rawData);
    this.#der = {
      sigAlg: this.#signingAlg.name === "ECDSA"
        ? Uint8Array.of(0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02)
        : Uint8Array.of(
          0x30,
          0x0d,
          0x06,
          0x09,
          0x2a,
          0x86,
          0x48,
          0x86,
          0xf7,
          0x0d,
          0x01,
          0x01,
          0x0b,
          0x05,
          0x00,
        ),
      issuer: new Uint8Array(material.signingCert.subjectName.toArrayBuffer()),
      fixedExtensions: [
        raw(new x509.BasicConstraintsExtension(false, undefined, true)),
        raw(
          new x509.KeyUsagesExtension(
            x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
            true,
          ),
        ),
        raw(
          new x509.ExtendedKeyUsageExtension([
            x509.ExtendedKeyUsage.serverAuth,
            x509.ExtendedKeyUsage.clientAuth,
          ]),
        ),
        ...(this.#aki ? [raw(this.#aki)] : []),
      ],
    };
  }

  /** The backend that signs workload certificates and verifies CSRs. */
  get backend(): SigningBackend {
    return this.#opts.backend ?? webCryptoBackend;
  }

  /**
   * Resolves once the backend holds the signing key.
   * @throws Error when the backend cannot use the key.
   */
  async ready(): Promise<void> {
    await this.#signer;
  }

  /**
   * Parses and checks a CSR with this CA's backend (see {@link parseCsr}).
   * @throws PkiError saying why the CSR is not acceptable.
   */
  parseCsr(pem: string): Promise<CsrInfo> {
    return parseCsr(pem, this.backend);
  }

  /** The signing certificate's validity end. */
  get notAfter(): Date {
    return this.material.signingCert.notAfter;
  }

  /**
   * Issues a certificate. The validity ends no later than the signing certificate's.
   * @throws PkiError when `ttlMs` exceeds the maximum (naming both) or is not positive.
   */
  async issue(req: IssueRequest): Promise<Issued> {
    if (!(req.ttlMs > 0)) throw new PkiError(`invalid TTL ${req.ttlMs}ms: must be positive`);
    if (req.ttlMs > this.#opts.maxTtlMs) {
      throw new PkiError(
        `requested TTL ${formatDuration(req.ttlMs)} is greater than the max allowed TTL ${
          formatDuration(this.#opts.maxTtlMs)
        }`,
      );
    }
    const now = (this.#opts.now ?? Date.now)();
    const notBefore = new Date(Math.floor(now / 1000) * 1000);
    const notAfter = new Date(
      Math.floor(Math.min(now + req.ttlMs, this.notAfter.getTime()) / 1000) * 1000,
    );
    const certPem = !req.isCa && !req.subject && req.uris.length
      ? await this.#issueWorkload(req, notBefore, notAfter)
      : await this.#issueGeneric(req, notBefore, notAfter);
    return { certPem, chain: [certPem, ...this.caChain], notBefore, notAfter };
  }

  /** A workload certificate (empty subject, critical SAN) built by hand: the hot path. */
  async #issueWorkload(req: IssueRequest, notBefore: Date, notAfter: Date): Promise<string> {
    const spki = req.publicKey instanceof Uint8Array
      ? req.publicKey
      : req.publicKey instanceof x509.PublicKey
      ? new Uint8Array(req.publicKey.rawData)
      : new Uint8Array(await crypto.subtle.exportKey("spki", req.publicKey as CryptoKey));
    const serial = crypto.getRandomValues(new Uint8Array(16));
    serial[0] = (serial[0] & 0x7f) | 0x01;
    const names = [
      ...req.uris.map((u) => tlv(0x86, ascii(u))),
      ...(req.dns ?? []).map((d) => tlv(0x82, ascii(d))),
    ];
    const san = tlv(
      0x30,
      Uint8Array.of(0x06, 0x03, 0x55, 0x1d, 0x11, 0x01, 0x01, 0xff),
      tlv(0x04, tlv(0x30, ...names)),
    );
    const d = this.#der;
    const tbs = tlv(
      0x30,
      Uint8Array.of(0xa0, 0x03, 0x02, 0x01, 0x02),
      tlv(0x02, serial),
      d.sigAlg,
      d.issuer,
      tlv(0x30, time(notBefore), time(notAfter)),
      Uint8Array.of(0x30, 0x00),
      spki,
      tlv(0xa3, tlv(0x30, ...d.fixedExtensions, san)),
    );
    const sig = await (await this.#signer).sign(tbs);
    return encodePem("CERTIFICATE", tlv(0x30, tbs, d.sigAlg, tlv(0x03, Uint8Array.of(0), sig)));
  }

  /** Any other certificate, through @peculiar/x509. */
  async #issueGeneric(req: IssueRequest, notBefore: Date, notAfter: Date): Promise<string> {
    const names: x509.JsonGeneralNames = [
      ...req.uris.map((value) => ({ type: "url" as const, value })),
      ...(req.dns ?? []).map((value) => ({ type: "dns" as const, value })),
    ];
    const subject = req.subject ?? "";
    const extensions: x509.Extension[] = [
      new x509.BasicConstraintsExtension(!!req.isCa, undefined, true),
      new x509.KeyUsagesExtension(
        req.isCa
          ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign |
            x509.KeyUsageFlags.digitalSignature
          : x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
    ];
    if (!req.isCa) {
      extensions.push(
        new x509.ExtendedKeyUsageExtension([
          x509.ExtendedKeyUsage.serverAuth,
          x509.ExtendedKeyUsage.clientAuth,
        ]),
      );
    }
    if (names.length) {
      extensions.push(new x509.SubjectAlternativeNameExtension(names, subject === ""));
    }
    if (this.#aki) extensions.push(this.#aki);
    const publicKey = req.publicKey instanceof Uint8Array
      ? new Uint8Array(req.publicKey) as Uint8Array<ArrayBuffer>
      : req.publicKey;
    if (req.isCa) extensions.push(await x509.SubjectKeyIdentifierExtension.create(publicKey));
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject,
      issuer: this.material.signingCert.subjectName,
      notBefore,
      notAfter,
      publicKey,
      signingKey: this.material.signingKey,
      signingAlgorithm: this.#signingAlg,
      extensions,
    });
    return cert.toString("pem") + "\n";
  }

  /** Generates a key pair and issues a certificate for it (the secret controller, self-checks). */
  async issueWithKey(
    req: Omit<IssueRequest, "publicKey">,
    key: KeySpec,
  ): Promise<Issued & { keyPem: string }> {
    const keys = await generateKeyPair(key);
    const issued = await this.issue({ ...req, publicKey: keys.publicKey });
    return { ...issued, keyPem: await exportPrivateKey(keys.privateKey) };
  }
}

/**
 * PEM and private-key helpers: PEM blocks in and out, private keys imported from PKCS#8,
 * PKCS#1 (`RSA PRIVATE KEY`) or SEC 1 (`EC PRIVATE KEY`, P-256; read by node:crypto, loaded on
 * first use) and exported as PKCS#8, and atomic key-file writes with mode 0600.
 * @module
 */

import { Buffer } from "node:buffer";
import { basename, dirname, join } from "node:path";

/** An error about key material (bad PEM, unsupported key, mismatch); the message says which. */
export class PkiError extends Error {
  override name = "PkiError";
}

/** One PEM block. */
export interface PemBlock {
  /** The label, e.g. `CERTIFICATE`, `PRIVATE KEY`. */
  label: string;
  /** The DER bytes. */
  der: Uint8Array;
}

const PEM_RE = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/** Every PEM block of `text`, in order (text outside blocks is ignored). */
export function decodePem(text: string): PemBlock[] {
  const out: PemBlock[] = [];
  for (const m of text.matchAll(PEM_RE)) {
    let der: Uint8Array;
    try {
      der = Uint8Array.fromBase64(m[2]); // native (V8), ~50x faster than atob; skips whitespace
    } catch {
      throw new PkiError(`PEM block "${m[1]}" is not valid base64`);
    }
    out.push({ label: m[1], der });
  }
  return out;
}

/** Encodes DER as one PEM block (64-column base64). */
export function encodePem(label: string, der: Uint8Array | ArrayBuffer): string {
  const b64 = (der instanceof Uint8Array ? der : new Uint8Array(der)).toBase64(); // native (V8)
  let body = "";
  for (let i = 0; i < b64.length; i += 64) body += b64.slice(i, i + 64) + "\n";
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

// ---- keys -------------------------------------------------------------------------------------

/** Signing parameters for a key: RSA PKCS#1 v1.5 or ECDSA P-256, both with SHA-256. */
export type KeyAlgorithm =
  | { name: "RSASSA-PKCS1-v1_5"; hash: "SHA-256" }
  | { name: "ECDSA"; namedCurve: "P-256"; hash: "SHA-256" };

/** RSA PKCS#1 v1.5 with SHA-256. */
export const RSA_SHA256: KeyAlgorithm = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
/** ECDSA P-256 with SHA-256. */
export const ECDSA_P256: KeyAlgorithm = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };

/** The kind of key to generate. */
export type KeySpec = { kind: "rsa"; bits: number } | { kind: "ec" };

/** Generates an extractable signing key pair: RSA of `bits` (1024..8192), or ECDSA P-256. */
export async function generateKeyPair(spec: KeySpec): Promise<CryptoKeyPair> {
  if (spec.kind === "ec") {
    return await crypto.subtle.generateKey(ECDSA_P256, true, ["sign", "verify"]) as CryptoKeyPair;
  }
  if (!Number.isInteger(spec.bits) || spec.bits < 1024 || spec.bits > 8192 || spec.bits % 8) {
    throw new PkiError(`invalid RSA key size ${spec.bits}: want 1024..8192, a multiple of 8`);
  }
  return await crypto.subtle.generateKey(
    { ...RSA_SHA256, modulusLength: spec.bits, publicExponent: Uint8Array.of(1, 0, 1) },
    true,
    ["sign", "verify"],
  ) as CryptoKeyPair;
}

/** The signing algorithm of a key (RSA or ECDSA P-256). */
export function keyAlgorithm(key: CryptoKey): KeyAlgorithm {
  if (key.algorithm.name === "ECDSA") return ECDSA_P256;
  return RSA_SHA256;
}

/**
 * Imports the first private key of a PEM text: `PRIVATE KEY` (PKCS#8, RSA or EC P-256),
 * `RSA PRIVATE KEY` (PKCS#1) or `EC PRIVATE KEY` (SEC 1, P-256). The key is extractable (the
 * CA writes it to its storage) and usable for signing.
 * @throws PkiError naming what is wrong (no key block, encrypted key, unsupported algorithm).
 */
export async function importPrivateKey(pem: string): Promise<CryptoKey> {
  const block = decodePem(pem).find((b) => b.label.endsWith("PRIVATE KEY"));
  if (!block) throw new PkiError("no PRIVATE KEY PEM block");
  const type = KEY_TYPES[block.label];
  if (!type) {
    throw new PkiError(`unsupported private key block "${block.label}" (encrypted keys are not)`);
  }
  // node:crypto (OpenSSL) reads the three encodings and writes PKCS#8, which WebCrypto imports.
  const { createPrivateKey } = await import("node:crypto");
  let pkcs8: Uint8Array;
  let alg: KeyAlgorithm;
  try {
    const key = createPrivateKey({ key: Buffer.from(block.der), format: "der", type });
    if (key.asymmetricKeyType === "rsa") alg = RSA_SHA256;
    else if (key.asymmetricKeyType === "ec") {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve !== "prime256v1") {
        throw new PkiError(
          `unsupported EC private key: only curve P-256 is supported, not ${curve}`,
        );
      }
      alg = ECDSA_P256;
    } else throw new PkiError(`unsupported private key type ${key.asymmetricKeyType}`);
    pkcs8 = key.export({ type: "pkcs8", format: "der" });
  } catch (e) {
    if (e instanceof PkiError) throw e;
    throw new PkiError(`cannot import private key: ${(e as Error).message}`);
  }
  try {
    return await crypto.subtle.importKey("pkcs8", pkcs8 as BufferSource, alg, true, ["sign"]);
  } catch (e) {
    throw new PkiError(`cannot import private key: ${(e as Error).message}`);
  }
}

/** The node:crypto DER type of each private key PEM label. */
const KEY_TYPES: Record<string, "pkcs8" | "pkcs1" | "sec1"> = {
  "PRIVATE KEY": "pkcs8",
  "RSA PRIVATE KEY": "pkcs1",
  "EC PRIVATE KEY": "sec1",
};

/** Exports a private key as PKCS#8 PEM (`PRIVATE KEY`). */
export async function exportPrivateKey(key: CryptoKey): Promise<string> {
  return encodePem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", key));
}

/**
 * Writes a file atomically (a temporary file in the same directory, then a rename) with `mode`
 * (default 0600: key files). Parent directories are created (0700).
 */
export async function writeFileAtomic(path: string, data: string, mode = 0o600): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = join(dirname(path), `.${basename(path)}.tmp-${crypto.randomUUID().slice(0, 8)}`);
  try {
    await Deno.writeTextFile(tmp, data, { mode, createNew: true });
    await Deno.chmod(tmp, mode);
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    throw e;
  }
}

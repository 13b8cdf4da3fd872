/**
 * The CA's signing backends: the CA key's signatures on workload certificates and the
 * verification of CSR signatures, the two costs of every CSR. `openssl` is the machine's
 * libcrypto through FFI (`openssl_ffi.ts`), `webcrypto` is Deno's own `crypto.subtle`.
 * {@link selectSigningBackend} picks one: `auto` uses OpenSSL when libcrypto loads and FFI is
 * permitted, else WebCrypto.
 * @module
 */

import { ecdsaDerToP1363, ecdsaP1363ToDer } from "./der.ts";
import { loadOpenSsl, type OpenSsl, type OpenSslOptions } from "./openssl_ffi.ts";
import { keyAlgorithm, PkiError } from "./pem.ts";

/** Backend names (`--signing-backend`). */
export type BackendName = "openssl" | "webcrypto";

/** `--signing-backend` values. */
export const BACKEND_CHOICES = ["auto", "openssl", "webcrypto"] as const;

/** A `--signing-backend` value. */
export type BackendChoice = typeof BACKEND_CHOICES[number];

/** Signs with one CA private key. */
export interface CaSigner {
  /**
   * Signs `data` with SHA-256: RSA PKCS#1 v1.5, or ECDSA with the DER `SEQUENCE { r, s }`
   * signature X.509 carries.
   */
  sign(data: Uint8Array): Promise<Uint8Array>;
}

/** A signing backend. */
export interface SigningBackend {
  readonly name: BackendName;
  /** For the startup log line (`openssl (libcrypto.so.3)`). */
  readonly description: string;
  /** A signer for a CA private key (an extractable RSA or ECDSA P-256 CryptoKey). */
  signer(key: CryptoKey): Promise<CaSigner>;
  /**
   * Verifies a CSR's signature: `signature` (RSA PKCS#1 v1.5, or ECDSA in DER form as in CSRs)
   * over `data` with the SubjectPublicKeyInfo `spki` of `kind`, hash `SHA-256`/`-384`/`-512`.
   * @throws Error when the key or signature cannot be read (a bad signature gives false).
   */
  verify(
    spki: Uint8Array,
    kind: "rsa" | "ec",
    hash: string,
    signature: Uint8Array,
    data: Uint8Array,
  ): Promise<boolean>;
}

/** Deno's WebCrypto. */
export const webCryptoBackend: SigningBackend = {
  name: "webcrypto",
  description: "webcrypto (Deno crypto.subtle)",
  signer(key) {
    const alg = keyAlgorithm(key);
    const ec = alg.name === "ECDSA";
    return Promise.resolve({
      async sign(data: Uint8Array) {
        const sig = new Uint8Array(await crypto.subtle.sign(alg, key, data as BufferSource));
        return ec ? ecdsaP1363ToDer(sig) : sig;
      },
    });
  },
  async verify(spki, kind, hash, signature, data) {
    const importAlg = kind === "ec"
      ? { name: "ECDSA", namedCurve: "P-256" }
      : { name: "RSASSA-PKCS1-v1_5", hash };
    const key = await crypto.subtle.importKey("spki", spki as BufferSource, importAlg, false, [
      "verify",
    ]);
    return await crypto.subtle.verify(
      kind === "ec" ? { name: "ECDSA", hash } : importAlg,
      key,
      (kind === "ec" ? ecdsaDerToP1363(signature, 32) : signature) as BufferSource,
      data as BufferSource,
    );
  },
};

/** libcrypto through FFI. */
export function openSslBackend(ssl: OpenSsl): SigningBackend {
  return {
    name: "openssl",
    description: `openssl (${ssl.library} through FFI)`,
    async signer(key) {
      const der = new Uint8Array(await crypto.subtle.exportKey("pkcs8", key));
      const k = ssl.privateKey(der); // wipes der
      return { sign: (data) => k.sign(data) };
    },
    verify: (spki, _kind, hash, signature, data) => ssl.verify(spki, hash, signature, data),
  };
}

/** Options of {@link selectSigningBackend}. */
export interface SelectBackendOptions extends OpenSslOptions {}

/**
 * The backend for a `--signing-backend` choice.
 * @throws PkiError (one line) when `openssl` is forced and libcrypto cannot be loaded.
 */
export function selectSigningBackend(
  choice: BackendChoice,
  opts: SelectBackendOptions = {},
): SigningBackend {
  if (choice === "webcrypto") return webCryptoBackend;
  try {
    return openSslBackend(loadOpenSsl(opts));
  } catch (e) {
    if (choice === "openssl") {
      throw new PkiError(`--signing-backend openssl: ${(e as Error).message}`);
    }
    return {
      ...webCryptoBackend,
      description: `webcrypto (Deno crypto.subtle; OpenSSL not used: ${(e as Error).message})`,
    };
  }
}

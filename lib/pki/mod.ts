/**
 * Public-key infrastructure for mesh_ca: PEM and key helpers (`pem.ts`), the CA core (`ca.ts`:
 * self-signed roots, plugged material checks, CSR parsing, signing with SPIFFE SANs) and the DNS
 * name rules (`dns.ts`), the signing backends (`backend.ts`: WebCrypto, or OpenSSL through FFI in
 * `openssl_ffi.ts`, loaded on first use). Imports @peculiar/x509: load this module lazily.
 *
 * ```ts
 * import { CertAuthority, createSelfSignedCa, loadCaMaterial, parseCsr, spiffeId } from "./mod.ts";
 * const ca = new CertAuthority(
 *   await loadCaMaterial(await createSelfSignedCa({ org: "o", ttlMs: 3.6e6, key: { kind: "ec" } })),
 *   { maxTtlMs: 3.6e6 },
 * );
 * ```
 * @module
 */

export * from "./pem.ts";
export * from "./ca.ts";
export * from "./dns.ts";
export * from "./backend.ts";
export {
  LIBCRYPTO_NAMES,
  loadOpenSsl,
  type OpenSsl,
  OpenSslError,
  type OpenSslKey,
  type OpenSslOptions,
} from "./openssl_ffi.ts";

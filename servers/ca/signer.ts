/**
 * The signing API's checks, independent of the transport: who the caller is (client certificate
 * issued by this CA, orchestrator token through a TokenReview, or a JWT verified against
 * trusted keys) and whether the CSR may be signed (only the caller's own identity, TTL limits,
 * CA certificates only with --sign-ca-certs, DNS names only those configured for the identity).
 * Failures are {@link CallError}s carrying the gRPC status.
 * @module
 */

import type * as x509 from "../../lib/deps/x509.ts";
import { formatDuration } from "../../lib/flags/mod.ts";
import {
  type CertAuthority,
  type DnsNameRules,
  dnsNamesFor,
  type Issued,
  parseSpiffeId,
  spiffeId,
  subjectAltNames,
} from "../../lib/pki/mod.ts";

/** gRPC status codes of the signing API. */
export const Code = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  PERMISSION_DENIED: 7,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** A refused call: the gRPC status, a message for the caller and a short reason for metrics. */
export class CallError extends Error {
  override name = "CallError";
  constructor(readonly code: number, message: string, readonly reason: string) {
    super(message);
  }
}

/** An authenticated caller. */
export interface Caller {
  /** `spiffe://cluster.local/ns/<ns>/sa/<sa>`. */
  identity: string;
  namespace: string;
  serviceAccount: string;
  /** How it authenticated. */
  via: "certificate" | "orchestrator-token" | "jwt";
}

/** Result of a TokenReview. */
export type TokenReviewResult = { authenticated: true; username: string } | {
  authenticated: false;
  error: string;
};

/** Checks an orchestrator token (a TokenReview against the API server). */
export type TokenReviewer = (token: string) => Promise<TokenReviewResult>;

/** What the authenticator needs. */
export interface AuthOptions {
  /** The current CA (client certificates must be signed by its signing certificate). */
  ca: () => CertAuthority;
  /** TokenReview, when running with an orchestrator. */
  tokenReview?: TokenReviewer;
  /** Trusted JWKS (--trusted-jwks), without an orchestrator. */
  jwks?: { keys: unknown[] };
  /**
   * How long an accepted token is remembered (ms, default 60 s; never past its `exp`): a workload
   * renewing often, or the self-check, costs one TokenReview or JWT verification per period.
   */
  tokenCacheMs?: number;
  /** Clock (default Date.now). */
  now?: () => number;
}

/** At most this many tokens are remembered. */
const TOKEN_CACHE_SIZE = 10_000;

/** Credentials presented with a call. */
export interface Credentials {
  /** DER of the verified client certificate, if one was presented. */
  peerCertificate?: Uint8Array;
  /** The bearer token of `authorization: Bearer <token>` (or HandleCSR's credential). */
  bearer?: string;
}

const SA_SUBJECT = /^system:serviceaccount:([^:]+):([^:]+)$/;

function fromSubject(sub: unknown, via: Caller["via"]): Caller {
  const m = typeof sub === "string" ? SA_SUBJECT.exec(sub) : null;
  if (!m) {
    throw new CallError(
      Code.UNAUTHENTICATED,
      `request authenticate failure: token subject ${JSON.stringify(sub)} is not ` +
        `system:serviceaccount:<namespace>:<name>`,
      "bad-subject",
    );
  }
  return { identity: spiffeId(m[1], m[2]), namespace: m[1], serviceAccount: m[2], via };
}

/** Creates the authenticator of the signing API. */
export function createAuthenticator(opts: AuthOptions) {
  let keySet: ((...a: never[]) => unknown) | undefined;
  const jose = opts.jwks ? import("../../lib/deps/jose.ts") : undefined;
  const x509mod = import("../../lib/deps/x509.ts");

  const byCertificate = async (der: Uint8Array): Promise<Caller | undefined> => {
    const x = await x509mod;
    let cert: x509.X509Certificate;
    try {
      cert = new x.X509Certificate(der as BufferSource);
    } catch {
      return undefined;
    }
    // Issued by this CA: signed by our signing certificate (the TLS layer checked the chain).
    const signing = opts.ca().material.signingCert;
    const ours = await cert.verify({ publicKey: signing.publicKey, signatureOnly: true }).catch(
      () => false,
    );
    if (!ours) return undefined;
    for (const uri of subjectAltNames(cert).uris) {
      const id = parseSpiffeId(uri);
      if (id) return { identity: uri, ...id, via: "certificate" };
    }
    return undefined;
  };

  const cache = new Map<string, { caller: Caller; until: number }>();
  const now = opts.now ?? Date.now;
  const cacheMs = opts.tokenCacheMs ?? 60_000;
  const remember = (token: string, caller: Caller, exp?: number) => {
    const until = Math.min(now() + cacheMs, exp ? exp * 1000 : Infinity);
    if (cache.size >= TOKEN_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    cache.set(token, { caller, until });
    return caller;
  };

  return {
    /**
     * The caller, from its client certificate (when issued by this CA and naming a SPIFFE
     * identity) or else its bearer token.
     * @throws CallError UNAUTHENTICATED.
     */
    async authenticate(creds: Credentials): Promise<Caller> {
      if (creds.peerCertificate) {
        const c = await byCertificate(creds.peerCertificate);
        if (c) return c;
      }
      const token = creds.bearer;
      if (!token) {
        throw new CallError(
          Code.UNAUTHENTICATED,
          "request authenticate failure: no client certificate issued by this CA and no " +
            "bearer token",
          "no-credentials",
        );
      }
      const hit = cache.get(token);
      if (hit) {
        if (hit.until > now()) return hit.caller;
        cache.delete(token);
      }
      if (opts.tokenReview) {
        let r: TokenReviewResult;
        try {
          r = await opts.tokenReview(token);
        } catch (e) {
          throw new CallError(
            Code.UNAVAILABLE,
            `cannot review the token: ${(e as Error).message}`,
            "token-review-failed",
          );
        }
        if (!r.authenticated) {
          throw new CallError(
            Code.UNAUTHENTICATED,
            `request authenticate failure: token not authenticated by the orchestrator${
              r.error ? ` (${r.error})` : ""
            }`,
            "bad-token",
          );
        }
        return remember(token, fromSubject(r.username, "orchestrator-token"));
      }
      if (jose && opts.jwks) {
        const j = await jose;
        keySet ??= j.createLocalJWKSet(opts.jwks as Parameters<typeof j.createLocalJWKSet>[0]);
        let payload;
        try {
          ({ payload } = await j.jwtVerify(token, keySet as Parameters<typeof j.jwtVerify>[1]));
        } catch (e) {
          throw new CallError(
            Code.UNAUTHENTICATED,
            `request authenticate failure: JWT not verified: ${(e as Error).message}`,
            "bad-token",
          );
        }
        return remember(token, fromSubject(payload.sub, "jwt"), payload.exp);
      }
      throw new CallError(
        Code.UNAUTHENTICATED,
        "request authenticate failure: bearer tokens are not accepted (no orchestrator and no " +
          "--trusted-jwks)",
        "bad-token",
      );
    },
  };
}

/** An authenticator (see {@link createAuthenticator}). */
export type Authenticator = ReturnType<typeof createAuthenticator>;

/** The signing policy (from the flags). */
export interface SignPolicy {
  /** --workload-cert-ttl. */
  workloadTtlMs: number;
  /** --max-workload-cert-ttl. */
  maxTtlMs: number;
  /** --sign-ca-certs. */
  signCaCerts: boolean;
  /** DNS names per identity. */
  dns: DnsNameRules;
}

/**
 * Signs `csrPem` for `caller`. `askedTtlMs` 0 means the workload TTL; a longer request than the
 * workload TTL is capped to it (CA certificates excepted), one above the maximum is refused.
 * @throws CallError INVALID_ARGUMENT, PERMISSION_DENIED or INTERNAL.
 */
export async function signForCaller(
  ca: CertAuthority,
  caller: Caller,
  csrPem: string,
  askedTtlMs: number,
  policy: SignPolicy,
): Promise<Issued> {
  let csr;
  try {
    csr = await ca.parseCsr(csrPem);
  } catch (e) {
    throw new CallError(
      Code.INVALID_ARGUMENT,
      `CSR parsing error (${(e as Error).message})`,
      "bad-csr",
    );
  }
  if (!csr.uris.length) {
    throw new CallError(
      Code.INVALID_ARGUMENT,
      "CSR identity extraction error (the CSR has no URI subject alternative name)",
      "no-identity",
    );
  }
  const others = csr.uris.filter((u) => u !== caller.identity);
  if (others.length) {
    throw new CallError(
      Code.PERMISSION_DENIED,
      `caller ${caller.identity} may not request a certificate for ${others.join(", ")}`,
      "other-identity",
    );
  }
  const allowedDns = dnsNamesFor(caller.namespace, caller.serviceAccount, policy.dns);
  const badDns = csr.dns.filter((d) => !allowedDns.includes(d));
  if (badDns.length) {
    throw new CallError(
      Code.PERMISSION_DENIED,
      `caller ${caller.identity} may not request DNS names ${badDns.join(", ")}`,
      "other-dns-name",
    );
  }
  if (csr.isCa && !policy.signCaCerts) {
    throw new CallError(
      Code.PERMISSION_DENIED,
      "signing CA certificates is not allowed (start mesh_ca with --sign-ca-certs)",
      "ca-cert-refused",
    );
  }
  if (!Number.isFinite(askedTtlMs) || askedTtlMs < 0) {
    throw new CallError(
      Code.INVALID_ARGUMENT,
      `invalid requested TTL ${askedTtlMs / 1000}s: must not be negative`,
      "bad-ttl",
    );
  }
  if (askedTtlMs > policy.maxTtlMs) {
    throw new CallError(
      Code.INVALID_ARGUMENT,
      `requested TTL ${formatDuration(askedTtlMs)} is greater than the max allowed TTL ${
        formatDuration(policy.maxTtlMs)
      }`,
      "ttl-too-long",
    );
  }
  const wanted = askedTtlMs || policy.workloadTtlMs;
  const ttlMs = csr.isCa ? wanted : Math.min(wanted, policy.workloadTtlMs);
  try {
    return await ca.issue({
      publicKey: csr.publicKey,
      uris: [caller.identity],
      dns: allowedDns,
      ttlMs,
      isCa: csr.isCa,
      subject: csr.isCa ? csr.subject : undefined,
    });
  } catch (e) {
    throw new CallError(
      Code.INTERNAL,
      `CSR signing error (${(e as Error).message})`,
      "signing-failed",
    );
  }
}

/**
 * The signing API on our HTTP/2 gRPC transport (`lib/grpc`, the same protections as ADS):
 * `mesh.v1.auth.MeshCertificateService/CreateCertificate` and the older
 * `mesh.v1.auth.MeshCAService/HandleCSR`, over TLS with a client certificate requested (and
 * verified when presented).
 * @module
 */

import type { Buffer } from "node:buffer";
import {
  type CallHandler,
  type GrpcCall,
  type GrpcListener,
  listenGrpc,
} from "../../lib/grpc/mod.ts";
import type { Logger } from "../../lib/log/mod.ts";
import type { CertAuthority, Issued } from "../../lib/pki/mod.ts";
import {
  type Authenticator,
  type Caller,
  CallError,
  Code,
  signForCaller,
  type SignPolicy,
} from "./signer.ts";
import {
  decodeCsrRequest,
  decodeMeshCertificateRequest,
  encodeCsrResponse,
  encodeMeshCertificateResponse,
  WireError,
} from "../../lib/pki/ca_messages.ts";

/** Full name of the signing service. */
export const CERTIFICATE_SERVICE = "mesh.v1.auth.MeshCertificateService";
/** Full name of the older service. */
export const CA_SERVICE = "mesh.v1.auth.MeshCAService";
/** The largest request we read (a CSR is a few KB). */
const MAX_REQUEST = 64 * 1024;

/** Hooks for metrics. */
export interface SignMetrics {
  /** A call arrived. */
  request(method: string): void;
  /** A call was refused or failed; `reason` is short and stable. */
  error(method: string, reason: string): void;
  /** A certificate was issued after `seconds` of signing work. */
  issued(method: string, seconds: number): void;
}

/** Options of {@link startSigningServer}. */
export interface SigningServerOptions {
  host: string;
  port: number;
  /** The server certificate chain, key, and the CA certificates that verify client certificates. */
  tls: { cert: string; key: string; ca: string };
  /** The current CA. */
  ca: () => CertAuthority;
  auth: Authenticator;
  policy: SignPolicy;
  metrics: SignMetrics;
  log: Logger;
  /** Share the port with other isolates' signing servers (see `lib/workers`). */
  reusePort?: { index: number; of: number };
}

const te = new TextEncoder();

function bearer(call: GrpcCall): string | undefined {
  for (const [name, value] of call.headers) {
    if (name !== "authorization") continue;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(value);
    if (m) return m[1];
  }
  return undefined;
}

function peerCertificate(call: GrpcCall): Uint8Array | undefined {
  // deno-lint-ignore no-explicit-any
  const s = call.socket as any;
  if (!s.authorized) return undefined;
  const raw = s.getPeerCertificate?.()?.raw as Buffer | undefined;
  return raw?.length ? new Uint8Array(raw) : undefined;
}

/**
 * A unary call: collects the one request message, runs `work` on it at the end of the request,
 * and answers with its message or ends the call with a {@link CallError}'s status.
 */
function unary(
  method: string,
  opts: SigningServerOptions,
  work: (req: Uint8Array, call: GrpcCall) => Promise<Uint8Array>,
): CallHandler {
  return (call) => {
    opts.metrics.request(method);
    let req: Uint8Array | undefined;
    let count = 0;
    let gone = false;
    call.onMessage = (m) => {
      count++;
      if (m.length <= MAX_REQUEST) req = new Uint8Array(m);
    };
    call.onCancel = () => {
      gone = true;
    };
    const fail = (e: unknown) => {
      const err = e instanceof CallError ? e : e instanceof WireError
        ? new CallError(
          Code.INVALID_ARGUMENT,
          `cannot decode the request: ${e.message}`,
          "bad-request",
        )
        : new CallError(Code.INTERNAL, `internal error: ${(e as Error).message}`, "internal");
      opts.metrics.error(method, err.reason);
      if (err.code === Code.INTERNAL) opts.log.error(`${method}: ${err.message}`);
      else opts.log.debug(`${method} from ${call.peer} refused: ${err.message}`);
      call.end(err.code, err.message);
    };
    call.onEnd = () => {
      if (count !== 1 || !req) {
        fail(
          new CallError(
            Code.INVALID_ARGUMENT,
            count !== 1
              ? `want exactly one request message, got ${count}`
              : `request larger than ${MAX_REQUEST} bytes`,
            "bad-request",
          ),
        );
        return;
      }
      work(req, call).then((res) => {
        if (gone) return;
        // The trailers follow the message without waiting for its write: both leave in one
        // write to the socket (one TLS record), not one each.
        call.send([res]).catch(() => {}); // rejects only when the call ended first (reset, closed)
        call.end(Code.OK);
      }).catch((e) => {
        if (!gone) fail(e);
      });
    };
  };
}

async function signTimed(
  method: string,
  opts: SigningServerOptions,
  caller: Caller,
  csr: string,
  ttlMs: number,
): Promise<Issued> {
  const t0 = performance.now();
  const issued = await signForCaller(opts.ca(), caller, csr, ttlMs, opts.policy);
  opts.metrics.issued(method, (performance.now() - t0) / 1000);
  opts.log.debug(
    `${method}: issued a certificate for ${caller.identity} (via ${caller.via}) valid until ${issued.notAfter.toISOString()}`,
  );
  return issued;
}

/** The signing API's handlers, by path. */
export function signingHandlers(opts: SigningServerOptions): Map<string, CallHandler> {
  const create = unary("CreateCertificate", opts, async (bytes, call) => {
    const req = decodeMeshCertificateRequest(bytes);
    const caller = await opts.auth.authenticate({
      peerCertificate: peerCertificate(call),
      bearer: bearer(call),
    });
    const issued = await signTimed(
      "CreateCertificate",
      opts,
      caller,
      req.csr,
      req.validityDuration * 1000,
    );
    return encodeMeshCertificateResponse(issued.chain);
  });
  const handleCsr = unary("HandleCSR", opts, async (bytes, call) => {
    const req = decodeCsrRequest(bytes);
    const caller = await opts.auth.authenticate({
      peerCertificate: peerCertificate(call),
      bearer: bearer(call) ?? (req.nodeAgentCredential || undefined),
    });
    const issued = await signTimed(
      "HandleCSR",
      opts,
      caller,
      req.csrPem,
      req.requestedTtlMinutes * 60_000,
    );
    return encodeCsrResponse({
      isApproved: true,
      signedCert: issued.certPem,
      certChain: issued.chain.slice(1).join(""),
    });
  });
  return new Map<string, CallHandler>([
    [`/${CERTIFICATE_SERVICE}/CreateCertificate`, create],
    [`/${CA_SERVICE}/HandleCSR`, handleCsr],
  ]);
}

/** Starts the signing API. */
export async function startSigningServer(opts: SigningServerOptions): Promise<GrpcListener> {
  return await listenGrpc({
    host: opts.host,
    port: opts.port,
    tls: {
      cert: te.encode(opts.tls.cert),
      key: te.encode(opts.tls.key),
      ca: te.encode(opts.tls.ca),
    },
    handlers: signingHandlers(opts),
    onError: (m) => opts.log.warn(`gRPC: ${m}`),
    reusePort: opts.reusePort,
  });
}

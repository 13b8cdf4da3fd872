/**
 * A minimal unary gRPC client over `node:http2` (TLS), for the few control-plane calls that need
 * one (mesh_ca's upstream-CA request and liveness self-check) without loading grpc-js.
 * @module
 */

import { Buffer } from "node:buffer";
import { isIP, isIPv6 } from "node:net";

/** Options of {@link callUnary}. */
export interface UnaryCallOptions {
  /** `host:port`. */
  address: string;
  /** `/package.Service/Method`. */
  path: string;
  /** The encoded request message. */
  message: Uint8Array;
  /** PEM root certificate(s) verifying the server. */
  ca: string;
  /**
   * The name the server certificate must carry (SNI and verification). Default: the host; for an
   * IP address (`127.0.0.1:port`, `[::1]:port`), no SNI and the certificate must carry that IP.
   */
  servername?: string;
  /** Client certificate chain and key (PEM), for mutual TLS. */
  cert?: string;
  key?: string;
  /** Extra request headers (e.g. `authorization`). */
  headers?: Record<string, string>;
  /** Deadline in ms (default 10 s). */
  timeoutMs?: number;
}

/** The outcome of a unary call. */
export interface UnaryResult {
  /** gRPC status (0 = OK). */
  status: number;
  /** `grpc-message`, decoded. */
  message: string;
  /** The response message (undefined when none was sent). */
  response?: Uint8Array;
}

/**
 * Makes one unary gRPC call over TLS and resolves with its status (never rejects for a gRPC
 * error status; rejects for connection failures and timeouts).
 */
export async function callUnary(opts: UnaryCallOptions): Promise<UnaryResult> {
  const http2 = await import("node:http2");
  const m = /^(.*):(\d+)$/.exec(opts.address);
  if (!m) throw new Error(`Invalid address "${opts.address}": want host:port`);
  const problem = hostProblem(m[1]);
  if (problem) throw new Error(`Invalid address "${opts.address}": ${problem}`);
  const host = m[1].replace(/^\[(.*)\]$/, "$1");
  const session = http2.connect(`https://${m[1]}:${m[2]}`, {
    ca: opts.ca,
    cert: opts.cert,
    key: opts.key,
    // TLS forbids an IP address as SNI (node:tls throws): the IP is then verified against the
    // certificate's IP SANs.
    servername: opts.servername ?? (isIP(host) ? undefined : host),
    ALPNProtocols: ["h2"],
  });
  const timeoutMs = opts.timeoutMs ?? 10_000;
  try {
    return await new Promise<UnaryResult>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`gRPC call ${opts.path} to ${opts.address} timed out`)),
        timeoutMs,
      );
      const fail = (e: Error) => {
        clearTimeout(timer);
        reject(e);
      };
      session.once("error", fail);
      const req = session.request({
        ":method": "POST",
        ":path": opts.path,
        "content-type": "application/grpc",
        te: "trailers",
        ...opts.headers,
      });
      const chunks: Buffer[] = [];
      let headers: Record<string, unknown> = {};
      req.on("response", (h) => headers = h);
      req.on("data", (c: Buffer) => chunks.push(c));
      let trailers: Record<string, unknown> = {};
      req.on("trailers", (t) => trailers = t);
      req.on("error", fail);
      req.on("end", () => {
        clearTimeout(timer);
        const all = { ...headers, ...trailers };
        const body = Buffer.concat(chunks);
        const status = Number(all["grpc-status"] ?? (headers[":status"] === 200 ? 2 : 14));
        let message = String(all["grpc-message"] ?? "");
        try {
          message = decodeURIComponent(message);
        } catch {
          // keep as sent
        }
        const response = body.length >= 5
          ? new Uint8Array(body.subarray(5, 5 + body.readUInt32BE(1)))
          : undefined;
        resolve({ status, message, response });
      });
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(opts.message.length, 1);
      req.end(Buffer.concat([prefix, Buffer.from(opts.message)]));
    });
  } finally {
    session.close();
    session.destroy();
  }
}

/** What is wrong with the host part of a `host:port` address (`[v6]` in brackets), if anything. */
function hostProblem(host: string): string | undefined {
  if (host === "") return "the host is empty";
  const bracketed = /^\[(.*)\]$/.exec(host);
  if (bracketed) {
    return isIPv6(bracketed[1])
      ? undefined
      : `"${bracketed[1]}" in brackets is not an IPv6 address`;
  }
  if (/[[\]]/.test(host)) return `unbalanced brackets in the host "${host}"`;
  if (host.includes(":")) return `an IPv6 host goes in brackets ("[${host}]:port")`;
  try {
    new URL(`https://${host}`);
  } catch {
    return `"${host}" is not a host name or IP address`;
  }
  return undefined;
}

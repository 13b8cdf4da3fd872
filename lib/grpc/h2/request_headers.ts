/**
 * What a request's headers say: whether they are well-formed HTTP/2 (RFC 9113 §8.1.1, §8.2,
 * §8.3), and whether they ask for a gRPC call we can answer (method, content-type, encoding).
 * @module
 */

import type { HeaderList } from "./hpack.ts";
import { GrpcStatus } from "./limits.ts";

const CONNECTION_SPECIFIC = new Set([
  "connection",
  "proxy-connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
]);
const REQUEST_PSEUDO = new Set([":method", ":scheme", ":path", ":authority"]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;

/**
 * What makes a request's header list malformed (RFC 9113 §8.1.1, §8.2, §8.3), or undefined:
 * pseudo-headers unknown, repeated, after a regular field or missing (`:method`, `:scheme`,
 * `:path`); field names not lower-case tokens; connection-specific fields; `te` other than
 * `trailers`; values with NUL, CR or LF; a content-length that is not a number.
 */
export function checkRequestHeaders(headers: HeaderList): string | undefined {
  const seen = new Set<string>();
  let regular = false;
  for (const [k, v] of headers) {
    if (k.startsWith(":")) {
      if (regular) return `pseudo-header ${k} after a regular field`;
      if (!REQUEST_PSEUDO.has(k)) return `unknown pseudo-header ${k}`;
      if (seen.has(k)) return `repeated pseudo-header ${k}`;
      seen.add(k);
    } else {
      regular = true;
      if (!TOKEN.test(k)) return `field name ${JSON.stringify(k)} is not a lower-case token`;
      if (CONNECTION_SPECIFIC.has(k)) return `connection-specific field ${k}`;
      if (k === "te" && v !== "trailers") return `te ${JSON.stringify(v)} (only "trailers")`;
      if (k === "content-length" && !/^[0-9]+$/.test(v)) return `content-length ${v}`;
    }
    if (/[\0\r\n]/.test(v)) return `field ${k} has NUL, CR or LF in its value`;
  }
  for (const k of [":method", ":scheme", ":path"]) if (!seen.has(k)) return `missing ${k}`;
  if (headers.find(([k]) => k === ":path")![1] === "") return "empty :path";
  return undefined;
}

/** A request we answer at once, without calling a handler. */
export interface Refusal {
  /** The HTTP `:status` of the answer. */
  httpStatus: string;
  /** Its `grpc-status`. */
  grpcStatus: number;
  /** Its `grpc-message`. */
  message: string;
}

/** A well-formed request's gRPC parameters, or why it is refused. */
export interface GrpcRequest {
  /** `:path` (`/package.Service/Method`). */
  path: string;
  /** The `content-length`, or -1 without one. */
  contentLength: number;
  /** The request is gzip-compressed (`grpc-encoding: gzip`). */
  gzip: boolean;
  /** Set when the request is not a gRPC call we serve (method, content-type, encoding). */
  refusal?: Refusal;
}

/**
 * Reads the gRPC parameters of a request whose headers passed {@link checkRequestHeaders}: a
 * method other than POST is refused 405, a content-type other than `application/grpc[+...]` 415,
 * an encoding other than identity and gzip UNIMPLEMENTED (as grpc-js does).
 */
export function readGrpcRequest(headers: HeaderList): GrpcRequest {
  const get = (n: string) => headers.find(([k]) => k === n)?.[1];
  const path = get(":path") ?? "";
  const method = get(":method");
  const ct = get("content-type") ?? "";
  const enc = get("grpc-encoding");
  const cl = get("content-length");
  const req: GrpcRequest = { path, contentLength: cl === undefined ? -1 : Number(cl), gzip: false };
  if (method !== "POST") {
    req.refusal = {
      httpStatus: "405",
      grpcStatus: GrpcStatus.INTERNAL,
      message: `Method ${method ?? "(none)"} is not POST`,
    };
  } else if (!/^application\/grpc([+;].*)?$/.test(ct)) {
    req.refusal = {
      httpStatus: "415",
      grpcStatus: GrpcStatus.INTERNAL,
      message: `Content-type ${ct || "(none)"} is not gRPC`,
    };
  } else if (enc && enc !== "identity" && enc !== "gzip") {
    req.refusal = {
      httpStatus: "200",
      grpcStatus: GrpcStatus.UNIMPLEMENTED,
      message: `Compression "${enc}" is not supported (only identity and gzip)`,
    };
  } else req.gzip = enc === "gzip";
  return req;
}

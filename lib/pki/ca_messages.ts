/**
 * The messages of `proto/ca.proto` (`mesh.v1.auth`), encoded and decoded by hand on
 * {@link Reader} and {@link MessageBuilder}: they are small and flat, and this keeps protobufjs
 * off the signing path. One definition for every side: mesh_ca (server, self-check, upstream
 * CA), mesh-agent (client) and the CA benchmark.
 *
 * Decoding follows protobuf's rules: unknown fields of any wire type are skipped, the last
 * occurrence of a scalar field wins, a field with the wrong wire type and a string that is not
 * UTF-8 are refused with a {@link WireError}. Encoding leaves proto3 defaults out, as protobufjs
 * does.
 * @module
 */

import { LEN, MessageBuilder, Reader, VARINT, WireError } from "../protowire/mod.ts";

export { WireError };

/** gRPC path of `MeshCertificateService.CreateCertificate`. */
export const CREATE_CERTIFICATE = "/mesh.v1.auth.MeshCertificateService/CreateCertificate";

/** `MeshCertificateRequest`. */
export interface MeshCertificateRequest {
  /** The PEM certificate signing request. */
  csr: string;
  /** Seconds; 0 when unset. */
  validityDuration: number;
}

/** `CsrRequest` (the older HandleCSR shape). */
export interface CsrRequest {
  /** The PEM certificate signing request (`csr_pem`). */
  csrPem: string;
  /** The credential proving the node's identity (`node_agent_credential`). */
  nodeAgentCredential: string;
  /** What kind of credential that is (`credential_type`). */
  credentialType: string;
  /** The requested validity in minutes; 0 when unset. */
  requestedTtlMinutes: number;
}

/** `CsrResponse`. */
export interface CsrResponse {
  /** Whether the certificate was issued. */
  isApproved: boolean;
  /** Why not (a gRPC status code and message), when refused. */
  status?: { code: number; message: string };
  /** The issued certificate, PEM. */
  signedCert?: string;
  /** The chain up to the root, PEM. */
  certChain?: string;
}

/**
 * The fields of a flat message by number: proto name, wire type, and what reads the value into
 * the decoded object (`name` is for the error of a string that is not UTF-8).
 */
type Fields<T> = Record<
  number,
  readonly [string, number, (r: Reader, out: T, name: string) => void]
>;

/** Decodes `b` into `out` by `fields`; other fields are skipped. */
function decode<T>(b: Uint8Array, out: T, fields: Fields<T>): T {
  const r = new Reader(b);
  while (r.pos < r.end) {
    const tag = r.tag(), no = tag >>> 3, wire = tag & 7;
    const f = fields[no];
    if (!f) r.skip(wire);
    else if (wire !== f[1]) throw new WireError(`${f[0]}: wrong wire type ${wire}`);
    else f[2](r, out, f[0]);
  }
  return out;
}

const MESH_CERTIFICATE_REQUEST: Fields<MeshCertificateRequest> = {
  1: ["csr", LEN, (r, o, name) => o.csr = r.strictString(name)],
  3: ["validity_duration", VARINT, (r, o) => o.validityDuration = r.int64()],
};

/**
 * Decodes a `MeshCertificateRequest`.
 * @throws {WireError} when `b` is not one.
 */
export function decodeMeshCertificateRequest(b: Uint8Array): MeshCertificateRequest {
  return decode(b, { csr: "", validityDuration: 0 }, MESH_CERTIFICATE_REQUEST);
}

/** Encodes a `MeshCertificateRequest` (clients: the agent, self-check, upstream CA, tests, bench). */
export function encodeMeshCertificateRequest(r: MeshCertificateRequest): Uint8Array {
  return new MessageBuilder().string(1, r.csr).int(3, r.validityDuration).finish();
}

const MESH_CERTIFICATE_RESPONSE: Fields<string[]> = {
  1: ["cert_chain", LEN, (r, o, name) => o.push(r.strictString(name))],
};

/**
 * Decodes a `MeshCertificateResponse`: the certificate chain, leaf first.
 * @throws {WireError} when `b` is not one.
 */
export function decodeMeshCertificateResponse(b: Uint8Array): string[] {
  return decode(b, [], MESH_CERTIFICATE_RESPONSE);
}

/** Encodes a `MeshCertificateResponse` (every element written, empty ones too). */
export function encodeMeshCertificateResponse(certChain: readonly string[]): Uint8Array {
  const m = new MessageBuilder();
  for (const c of certChain) m.string(1, c, true);
  return m.finish();
}

const CSR_REQUEST: Fields<CsrRequest> = {
  1: ["csr_pem", LEN, (r, o, name) => o.csrPem = r.strictString(name)],
  2: ["node_agent_credential", LEN, (r, o, name) => o.nodeAgentCredential = r.strictString(name)],
  3: ["credential_type", LEN, (r, o, name) => o.credentialType = r.strictString(name)],
  4: ["requested_ttl_minutes", VARINT, (r, o) => o.requestedTtlMinutes = r.int32()],
};

/**
 * Decodes a `CsrRequest`.
 * @throws {WireError} when `b` is not one.
 */
export function decodeCsrRequest(b: Uint8Array): CsrRequest {
  const out = { csrPem: "", nodeAgentCredential: "", credentialType: "", requestedTtlMinutes: 0 };
  return decode(b, out, CSR_REQUEST);
}

/** Encodes a `CsrResponse`. */
export function encodeCsrResponse(r: CsrResponse): Uint8Array {
  const m = new MessageBuilder().bool(1, r.isApproved);
  if (r.status) {
    m.message(2, new MessageBuilder().int(1, r.status.code).string(2, r.status.message).finish());
  }
  return m.string(3, r.signedCert).string(4, r.certChain).finish();
}

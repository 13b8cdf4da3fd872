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
  csrPem: string;
  nodeAgentCredential: string;
  credentialType: string;
  requestedTtlMinutes: number;
}

/** `CsrResponse`. */
export interface CsrResponse {
  isApproved: boolean;
  status?: { code: number; message: string };
  signedCert?: string;
  certChain?: string;
}

/** Reads every field of `b`: `read(no, wire)` consumes the ones it knows and returns true. */
function eachField(b: Uint8Array, read: (r: Reader, no: number, wire: number) => boolean): void {
  const r = new Reader(b);
  while (r.pos < r.end) {
    const tag = r.tag(), no = tag >>> 3, wire = tag & 7;
    if (!read(r, no, wire)) r.skip(wire);
  }
}

/** Checks the wire type of the field named `name`. */
function want(wire: number, expected: number, name: string): void {
  if (wire !== expected) throw new WireError(`${name}: wrong wire type ${wire}`);
}

/** A string field (UTF-8 required). */
function text(r: Reader, wire: number, name: string): string {
  want(wire, LEN, name);
  return r.strictString(name);
}

/**
 * Decodes a `MeshCertificateRequest`.
 * @throws {WireError} when `b` is not one.
 */
export function decodeMeshCertificateRequest(b: Uint8Array): MeshCertificateRequest {
  const out = { csr: "", validityDuration: 0 };
  eachField(b, (r, no, wire) => {
    if (no === 1) out.csr = text(r, wire, "csr");
    else if (no === 3) {
      want(wire, VARINT, "validity_duration");
      out.validityDuration = r.int64();
    } else return false;
    return true;
  });
  return out;
}

/** Encodes a `MeshCertificateRequest` (clients: the agent, self-check, upstream CA, tests, bench). */
export function encodeMeshCertificateRequest(r: MeshCertificateRequest): Uint8Array {
  return new MessageBuilder().string(1, r.csr).int(3, r.validityDuration).finish();
}

/**
 * Decodes a `MeshCertificateResponse`: the certificate chain, leaf first.
 * @throws {WireError} when `b` is not one.
 */
export function decodeMeshCertificateResponse(b: Uint8Array): string[] {
  const out: string[] = [];
  eachField(b, (r, no, wire) => {
    if (no !== 1) return false;
    out.push(text(r, wire, "cert_chain"));
    return true;
  });
  return out;
}

/** Encodes a `MeshCertificateResponse` (every element written, empty ones too). */
export function encodeMeshCertificateResponse(certChain: readonly string[]): Uint8Array {
  const m = new MessageBuilder();
  for (const c of certChain) m.string(1, c, true);
  return m.finish();
}

/**
 * Decodes a `CsrRequest`.
 * @throws {WireError} when `b` is not one.
 */
export function decodeCsrRequest(b: Uint8Array): CsrRequest {
  const out = { csrPem: "", nodeAgentCredential: "", credentialType: "", requestedTtlMinutes: 0 };
  eachField(b, (r, no, wire) => {
    if (no === 1) out.csrPem = text(r, wire, "csr_pem");
    else if (no === 2) out.nodeAgentCredential = text(r, wire, "node_agent_credential");
    else if (no === 3) out.credentialType = text(r, wire, "credential_type");
    else if (no === 4) {
      want(wire, VARINT, "requested_ttl_minutes");
      out.requestedTtlMinutes = r.int32();
    } else return false;
    return true;
  });
  return out;
}

/** Encodes a `CsrResponse`. */
export function encodeCsrResponse(r: CsrResponse): Uint8Array {
  const m = new MessageBuilder().bool(1, r.isApproved);
  if (r.status) {
    m.message(2, new MessageBuilder().int(1, r.status.code).string(2, r.status.message).finish());
  }
  return m.string(3, r.signedCert).string(4, r.certChain).finish();
}

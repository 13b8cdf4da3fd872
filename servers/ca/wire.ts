/**
 * Protobuf encoding of the messages of `proto/ca.proto`, by hand: they are small and flat, and
 * this keeps protobufjs off the signing path.
 * @module
 */

/** Thrown on a request that is not valid protobuf for its message. */
export class WireError extends Error {
  override name = "WireError";
}

/** `MeshCertificateRequest`. */
export interface MeshCertificateRequest {
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

type Field = { no: number; type: number; int: bigint; bytes: Uint8Array };

/** Reads every field of a message (varint, 64-bit, length-delimited and 32-bit wire types). */
function* fields(b: Uint8Array): Generator<Field> {
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      if (i >= b.length) throw new WireError("truncated varint");
      const c = b[i++];
      v |= BigInt(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
      shift += 7n;
      if (shift > 63n) throw new WireError("varint too long");
    }
  };
  while (i < b.length) {
    const key = Number(varint());
    const no = key >>> 3;
    const type = key & 7;
    if (no === 0) throw new WireError("field number 0");
    switch (type) {
      case 0:
        yield { no, type, int: varint(), bytes: new Uint8Array() };
        break;
      case 1:
      case 5: {
        const n = type === 1 ? 8 : 4;
        if (i + n > b.length) throw new WireError("truncated fixed field");
        i += n;
        break;
      }
      case 2: {
        const len = Number(varint());
        if (i + len > b.length) throw new WireError(`truncated field ${no}`);
        yield { no, type, int: 0n, bytes: b.subarray(i, i + len) };
        i += len;
        break;
      }
      default:
        throw new WireError(`unsupported wire type ${type}`);
    }
  }
}

const td = new TextDecoder("utf-8", { fatal: true });
const te = new TextEncoder();

function text(f: Field, name: string): string {
  if (f.type !== 2) throw new WireError(`${name}: wrong wire type ${f.type}`);
  try {
    return td.decode(f.bytes);
  } catch {
    throw new WireError(`${name}: not UTF-8`);
  }
}

function int(f: Field, name: string): bigint {
  if (f.type !== 0) throw new WireError(`${name}: wrong wire type ${f.type}`);
  return f.int;
}

/** Decodes a `MeshCertificateRequest`. */
export function decodeMeshCertificateRequest(b: Uint8Array): MeshCertificateRequest {
  const out = { csr: "", validityDuration: 0 };
  for (const f of fields(b)) {
    if (f.no === 1) out.csr = text(f, "csr");
    else if (f.no === 3) {
      out.validityDuration = Number(BigInt.asIntN(64, int(f, "validity_duration")));
    }
  }
  return out;
}

/** Decodes a `CsrRequest`. */
export function decodeCsrRequest(b: Uint8Array): CsrRequest {
  const out = { csrPem: "", nodeAgentCredential: "", credentialType: "", requestedTtlMinutes: 0 };
  for (const f of fields(b)) {
    if (f.no === 1) out.csrPem = text(f, "csr_pem");
    else if (f.no === 2) out.nodeAgentCredential = text(f, "node_agent_credential");
    else if (f.no === 3) out.credentialType = text(f, "credential_type");
    else if (f.no === 4) {
      out.requestedTtlMinutes = Number(BigInt.asIntN(32, int(f, "requested_ttl_minutes")));
    }
  }
  return out;
}

// ---- encoding ---------------------------------------------------------------------------------

function varintBytes(v: number | bigint): number[] {
  let n = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  while (n >= 0x80n) {
    out.push(Number(n & 0x7fn) | 0x80);
    n >>= 7n;
  }
  out.push(Number(n));
  return out;
}

class Writer {
  parts: Uint8Array[] = [];
  len(no: number, bytes: Uint8Array): this {
    this.parts.push(Uint8Array.from([...varintBytes((no << 3) | 2), ...varintBytes(bytes.length)]));
    this.parts.push(bytes);
    return this;
  }
  str(no: number, s: string | undefined): this {
    return s ? this.len(no, te.encode(s)) : this;
  }
  int(no: number, v: number): this {
    if (v) this.parts.push(Uint8Array.from([...varintBytes(no << 3), ...varintBytes(v)]));
    return this;
  }
  bytes(): Uint8Array {
    const n = this.parts.reduce((a, p) => a + p.length, 0);
    const out = new Uint8Array(n);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

/** Encodes a `MeshCertificateResponse`. */
export function encodeMeshCertificateResponse(certChain: readonly string[]): Uint8Array {
  const w = new Writer();
  for (const c of certChain) w.len(1, te.encode(c));
  return w.bytes();
}

/** Encodes a `MeshCertificateRequest` (clients: self-check, upstream CA, tests, bench). */
export function encodeMeshCertificateRequest(r: MeshCertificateRequest): Uint8Array {
  return new Writer().str(1, r.csr).int(3, r.validityDuration).bytes();
}

/** Decodes a `MeshCertificateResponse`. */
export function decodeMeshCertificateResponse(b: Uint8Array): string[] {
  const out: string[] = [];
  for (const f of fields(b)) if (f.no === 1) out.push(text(f, "cert_chain"));
  return out;
}

/** Encodes a `CsrResponse`. */
export function encodeCsrResponse(r: CsrResponse): Uint8Array {
  const w = new Writer().int(1, r.isApproved ? 1 : 0);
  if (r.status) w.len(2, new Writer().int(1, r.status.code).str(2, r.status.message).bytes());
  return w.str(3, r.signedCert).str(4, r.certChain).bytes();
}

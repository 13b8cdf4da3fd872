/**
 * A small DER reader and writer, for the CA's hot path: parsing a CSR and building a workload
 * certificate by hand costs a fraction of @peculiar/x509's generic ASN.1 schema machinery (which
 * stays in use for everything else). Only definite-length DER is read.
 * @module
 */

/** One TLV: tag byte, and where its content and the whole element lie in the buffer. */
export interface Tlv {
  tag: number;
  /** The content bytes. */
  value: Uint8Array;
  /** The whole element (tag, length, content). */
  raw: Uint8Array;
}

/** Thrown on malformed DER. */
export class DerError extends Error {
  override name = "DerError";
}

/** Reads the element at `offset` of `b`. */
export function readTlv(b: Uint8Array, offset = 0): Tlv {
  if (offset + 2 > b.length) throw new DerError("truncated element");
  const tag = b[offset];
  if ((tag & 0x1f) === 0x1f) throw new DerError("high tag numbers are not supported");
  let len = b[offset + 1];
  let at = offset + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new DerError("unsupported length");
    if (at + n > b.length) throw new DerError("truncated length");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + b[at + i];
    at += n;
  }
  if (at + len > b.length) throw new DerError("truncated content");
  return { tag, value: b.subarray(at, at + len), raw: b.subarray(offset, at + len) };
}

/** The elements inside a constructed element's content. */
export function children(value: Uint8Array): Tlv[] {
  const out: Tlv[] = [];
  for (let at = 0; at < value.length;) {
    const t = readTlv(value, at);
    out.push(t);
    at += t.raw.length;
  }
  return out;
}

/** Expects `t` to have `tag`; returns it. */
export function expectTag(t: Tlv | undefined, tag: number, what: string): Tlv {
  if (!t || t.tag !== tag) throw new DerError(`${what}: unexpected element`);
  return t;
}

/** Encodes one element from its content parts. */
export function tlv(tag: number, ...content: Uint8Array[]): Uint8Array {
  let len = 0;
  for (const c of content) len += c.length;
  // Tag and length written in place (the hot path builds ~20 elements a certificate).
  const lenBytes = len < 0x80 ? 0 : len < 0x100 ? 1 : len < 0x10000 ? 2 : len < 0x1000000 ? 3 : 4;
  const out = new Uint8Array(2 + lenBytes + len);
  out[0] = tag;
  if (lenBytes === 0) out[1] = len;
  else {
    out[1] = 0x80 | lenBytes;
    for (let i = 0; i < lenBytes; i++) out[2 + i] = (len >>> (8 * (lenBytes - 1 - i))) & 0xff;
  }
  let at = 2 + lenBytes;
  for (const c of content) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Hex of bytes. */
export function hex(b: Uint8Array): string {
  let s = "";
  for (const v of b) s += v.toString(16).padStart(2, "0");
  return s;
}

/** Decodes an OBJECT IDENTIFIER's content to dotted form. */
export function oid(value: Uint8Array): string {
  if (!value.length) throw new DerError("empty OID");
  const parts = [
    Math.floor(Math.min(value[0], 80) / 40),
    value[0] >= 80 ? value[0] - 80 : value[0] % 40,
  ];
  let n = 0;
  for (let i = 1; i < value.length; i++) {
    n = n * 128 + (value[i] & 0x7f);
    if (!(value[i] & 0x80)) {
      parts.push(n);
      n = 0;
    }
  }
  return parts.join(".");
}

/** UTCTime before 2050, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5), to the second. */
export function time(d: Date): Uint8Array {
  const iso = d.toISOString(); // 2026-11-24T17:16:26.512Z
  const y = d.getUTCFullYear();
  const body = iso.slice(5, 7) + iso.slice(8, 10) + iso.slice(11, 13) + iso.slice(14, 16) +
    iso.slice(17, 19) + "Z";
  if (y >= 1950 && y < 2050) return tlv(0x17, ascii(String(y).slice(2) + body));
  return tlv(0x18, ascii(String(y).padStart(4, "0") + body));
}

/** ASCII bytes. */
export function ascii(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0x7f;
  return out;
}

/** A DER INTEGER from unsigned big-endian bytes. */
export function unsignedInteger(b: Uint8Array): Uint8Array {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  const v = b.subarray(i);
  return v[0] & 0x80 ? tlv(0x02, Uint8Array.of(0), v) : tlv(0x02, v);
}

/** ECDSA signature: IEEE P1363 (r || s, WebCrypto) to DER `SEQUENCE { r, s }`. */
export function ecdsaP1363ToDer(sig: Uint8Array): Uint8Array {
  const half = sig.length / 2;
  return tlv(0x30, unsignedInteger(sig.subarray(0, half)), unsignedInteger(sig.subarray(half)));
}

/** ECDSA signature: DER `SEQUENCE { r, s }` to IEEE P1363 with `size`-byte halves. */
export function ecdsaDerToP1363(der: Uint8Array, size: number): Uint8Array {
  const [r, s] = children(expectTag(readTlv(der), 0x30, "ECDSA signature").value);
  const out = new Uint8Array(2 * size);
  for (const [i, x] of [[0, r], [1, s]] as const) {
    let v = expectTag(x, 0x02, "ECDSA signature").value;
    while (v.length > size && v[0] === 0) v = v.subarray(1);
    if (v.length > size) throw new DerError("ECDSA signature integer too long");
    out.set(v, i * size + size - v.length);
  }
  return out;
}

/**
 * Protobuf wire encoding of `DiscoveryResponse` and `DeltaDiscoveryResponse`, written by hand so
 * that pre-serialized resources are copied into the response as-is (no object conversion). Each
 * resource's `Any` encoding is built once per (entry, type URL) and shared by every response.
 * Field numbers are those of envoy/service/discovery/v3/discovery.proto.
 * @module
 */

import { Buffer } from "node:buffer";
import type {
  DeltaDiscoveryResponse,
  DiscoveryResponse,
  NamedResource,
  ResourceEntry,
} from "./types.ts";

const LEN = 2; // wire type "length-delimited"
const te = new TextEncoder();

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** A length-delimited field: tag + length + payload. */
function fieldSize(payloadLen: number, field: number): number {
  return varintSize((field << 3) | LEN) + varintSize(payloadLen) + payloadLen;
}

class Writer {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  varint(n: number): void {
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }
  bytes(field: number, b: Uint8Array): void {
    this.varint((field << 3) | LEN);
    this.varint(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
  /** Writes a field whose payload length is known and whose payload is written next by the caller. */
  header(field: number, len: number): void {
    this.varint((field << 3) | LEN);
    this.varint(len);
  }
}

const anyCache = new WeakMap<ResourceEntry, { typeUrl: string; any: Uint8Array }>();

/** The encoded `google.protobuf.Any{type_url, value: entry.bytes}`, cached per entry. */
export function encodedAny(typeUrl: string, entry: ResourceEntry): Uint8Array {
  const hit = anyCache.get(entry);
  if (hit && hit.typeUrl === typeUrl) return hit.any;
  const t = te.encode(typeUrl);
  const w = new Writer(
    Buffer.allocUnsafe(fieldSize(t.length, 1) + fieldSize(entry.bytes.length, 2)),
  );
  w.bytes(1, t);
  w.bytes(2, entry.bytes);
  anyCache.set(entry, { typeUrl, any: w.buf });
  return w.buf;
}

function str(s: string | undefined): Uint8Array | undefined {
  return s ? te.encode(s) : undefined;
}

function controlPlane(cp: { identifier: string } | undefined): Uint8Array | undefined {
  if (!cp?.identifier) return undefined;
  const id = te.encode(cp.identifier);
  const w = new Writer(Buffer.allocUnsafe(fieldSize(id.length, 1)));
  w.bytes(1, id);
  return w.buf;
}

/** Encodes a state-of-the-world `DiscoveryResponse`. */
export function encodeDiscoveryResponse(r: DiscoveryResponse): Buffer {
  const version = str(r.version_info);
  const typeUrl = str(r.type_url);
  const nonce = str(r.nonce);
  const cp = controlPlane(r.control_plane);
  const anys = r.resources.map((x) => encodedAny(r.type_url, x.entry));
  let size = 0;
  if (version) size += fieldSize(version.length, 1);
  for (const a of anys) size += fieldSize(a.length, 2);
  if (typeUrl) size += fieldSize(typeUrl.length, 4);
  if (nonce) size += fieldSize(nonce.length, 5);
  if (cp) size += fieldSize(cp.length, 6);
  const w = new Writer(Buffer.allocUnsafe(size));
  if (version) w.bytes(1, version);
  for (const a of anys) w.bytes(2, a);
  if (typeUrl) w.bytes(4, typeUrl);
  if (nonce) w.bytes(5, nonce);
  if (cp) w.bytes(6, cp);
  return w.buf;
}

/** Encodes `envoy.service.discovery.v3.Resource{name, version, resource: Any}` parts. */
function deltaResourceParts(typeUrl: string, r: NamedResource) {
  const name = te.encode(r.name);
  const version = te.encode(r.entry.version);
  const any = encodedAny(typeUrl, r.entry);
  const len = fieldSize(version.length, 1) + fieldSize(any.length, 2) +
    fieldSize(name.length, 3);
  return { name, version, any, len };
}

/** Encodes a `DeltaDiscoveryResponse`. */
export function encodeDeltaDiscoveryResponse(r: DeltaDiscoveryResponse): Buffer {
  const version = str(r.system_version_info);
  const typeUrl = str(r.type_url);
  const nonce = str(r.nonce);
  const cp = controlPlane(r.control_plane);
  const resources = r.resources.map((x) => deltaResourceParts(r.type_url, x));
  const removed = r.removed_resources.map((n) => te.encode(n));
  let size = 0;
  if (version) size += fieldSize(version.length, 1);
  for (const x of resources) size += fieldSize(x.len, 2);
  if (typeUrl) size += fieldSize(typeUrl.length, 4);
  if (nonce) size += fieldSize(nonce.length, 5);
  for (const n of removed) size += fieldSize(n.length, 6);
  if (cp) size += fieldSize(cp.length, 7);
  const w = new Writer(Buffer.allocUnsafe(size));
  if (version) w.bytes(1, version);
  for (const x of resources) {
    w.header(2, x.len);
    w.bytes(1, x.version);
    w.bytes(2, x.any);
    w.bytes(3, x.name);
  }
  if (typeUrl) w.bytes(4, typeUrl);
  if (nonce) w.bytes(5, nonce);
  for (const n of removed) w.bytes(6, n);
  if (cp) w.bytes(7, cp);
  return w.buf;
}

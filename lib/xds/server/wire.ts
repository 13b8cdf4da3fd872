/**
 * Protobuf wire encoding of `DiscoveryResponse` and `DeltaDiscoveryResponse`, written by hand so
 * that pre-serialized resources are copied into the response as-is (no object conversion). Each
 * resource's `Any` encoding is built once per (entry, type URL) and shared by every response.
 * Field numbers are those of envoy/service/discovery/v3/discovery.proto.
 * @module
 */

import { Buffer } from "node:buffer";
import {
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
  type NamedResource,
  type ResourceEntry,
  XDS_TYPES,
} from "./types.ts";
import { fieldSize, LEN, Reader, utf8, WireError, Writer } from "../../protowire/mod.ts";

const te = new TextEncoder();

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

/** Strings as UTF-8: short ASCII ones (versions, nonces) without a TextEncoder call; type URLs cached. */
const strCache = new Map<string, Uint8Array>();
/**
 * Recent response versions as UTF-8: content versions are shared by every stream holding the same
 * view, so a push to many streams encodes each once. Cleared when full.
 */
const versionCache = new Map<string, Uint8Array>();
function versionBytes(s: string | undefined): Uint8Array | undefined {
  if (!s) return undefined;
  let b = versionCache.get(s);
  if (!b) {
    if (versionCache.size >= 256) versionCache.clear();
    b = str(s)!;
    versionCache.set(s, b);
  }
  return b;
}

function str(s: string | undefined): Uint8Array | undefined {
  if (!s) return undefined;
  const hit = strCache.get(s);
  if (hit) return hit;
  if (s.startsWith("type.googleapis.com/") && strCache.size < 64) {
    const b = te.encode(s);
    strCache.set(s, b);
    return b;
  }
  if (s.length <= 64) {
    const b = Buffer.allocUnsafe(s.length);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) return te.encode(s);
      b[i] = c;
    }
    return b;
  }
  return te.encode(s);
}

function controlPlane(cp: { identifier: string } | undefined): Uint8Array | undefined {
  if (!cp?.identifier) return undefined;
  const id = te.encode(cp.identifier);
  const w = new Writer(Buffer.allocUnsafe(fieldSize(id.length, 1)));
  w.bytes(1, id);
  return w.buf;
}

/** Resource lists shared by many responses (see {@link markShared}). */
const shared = new WeakSet<readonly NamedResource[]>();
/** Encoded `resources` fields of one-entry SotW lists, per entry (and type URL). */
const oneBodies = new WeakMap<ResourceEntry, { typeUrl: string; body: Uint8Array }>();
/** Encoded `resources` fields of shared lists, per list (and type URL). */
const bodies = new WeakMap<readonly NamedResource[], { typeUrl: string; body: Uint8Array }>();

/**
 * Marks a resource list (never mutated afterwards) as shared by many responses: the encoding of
 * its `resources` fields is then built once and copied into each response, whose own fields
 * (version, nonce) differ.
 */
export function markShared(list: readonly NamedResource[]): void {
  shared.add(list);
}

/** The `resources` fields (2) of a SotW response: `Any` encodings, each with tag and length. */
function resourcesBody(typeUrl: string, list: readonly NamedResource[]): Uint8Array {
  const anys = list.map((x) => encodedAny(typeUrl, x.entry));
  let size = 0;
  for (const a of anys) size += fieldSize(a.length, 2);
  const w = new Writer(Buffer.allocUnsafe(size));
  for (const a of anys) w.bytes(2, a);
  return w.buf;
}

/**
 * The encoded `resources` fields of `list`: built by `build`, and for a shared list (see
 * {@link markShared}) built once per list and type URL and kept in `cache`.
 */
function resourcesOf(
  cache: WeakMap<readonly NamedResource[], { typeUrl: string; body: Uint8Array }>,
  typeUrl: string,
  list: readonly NamedResource[],
  build: (typeUrl: string, list: readonly NamedResource[]) => Uint8Array,
): Uint8Array {
  if (!shared.has(list)) {
    if (list.length !== 1) return build(typeUrl, list);
    // One resource (a route configuration, an updated assignment): cached per entry, since
    // lists of the same entry differ from client to client.
    const entry = list[0].entry;
    let one = cache === bodies ? oneBodies.get(entry) : undefined;
    if (!one || one.typeUrl !== typeUrl) {
      one = { typeUrl, body: build(typeUrl, list) };
      if (cache === bodies) oneBodies.set(entry, one);
    }
    return one.body;
  }
  let hit = cache.get(list);
  if (!hit || hit.typeUrl !== typeUrl) {
    hit = { typeUrl, body: build(typeUrl, list) };
    cache.set(list, hit);
  }
  return hit.body;
}

/**
 * Encodes a state-of-the-world `DiscoveryResponse` as parts whose concatenation is the message:
 * the response's own fields, then the `resources` fields (for a shared list, the one buffer every
 * response of that list shares; see {@link markShared}), then the rest. The transport writes
 * them without joining them.
 */
export function encodeDiscoveryResponseParts(r: DiscoveryResponse): Uint8Array[] {
  const version = versionBytes(r.version_info);
  const typeUrl = str(r.type_url);
  const nonce = str(r.nonce);
  const cp = controlPlane(r.control_plane);
  const body = resourcesOf(bodies, r.type_url, r.resources, resourcesBody);
  // Fields in number order (as protobufjs writes them): version (1) | resources (2) | 4, 5, 6.
  const head = new Writer(Buffer.allocUnsafe(version ? fieldSize(version.length, 1) : 0));
  if (version) head.bytes(1, version);
  let size = 0;
  if (typeUrl) size += fieldSize(typeUrl.length, 4);
  if (nonce) size += fieldSize(nonce.length, 5);
  if (cp) size += fieldSize(cp.length, 6);
  const w = new Writer(Buffer.allocUnsafe(size));
  if (typeUrl) w.bytes(4, typeUrl);
  if (nonce) w.bytes(5, nonce);
  if (cp) w.bytes(6, cp);
  return [head.buf, body, w.buf];
}

/** Encodes a state-of-the-world `DiscoveryResponse` as one buffer. */
export function encodeDiscoveryResponse(r: DiscoveryResponse): Buffer {
  return Buffer.concat(encodeDiscoveryResponseParts(r));
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

/** Encoded `resources` fields of shared lists in delta responses, per list (and type URL). */
const deltaBodies = new WeakMap<readonly NamedResource[], { typeUrl: string; body: Uint8Array }>();

/** The `resources` fields (2) of a delta response: `Resource` messages, each with tag and length. */
function deltaResourcesBody(typeUrl: string, list: readonly NamedResource[]): Uint8Array {
  const parts = list.map((x) => deltaResourceParts(typeUrl, x));
  let size = 0;
  for (const x of parts) size += fieldSize(x.len, 2);
  const w = new Writer(Buffer.allocUnsafe(size));
  for (const x of parts) {
    w.header(2, x.len);
    w.bytes(1, x.version);
    w.bytes(2, x.any);
    w.bytes(3, x.name);
  }
  return w.buf;
}

/**
 * Encodes a `DeltaDiscoveryResponse` as parts (see {@link encodeDiscoveryResponseParts}). The
 * `resources` of a shared list (see {@link markShared}) are encoded once and shared.
 */
export function encodeDeltaDiscoveryResponseParts(r: DeltaDiscoveryResponse): Uint8Array[] {
  const version = versionBytes(r.system_version_info);
  const typeUrl = str(r.type_url);
  const nonce = str(r.nonce);
  const cp = controlPlane(r.control_plane);
  const body = resourcesOf(deltaBodies, r.type_url, r.resources, deltaResourcesBody);
  const removed = r.removed_resources.map((n) => te.encode(n));
  // Fields in number order: system_version_info (1) | resources (2) | 4, 5, 6, 7.
  const head = new Writer(Buffer.allocUnsafe(version ? fieldSize(version.length, 1) : 0));
  if (version) head.bytes(1, version);
  let size = 0;
  if (typeUrl) size += fieldSize(typeUrl.length, 4);
  if (nonce) size += fieldSize(nonce.length, 5);
  for (const n of removed) size += fieldSize(n.length, 6);
  if (cp) size += fieldSize(cp.length, 7);
  const w = new Writer(Buffer.allocUnsafe(size));
  if (typeUrl) w.bytes(4, typeUrl);
  if (nonce) w.bytes(5, nonce);
  for (const n of removed) w.bytes(6, n);
  if (cp) w.bytes(7, cp);
  return [head.buf, body, w.buf];
}

/** Encodes a `DeltaDiscoveryResponse` as one buffer. */
export function encodeDeltaDiscoveryResponse(r: DeltaDiscoveryResponse): Buffer {
  return Buffer.concat(encodeDeltaDiscoveryResponseParts(r));
}

// ---- requests ---------------------------------------------------------------------------------

/** Decodes the repeated string field of an encoded span holding only that field. */
function decodeNames(raw: Uint8Array): string[] {
  const out: string[] = [];
  const r = new Reader(raw);
  while (r.pos < r.end) {
    r.uint32(); // tag
    out.push(r.string());
  }
  return out;
}

/** A hand-decoded SotW request: `resource_names` is decoded from the raw bytes on first use. */
class DecodedRequest implements DiscoveryRequest {
  version_info?: string;
  type_url?: string;
  response_nonce?: string;
  resource_names_raw?: Uint8Array;
  #names?: string[];
  constructor(names?: string[]) {
    this.#names = names;
  }
  get resource_names(): string[] {
    return this.#names ??= this.resource_names_raw ? decodeNames(this.resource_names_raw) : [];
  }
}

/** The type URLs of `XDS_TYPES` as UTF-8, each with its string, by length. */
const typeUrlsByLength = new Map<number, { bytes: Uint8Array; url: string }[]>();
for (const url of Object.values(XDS_TYPES)) {
  const bytes = te.encode(url);
  const same = typeUrlsByLength.get(bytes.length) ?? [];
  same.push({ bytes, url });
  typeUrlsByLength.set(bytes.length, same);
}

/**
 * The type URL of `XDS_TYPES` that `b[s, e)` holds, or undefined: every request names one of a
 * few types, so the string it decodes to is the constant, not a new one per request (an ACK of
 * each stream at every push).
 */
function knownTypeUrl(b: Uint8Array, s: number, e: number): string | undefined {
  const same = typeUrlsByLength.get(e - s);
  if (!same) return undefined;
  outer: for (const { bytes, url } of same) {
    // From the end: type URLs share their "type.googleapis.com/envoy." start.
    for (let i = bytes.length - 1; i >= 0; i--) if (b[s + i] !== bytes[i]) continue outer;
    return url;
  }
  return undefined;
}

/** Hints shorter than this are not worth a comparison: walking a few names costs as little. */
const MIN_HINT = 64;

/**
 * The hint whose bytes `b` holds at `at`, followed by no further name (the end of `b[, end)` or
 * another field), or undefined.
 */
function namesAt(
  b: Uint8Array,
  at: number,
  end: number,
  hints: readonly (Uint8Array | undefined)[],
): Uint8Array | undefined {
  for (const h of hints) {
    if (!h || h.length < MIN_HINT) continue;
    const after = at + h.length;
    // b[end] is undefined: a hint that ends the message is followed by no name
    if (after > end || b[after] === 0x1a) continue;
    if (asBuffer(b).compare(h, 0, h.length, at, after) === 0) return h;
  }
  return undefined;
}

/**
 * Decodes a state-of-the-world `DiscoveryRequest` by hand, or returns `null` when it carries
 * `node` or `error_detail` (first requests and NACKs: decode those with proto-loader) or is not
 * well-formed. `resource_names` is decoded lazily; `resource_names_raw` holds the encoded names
 * (tag, length, bytes of each, in order) when they are contiguous in the message, so that a
 * request repeating the previous names can be recognized with one byte comparison. `hints` are
 * the encoded names of the stream's subscriptions: when the request's names are one of them byte
 * for byte (a SotW ACK repeats them all: ~1000 names for a sidecar's endpoints), they are not
 * walked name by name, and `resource_names_raw` is that hint itself. Unknown fields are skipped.
 */
export function decodeDiscoveryRequest(
  b: Uint8Array,
  hints?: readonly (Uint8Array | undefined)[],
): DiscoveryRequest | null {
  try {
    const r = new Reader(b);
    let version: string | undefined, typeUrl: string | undefined, nonce: string | undefined;
    let namesStart = -1, namesEnd = -1, contiguous = true, lastWasName = false;
    let hinted: Uint8Array | undefined;
    while (r.pos < r.end) {
      const tagAt = r.pos;
      const tag = r.uint32();
      const no = tag >>> 3, wire = tag & 7;
      if (no === 3 && wire === 2) {
        const hint = namesStart < 0 && hints ? namesAt(b, tagAt, r.end, hints) : undefined;
        if (hint) {
          // The names of a subscription this stream has, byte for byte: no walk over them (the
          // field after them is not a name).
          hinted = hint;
          namesStart = tagAt;
          r.pos = namesEnd = tagAt + hint.length;
          continue;
        }
        r.payload();
        if (namesStart < 0) namesStart = tagAt;
        else if (!lastWasName) contiguous = false;
        // The names that follow (a SotW EDS ACK repeats ~1000), each with a one-byte tag and
        // length: skipped in a tight loop, without a call per name.
        const buf = r.b, end = r.end;
        let p = r.pos;
        while (p + 1 < end && buf[p] === 0x1a && buf[p + 1] < 0x80 && p + 2 + buf[p + 1] <= end) {
          p += 2 + buf[p + 1];
        }
        r.pos = p;
        namesEnd = r.pos;
        lastWasName = true;
        continue;
      }
      lastWasName = false;
      if ((no === 1 || no === 4 || no === 5) && wire === 2) {
        if (no === 4) {
          const start = r.payload();
          typeUrl = knownTypeUrl(b, start, r.pos) ?? utf8(b, start, r.pos);
          continue;
        }
        const v = r.string();
        if (no === 1) version = v;
        else nonce = v;
      } else if (no === 2 || no === 6) {
        return null; // node, error_detail
      } else {
        r.skip(wire);
      }
    }
    let loose: string[] | undefined;
    if (!contiguous) {
      // Names interleaved with other fields (unusual): decode them now, in order.
      loose = [];
      r.pos = 0;
      while (r.pos < r.end) {
        const tag = r.uint32();
        if (tag === ((3 << 3) | LEN)) loose.push(r.string());
        else r.skip(tag & 7);
      }
    }
    const out = new DecodedRequest(loose);
    if (version !== undefined) out.version_info = version;
    if (typeUrl !== undefined) out.type_url = typeUrl;
    if (nonce !== undefined) out.response_nonce = nonce;
    if (namesStart >= 0 && contiguous) {
      out.resource_names_raw = hinted ?? b.subarray(namesStart, namesEnd);
    }
    return out;
  } catch (e) {
    if (e instanceof WireError) return null; // not well-formed: the full decoder says why
    throw e;
  }
}

/**
 * Decodes a `DeltaDiscoveryRequest` by hand, or returns `null` when it carries `node` or
 * `error_detail` (decode those with proto-loader) or is not well-formed. Unknown fields are
 * skipped.
 */
export function decodeDeltaDiscoveryRequest(b: Uint8Array): DeltaDiscoveryRequest | null {
  try {
    const r = new Reader(b);
    const out: DeltaDiscoveryRequest = {};
    while (r.pos < r.end) {
      const tag = r.uint32();
      const no = tag >>> 3, wire = tag & 7;
      if (no === 1 || no === 7) return null; // node, error_detail
      if (wire !== 2 || no < 2 || no > 6) {
        r.skip(wire);
        continue;
      }
      const [s, e] = r.span();
      if (no === 2) out.type_url = utf8(b, s, e);
      else if (no === 3) (out.resource_names_subscribe ??= []).push(utf8(b, s, e));
      else if (no === 4) (out.resource_names_unsubscribe ??= []).push(utf8(b, s, e));
      else if (no === 6) out.response_nonce = utf8(b, s, e);
      else {
        // map<string, string> entry: key = 1, value = 2
        const m = new Reader(b, s, e);
        let k = "", v = "";
        while (m.pos < m.end) {
          const t = m.uint32();
          if ((t & 7) !== 2) {
            m.skip(t & 7);
            continue;
          }
          const x = m.string();
          if (t >>> 3 === 1) k = x;
          else if (t >>> 3 === 2) v = x;
        }
        (out.initial_resource_versions ??= {})[k] = v;
      }
    }
    return out;
  } catch (e) {
    if (e instanceof WireError) return null; // not well-formed: the full decoder says why
    throw e;
  }
}

/** True when two byte arrays hold the same bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  // Buffers (what the transport hands over, and what is kept of it) are compared as they are: a
  // SotW ACK is compared on every read, and a Buffer view of each side would be garbage.
  return asBuffer(a).equals(asBuffer(b));
}

const asBuffer = (a: Uint8Array): Buffer =>
  Buffer.isBuffer(a) ? a : Buffer.from(a.buffer, a.byteOffset, a.length);

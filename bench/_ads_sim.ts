/**
 * Simulated Envoy sidecars for the xDS benchmark: ADS streams over raw HTTP/2 (`node:http2`) with
 * hand-encoded protobuf, light enough to run thousands in one process. Each proxy subscribes like
 * Envoy does: CDS and LDS wildcard, then EDS for the `outbound|...` clusters it received and RDS
 * for the given route names, ACKing every response. SotW or delta.
 *
 * Cheap by design: a response is read by one top-level scan that allocates nothing per resource
 * (its `resources` fields are one contiguous byte range, see {@link Section}), and every proxy
 * receiving the same resource bytes shares one decoded {@link Section} (names decoded once, callers'
 * per-content answers memoized), found by a native byte comparison.
 * @module
 */

import http2 from "node:http2";
import { LeanSession, LeanStream, messageBuffers } from "./_h2_lean.ts";
import { GrpcMessageReader } from "../lib/grpc/messages.ts";
import { Buffer } from "node:buffer";
import { fieldSize, MessageBuilder, Reader, Writer } from "../lib/protowire/mod.ts";

/** Type URLs of the four resource types the benchmark meets. */
export const TYPE = {
  cds: "type.googleapis.com/envoy.config.cluster.v3.Cluster",
  eds: "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
  lds: "type.googleapis.com/envoy.config.listener.v3.Listener",
  rds: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
} as const;
/** Short type names used by the benchmark. */
export type TypeName = keyof typeof TYPE;
const TYPE_NAMES = Object.keys(TYPE) as TypeName[];
const te = new TextEncoder();
/** The type URLs' bytes, in {@link TYPE_NAMES} order. */
const TYPE_BYTES = TYPE_NAMES.map((t) => te.encode(TYPE[t]));
const EMPTY = new Uint8Array();

// ---- protobuf encoding ----------------------------------------------------------------------

/** A length-delimited field `no` holding `value`. */
function field(no: number, value: Uint8Array | string): Uint8Array {
  const m = new MessageBuilder();
  return (typeof value === "string" ? m.string(no, value, true) : m.bytes(no, value)).finish();
}

/**
 * Name lists shared by proxies (every sidecar subscribes to the same ~1000 EDS names): one array
 * and its encoding (repeated string field `no`) per distinct list, so ACKs cost a copy, not an
 * encoding.
 */
const internedNames = new Map<string, { list: string[]; encoded: Map<number, Buffer> }>();
const encodedNames = new WeakMap<readonly string[], Map<number, Buffer>>();

/** The shared array equal to `names` (interned by content). */
export function internNames(names: string[]): string[] {
  const key = names.join("\n");
  let hit = internedNames.get(key);
  if (!hit) {
    hit = { list: names, encoded: new Map() };
    internedNames.set(key, hit);
    encodedNames.set(names, hit.encoded);
  }
  return hit.list;
}

/** The set of an interned list's names, built once per list. */
const nameSets = new WeakMap<readonly string[], Set<string>>();
function nameSet(names: readonly string[]): Set<string> {
  let set = nameSets.get(names);
  if (!set) nameSets.set(names, set = new Set(names));
  return set;
}

/** `[...prev, ...fresh]` for interned lists, interned; cached per (prev, fresh) pair. */
const extensions = new WeakMap<readonly string[], WeakMap<readonly string[], string[]>>();
function extendNames(prev: string[], fresh: string[]): string[] {
  if (!prev.length) return fresh;
  let byFresh = extensions.get(prev);
  if (!byFresh) extensions.set(prev, byFresh = new WeakMap());
  let next = byFresh.get(fresh);
  if (!next) byFresh.set(fresh, next = internNames([...prev, ...fresh]));
  return next;
}

/** The encoded repeated string field `no` of an interned list (tags included), built once. */
function namesField(no: number, names: readonly string[]): Buffer | undefined {
  if (!names.length) return undefined;
  let byNo = encodedNames.get(names);
  if (!byNo) encodedNames.set(names, byNo = new Map());
  let b = byNo.get(no);
  if (!b) {
    const m = new MessageBuilder();
    for (const n of names) m.string(no, n, true);
    byNo.set(no, b = Buffer.from(m.finish().buffer));
  }
  return b;
}

/** A part of a request: a length-delimited field `[no, payload]`, or `[0, bytes]` already encoded. */
type Part = readonly [no: number, bytes: Uint8Array];

/** Pre-encoded parts at least this long are sent as they are, not copied into the message. */
const SHARED_PART = 1024;

/**
 * The gRPC frame (5-byte prefix + message) of a message made of `parts`, as consecutive chunks:
 * the small fields in one allocation, and each pre-encoded part of {@link SHARED_PART} bytes or
 * more (a SotW ACK's ~1000 interned names, ~35 kB) as its own chunk, shared by every proxy that
 * sends the same names instead of copied into each request.
 */
function frame(parts: readonly (Part | undefined)[]): Uint8Array[] {
  let size = 0, shared = 0;
  for (const p of parts) {
    if (!p) continue;
    const len = p[1].length;
    size += p[0] ? fieldSize(len, p[0]) : len;
    if (!p[0] && len >= SHARED_PART) shared += len;
  }
  const w = new Writer(Buffer.allocUnsafe(5 + size - shared));
  w.buf[0] = 0;
  w.buf.writeUInt32BE(size, 1);
  w.pos = 5;
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const p of parts) {
    if (!p) continue;
    if (p[0]) w.bytes(p[0], p[1]);
    else if (p[1].length < SHARED_PART) w.raw(p[1]);
    else {
      if (w.pos > start) chunks.push(w.buf.subarray(start, w.pos));
      chunks.push(p[1]);
      start = w.pos;
    }
  }
  if (w.pos > start) chunks.push(w.buf.subarray(start, w.pos));
  return chunks;
}

// ---- protobuf decoding ------------------------------------------------------------------------

/**
 * Resource names of a section: SotW, field 1 of each `Any`'s value (the resource's name, for every
 * type the benchmark meets); delta, `Resource.name` (field 3).
 */
function decodeNames(b: Uint8Array, delta: boolean): string[] {
  const names: string[] = [];
  const r = new Reader(b);
  while (r.pos < r.end) {
    const tag = r.uint32();
    if (tag !== 0x12) {
      r.skip(tag & 7);
      continue;
    }
    const resource = r.enter();
    let name = "";
    while (r.pos < r.end) {
      const t = r.uint32();
      if (delta && t === 0x1a) {
        name = r.string();
        break;
      } else if (!delta && t === 0x12) {
        const any = r.enter(); // the Any's value: the resource's name is its field 1
        while (r.pos < r.end) {
          const rt = r.uint32();
          if (rt === 0x0a) {
            name = r.string();
            break;
          }
          r.skip(rt & 7);
        }
        r.leave(any);
        break;
      } else r.skip(t & 7);
    }
    names.push(name);
    r.leave(resource);
  }
  return names;
}

/**
 * The `resources` fields (2) of a response, as bytes (tags included), shared by every response
 * carrying the same bytes: names are decoded once, and callers memoize per-content answers in
 * {@link Section.memo}.
 */
export class Section {
  /** The resources fields, contiguous (a private copy, never the receive buffer). */
  readonly bytes: Buffer;
  /** Number of resources. */
  readonly count: number;
  /** Answers of callers about these bytes, keyed by the caller's object (e.g. a watch). */
  readonly memo = new WeakMap<object, boolean>();
  readonly #delta: boolean;
  #names: string[] | undefined;
  #eds: string[] | undefined;
  #deltaEds = new WeakMap<readonly string[], { fresh: string[]; next: string[] }>();

  constructor(bytes: Buffer, count: number, delta: boolean) {
    this.bytes = bytes;
    this.count = count;
    this.#delta = delta;
  }

  /** Resource names (SotW: the resource's field 1; delta: `Resource.name`), decoded on first use. */
  get names(): string[] {
    return this.#names ??= decodeNames(this.bytes, this.#delta);
  }

  /** The interned list of `outbound|...` names: a SotW proxy's EDS subscription after this CDS. */
  get edsNames(): string[] {
    return this.#eds ??= internNames(this.names.filter((n) => n.startsWith("outbound|")));
  }

  /**
   * For a delta CDS: the `outbound|...` names not in the interned list `known` (interned; empty if
   * none) and `known` extended by them; memoized per `known`.
   */
  deltaEds(known: string[]): { fresh: string[]; next: string[] } {
    let hit = this.#deltaEds.get(known);
    if (!hit) {
      const set = nameSet(known);
      const fresh = this.names.filter((n) => n.startsWith("outbound|") && !set.has(n));
      const shared = fresh.length ? internNames(fresh) : [];
      hit = { fresh: shared, next: shared.length ? extendNames(known, shared) : known };
      this.#deltaEds.set(known, hit);
    }
    return hit;
  }
}

/** Sections kept per (type, protocol), most recently used first. */
const CACHE_SIZE = 4;
const sections: Section[][] = Array.from({ length: TYPE_NAMES.length * 2 }, () => []);

/** How many responses reused a cached section (`hits`) or decoded a new one (`misses`). */
export const sectionStats = { hits: 0, misses: 0 };

/** The cached section equal to `bytes`, or a new one (cached, on a private copy). */
function sectionOf(bytes: Buffer, count: number, delta: boolean, typeIndex: number): Section {
  const list = sections[typeIndex * 2 + (delta ? 1 : 0)];
  for (let i = 0; i < list.length; i++) {
    const s = list[i];
    if (s.count === count && s.bytes.length === bytes.length && s.bytes.equals(bytes)) {
      if (i > 0) {
        list.splice(i, 1);
        list.unshift(s);
      }
      sectionStats.hits++;
      return s;
    }
  }
  sectionStats.misses++;
  const s = new Section(Buffer.from(bytes), count, delta);
  list.unshift(s);
  if (list.length > CACHE_SIZE) list.pop();
  return s;
}

function typeIndexOf(b: Uint8Array, start: number, end: number): number {
  const len = end - start;
  next: for (let t = 0; t < TYPE_BYTES.length; t++) {
    const u = TYPE_BYTES[t];
    if (u.length !== len) continue;
    for (let k = len - 1; k >= 0; k--) if (b[start + k] !== u[k]) continue next;
    return t;
  }
  return -1;
}

/** A decoded response, reduced to what the benchmark needs. */
export interface SimResponse {
  type: TypeName;
  /** `version_info` / `system_version_info` bytes: valid only during the `onResponse` call. */
  version: Uint8Array;
  /** `nonce` bytes: valid only during the `onResponse` call. */
  nonce: Uint8Array;
  /** The resources (shared with every response carrying the same resource bytes). */
  section: Section;
  /** Number of resources in the response. */
  count: number;
  /** Size of the gRPC message in bytes. */
  bytes: number;
}

/**
 * Decodes a (Delta)DiscoveryResponse: one scan of the top-level fields; the `resources` fields
 * (2) are located, counted and looked up as one byte range. Both response types keep the version
 * in field 1, the resources in 2, the type URL in 4 and the nonce in 5. Resources that are not
 * contiguous (not what mesh-discovery writes) are copied together first. `undefined` for an
 * unknown type URL.
 */
export function decode(b: Buffer, delta: boolean): SimResponse | undefined {
  let typeStart = 0, typeEnd = 0, verStart = 0, verEnd = 0, nonceStart = 0, nonceEnd = 0;
  let resStart = 0, resEnd = 0, count = 0;
  let ranges: number[] | undefined;
  const r = new Reader(b);
  while (r.pos < r.end) {
    const at = r.pos;
    const tag = r.uint32();
    if ((tag & 7) !== 2) {
      r.skip(tag & 7);
      continue;
    }
    const start = r.payload(), end = r.pos;
    switch (tag >>> 3) {
      case 1:
        verStart = start;
        verEnd = end;
        break;
      case 2:
        if (count++ === 0) resStart = at;
        else if (at !== resEnd) (ranges ??= [resStart, resEnd]).push(at, end);
        else if (ranges) ranges[ranges.length - 1] = end;
        resEnd = end;
        break;
      case 4:
        typeStart = start;
        typeEnd = end;
        break;
      case 5:
        nonceStart = start;
        nonceEnd = end;
        break;
    }
  }
  const t = typeIndexOf(b, typeStart, typeEnd);
  if (t < 0) return undefined;
  let res = b.subarray(resStart, resEnd);
  if (ranges) {
    const parts: Buffer[] = [];
    for (let i = 0; i < ranges.length; i += 2) parts.push(b.subarray(ranges[i], ranges[i + 1]));
    res = Buffer.concat(parts);
  }
  return {
    type: TYPE_NAMES[t],
    version: b.subarray(verStart, verEnd),
    nonce: b.subarray(nonceStart, nonceEnd),
    section: sectionOf(res, count, delta, t),
    count,
    bytes: b.length,
  };
}

// ---- proxies ---------------------------------------------------------------------------------

/** Options of {@link SimProxy}. */
export interface SimProxyOptions {
  /** Shared HTTP/2 session to the ADS port (node:http2, or the bench's lean client). */
  session: http2.ClientHttp2Session | LeanSession;
  nodeId: string;
  delta: boolean;
  /** RDS names to subscribe to once listeners arrived. */
  routeNames: string[];
  /** Called for every response after it was ACKed (synchronously: see {@link SimResponse}). */
  onResponse: (p: SimProxy, r: SimResponse) => void;
}

/** One simulated sidecar on one ADS stream. */
export class SimProxy {
  readonly received: Record<TypeName, number> = { cds: 0, eds: 0, lds: 0, rds: 0 };
  readonly bytes: Record<TypeName, number> = { cds: 0, eds: 0, lds: 0, rds: 0 };
  /** The EDS names subscribed (interned list). */
  edsNames: string[] = [];
  ended: string | undefined;
  #stream: http2.ClientHttp2Stream | LeanStream;
  /** Received bytes not yet consumed. */
  /** node:http2 client: splits the stream's data into messages. */
  #reader = new GrpcMessageReader<Buffer>({ maxLength: Infinity, ...messageBuffers });
  #opts: SimProxyOptions;
  /** The encoded `Node{id}` message, sent in the first request only. */
  #node: Uint8Array | undefined;
  #rdsSent = false;
  #edsVersion: Uint8Array = EMPTY;
  #edsNonce: Uint8Array = EMPTY;

  constructor(opts: SimProxyOptions) {
    this.#opts = opts;
    this.#node = field(1, opts.nodeId);
    const method = opts.delta ? "DeltaAggregatedResources" : "StreamAggregatedResources";
    const path = `/envoy.service.discovery.v3.AggregatedDiscoveryService/${method}`;
    if (opts.session instanceof LeanSession) {
      this.#stream = opts.session.request(path, {
        message: (m) => this.#onMessage(m),
        end: (why) => (this.ended ??= why),
      });
    } else {
      const stream = opts.session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
      });
      this.#stream = stream;
      stream.on("response", (h) => {
        if (h["grpc-status"] !== undefined) {
          this.ended = `grpc-status ${h["grpc-status"]}: ${h["grpc-message"] ?? ""}`;
        }
      });
      stream.on("data", (chunk: Buffer) => this.#reader.push(chunk, (m) => this.#onMessage(m)));
      stream.on(
        "trailers",
        (h) => (this.ended = `grpc-status ${h["grpc-status"]}: ${h["grpc-message"] ?? ""}`),
      );
      stream.on("error", (e) => (this.ended = String(e)));
      stream.on("close", () => (this.ended ??= "closed"));
    }
    this.#request("cds", [], EMPTY, EMPTY);
    this.#request("lds", [], EMPTY, EMPTY);
  }

  /** True once CDS, EDS, LDS and RDS all arrived at least once. */
  get synced(): boolean {
    return this.received.cds > 0 && this.received.eds > 0 && this.received.lds > 0 &&
      this.received.rds > 0;
  }

  close() {
    this.#stream.close();
  }

  #request(type: TypeName, names: readonly string[], version: Uint8Array, nonce: Uint8Array) {
    const node = this.#node;
    this.#node = undefined;
    const typeUrl = TYPE_BYTES[TYPE_NAMES.indexOf(type)];
    const encodedNames = namesField(3, names);
    const msg = this.#opts.delta
      ? frame([
        node && [1, node],
        [2, typeUrl],
        encodedNames && [0, encodedNames],
        nonce.length ? [6, nonce] : undefined,
      ])
      : frame([
        version.length ? [1, version] : undefined,
        node && [2, node],
        encodedNames && [0, encodedNames],
        [4, typeUrl],
        nonce.length ? [5, nonce] : undefined,
      ]);
    if (this.#stream instanceof LeanStream) this.#stream.write(msg);
    else this.#stream.write(Buffer.concat(msg));
  }

  #onMessage(msg: Buffer) {
    const o = this.#opts;
    const r = decode(msg, o.delta);
    if (!r) return;
    this.received[r.type]++;
    this.bytes[r.type] += r.bytes;
    if (o.delta) {
      // ACK, and subscribe follow-up types
      this.#request(r.type, [], EMPTY, r.nonce);
      if (r.type === "cds") {
        // Subscribe EDS to the clusters not subscribed yet (interned, so the thousands of
        // proxies receiving the same clusters share one list, set and encoding).
        const { fresh, next } = r.section.deltaEds(this.edsNames);
        if (fresh.length) {
          this.edsNames = next;
          this.#request("eds", fresh, EMPTY, EMPTY);
        }
      }
    } else if (r.type === "cds") {
      this.#request("cds", [], r.version, r.nonce);
      const eds = r.section.edsNames;
      if (eds !== this.edsNames) {
        this.edsNames = eds;
        this.#request("eds", eds, this.#edsVersion, this.#edsNonce);
      }
    } else if (r.type === "eds") {
      // Kept beyond this call (the next EDS request after a CDS change repeats them): copies.
      this.#edsVersion = new Uint8Array(r.version);
      this.#edsNonce = new Uint8Array(r.nonce);
      this.#request("eds", this.edsNames, r.version, r.nonce);
    } else {
      this.#request(r.type, r.type === "rds" ? o.routeNames : [], r.version, r.nonce);
    }
    if (r.type === "lds" && !this.#rdsSent) {
      this.#rdsSent = true;
      this.#request("rds", o.routeNames, EMPTY, EMPTY);
    }
    o.onResponse(this, r);
  }
}

const ENVOY_WINDOW = 256 * 1024 * 1024;

/** HTTP/2 client implementation of the simulated sidecars. */
export type ClientKind = "lean" | "node-http2";

/**
 * Opens an HTTP/2 session to `127.0.0.1:<port>` (resolves once connected): the lean client
 * (`_h2_lean.ts`, the default) or Deno's node:http2.
 */
export function connectSession(
  port: number,
  kind: ClientKind = "lean",
): Promise<http2.ClientHttp2Session | LeanSession> {
  if (kind === "lean") return LeanSession.connect(port);
  return new Promise((resolve, reject) => {
    // Envoy's HTTP/2 defaults for its gRPC clients: 256 MiB stream and connection windows, so
    // large responses are not paced by WINDOW_UPDATE round trips.
    const s = http2.connect(`http://127.0.0.1:${port}`, {
      settings: { initialWindowSize: ENVOY_WINDOW },
    });
    s.once("connect", () => {
      s.setLocalWindowSize(ENVOY_WINDOW);
      resolve(s);
    });
    s.once("error", reject);
  });
}

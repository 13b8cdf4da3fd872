/**
 * Simulated Envoy sidecars for the xDS benchmark: ADS streams over raw HTTP/2 (`node:http2`) with
 * hand-encoded protobuf, light enough to run thousands in one process. Each proxy subscribes like
 * Envoy does: CDS and LDS wildcard, then EDS for the `outbound|...` clusters it received and RDS
 * for the given route names, ACKing every response. SotW or delta.
 * @module
 */

import http2 from "node:http2";
import { Buffer } from "node:buffer";

const TYPE = {
  cds: "type.googleapis.com/envoy.config.cluster.v3.Cluster",
  eds: "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
  lds: "type.googleapis.com/envoy.config.listener.v3.Listener",
  rds: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
} as const;
/** Short type names used by the benchmark. */
export type TypeName = keyof typeof TYPE;
const SHORT: Record<string, TypeName> = Object.fromEntries(
  Object.entries(TYPE).map(([k, v]) => [v, k as TypeName]),
);

// ---- protobuf encoding ----------------------------------------------------------------------

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

function field(no: number, value: Uint8Array | string): Buffer {
  const bytes = typeof value === "string" ? Buffer.from(value) : Buffer.from(value);
  return Buffer.concat([Buffer.from([...varint((no << 3) | 2), ...varint(bytes.length)]), bytes]);
}

function message(parts: (Buffer | undefined)[]): Buffer {
  return Buffer.concat(parts.filter((p): p is Buffer => p !== undefined));
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

function namesField(no: number, names: readonly string[]): Buffer | undefined {
  if (!names.length) return undefined;
  let byNo = encodedNames.get(names);
  if (!byNo) encodedNames.set(names, byNo = new Map());
  let b = byNo.get(no);
  if (!b) byNo.set(no, b = Buffer.concat(names.map((n) => field(no, n))));
  return b;
}

function grpcFrame(msg: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(msg.length, 1);
  return Buffer.concat([head, msg]);
}

// ---- protobuf decoding (only length-delimited fields are kept) --------------------------------

function readVarint(b: Uint8Array, pos: number): [number, number] {
  let n = 0;
  let mul = 1;
  while (true) {
    const c = b[pos++];
    n += (c & 127) * mul;
    if (c < 128) return [n, pos];
    mul *= 128;
  }
}

/** Calls `fn(fieldNo, bytes)` for each length-delimited field of a message. */
function eachField(b: Uint8Array, fn: (no: number, v: Uint8Array) => void) {
  let pos = 0;
  while (pos < b.length) {
    let tag;
    [tag, pos] = readVarint(b, pos);
    const wire = tag & 7;
    if (wire === 0) [, pos] = readVarint(b, pos);
    else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else if (wire === 2) {
      let len;
      [len, pos] = readVarint(b, pos);
      fn(tag >> 3, b.subarray(pos, pos + len));
      pos += len;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
}

const dec = new TextDecoder();

/** A decoded response, reduced to what the benchmark needs. */
export interface SimResponse {
  type: TypeName;
  nonce: string;
  version: string;
  /** Resource names (SotW: field 1 of each resource, only parsed for CDS when the cluster count
   * changed; delta: Resource.name). */
  names: string[];
  /** Number of resources in the response. */
  count: number;
  /** Size of the gRPC message in bytes. */
  bytes: number;
  /** The raw message, for substring checks. */
  raw: Buffer;
}

/** Decodes a DiscoveryResponse; resource names only when `wantNames(type, count)` says so. */
function decodeSotw(b: Buffer, wantNames: (type: TypeName, count: number) => boolean): SimResponse {
  let type = "", nonce = "", version = "";
  const resources: Uint8Array[] = [];
  eachField(b, (no, v) => {
    if (no === 1) version = dec.decode(v);
    else if (no === 2) resources.push(v);
    else if (no === 4) type = dec.decode(v);
    else if (no === 5) nonce = dec.decode(v);
  });
  const short = SHORT[type];
  const names: string[] = [];
  if (short && wantNames(short, resources.length)) {
    for (const any of resources) {
      eachField(any, (ano, av) => {
        if (ano !== 2) return;
        // The resource's name is field 1, encoded first by every encoder we meet.
        if (av[0] === 0x0a) {
          const [len, pos] = readVarint(av, 1);
          names.push(dec.decode(av.subarray(pos, pos + len)));
          return;
        }
        let first = true;
        eachField(av, (rno, rv) => {
          if (rno === 1 && first) {
            names.push(dec.decode(rv));
            first = false;
          }
        });
      });
    }
  }
  return { type: short, nonce, version, names, count: resources.length, bytes: b.length, raw: b };
}

function decodeDelta(b: Buffer): SimResponse {
  let type = "", nonce = "", version = "";
  const names: string[] = [];
  eachField(b, (no, v) => {
    if (no === 1) version = dec.decode(v);
    else if (no === 4) type = dec.decode(v);
    else if (no === 5) nonce = dec.decode(v);
    else if (no === 2) eachField(v, (rno, rv) => rno === 3 && names.push(dec.decode(rv)));
  });
  return { type: SHORT[type], nonce, version, names, count: names.length, bytes: b.length, raw: b };
}

// ---- proxies ---------------------------------------------------------------------------------

/** Options of {@link SimProxy}. */
export interface SimProxyOptions {
  /** Shared HTTP/2 session to the ADS port. */
  session: http2.ClientHttp2Session;
  nodeId: string;
  delta: boolean;
  /** RDS names to subscribe to once listeners arrived. */
  routeNames: string[];
  /** Called for every response after it was ACKed. */
  onResponse: (p: SimProxy, r: SimResponse) => void;
}

/** One simulated sidecar on one ADS stream. */
export class SimProxy {
  readonly received: Record<TypeName, number> = { cds: 0, eds: 0, lds: 0, rds: 0 };
  readonly bytes: Record<TypeName, number> = { cds: 0, eds: 0, lds: 0, rds: 0 };
  edsNames: string[] = [];
  clusterCount = -1;
  ended: string | undefined;
  #stream: http2.ClientHttp2Stream;
  /** Received bytes not yet consumed: chunks (joined only when a whole message is there). */
  #chunks: Buffer[] = [];
  #buffered = 0;
  #opts: SimProxyOptions;
  #sentNode = false;
  #rdsSent = false;

  constructor(opts: SimProxyOptions) {
    this.#opts = opts;
    const method = opts.delta ? "DeltaAggregatedResources" : "StreamAggregatedResources";
    this.#stream = opts.session.request({
      ":method": "POST",
      ":path": `/envoy.service.discovery.v3.AggregatedDiscoveryService/${method}`,
      "content-type": "application/grpc",
      te: "trailers",
    });
    this.#stream.on("response", (h) => {
      if (h["grpc-status"] !== undefined) {
        this.ended = `grpc-status ${h["grpc-status"]}: ${h["grpc-message"] ?? ""}`;
      }
    });
    this.#stream.on("data", (chunk: Buffer) => this.#onData(chunk));
    this.#stream.on(
      "trailers",
      (h) => (this.ended = `grpc-status ${h["grpc-status"]}: ${h["grpc-message"] ?? ""}`),
    );
    this.#stream.on("error", (e) => (this.ended = String(e)));
    this.#stream.on("close", () => (this.ended ??= "closed"));
    this.#request("cds", [], "", "");
    this.#request("lds", [], "", "");
  }

  /** True once CDS, EDS, LDS and RDS all arrived at least once. */
  get synced(): boolean {
    return this.received.cds > 0 && this.received.eds > 0 && this.received.lds > 0 &&
      this.received.rds > 0;
  }

  close() {
    this.#stream.close();
  }

  #request(type: TypeName, names: string[], version: string, nonce: string) {
    const node = this.#sentNode ? undefined : field(1, this.#opts.nodeId);
    this.#sentNode = true;
    let msg: Buffer;
    if (this.#opts.delta) {
      msg = message([
        node && field(1, node),
        field(2, TYPE[type]),
        namesField(3, names),
        nonce ? field(6, nonce) : undefined,
      ]);
    } else {
      msg = message([
        version ? field(1, version) : undefined,
        node && field(2, node),
        namesField(3, names),
        field(4, TYPE[type]),
        nonce ? field(5, nonce) : undefined,
      ]);
    }
    this.#stream.write(grpcFrame(msg));
  }

  #onData(chunk: Buffer) {
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    while (this.#buffered >= 5) {
      let head = this.#chunks[0];
      if (head.length < 5) head = this.#join();
      const len = head.readUInt32BE(1);
      if (this.#buffered < 5 + len) break;
      if (head.length < 5 + len) head = this.#join();
      const msg = head.subarray(5, 5 + len);
      const rest = head.subarray(5 + len);
      if (rest.length) this.#chunks[0] = rest;
      else this.#chunks.shift();
      this.#buffered -= 5 + len;
      this.#onMessage(msg);
    }
  }

  #join(): Buffer {
    const b = Buffer.concat(this.#chunks, this.#buffered);
    this.#chunks = [b];
    return b;
  }

  #onMessage(msg: Buffer) {
    const o = this.#opts;
    // CDS names are parsed only when needed (first time or cluster count changed).
    const r = o.delta
      ? decodeDelta(msg)
      : decodeSotw(msg, (t, n) => t === "cds" && n !== this.clusterCount);
    if (!r.type) return;
    this.received[r.type]++;
    this.bytes[r.type] += r.bytes;
    if (o.delta) {
      // ACK, and subscribe follow-up types
      this.#request(r.type, [], "", r.nonce);
      if (r.type === "cds") {
        // Subscribe EDS to the clusters not subscribed yet (interned, so the thousands of
        // proxies receiving the same clusters share one list, set and encoding).
        const known = nameSet(this.edsNames);
        const fresh = r.names.filter((n) => n.startsWith("outbound|") && !known.has(n));
        if (fresh.length) {
          const shared = internNames(fresh);
          this.edsNames = extendNames(this.edsNames, shared);
          this.#request("eds", shared, "", "");
        }
      }
    } else {
      if (r.type === "cds" && r.count !== this.clusterCount) {
        this.clusterCount = r.count;
        this.#request("cds", [], r.version, r.nonce);
        const eds = r.names.filter((n) => n.startsWith("outbound|"));
        const shared = internNames(eds);
        if (shared !== this.edsNames) {
          this.edsNames = shared;
          this.#request("eds", shared, this.#edsVersion, this.#edsNonce);
        }
      } else if (r.type === "eds") {
        this.#edsVersion = r.version;
        this.#edsNonce = r.nonce;
        this.#request("eds", this.edsNames, r.version, r.nonce);
      } else {
        this.#request(r.type, r.type === "rds" ? o.routeNames : [], r.version, r.nonce);
      }
    }
    if (r.type === "lds" && !this.#rdsSent) {
      this.#rdsSent = true;
      this.#request("rds", o.routeNames, "", "");
    }
    o.onResponse(this, r);
  }
  #edsVersion = "";
  #edsNonce = "";
}

const ENVOY_WINDOW = 256 * 1024 * 1024;

/** Opens an HTTP/2 session to `127.0.0.1:<port>` (resolves once connected). */
export function connectSession(port: number): Promise<http2.ClientHttp2Session> {
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

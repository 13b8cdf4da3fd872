/**
 * Simulated proxyless gRPC workloads for the xDS benchmark: one ADS stream each (SotW, as gRPC's
 * xDS clients speak it), subscribing by name the way grpc-js-xds 1.14 and gRPC C-core do:
 *
 * 1. LDS for the xDS server's Listener `grpc/server?xds.resource.listening_address=<ip>:<port>`
 *    (the bootstrap's `server_listener_resource_name_template`, gRFC A36) and for the api listener
 *    `<host>:<port>` of every `xds:///<host>:<port>` channel (gRFC A27);
 * 2. RDS for the `route_config_name` of each api listener's HTTP connection manager (the server
 *    Listener carries its routes inline: no RDS for it);
 * 3. CDS for every cluster the routes name (`cluster`, `weighted_clusters`);
 * 4. EDS for each EDS cluster's `eds_cluster_config.service_name` (the cluster name when empty).
 *
 * Every response is ACKed (the type's names, its version and nonce) before the subscriptions it
 * leads to (grpc-js-xds tells its watchers on the next tick); a request that changes the names of
 * a type repeats the type's last version and nonce. The node is sent in the first request
 * only: the `node` of the bootstrap mesh-agent `--proxyless` writes (`lib/xds/grpc_bootstrap.ts`:
 * id, cluster, metadata with `GENERATOR: grpc`, locality) plus grpc-js-xds's user agent and client
 * features.
 * @module
 */

import { decode, type SimResponse, TYPE, type TypeName } from "./_ads_sim.ts";
import type { LeanHandlers } from "./_h2_lean.ts";
import type { Section } from "./_ads_sim.ts";
import { MessageBuilder, Reader } from "../lib/protowire/mod.ts";
import { GRPC_SERVER_LISTENER_PREFIX, grpcBootstrap } from "../lib/xds/grpc_bootstrap.ts";
import { Buffer } from "node:buffer";

/** What grpc-js-xds 1.14 adds to the bootstrap's node (`adsNode` of its XdsClient). */
export const GRPC_JS_AGENT = {
  name: "gRPC Node Pure JS",
  version: "1.14.1",
  features: ["envoy.lb.does_not_support_overprovisioning"],
} as const;

/** The ADS method path gRPC clients call. */
export const ADS_PATH =
  "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";

/** What a simulated workload needs of an HTTP/2 connection (a `LeanSession`, or a test fake). */
export interface AdsTransport {
  request(path: string, h: LeanHandlers): { write(b: Uint8Array): void; close(): void };
}

/** The workload a {@link GrpcSim} stands for. */
export interface ProxylessWorkload {
  /** Instance IP (the node id's IP; the xDS server listens on it). */
  ip: string;
  /** Pod name. */
  pod: string;
  namespace: string;
  /** Ports the xDS server listens on (`[]`: a client only). */
  serverPorts: readonly number[];
  /** `<host>:<port>` targets of its `xds:///` channels. */
  targets: readonly string[];
}

/** The bootstrap `node` mesh-agent `--proxyless` writes for `w` (defaults as the agent's). */
export function proxylessNode(
  w: Pick<ProxylessWorkload, "ip" | "pod" | "namespace">,
): { id: string; cluster: string; metadata: Record<string, string>; locality: object } {
  const doc = grpcBootstrap({
    serverUri: "127.0.0.1:15010",
    nodeId: `sidecar~${w.ip}~${w.pod}.${w.namespace}~${w.namespace}.svc.cluster.local`,
    cluster: "mesh-proxy",
    metadata: { NAMESPACE: w.namespace },
    certDir: "/etc/certs",
  });
  return doc.node as ReturnType<typeof proxylessNode>;
}

/** The Listener names a workload's first LDS request asks for: server listeners, then targets. */
export function listenerNames(w: ProxylessWorkload): string[] {
  return [
    ...w.serverPorts.map((p) => `${GRPC_SERVER_LISTENER_PREFIX}${w.ip}:${p}`),
    ...w.targets,
  ];
}

// ---- encoding -------------------------------------------------------------------------------

/** google.protobuf.Struct of string values. */
function struct(m: Record<string, string>): Uint8Array {
  const b = new MessageBuilder();
  for (const [k, v] of Object.entries(m)) {
    const value = new MessageBuilder().string(3, v, true).finish(); // Value.string_value
    b.message(1, new MessageBuilder().string(1, k, true).message(2, value).finish());
  }
  return b.finish();
}

/** The encoded `Node` of the first request. */
function encodeNode(w: ProxylessWorkload): Uint8Array {
  const n = proxylessNode(w);
  const b = new MessageBuilder().string(1, n.id).string(2, n.cluster).message(
    3,
    struct(n.metadata),
  )
    .message(4, new Uint8Array()).string(6, GRPC_JS_AGENT.name).string(7, GRPC_JS_AGENT.version);
  for (const f of GRPC_JS_AGENT.features) b.string(10, f, true);
  return b.finish();
}

/** A gRPC-framed DiscoveryRequest. */
function request(
  node: Uint8Array | undefined,
  type: TypeName,
  names: readonly string[],
  version: Uint8Array,
  nonce: Uint8Array,
): Uint8Array {
  const b = new MessageBuilder();
  if (version.length) b.bytes(1, version);
  if (node) b.message(2, node);
  for (const n of names) b.string(3, n, true);
  b.string(4, TYPE[type]);
  if (nonce.length) b.bytes(5, nonce);
  const msg = b.finish();
  const out = new Uint8Array(5 + msg.length);
  new DataView(out.buffer).setUint32(1, msg.length);
  out.set(msg, 5);
  return out;
}

// ---- decoding (what a gRPC client reads of each resource) ------------------------------------

/** Strings at field path `path` of message `b` (every occurrence of repeated fields). */
function stringsAt(b: Uint8Array, path: readonly number[], out: string[] = []): string[] {
  const r = new Reader(b);
  const [no, ...rest] = path;
  while (r.pos < r.end) {
    const tag = r.uint32();
    if (tag >>> 3 !== no || (tag & 7) !== 2) {
      r.skip(tag & 7);
      continue;
    }
    if (!rest.length) out.push(r.string());
    else {
      const [s, e] = r.span();
      stringsAt(b.subarray(s, e), rest, out);
    }
  }
  return out;
}

/** Resources of a SotW section: name and bytes (the `Any`'s value) of each. */
function resources(section: Section): { name: string; value: Uint8Array }[] {
  const out: { name: string; value: Uint8Array }[] = [];
  const r = new Reader(section.bytes);
  while (r.pos < r.end) {
    const tag = r.uint32();
    if (tag !== 0x12) {
      r.skip(tag & 7);
      continue;
    }
    const [s, e] = r.span();
    const value = fieldBytes(section.bytes.subarray(s, e), 2);
    if (value) out.push({ name: stringsAt(value, [1])[0] ?? "", value });
  }
  return out;
}

/** The bytes of the first length-delimited field `no` of `b`. */
function fieldBytes(b: Uint8Array, no: number): Uint8Array | undefined {
  const r = new Reader(b);
  while (r.pos < r.end) {
    const tag = r.uint32();
    if (tag >>> 3 === no && (tag & 7) === 2) {
      const [s, e] = r.span();
      return b.subarray(s, e);
    }
    r.skip(tag & 7);
  }
  return undefined;
}

/** Listener → the RDS name of its api listener's HCM (`api_listener.api_listener.rds`). */
const RDS_OF_LISTENER = [19, 1, 2, 3, 2];
/** RouteConfiguration → `virtual_hosts.routes.route.cluster`. */
const CLUSTER_OF_ROUTE = [2, 3, 2, 1];
/** RouteConfiguration → `virtual_hosts.routes.route.weighted_clusters.clusters.name`. */
const WEIGHTED_OF_ROUTE = [2, 3, 2, 3, 1, 1];
/** Cluster → `eds_cluster_config.service_name`. */
const EDS_SERVICE_OF_CLUSTER = [3, 2];
/** Cluster → `eds_cluster_config` (present on EDS clusters). */
const EDS_CONFIG = 3;

/** What each resource of a section refers to, per resource name; decoded once per section. */
const refsBySection = new WeakMap<Section, Map<string, string[]>>();

function refsOf(type: TypeName, section: Section): Map<string, string[]> {
  let m = refsBySection.get(section);
  if (m) return m;
  m = new Map();
  for (const { name, value } of resources(section)) {
    let refs: string[] = [];
    if (type === "lds") refs = stringsAt(value, RDS_OF_LISTENER);
    else if (type === "rds") {
      refs = [...new Set(stringsAt(value, WEIGHTED_OF_ROUTE, stringsAt(value, CLUSTER_OF_ROUTE)))];
    } else if (type === "cds" && fieldBytes(value, EDS_CONFIG)) {
      refs = [stringsAt(value, EDS_SERVICE_OF_CLUSTER)[0] || name];
    }
    m.set(name, refs);
  }
  refsBySection.set(section, m);
  return m;
}

// ---- the workload ---------------------------------------------------------------------------

/** Options of {@link GrpcSim}. */
export interface GrpcSimOptions {
  /** HTTP/2 connection to the ADS port (each gRPC process has its own). */
  session: AdsTransport;
  workload: ProxylessWorkload;
  /** Called for every response after it was ACKed (synchronously: see `SimResponse`). */
  onResponse: (p: GrpcSim, r: SimResponse) => void;
  /** Clock in ms (default `performance.now`). */
  now?: () => number;
}

const TYPES: readonly TypeName[] = ["lds", "rds", "cds", "eds"];
const EMPTY = new Uint8Array();

/** One simulated proxyless gRPC workload (xDS server and/or client) on its own ADS stream. */
export class GrpcSim {
  readonly received: Record<TypeName, number> = { cds: 0, eds: 0, lds: 0, rds: 0 };
  readonly bytes: Record<TypeName, number> = { cds: 0, eds: 0, lds: 0, rds: 0 };
  /** Subscribed names per type (in the order requested). */
  readonly names: Record<TypeName, string[]> = { cds: [], eds: [], lds: [], rds: [] };
  /** Names received per type (resources present in some response). */
  readonly have: Record<TypeName, Set<string>> = {
    cds: new Set(),
    eds: new Set(),
    lds: new Set(),
    rds: new Set(),
  };
  /** ms from the stream's start until {@link ready} first held, or undefined. */
  readyMs: number | undefined;
  ended: string | undefined;
  readonly #opts: GrpcSimOptions;
  readonly #stream: { write(b: Uint8Array): void; close(): void };
  readonly #start: number;
  #node: Uint8Array | undefined;
  readonly #version: Record<TypeName, Uint8Array> = {
    cds: EMPTY,
    eds: EMPTY,
    lds: EMPTY,
    rds: EMPTY,
  };
  readonly #nonce: Record<TypeName, Uint8Array> = {
    cds: EMPTY,
    eds: EMPTY,
    lds: EMPTY,
    rds: EMPTY,
  };
  /** Refs of the resources last received, per type and resource name. */
  readonly #refs: Record<TypeName, Map<string, string[]>> = {
    cds: new Map(),
    eds: new Map(),
    lds: new Map(),
    rds: new Map(),
  };

  constructor(opts: GrpcSimOptions) {
    this.#opts = opts;
    this.#start = (opts.now ?? performance.now.bind(performance))();
    this.#node = encodeNode(opts.workload);
    this.#stream = opts.session.request(ADS_PATH, {
      message: (m) => this.onMessage(m),
      end: (why) => (this.ended ??= why),
    });
    this.names.lds = listenerNames(opts.workload);
    this.#send("lds");
  }

  /** Every subscribed name of every type received at least once (a gRPC channel is READY). */
  get ready(): boolean {
    for (const t of TYPES) {
      for (const n of this.names[t]) if (!this.have[t].has(n)) return false;
    }
    return this.names.lds.length > 0;
  }

  /** Same as {@link ready} (the name the bench's waits use for sidecars). */
  get synced(): boolean {
    return this.ready;
  }

  /** The EDS names subscribed (the bench's sidecars expose the same). */
  get edsNames(): string[] {
    return this.names.eds;
  }

  /** Whether the workload subscribes to the resource `name` of `type`. */
  watches(type: TypeName, name: string): boolean {
    return this.names[type].includes(name);
  }

  /** Cancels the ADS stream. */
  close(): void {
    this.#stream.close();
  }

  #send(type: TypeName) {
    const node = this.#node;
    this.#node = undefined;
    this.#stream.write(
      request(node, type, this.names[type], this.#version[type], this.#nonce[type]),
    );
  }

  /** Handles one response message (public for tests). */
  onMessage(msg: Buffer | Uint8Array): void {
    const b = Buffer.isBuffer(msg) ? msg : Buffer.from(msg.buffer, msg.byteOffset, msg.length);
    const r = decode(b, false);
    if (!r) return;
    const t = r.type;
    this.received[t]++;
    this.bytes[t] += r.bytes;
    this.#version[t] = new Uint8Array(r.version);
    this.#nonce[t] = new Uint8Array(r.nonce);
    const refs = refsOf(t, r.section);
    // LDS and CDS responses carry the whole state; RDS and EDS ones may carry only some names
    if (t === "lds" || t === "cds") this.#refs[t] = new Map(refs);
    else for (const [n, v] of refs) this.#refs[t].set(n, v);
    for (const n of refs.keys()) this.have[t].add(n);
    this.#send(t); // ACK
    // follow-up subscriptions, as gRPC's watchers make them
    const next = TYPES[TYPES.indexOf(t) + 1];
    if (next) this.#resubscribe(next);
    if (this.readyMs === undefined && this.ready) {
      this.readyMs = (this.#opts.now ?? performance.now.bind(performance))() - this.#start;
    }
    this.#opts.onResponse(this, r);
  }

  /** Recomputes the names of `type` from what the previous type's subscribed resources name. */
  #resubscribe(type: TypeName) {
    const prev = TYPES[TYPES.indexOf(type) - 1];
    const wanted: string[] = [];
    const seen = new Set<string>();
    for (const n of this.names[prev]) {
      for (const ref of this.#refs[prev].get(n) ?? []) {
        if (!seen.has(ref)) {
          seen.add(ref);
          wanted.push(ref);
        }
      }
    }
    if (wanted.join("\n") === this.names[type].join("\n")) return;
    this.names[type] = wanted;
    this.#send(type);
    // a dropped name of `type` may drop names further down
    const after = TYPES[TYPES.indexOf(type) + 1];
    if (after) this.#resubscribe(after);
  }
}

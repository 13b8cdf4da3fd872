/**
 * The gRPC transport: serves `envoy.service.discovery.v3.AggregatedDiscoveryService` on our own
 * HTTP/2 server (`lib/grpc/`, plaintext or TLS) and drives an {@link XdsServer}. Requests are
 * decoded by hand (`wire.ts`; first requests and NACKs by @grpc/proto-loader, loaded lazily);
 * responses are encoded by `wire.ts` as parts, so the shared, pre-serialized resources of a push
 * are copied once per client, straight into the connection's output buffer.
 *
 * Until 2026-11-22 this ran on @grpc/grpc-js; Deno's `node:http2` under it cost most of the
 * server's CPU in a full push to 2000 proxies (one socket write and one fresh buffer per frame).
 * @module
 */

import { Buffer } from "node:buffer";
import { getLogger, type Logger } from "../../log/mod.ts";
import { xdsDescriptors } from "../protos.ts";
import type { XdsServer, XdsStreamHandle } from "./stream.ts";
import type {
  DeltaDiscoveryRequest,
  DeltaDiscoveryResponse,
  DiscoveryRequest,
  DiscoveryResponse,
  StreamEnd,
  XdsNode,
  XdsTransport,
} from "./types.ts";
import {
  decodeDeltaDiscoveryRequest,
  decodeDiscoveryRequest,
  encodeDeltaDiscoveryResponseParts,
  encodeDiscoveryResponseParts,
} from "./wire.ts";
import {
  type CallHandler,
  type GrpcCall,
  GrpcStatus,
  type H2Limits,
  listenGrpc,
  peerUris,
} from "../../grpc/mod.ts";

/** Full name of the ADS service. */
export const ADS_SERVICE = "envoy.service.discovery.v3.AggregatedDiscoveryService";
/** gRPC service name of Envoy's Secret Discovery Service (SDS). */
export const SDS_SERVICE = "envoy.service.secret.v3.SecretDiscoveryService";

/** Options of {@link startAdsServer}. */
export interface AdsServerOptions {
  /**
   * `host:port` to listen on (`127.0.0.1:0` picks a free port; `[::]:15010` for IPv6), or
   * `unix:<path>` for a Unix socket.
   */
  address: string;
  /**
   * gRPC services answered by the state machine (default: ADS only). {@link SDS_SERVICE} serves
   * `StreamSecrets`/`DeltaSecrets` (Envoy's SDS, same messages).
   */
  services?: readonly string[];
  /**
   * Serve TLS. PEM text or bytes. `root` verifies client certificates; it is passed explicitly so
   * that `GRPC_DEFAULT_SSL_ROOTS_FILE_PATH` in the environment does not replace it.
   */
  tls?: {
    certChain: string | Uint8Array;
    key: string | Uint8Array;
    root: string | Uint8Array;
    /**
     * Require a client certificate signed by `root`. Default false: a certificate is requested
     * and, when the client presents one, it must verify against `root`; clients without one stay
     * anonymous.
     */
    requireClientCert?: boolean;
  };
  /** The state machine to drive. */
  // deno-lint-ignore no-explicit-any
  server: XdsServer<any>;
  /** Logger (default `getLogger("ads")`). */
  logger?: Logger;
  /** Transport limits (see `H2Limits` in lib/grpc; defaults there) and the connection cap. */
  transport?: {
    limits?: Partial<H2Limits>;
    maxConnections?: number;
    maxConnectionsPerAddress?: number;
    maxFailedConnectionsPerSecond?: number;
  };
  /**
   * Share the port with other isolates (SO_REUSEPORT): this listener's index, their count, and
   * optionally their shared connection counts (`transport.maxConnections` then caps the port's)
   * and counts by address (`transport.maxConnectionsPerAddress` likewise; see
   * `GrpcListenOptions.reusePort`).
   */
  reusePort?: {
    index: number;
    of: number;
    connections?: Int32Array;
    addresses?: SharedArrayBuffer;
  };
  /**
   * Plaintext: read through `Deno.Conn` into a reused buffer per connection instead of `node:net`
   * (see `GrpcListenOptions.nativeReads`; mesh-discovery's ADS workers). With `reusePort` this
   * needs `--unstable-net`, else the listener reads through `node:net` and logs why.
   */
  nativeReads?: boolean;
  /** The process's gRPC listeners that accept at once (see `GrpcListenOptions.acceptLoops`). */
  acceptLoops?: number;
}

/** A running ADS listener. */
export interface AdsServerHandle {
  /** The bound port (useful with port 0). */
  port: number;
  /** False while the listener cannot accept connections (out of file descriptors). */
  readonly accepting: boolean;
  /** Connections refused because the connection cap was reached. */
  readonly refused: number;
  /** New connections held or refused: their address's connections kept failing. */
  readonly throttled: number;
  /** Connections closed to keep file descriptors free (see `GrpcListenOptions.descriptorReserve`). */
  readonly shed: number;
  /** Ends every stream (UNAVAILABLE), then stops the gRPC server. Idempotent. */
  shutdown(): Promise<void>;
  /**
   * Replaces the certificate chain, key and root of a TLS listener (PEM) for new connections;
   * established connections and their streams keep going. Throws on a plaintext listener or
   * text that is not PEM.
   */
  setTls(
    tls: { certChain: string | Uint8Array; key: string | Uint8Array; root: string | Uint8Array },
  ): void;
}

/** Options for @grpc/proto-loader used for the ADS requests (arrays present, Any kept as bytes). */
export const ADS_LOADER_OPTIONS = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  arrays: true,
  oneofs: true,
} as const;

// deno-lint-ignore no-explicit-any
type AnyObj = any;

/** Request decoders of the two ADS methods. */
interface AdsDecoders {
  sotw(b: Buffer, hints?: readonly (Uint8Array | undefined)[]): DiscoveryRequest;
  delta(b: Buffer): DeltaDiscoveryRequest;
}

let decodersCache: Promise<AdsDecoders> | undefined;

/**
 * Loads the ADS service once (from the generated descriptors) for the requests our hand decoders leave to proto-loader: those with a
 * node (first requests) or an error_detail (NACKs); the node's metadata Struct becomes JSON.
 */
function adsDecoders(): Promise<AdsDecoders> {
  decodersCache ??= (async () => {
    const loader = await import("../../deps/proto_loader.ts");
    // deno-lint-ignore no-explicit-any
    const pkg = loader.fromJSON(await xdsDescriptors() as any, ADS_LOADER_OPTIONS) as AnyObj;
    const svc = pkg[ADS_SERVICE];
    if (!svc) throw new Error(`${ADS_SERVICE} not found in ads.proto`);
    const sotwFull = svc.StreamAggregatedResources.requestDeserialize;
    const deltaFull = svc.DeltaAggregatedResources.requestDeserialize;
    const full = (r: AnyObj) => ({ ...r, node: normalizeNode(r.node) });
    return {
      sotw: (b: Buffer, hints?: readonly (Uint8Array | undefined)[]) =>
        decodeDiscoveryRequest(b, hints) ?? full(sotwFull(b)),
      delta: (b: Buffer) => decodeDeltaDiscoveryRequest(b) ?? full(deltaFull(b)),
    };
  })();
  decodersCache.catch(() => decodersCache = undefined);
  return decodersCache;
}

/** Converts a decoded `google.protobuf.Struct` (proto-loader, keepCase + oneofs) to plain JSON. */
export function structToJson(s: AnyObj): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries((s?.fields ?? {}) as Record<string, AnyObj>)) {
    out[k] = valueToJson(v);
  }
  return out;
}

function valueToJson(v: AnyObj): unknown {
  if (v == null) return null;
  // protobufjs ships the well-known types pre-parsed with camelCase field names, whatever
  // keepCase says; accept both spellings.
  const get = (snake: string, camel: string) => v[snake] !== undefined ? v[snake] : v[camel];
  const kind = v.kind ?? Object.keys(v)[0];
  switch (kind) {
    case "null_value":
    case "nullValue":
      return null;
    case "number_value":
    case "numberValue":
      return get("number_value", "numberValue");
    case "string_value":
    case "stringValue":
      return get("string_value", "stringValue");
    case "bool_value":
    case "boolValue":
      return get("bool_value", "boolValue");
    case "struct_value":
    case "structValue":
      return structToJson(get("struct_value", "structValue"));
    case "list_value":
    case "listValue":
      return (get("list_value", "listValue")?.values ?? []).map(valueToJson);
    default:
      return null;
  }
}

function normalizeNode(node: AnyObj): XdsNode | undefined {
  if (!node) return undefined;
  return { ...node, metadata: node.metadata ? structToJson(node.metadata) : undefined };
}

function parseAddress(address: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(address);
  if (!m) throw new Error(`Invalid address "${address}": expected host:port`);
  const port = Number(m[2]);
  if (port > 65535) throw new Error(`Invalid address "${address}": port ${port} is out of range`);
  return { host: m[1], port };
}

function pem(field: string, v: string | Uint8Array): Buffer {
  const b = typeof v === "string" ? Buffer.from(v) : Buffer.from(v);
  if (!b.toString("latin1").includes("-----BEGIN ")) {
    throw new Error(`Invalid tls.${field}: not PEM (no "-----BEGIN" line)`);
  }
  return b;
}

/** URI SANs of a verified peer certificate (`spiffe://...`) of a TLS socket. */
const peerIdentities = peerUris;

/**
 * Runs one ADS stream: decodes each request into `open`'s stream state machine, encodes its
 * responses onto the call, and keeps the call in `calls` (ended with UNAVAILABLE at shutdown)
 * until either side ends it.
 */
function serveStream<Req, Res>(
  calls: Set<{ end: (e: StreamEnd) => void }>,
  call: GrpcCall,
  decode: (b: Buffer, hints?: readonly (Uint8Array | undefined)[]) => Req,
  encode: (r: Res) => Uint8Array[],
  open: (t: XdsTransport<Res>) => XdsStreamHandle<Req>,
) {
  let ended = false;
  const transport: XdsTransport<Res> = {
    peer: call.peer,
    peerIdentities: peerIdentities(call.socket),
    send(res: Res) {
      if (ended) return Promise.reject(new Error("stream ended"));
      return call.send(encode(res));
    },
    end(e?: StreamEnd) {
      if (ended) return;
      ended = true;
      calls.delete(entry);
      call.end(e?.code ?? GrpcStatus.OK, e?.code ? e.message : "");
    },
    holdReads: () => call.holdReads(),
    releaseReads: () => call.releaseReads(),
  };
  const entry = {
    end: (e: StreamEnd) => {
      transport.end(e);
      handle.close();
    },
  };
  calls.add(entry);
  const handle = open(transport);
  const gone = () => {
    if (ended) return;
    ended = true;
    calls.delete(entry);
    handle.close();
  };
  call.onMessage = (b) => {
    if (ended) return;
    let req: Req;
    try {
      req = decode(b, handle.namesHints?.());
    } catch (e) {
      entry.end({
        code: GrpcStatus.INVALID_ARGUMENT,
        message: `Cannot decode the request: ${(e as Error).message}`,
      });
      return;
    }
    handle.receive(req);
  };
  call.onEnd = () => {
    // The client half-closed: end our side with OK, as grpc-js servers do.
    if (ended) return;
    transport.end();
    handle.close();
  };
  call.onCancel = gone;
}

/** The call handlers of the SotW and delta streams of every service served. */
function adsHandlers(
  opts: AdsServerOptions,
  decoders: Awaited<ReturnType<typeof adsDecoders>>,
  calls: Set<{ end: (e: StreamEnd) => void }>,
): Map<string, CallHandler> {
  const handlers = new Map<string, CallHandler>();
  for (const service of opts.services ?? [ADS_SERVICE]) {
    const [stream, delta] = service === SDS_SERVICE
      ? ["StreamSecrets", "DeltaSecrets"]
      : ["StreamAggregatedResources", "DeltaAggregatedResources"];
    handlers.set(
      `/${service}/${stream}`,
      (call) =>
        serveStream<DiscoveryRequest, DiscoveryResponse>(
          calls,
          call,
          decoders.sotw,
          encodeDiscoveryResponseParts,
          (t) => opts.server.openSotw(t),
        ),
    );
    handlers.set(
      `/${service}/${delta}`,
      (call) =>
        serveStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(
          calls,
          call,
          decoders.delta,
          encodeDeltaDiscoveryResponseParts,
          (t) => opts.server.openDelta(t),
        ),
    );
  }
  return handlers;
}

/**
 * Starts serving ADS (SotW and delta) for `opts.server` on `opts.address`, plaintext or TLS.
 *
 * @example
 * ```ts ignore
 * const ads = await startAdsServer({ address: "127.0.0.1:0", server });
 * console.log(ads.port);
 * await ads.shutdown();
 * ```
 */
export async function startAdsServer(opts: AdsServerOptions): Promise<AdsServerHandle> {
  const unixPath = opts.address.startsWith("unix:") ? opts.address.slice(5) : undefined;
  const { host, port: wanted } = unixPath ? { host: "", port: 0 } : parseAddress(opts.address);
  const log = opts.logger ?? getLogger("ads");
  const tls = opts.tls
    ? {
      ca: pem("root", opts.tls.root),
      cert: pem("certChain", opts.tls.certChain),
      key: pem("key", opts.tls.key),
      requireClientCert: opts.tls.requireClientCert ?? false,
    }
    : undefined;
  const calls = new Set<{ end: (e: StreamEnd) => void }>();
  const handlers = adsHandlers(opts, await adsDecoders(), calls);
  const listener = await listenGrpc({
    host,
    port: wanted,
    path: unixPath,
    tls,
    handlers,
    onError: (m) => log.warn(`ADS: ${m}`),
    limits: opts.transport?.limits,
    maxConnections: opts.transport?.maxConnections,
    maxConnectionsPerAddress: opts.transport?.maxConnectionsPerAddress,
    maxFailedConnectionsPerSecond: opts.transport?.maxFailedConnectionsPerSecond,
    reusePort: opts.reusePort,
    nativeReads: opts.nativeReads,
    acceptLoops: opts.acceptLoops,
  }).catch((e) => {
    throw new Error(`Cannot listen on ${opts.address}: ${(e as Error).message}`);
  });
  const port = listener.port;
  log.info(
    `ADS: listening on ${opts.address} (port ${port}, ${tls ? "TLS" : "plaintext"}` +
      `${listener.reusedReads ? ", reused read buffers" : ""})`,
  );

  let stopped: Promise<void> | undefined;
  return {
    port,
    get accepting() {
      return listener.accepting;
    },
    get refused() {
      return listener.refused;
    },
    setTls(t) {
      if (!tls) throw new Error("setTls() on a plaintext ADS listener");
      listener.setTls({
        cert: pem("certChain", t.certChain),
        key: pem("key", t.key),
        ca: pem("root", t.root),
      });
    },
    get throttled() {
      return listener.throttled;
    },
    get shed() {
      return listener.shed;
    },
    shutdown() {
      stopped ??= (async () => {
        const bye = { code: GrpcStatus.UNAVAILABLE, message: "Server is shutting down" };
        for (const c of [...calls]) c.end(bye);
        await listener.close(bye.code, bye.message, 2000);
      })();
      return stopped;
    },
  };
}

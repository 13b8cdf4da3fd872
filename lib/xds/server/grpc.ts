/**
 * The gRPC transport: serves `envoy.service.discovery.v3.AggregatedDiscoveryService` on a
 * @grpc/grpc-js server and drives an {@link XdsServer}. Requests are decoded by hand (`wire.ts`;
 * first requests and NACKs by @grpc/proto-loader); responses are encoded by `wire.ts`, which
 * copies the shared, pre-serialized resource bytes (and their cached `Any` encoding) straight into
 * the response.
 * grpc-js and proto-loader are loaded lazily.
 * @module
 */

import { Buffer } from "node:buffer";
import * as path from "node:path";
import { getLogger, type Logger } from "../../log/mod.ts";
import { xdsIncludeDirs, xdsProtoRoot } from "../protos.ts";
import type { XdsServer } from "./stream.ts";
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
  encodeDeltaDiscoveryResponse,
  encodeDiscoveryResponse,
} from "./wire.ts";

/** Full name of the ADS service. */
export const ADS_SERVICE = "envoy.service.discovery.v3.AggregatedDiscoveryService";

/** Options of {@link startAdsServer}. */
export interface AdsServerOptions {
  /** `host:port` to listen on (`127.0.0.1:0` picks a free port; `[::]:15010` for IPv6). */
  address: string;
  /**
   * Serve TLS. PEM text or bytes. `root` verifies client certificates; it is passed explicitly so
   * that `GRPC_DEFAULT_SSL_ROOTS_FILE_PATH` in the environment does not replace it.
   */
  tls?: {
    certChain: string | Uint8Array;
    key: string | Uint8Array;
    root: string | Uint8Array;
    /**
     * Require a client certificate signed by `root` (default false: grpc-js then does not request
     * client certificates at all, so peers stay anonymous).
     */
    requireClientCert?: boolean;
  };
  /** The state machine to drive. */
  // deno-lint-ignore no-explicit-any
  server: XdsServer<any>;
  /** Logger (default `getLogger("ads")`). */
  logger?: Logger;
}

/** A running ADS listener. */
export interface AdsServerHandle {
  /** The bound port (useful with port 0). */
  port: number;
  /** Ends every stream (UNAVAILABLE), then stops the gRPC server. Idempotent. */
  shutdown(): Promise<void>;
}

/** Options for @grpc/proto-loader used for the ADS requests. */
const LOADER_OPTIONS = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  arrays: true,
  oneofs: true,
} as const;

// deno-lint-ignore no-explicit-any
type AnyObj = any;

let serviceDefCache: Promise<AnyObj> | undefined;

/** Loads ads.proto once and returns the service definition with our response encoders. */
function adsServiceDefinition(): Promise<AnyObj> {
  serviceDefCache ??= (async () => {
    const loader = await import("../../deps/proto_loader.ts");
    const root = xdsProtoRoot();
    const pkg = loader.loadSync(
      path.join(root, "envoy-api", "envoy", "service", "discovery", "v3", "ads.proto"),
      {
        ...LOADER_OPTIONS,
        includeDirs: xdsIncludeDirs(),
      },
    ) as AnyObj;
    const svc = pkg[ADS_SERVICE];
    if (!svc) throw new Error(`${ADS_SERVICE} not found in ads.proto`);
    const sotwFull = svc.StreamAggregatedResources.requestDeserialize;
    const deltaFull = svc.DeltaAggregatedResources.requestDeserialize;
    // Requests are decoded by hand (wire.ts); those with a node (first requests) or an
    // error_detail (NACKs) go through proto-loader, with the node's metadata Struct as JSON.
    const full = (r: AnyObj) => ({ ...r, node: normalizeNode(r.node) });
    return {
      StreamAggregatedResources: {
        ...svc.StreamAggregatedResources,
        requestDeserialize: (b: Buffer) => decodeDiscoveryRequest(b) ?? full(sotwFull(b)),
        responseSerialize: (r: DiscoveryResponse) => encodeDiscoveryResponse(r),
      },
      DeltaAggregatedResources: {
        ...svc.DeltaAggregatedResources,
        requestDeserialize: (b: Buffer) => decodeDeltaDiscoveryRequest(b) ?? full(deltaFull(b)),
        responseSerialize: (r: DeltaDiscoveryResponse) => encodeDeltaDiscoveryResponse(r),
      },
    };
  })();
  serviceDefCache.catch(() => serviceDefCache = undefined);
  return serviceDefCache;
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

/** URI SANs of a verified peer certificate (`spiffe://...`), from the call's auth context. */
function peerIdentities(call: AnyObj): string[] {
  try {
    const cert = call.getAuthContext?.()?.sslPeerCertificate;
    const san: string = cert?.subjectaltname ?? "";
    return san.split(/,\s*/).filter((s) => s.startsWith("URI:")).map((s) => s.slice(4));
  } catch {
    return [];
  }
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
  parseAddress(opts.address);
  const log = opts.logger ?? getLogger("ads");
  const creds0 = opts.tls
    ? {
      root: pem("root", opts.tls.root),
      certChain: pem("certChain", opts.tls.certChain),
      key: pem("key", opts.tls.key),
    }
    : undefined;
  const grpc = await import("../../deps/grpc.ts");
  const def = await adsServiceDefinition();
  const calls = new Set<{ end: (e: StreamEnd) => void }>();

  const serve = <Req, Res>(
    call: AnyObj,
    open: (t: XdsTransport<Res>) => { receive(r: Req): void; close(): void },
  ) => {
    let ended = false;
    const pending = new Set<(e: Error) => void>();
    const fail = (why: string) => {
      for (const r of pending) r(new Error(why));
      pending.clear();
    };
    const transport: XdsTransport<Res> = {
      peer: String(call.getPeer?.() ?? "unknown"),
      peerIdentities: peerIdentities(call),
      send(res: Res) {
        if (ended) return Promise.reject(new Error("stream ended"));
        return new Promise<void>((resolve, reject) => {
          pending.add(reject);
          call.write(res, (err?: Error | null) => {
            pending.delete(reject);
            if (err) reject(err);
            else resolve();
          });
        });
      },
      end(e?: StreamEnd) {
        if (ended) return;
        ended = true;
        calls.delete(entry);
        fail("stream ended");
        if (!e || e.code === 0) call.end();
        else call.emit("error", { code: e.code, details: e.message });
      },
    };
    const entry = {
      end: (e: StreamEnd) => {
        transport.end(e);
        handle.close();
      },
    };
    calls.add(entry);
    const handle = open(transport);
    const gone = (why: string) => {
      if (ended) return;
      ended = true;
      calls.delete(entry);
      fail(why);
      handle.close();
    };
    call.on("data", (req: AnyObj) => {
      if (ended) return;
      handle.receive(req as Req);
    });
    call.on("end", () => {
      gone("client closed the stream");
      try {
        call.end();
      } catch { /* already ended */ }
    });
    call.on("cancelled", () => gone("client cancelled the stream"));
    call.on("error", (e: Error) => gone(`stream error: ${e.message}`));
  };

  const server = new grpc.Server();
  server.addService(def, {
    StreamAggregatedResources: (call: AnyObj) =>
      serve<DiscoveryRequest, DiscoveryResponse>(
        call,
        (t) => opts.server.openSotw(t),
      ),
    DeltaAggregatedResources: (call: AnyObj) =>
      serve<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(
        call,
        (t) => opts.server.openDelta(t),
      ),
  });
  const creds = creds0
    ? grpc.ServerCredentials.createSsl(
      creds0.root,
      [{ cert_chain: creds0.certChain, private_key: creds0.key }],
      opts.tls?.requireClientCert ?? false,
    )
    : grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(opts.address, creds, (err: Error | null, p: number) => {
      if (err) reject(new Error(`Cannot listen on ${opts.address}: ${err.message}`));
      else resolve(p);
    });
  }).catch((e) => {
    server.forceShutdown();
    throw e;
  });
  log.info(`ADS: listening on ${opts.address} (port ${port}, ${creds0 ? "TLS" : "plaintext"})`);

  let stopped: Promise<void> | undefined;
  return {
    port,
    shutdown() {
      stopped ??= (async () => {
        for (const c of [...calls]) c.end({ code: 14, message: "Server is shutting down" });
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            server.forceShutdown();
            resolve();
          }, 2000);
          server.tryShutdown(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      })();
      return stopped;
    },
  };
}

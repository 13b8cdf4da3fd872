/**
 * Envoy xDS v3 message types, loaded lazily from `xds_descriptors.json` (generated from the .proto
 * files shipped in the pinned `@grpc/grpc-js-xds` npm package, see gen_descriptors.ts), and
 * `google.protobuf.Any` helpers. {@link xdsProtoRoot} finds the .proto files themselves (tests and
 * the generator; the programs do not need them).
 *
 * Objects use the proto field names (snake_case), enums as strings, 64-bit integers as strings on
 * decode, durations as `{seconds, nanos}` and wrappers as `{value}`. A nested `Any` (for example a
 * `typed_config`) may be written in JSON form: `{"@type": "type.googleapis.com/<full name>", ...fields}`;
 * protobufjs encodes it as a real `Any`, and {@link decodeAny} expands nested `Any`s the same way.
 *
 * Cost (measured on the 2-core dev box, Deno 2.7.14): loading the proto tree takes ~0.2–0.3 s once
 * per process; encoding a sidecar HTTP Listener (HCM + filters) takes ~15 µs; the full view of a
 * sidecar in a 1000-service mesh (3005 clusters, 1006 listeners, 3000 assignments) encodes in
 * ~115–250 ms (see scale_test.ts).
 * @module
 */

import { createRequire } from "node:module";
import * as fs from "node:fs";
import * as path from "node:path";

/** Type URLs of the xDS resource types served over ADS (the four main ones, plus Secret). */
export const TYPE_URLS = {
  listener: "type.googleapis.com/envoy.config.listener.v3.Listener",
  route: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
  cluster: "type.googleapis.com/envoy.config.cluster.v3.Cluster",
  endpoint: "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
  secret: "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
} as const;

/** Type URLs of the filters and extensions the generators embed as `typed_config`. */
export const EXT_TYPE_URLS = {
  hcm:
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
  tcpProxy: "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
  router: "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
  fault: "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
  cors: "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors",
  corsPolicy: "type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy",
  rbac: "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC",
  jwtAuthn: "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication",
  upstreamTls: "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
  downstreamTls:
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
  httpProtocolOptions: "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
  fileAccessLog: "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
  tlsInspector:
    "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector",
  originalDst: "type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst",
  routeFilterConfig: "type.googleapis.com/envoy.config.route.v3.FilterConfig",
} as const;

/** A `google.protobuf.Any` as carried in discovery responses. */
export interface AnyMessage {
  type_url: string;
  value: Uint8Array;
}

/** The .proto files loaded (relative to `envoy-api/`); their imports come along. */
export const PROTO_FILES: readonly string[] = [
  "envoy/config/listener/v3/listener.proto",
  "envoy/config/route/v3/route.proto",
  "envoy/config/cluster/v3/cluster.proto",
  "envoy/config/endpoint/v3/endpoint.proto",
  "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto",
  "envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.proto",
  "envoy/extensions/filters/http/router/v3/router.proto",
  "envoy/extensions/filters/http/rbac/v3/rbac.proto",
  "envoy/extensions/filters/http/jwt_authn/v3/config.proto",
  "envoy/extensions/filters/http/fault/v3/fault.proto",
  "envoy/extensions/filters/http/cors/v3/cors.proto",
  "envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto",
  "envoy/extensions/filters/listener/original_dst/v3/original_dst.proto",
  "envoy/extensions/transport_sockets/tls/v3/tls.proto",
  "envoy/extensions/transport_sockets/tls/v3/secret.proto",
  "envoy/extensions/upstreams/http/v3/http_protocol_options.proto",
  "envoy/extensions/access_loggers/file/v3/file.proto",
  "envoy/service/discovery/v3/ads.proto",
  "envoy/service/discovery/v3/discovery.proto",
];

/** The include folders inside `deps/`, in the order grpc-js-xds uses them. */
const INCLUDE_DIRS: readonly string[] = [
  "envoy-api",
  "xds",
  "googleapis",
  "protoc-gen-validate",
];

/** @grpc/proto-loader options: proto3 JSON-friendly objects (Any expanded through `json`). */
export const LOADER_OPTIONS = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: true,
  json: true,
} as const;

let rootCache: string | undefined;

function isDepsRoot(dir: string): boolean {
  return fs.existsSync(path.join(dir, "envoy-api", "envoy", "config", "listener", "v3"));
}

function scanDenoDir(nodeModules: string): string | undefined {
  const denoDir = path.join(nodeModules, ".deno");
  let entries: string[];
  try {
    entries = fs.readdirSync(denoDir);
  } catch {
    return undefined;
  }
  for (const e of entries.filter((n) => n.startsWith("@grpc+grpc-js-xds@")).sort().reverse()) {
    const candidate = path.join(denoDir, e, "node_modules", "@grpc", "grpc-js-xds", "deps");
    if (isDepsRoot(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Absolute path of the `deps/` folder of `@grpc/grpc-js-xds` (holding `envoy-api/`, `xds/`,
 * `googleapis/`, `protoc-gen-validate/`). Resolved through Node module resolution from this file,
 * then by scanning `node_modules/.deno` upwards from this file and from the working directory, then
 * the Deno npm cache (`$DENO_DIR` or `~/.cache/deno`). Throws when not found.
 */
export function xdsProtoRoot(): string {
  if (rootCache) return rootCache;
  const tried: string[] = [];
  if (import.meta.url.startsWith("file:")) {
    try {
      const require = createRequire(import.meta.url);
      const pkg = require.resolve("@grpc/grpc-js-xds/package.json");
      const candidate = path.join(path.dirname(pkg), "deps");
      if (isDepsRoot(candidate)) return (rootCache = candidate);
      tried.push(candidate);
    } catch {
      tried.push("node resolution of @grpc/grpc-js-xds");
    }
  }
  const starts: string[] = [Deno.cwd()];
  if (import.meta.url.startsWith("file:")) {
    starts.unshift(path.dirname(new URL(import.meta.url).pathname));
  }
  for (const start of starts) {
    let dir = start;
    for (;;) {
      const found = scanDenoDir(path.join(dir, "node_modules"));
      if (found) return (rootCache = found);
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
    tried.push(`node_modules/.deno above ${start}`);
  }
  const home = Deno.env.get("HOME") ?? "";
  const denoDir = Deno.env.get("DENO_DIR") ?? path.join(home, ".cache", "deno");
  const npmDir = path.join(denoDir, "npm", "registry.npmjs.org", "@grpc", "grpc-js-xds");
  try {
    for (const v of fs.readdirSync(npmDir).sort().reverse()) {
      const candidate = path.join(npmDir, v, "deps");
      if (isDepsRoot(candidate)) return (rootCache = candidate);
    }
  } catch {
    // not cached there
  }
  tried.push(npmDir);
  throw new Error(
    `Cannot find the Envoy .proto files of @grpc/grpc-js-xds: tried ${tried.join(", ")}`,
  );
}

/** The include folders of the Envoy protos ({@link xdsProtoRoot} `/envoy-api`, `/xds`...). */
export function xdsIncludeDirs(): string[] {
  const root = xdsProtoRoot();
  return INCLUDE_DIRS.map((d) => path.join(root, d));
}

interface MessageDef {
  serialize(value: unknown): Uint8Array;
  deserialize(bytes: Uint8Array): Record<string, unknown>;
}

let defsCache: Record<string, unknown> | undefined;
let descriptorsCache: Promise<Record<string, unknown>> | undefined;

/**
 * The Envoy v3 descriptions of {@link PROTO_FILES} and their imports as protobufjs JSON
 * (`xds_descriptors.json`, generated from the pinned `@grpc/grpc-js-xds` by `deno task gen:protos`).
 * Imported as a module on first use, so it reaches the program however it runs (checkout, URL,
 * compiled binary) and costs nothing to commands that do not need it.
 */
export function xdsDescriptors(): Promise<Record<string, unknown>> {
  descriptorsCache ??= import("./xds_descriptors.json", { with: { type: "json" } }).then((m) =>
    m.default as Record<string, unknown>
  );
  return descriptorsCache;
}

/**
 * Loads the Envoy v3 message types (once) from {@link xdsDescriptors} and returns the proto-loader
 * package definition, keyed by full message name (`envoy.config.listener.v3.Listener`).
 */
export async function loadXdsProtos(): Promise<Record<string, unknown>> {
  if (defsCache) return defsCache;
  const loader = await import("../deps/proto_loader.ts");
  const json = await xdsDescriptors();
  // deno-lint-ignore no-explicit-any
  defsCache = loader.fromJSON(json as any, LOADER_OPTIONS) as unknown as Record<string, unknown>;
  return defsCache;
}

/**
 * Synchronous access to the loaded definitions; throws when {@link loadXdsProtos} has not finished.
 */
function defs(): Record<string, unknown> {
  if (!defsCache) {
    throw new Error("xDS protos are not loaded yet: await loadXdsProtos() first");
  }
  return defsCache;
}

function messageDef(typeUrl: string): MessageDef {
  const name = typeUrl.slice(typeUrl.lastIndexOf("/") + 1);
  const def = defs()[name] as (MessageDef & { format?: string }) | undefined;
  if (!def || def.format !== "Protocol Buffer 3 DescriptorProto") {
    throw new Error(`Unknown xDS message type "${name}" (type URL "${typeUrl}")`);
  }
  return def;
}

/**
 * Encodes a plain object (proto field names) as a `google.protobuf.Any` of `typeUrl`.
 * Requires {@link loadXdsProtos} to have completed. Throws on values protobufjs rejects.
 *
 * @example
 * ```ts ignore
 * await loadXdsProtos();
 * const any = encodeAny(TYPE_URLS.cluster, { name: "BlackHoleCluster", type: "STATIC" });
 * ```
 */
export function encodeAny(typeUrl: string, obj: unknown): AnyMessage {
  const def = messageDef(typeUrl);
  let value: Uint8Array;
  try {
    value = def.serialize(obj);
  } catch (e) {
    throw new Error(
      `Cannot encode ${typeUrl.slice(typeUrl.lastIndexOf("/") + 1)}: ${(e as Error).message}`,
    );
  }
  return { type_url: typeUrl, value };
}

/** Decodes a `google.protobuf.Any` into a plain object (nested Anys expanded with `@type`). */
export function decodeAny(any: { type_url: string; value: Uint8Array }): Record<string, unknown> {
  return messageDef(any.type_url).deserialize(any.value);
}

/** Encodes any loaded message by full name (`envoy.service.discovery.v3.DiscoveryResponse`). */
export function encodeMessage(fullName: string, obj: unknown): Uint8Array {
  return messageDef(fullName).serialize(obj);
}

/** Decodes any loaded message by full name. */
export function decodeMessage(fullName: string, bytes: Uint8Array): Record<string, unknown> {
  return messageDef(fullName).deserialize(bytes);
}

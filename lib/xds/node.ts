/**
 * Proxy node id parsing (`<type>~<ip>~<id>~<domain>`).
 * @module
 */

import type { Proxy, ProxyType, XdsClientInfo } from "./types.ts";

const TYPES: readonly ProxyType[] = ["sidecar", "router", "ingress"];

/** True when `s` is a dotted IPv4 address or an IPv6 address. */
export function isIp(s: string): boolean {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (v4) return v4.slice(1).every((p) => Number(p) <= 255 && String(Number(p)) === p);
  if (!s.includes(":") || !/^[0-9a-fA-F:.]+$/.test(s)) return false;
  try {
    new URL(`http://[${s}]/`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Parses a node id. Errors (messages of the reference):
 * `missing parts in the service node "..."` when there are not exactly 4 `~`-separated parts,
 * `invalid node type (valid types: ingress, sidecar, router in the service node "...")`,
 * `invalid IP address "..." in the service node "..."` (sidecars only).
 *
 * @example
 * ```ts
 * import { parseNodeId } from "./node.ts";
 * const p = parseNodeId("sidecar~10.1.1.0~v0.default~default.svc.cluster.local");
 * // p.type === "sidecar", p.ip === "10.1.1.0", p.id === "v0.default"
 * ```
 */
export function parseNodeId(node: string, metadata: Record<string, unknown> = {}): Proxy {
  const parts = node.split("~");
  if (parts.length !== 4) throw new Error(`missing parts in the service node "${node}"`);
  const [type, ip, id, domain] = parts;
  if (!TYPES.includes(type as ProxyType)) {
    throw new Error(
      `invalid node type (valid types: ingress, sidecar, router in the service node "${node}")`,
    );
  }
  if (type === "sidecar" && !isIp(ip)) {
    throw new Error(`invalid IP address "${ip}" in the service node "${node}"`);
  }
  return { type: type as ProxyType, ip, id, domain, metadata };
}

/** Workload labels of a proxy: `metadata.labels` when an object, else the string entries. */
export function proxyLabels(proxy: Proxy): Record<string, string> {
  const m = proxy.metadata ?? {};
  const l = m["labels"] ?? m["LABELS"];
  if (l && typeof l === "object" && !Array.isArray(l)) {
    return Object.fromEntries(
      Object.entries(l as Record<string, unknown>).filter(([, v]) => typeof v === "string"),
    ) as Record<string, string>;
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m)) {
    if (typeof v === "string" && !/^[A-Z_]+$/.test(k)) out[k] = v;
  }
  return out;
}

/** The parts of an Envoy `Node` that tell which client sent it. */
export interface NodeIdentity {
  /** The node id, `<type>~<ip>~<id>~<domain>`. */
  id: string;
  /** Node metadata (plain JSON). */
  metadata?: Record<string, unknown> | null;
  /** `envoy`, `gRPC C-core <platform> [<wrapper>]`, `gRPC Go`, `gRPC Java`, `gRPC Node Pure JS`. */
  user_agent_name?: string;
  /** gRPC clients: `1.60.1`; C-core: `C-core <core version> [<wrapper> <release>]`. */
  user_agent_version?: string;
  /** Envoy ≥ 1.14: `{version: {major_number, minor_number, patch}}`. */
  user_agent_build_version?: unknown;
  /** Older Envoys: `<sha>/<version>/<status>/<build type>/<ssl>`. */
  build_version?: string;
}

const GRPC_AGENTS: [RegExp, XdsClientInfo["kind"]][] = [
  [/^gRPC C-core\b/, "grpc-core"],
  [/^gRPC Node\b/, "grpc-js"],
  [/^gRPC Go\b/, "grpc-go"],
  [/^gRPC Java\b/, "grpc-java"],
];

function versionIn(s: unknown): [number, number, number] | undefined {
  if (typeof s !== "string") return undefined;
  const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(s);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : undefined;
}

/**
 * The gRPC release of a C-core `user_agent_version`: `C-core <core version>[ <wrapper>
 * <release>]`. The wrapper's release when given (`C-core 29.0.0 Python 1.51.1` → 1.51.1), else
 * from the core library version, which follows the release (29.x = gRPC 1.51, 30.x = 1.52).
 */
function coreRelease(v: string): [number, number, number] | undefined {
  const m = /^C-core (\d+)\.(\d+)\.(\d+)(?:\s+\S+\s+(\d+)\.(\d+)(?:\.(\d+))?)?/.exec(v);
  if (!m) return versionIn(v);
  if (m[4] !== undefined) return [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
  return [1, Number(m[1]) + 22, Number(m[3])];
}

/**
 * Which xDS client sent `node`: Envoy by `user_agent_name: "envoy"` (version from
 * `user_agent_build_version`, or the second field of the older `build_version`), gRPC libraries by
 * their `user_agent_name` prefix (version from `user_agent_version`; for C-core the gRPC release,
 * see `coreRelease`).
 * Undefined without a user agent.
 *
 * @example
 * ```ts
 * import { clientOf } from "./node.ts";
 * clientOf({
 *   id: "x",
 *   user_agent_name: "gRPC C-core linux Python",
 *   user_agent_version: "C-core 29.0.0 Python 1.51.1",
 * });
 * // { kind: "grpc-core", name: "gRPC C-core linux Python", version: [1, 51, 1] }
 * ```
 */
export function clientOf(node: NodeIdentity): XdsClientInfo | undefined {
  const name = typeof node.user_agent_name === "string" ? node.user_agent_name : "";
  if (!name) {
    // Envoys before user_agent_name (< 1.13) only had build_version.
    const v = versionIn(String(node.build_version ?? "").split("/")[1]);
    return v ? { kind: "envoy", name: "envoy", version: v } : undefined;
  }
  if (name === "envoy") {
    const bv = (node.user_agent_build_version as { version?: Record<string, unknown> } | undefined)
      ?.version;
    let version: [number, number, number] | undefined;
    if (bv && typeof bv === "object") {
      version = [
        Number(bv.major_number ?? bv.majorNumber ?? 0),
        Number(bv.minor_number ?? bv.minorNumber ?? 0),
        Number(bv.patch ?? 0),
      ];
    } else version = versionIn(String(node.build_version ?? "").split("/")[1]);
    return version ? { kind: "envoy", name, version } : { kind: "envoy", name };
  }
  const kind = GRPC_AGENTS.find(([re]) => re.test(name))?.[1] ?? "other";
  const version = kind === "grpc-core"
    ? coreRelease(String(node.user_agent_version ?? ""))
    : versionIn(node.user_agent_version);
  return version ? { kind, name, version } : { kind, name };
}

/**
 * {@link parseNodeId} plus the client of {@link clientOf} (as `client`, when known): what the ADS
 * and REST servers make of the `Node` of a request.
 */
export function proxyFromNode(node: NodeIdentity): Proxy {
  const proxy = parseNodeId(node.id, node.metadata ?? {});
  const client = clientOf(node);
  if (client) proxy.client = client;
  return proxy;
}

/** `a >= b` for `[major, minor, patch]`. */
function atLeast(a: [number, number, number], b: [number, number, number]): boolean {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
  return true;
}

/**
 * How header matchers (VirtualService `headers`, `authority`, `method`, `scheme`) are written for
 * a client:
 * - `string_match` (`HeaderMatcher.string_match`, the current form) for Envoy ≥ 1.20, which
 *   warns about the deprecated fields;
 * - `legacy` (`exact_match`, `prefix_match`, `suffix_match`, `safe_regex_match`) for everyone
 *   else: every gRPC xDS client reads them (gRFC A28), while `string_match` came only with gRFC
 *   A63 (grpc/grpc#32993, May 2023, and later versions of the other languages; C-core 1.51 NACKs
 *   it with `Invalid route header matcher specified.`), and A63 promises to keep reading the old
 *   fields.
 *   Envoy still reads them too (deprecated, not removed, in the v3 API), so unknown clients get
 *   this form.
 */
export function headerMatcherForm(client: XdsClientInfo | undefined): "string_match" | "legacy" {
  if (client?.kind === "envoy" && client.version && atLeast(client.version, [1, 20, 0])) {
    return "string_match";
  }
  return "legacy";
}

/**
 * True for clients that crash on a ring-hash cluster: gRPC C-core 1.50–1.52 (and its wrappers:
 * Python, Ruby, PHP, C++) dereference a bad cast in the ring-hash picker (grpc/grpc#31766,
 * introduced by #30714, fixed by #32012 in January 2023); Debian's python3-grpcio 1.51.1
 * segfaults here as soon as a call goes through such a cluster. They get round robin instead.
 */
export function ringHashCrashes(client: XdsClientInfo | undefined): boolean {
  if (client?.kind !== "grpc-core" || !client.version) return false;
  return atLeast(client.version, [1, 50, 0]) && !atLeast(client.version, [1, 53, 0]);
}

/**
 * Node metadata key that tells which kind of xDS client a node is (Istio's `GENERATOR`).
 * mesh-agent `--proxyless` sets it to {@link GRPC_GENERATOR} in the gRPC bootstrap it writes.
 */
export const GENERATOR_METADATA_KEY = "GENERATOR";
/** Value of {@link GENERATOR_METADATA_KEY} for proxyless gRPC workloads (Istio's `grpc`). */
export const GRPC_GENERATOR = "grpc";

/**
 * True when the node metadata marks a proxyless gRPC workload (`GENERATOR: "grpc"`, as written
 * by mesh-agent `--proxyless` and by Istio's grpc-agent template).
 *
 * @example
 * ```ts
 * import { isProxylessGrpc } from "./node.ts";
 * isProxylessGrpc({ GENERATOR: "grpc" }); // true
 * ```
 */
export function isProxylessGrpc(metadata: Record<string, unknown> | null | undefined): boolean {
  return metadata?.[GENERATOR_METADATA_KEY] === GRPC_GENERATOR;
}

/**
 * What the integration demo reads in the resources proxies get from discovery (REST xDS, proto3
 * JSON) and in the injected YAML: each function answers one question of the procedure. Pure.
 * @module
 */

// deno-lint-ignore no-explicit-any
type Any = any;

/** The route configuration's cluster for a request path (exact or prefix match), if any. */
export function routeClusterFor(routeConfig: Any, path: string): string | undefined {
  for (const vh of routeConfig?.virtual_hosts ?? []) {
    for (const r of vh?.routes ?? []) {
      const m = r?.match ?? {};
      const hit = m.path !== undefined
        ? m.path === path
        : m.prefix !== undefined
        ? path.startsWith(m.prefix)
        : false;
      if (hit && r.route?.cluster) return r.route.cluster;
    }
  }
  return undefined;
}

/** A proto3 JSON BoolValue, wrapped or not. */
function boolOf(v: unknown): boolean {
  return v === true || (typeof v === "object" && v !== null && (v as Any).value === true);
}

/** The network filters of a listener's chains (names). */
export function filterNames(listener: Any): string[] {
  return (listener?.filter_chains ?? []).flatMap((c: Any) =>
    (c?.filters ?? []).map((f: Any) => String(f?.name))
  );
}

/** Whether the listener handles HTTP (an HTTP connection manager). */
export function servesHttp(listener: Any): boolean {
  return filterNames(listener).includes("envoy.filters.network.http_connection_manager");
}

/** Whether the listener proxies plain TCP (tcp_proxy and no HTTP connection manager). */
export function servesTcp(listener: Any): boolean {
  const names = filterNames(listener);
  return names.includes("envoy.filters.network.tcp_proxy") && !servesHttp(listener);
}

/** The TLS context of a transport socket, if it is TLS. */
function tlsContext(socket: Any): Any | undefined {
  return socket?.name === "envoy.transport_sockets.tls" ? socket.typed_config : undefined;
}

/** What an inbound listener asks of callers. */
export interface InboundTls {
  /** Every chain requires a client certificate (mutual TLS only). */
  requiresClientCert: boolean;
  /** Some chain accepts connections without TLS. */
  acceptsPlaintext: boolean;
  /** The CA files client certificates are checked against. */
  trustedCa: string[];
}

/** How a listener treats TLS. */
export function inboundTls(listener: Any): InboundTls {
  const chains: Any[] = listener?.filter_chains ?? [];
  const ctxs = chains.map((c) => tlsContext(c?.transport_socket));
  return {
    requiresClientCert: chains.length > 0 &&
      ctxs.every((c) => c !== undefined && boolOf(c.require_client_certificate)),
    acceptsPlaintext: ctxs.some((c) => c === undefined),
    trustedCa: ctxs.flatMap((c) => {
      const f = c?.common_tls_context?.validation_context?.trusted_ca?.filename;
      return f ? [f] : [];
    }),
  };
}

/** What a client cluster presents and checks. */
export interface UpstreamTls {
  /** Certificate files it presents (empty: no client certificate, or no TLS). */
  presents: string[];
  /** SPIFFE identities it accepts from the server. */
  sans: string[];
}

/** How a cluster connects: the certificate it presents and the identities it checks. */
export function upstreamTls(cluster: Any): UpstreamTls | undefined {
  const c = tlsContext(cluster?.transport_socket)?.common_tls_context;
  if (!c) return undefined;
  const vc = c.validation_context ?? {};
  const matchers = [
    ...(vc.match_typed_subject_alt_names ?? []),
    ...(vc.match_subject_alt_names ?? []),
  ];
  return {
    presents: (c.tls_certificates ?? []).map((t: Any) => t?.certificate_chain?.filename).filter(
      Boolean,
    ),
    sans: matchers.map((m: Any) => m?.matcher?.exact ?? m?.exact).filter(Boolean),
  };
}

/** The `-i` (captured ranges) and `-x` (excluded ranges) of the injected init container. */
export function initCaptureRanges(
  initArgs: readonly string[],
): { include: string; exclude: string } {
  const after = (flag: string) => {
    const i = initArgs.indexOf(flag);
    return i >= 0 ? String(initArgs[i + 1] ?? "") : "";
  };
  return { include: after("-i"), exclude: after("-x") };
}

function ipv4(s: string): number | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return undefined;
  return ((parts[0] << 24) >>> 0) + (parts[1] << 16) + (parts[2] << 8) + parts[3];
}

/**
 * Whether the init container's rules capture outbound traffic to `ip`: `include` is `*` (all),
 * empty (none) or a comma list of IPv4 CIDRs; `exclude` ranges are never captured.
 */
export function captured(ip: string, include: string, exclude = ""): boolean {
  const addr = ipv4(ip);
  if (addr === undefined) return false;
  const inAny = (list: string) =>
    list.split(",").map((s) => s.trim()).filter(Boolean).some((cidr) => {
      if (cidr === "*") return true;
      const [net, len = "32"] = cidr.split("/");
      const base = ipv4(net);
      const n = Number(len);
      if (base === undefined || !(n >= 0 && n <= 32)) return false;
      const mask = n === 0 ? 0 : (~0 << (32 - n)) >>> 0;
      return ((addr & mask) >>> 0) === ((base & mask) >>> 0);
    });
  return inAny(include) && !inAny(exclude);
}

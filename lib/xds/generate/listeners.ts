/**
 * LDS: sidecar listeners (capture, inbound, outbound TCP and HTTP), gateway listeners for routers,
 * and proxyless api listeners (`<host>:<port>`).
 * @module
 */

import type { Service, ServiceInstance, ServicePort } from "../../model/types.ts";
import { EXT_TYPE_URLS } from "../protos.ts";
import type { Proxy, PushContext, XdsResource } from "../types.ts";
import { BLACKHOLE_CLUSTER, PASSTHROUGH_CLUSTER, proxyInstances } from "./clusters.ts";
import { indexOf } from "./context.ts";
import { gatewayListeners } from "./gateway.ts";
import { rbacConfig } from "./rbac.ts";
import { authzHttpFilters } from "./authz_policy.ts";
import { MESH_MTLS_ALPN, meshMtlsDownstream, mtlsModeOf } from "./security.ts";
import { withCertDir } from "./cert_dir.ts";
import { destinationCluster, resolveTarget } from "./route_translate.ts";
import {
  ADS_SOURCE,
  hcmFilter,
  httpFilter,
  routerFilter,
  tcpProxyFilter,
  tlsInspectorFilter,
} from "./filters.ts";
import { inboundClusterName, isHttpProtocol, outboundClusterName, socketAddress } from "./util.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** Outbound HTTP filters: cors, fault (route-level configs switch them on), router last. */
function outboundHttpFilters(): XdsResource[] {
  return [
    httpFilter("envoy.filters.http.cors", { "@type": EXT_TYPE_URLS.cors }),
    httpFilter("envoy.filters.http.fault", { "@type": EXT_TYPE_URLS.fault }),
  ];
}

/** The `virtualOutbound` capture listener on `proxyListenPort`. */
export function virtualListener(ctx: PushContext, proxy: Proxy): XdsResource {
  const port = ctx.meshConfig.proxyListenPort || 15001;
  const cluster = ctx.meshConfig.outboundTrafficPolicy === "ALLOW_ANY"
    ? PASSTHROUGH_CLUSTER
    : BLACKHOLE_CLUSTER;
  const l: Any = {
    name: "virtualOutbound",
    address: socketAddress("0.0.0.0", port),
    use_original_dst: { value: true },
    filter_chains: [{ filters: [tcpProxyFilter(cluster, cluster)] }],
    traffic_direction: "OUTBOUND",
  };
  if (proxy.metadata?.["INTERCEPTION_MODE"] === "TPROXY") l.transparent = { value: true };
  return l;
}

function inboundListener(
  ctx: PushContext,
  proxy: Proxy,
  svc: Service,
  sp: ServicePort,
  endpointPort: number,
  inst?: ServiceInstance,
): XdsResource {
  const cluster = inboundClusterName(sp.port, svc.hostname);
  let filters: XdsResource[];
  if (isHttpProtocol(sp.protocol)) {
    const extra: XdsResource[] = [];
    extra.push(...authzHttpFilters(ctx, svc, inst, rbacConfig(ctx, svc), false));
    filters = [hcmFilter({
      statPrefix: `inbound_${endpointPort}`,
      routeConfig: {
        name: cluster,
        virtual_hosts: [{
          name: `inbound|http|${sp.port}`,
          domains: ["*"],
          routes: [{
            match: { prefix: "/" },
            route: { cluster, timeout: { seconds: 0 } },
            decorator: { operation: "default-route" },
          }],
        }],
      },
      filters: extra,
      accessLogFile: ctx.meshConfig.accessLogFile,
    })];
  } else {
    filters = [tcpProxyFilter(cluster, cluster)];
  }
  const l: Any = {
    name: `${proxy.ip}_${endpointPort}`,
    address: socketAddress(proxy.ip, endpointPort),
    bind_to_port: { value: false },
    traffic_direction: "INBOUND",
  };
  const mode = mtlsModeOf(ctx, svc, sp, inst);
  if (mode === "NONE") l.filter_chains = [{ filters }];
  else if (mode === "STRICT") {
    l.filter_chains = [{ filters, transport_socket: meshMtlsDownstream(true) }];
  } else {
    l.listener_filters = [tlsInspectorFilter()];
    // Mesh mTLS is told apart by the ALPN the client sidecar offers (`istio`), as Istio does:
    // plaintext and an application's own TLS fall through to the catch-all chain untouched. Only
    // sidecars offer `istio`, so the mTLS chain can require their certificates.
    l.filter_chains = [
      {
        filter_chain_match: { application_protocols: [...MESH_MTLS_ALPN] },
        filters,
        transport_socket: meshMtlsDownstream(true),
      },
      { filters },
    ];
  }
  return l;
}

function tcpTarget(
  ctx: PushContext,
  svc: Service,
  sp: ServicePort,
): string | { name: string; weight: number }[] {
  const vss = indexOf(ctx).meshVsByHost.get(svc.hostname) ?? [];
  for (const vs of vss) {
    for (const r of Array.isArray(vs.spec.tcp) ? vs.spec.tcp : []) {
      const matches = Array.isArray(r?.match) && r.match.length ? r.match : [{}];
      if (!matches.some((m: Any) => m?.port === undefined || m.port === sp.port)) continue;
      const dests = (Array.isArray(r.route) ? r.route : []).filter((d: Any) => d?.destination);
      if (!dests.length) continue;
      if (dests.length === 1) {
        return destinationCluster(ctx, dests[0].destination, vs.namespace, sp.port);
      }
      const ws = dests.map((d: Any) => ({
        name: destinationCluster(ctx, d.destination, vs.namespace, sp.port),
        weight: typeof d.weight === "number" ? d.weight : 0,
      })).filter((w: Any) => w.weight > 0);
      if (ws.length === 1) return ws[0].name;
      if (ws.length) return ws;
    }
  }
  return outboundClusterName(sp.port, "", svc.hostname);
}

/** `a.b.c.d/n` or `v6/n` → CidrRange; a plain IP → /32 (/128 for IPv6). */
export function cidrRange(address: string): XdsResource {
  const [ip, len] = address.split("/");
  const max = ip.includes(":") ? 128 : 32;
  return { address_prefix: ip, prefix_len: { value: len === undefined ? max : Number(len) } };
}

/**
 * Name of the outbound TCP listener of a service port: `<ip>_<port>` for a service with an IP
 * address, else (CIDR addresses or none) the shared `0.0.0.0_<port>`.
 */
export function outboundTcpListenerName(svc: Service, sp: ServicePort): string {
  const address = svc.address && svc.address !== "0.0.0.0" ? svc.address : "";
  return `${address && !address.includes("/") ? address : "0.0.0.0"}_${sp.port}`;
}

/**
 * Adds the outbound TCP filter chain of one service port. A service with an IP address gets the
 * listener `<ip>_<port>` (chain matching `<ip>/32`); one with CIDR addresses or none shares
 * `0.0.0.0_<port>` with the other such services, its chain matching its CIDR (none: catch-all).
 * Mesh-external HTTPS/TLS services also match their host name through SNI. A chain whose match
 * an earlier chain already has is dropped (the first service wins).
 */
function addTcpChain(
  ctx: PushContext,
  svc: Service,
  sp: ServicePort,
  tcp: Map<string, XdsResource>,
  add: (l: XdsResource) => boolean,
): void {
  const address = svc.address && svc.address !== "0.0.0.0" ? svc.address : "";
  const name = outboundTcpListenerName(svc, sp);
  const listenAddr = name.slice(0, name.lastIndexOf("_"));
  const target = tcpTarget(ctx, svc, sp);
  const stat = typeof target === "string" ? target : outboundClusterName(sp.port, "", svc.hostname);
  const tls = (sp.protocol === "HTTPS" || sp.protocol === "TLS") && svc.meshExternal;
  const match: Any = {};
  if (address) match.prefix_ranges = [cidrRange(address)];
  if (tls) match.server_names = [svc.hostname];
  const chain: Any = Object.keys(match).length ? { filter_chain_match: match } : {};
  chain.filters = [tcpProxyFilter(stat, target)];
  let l = tcp.get(name);
  if (!l) {
    l = {
      name,
      address: socketAddress(listenAddr, sp.port),
      bind_to_port: { value: false },
      traffic_direction: "OUTBOUND",
      filter_chains: [],
    };
    if (!add(l)) return;
    tcp.set(name, l);
  }
  const key = JSON.stringify(chain.filter_chain_match ?? {});
  if (l.filter_chains.some((c: Any) => JSON.stringify(c.filter_chain_match ?? {}) === key)) return;
  l.filter_chains.push(chain);
  if (tls && !l.listener_filters) {
    l.listener_filters = [tlsInspectorFilter()];
  }
}

/**
 * A `0.0.0.0_<port>` listener whose chains all match destination CIDRs gets a last catch-all
 * chain to PassthroughCluster (`outboundTrafficPolicy: ALLOW_ANY`) or BlackHoleCluster, so other
 * traffic on the port is not captured by a CIDR service.
 */
function addFallbackChain(ctx: PushContext, l: XdsResource): void {
  if (!l.name.startsWith("0.0.0.0_")) return;
  const chains = l.filter_chains as Any[];
  if (!chains.some((c) => c.filter_chain_match?.prefix_ranges)) return;
  if (chains.some((c) => !c.filter_chain_match)) return;
  const cluster = ctx.meshConfig.outboundTrafficPolicy === "ALLOW_ANY"
    ? PASSTHROUGH_CLUSTER
    : BLACKHOLE_CLUSTER;
  chains.push({ filters: [tcpProxyFilter(cluster, cluster)] });
}

/**
 * Builds a proxy's listeners. Sidecars: `virtualOutbound`, one inbound listener per own instance
 * port (`<ip>_<endpointPort>`), outbound TCP listeners (`<vip>_<port>`, or `0.0.0.0_<port>` for
 * services with CIDR addresses or none, one filter chain per destination CIDR; external TLS
 * services on one address share a listener through SNI filter chains), then
 * outbound HTTP listeners `0.0.0.0_<port>` using RDS route `<port>`. Routers/ingress: gateway
 * listeners. On a name collision the first listener wins.
 */
export function buildListeners(ctx: PushContext, proxy: Proxy): XdsResource[] {
  if (proxy.type !== "sidecar") return gatewayListeners(ctx, proxy);
  const idx = indexOf(ctx);
  const byName = new Map<string, XdsResource>();
  const order: string[] = [];
  const add = (l: XdsResource) => {
    if (byName.has(l.name)) return false;
    byName.set(l.name, l);
    order.push(l.name);
    return true;
  };
  add(virtualListener(ctx, proxy));
  for (const inst of proxyInstances(ctx, proxy)) {
    if (inst.servicePort.protocol === "UDP") continue;
    const svc = idx.serviceByHost.get(inst.hostname);
    if (!svc) continue;
    add(inboundListener(ctx, proxy, svc, inst.servicePort, inst.port, inst));
  }
  const tcp = new Map<string, XdsResource>();
  const seenAddr = new Set<string>();
  for (const svc of idx.services) {
    // Every address of a host (a ServiceEntry with several `addresses` gives one service each);
    // the same host and address from a later registry is a duplicate.
    const addrKey = `${svc.hostname}|${svc.address}`;
    if (seenAddr.has(addrKey)) continue;
    seenAddr.add(addrKey);
    for (const sp of svc.ports) {
      if (sp.protocol === "UDP" || isHttpProtocol(sp.protocol)) continue;
      addTcpChain(ctx, svc, sp, tcp, add);
    }
  }
  for (const l of tcp.values()) addFallbackChain(ctx, l);
  const httpPorts = new Set<number>();
  for (const svc of idx.services) {
    for (const sp of svc.ports) if (isHttpProtocol(sp.protocol)) httpPorts.add(sp.port);
  }
  for (const port of [...httpPorts].sort((a, b) => a - b)) {
    add({
      name: `0.0.0.0_${port}`,
      address: socketAddress("0.0.0.0", port),
      bind_to_port: { value: false },
      traffic_direction: "OUTBOUND",
      filter_chains: [{
        filters: [hcmFilter({
          statPrefix: "http",
          rds: String(port),
          filters: outboundHttpFilters(),
          accessLogFile: ctx.meshConfig.accessLogFile,
        })],
      }],
    });
  }
  // workload certificates where the proxy's agent keeps them (node metadata CERT_DIR)
  return withCertDir(order.map((n) => byName.get(n)!), proxy);
}

/**
 * The proxyless gRPC listener `<host>:<port>` (an `api_listener` whose HCM uses RDS route
 * `<host>:<port>`, filters fault and router); undefined when the name matches no service port.
 * Short hosts are resolved relative to the proxy's domain.
 */
export function buildApiListener(
  ctx: PushContext,
  proxy: Proxy,
  name: string,
): XdsResource | undefined {
  if (!resolveTarget(ctx, proxy, name)) return undefined;
  return {
    name,
    api_listener: {
      api_listener: {
        "@type": EXT_TYPE_URLS.hcm,
        stat_prefix: name,
        rds: { config_source: ADS_SOURCE, route_config_name: name },
        http_filters: [
          httpFilter("envoy.filters.http.fault", { "@type": EXT_TYPE_URLS.fault }),
          routerFilter(),
        ],
      },
    },
  };
}

/**
 * Gateways (router and ingress proxies): listeners from the servers of the Gateways selecting the
 * proxy, and route configurations `<port>` from the VirtualServices bound to those Gateways.
 * @module
 */

import { EXT_TYPE_URLS } from "../protos.ts";
import type { Proxy, PushContext, XdsResource } from "../types.ts";
import { headerMatcherForm, proxyLabels } from "../node.ts";
import { type GatewayEntry, indexOf } from "./context.ts";
import { withServerCredential } from "./credentials.ts";
import { hcmFilter, httpFilter, tcpProxyFilter, tlsInspectorFilter } from "./filters.ts";
import {
  dedupeDomains,
  destinationCluster,
  exportedTo,
  proxyNamespace,
  translateHttpRoutes,
} from "./route_translate.ts";
import { downstreamTlsSocket } from "./security.ts";
import {
  gatewayHostName,
  labelsMatch,
  outboundClusterName,
  resolveGatewayRef,
  socketAddress,
} from "./util.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** Gateways whose `selector` matches the proxy's labels (Ingress-derived ones also match `ingress` proxies). */
export function selectedGateways(ctx: PushContext, proxy: Proxy): GatewayEntry[] {
  const labels = proxyLabels(proxy);
  return indexOf(ctx).gateways.filter((g) =>
    (g.fromIngress && proxy.type === "ingress") ||
    labelsMatch(
      g.spec?.selector && typeof g.spec.selector === "object" ? g.spec.selector : {},
      labels,
    )
  );
}

interface ServerRef {
  gw: GatewayEntry;
  server: Any;
}

function serversByPort(gws: GatewayEntry[]): Map<number, ServerRef[]> {
  const out = new Map<number, ServerRef[]>();
  for (const gw of gws) {
    for (const server of Array.isArray(gw.spec?.servers) ? gw.spec.servers : []) {
      const n = server?.port?.number;
      if (typeof n !== "number") continue;
      const l = out.get(n);
      if (l) l.push({ gw, server });
      else out.set(n, [{ gw, server }]);
    }
  }
  return out;
}

function isHttpServer(server: Any): boolean {
  const p = String(server?.port?.protocol ?? "").toUpperCase();
  if (p === "HTTP" || p === "HTTP2" || p === "GRPC") return true;
  if (p !== "HTTPS") return false;
  const tls = server?.tls;
  // not terminated here: passthrough modes
  return !(tls?.mode === "PASSTHROUGH" || tls?.mode === "AUTO_PASSTHROUGH");
}

/**
 * AUTO_PASSTHROUGH: a filter chain per outbound cluster, matching the SNI the reference system's
 * clients send through such a gateway (`outbound_.<port>_.<subset>_.<host>`) and forwarding the
 * TLS stream unopened to `outbound|<port>|<subset>|<host>` (every service port but UDP, every
 * subset of the host's DestinationRule).
 */
export function autoPassthroughChains(ctx: PushContext): XdsResource[] {
  const idx = indexOf(ctx);
  const chains: XdsResource[] = [];
  for (const svc of idx.services) {
    const dr = idx.destinationRuleByHost.get(svc.hostname)?.spec as Any;
    const subsets = [
      "",
      ...(Array.isArray(dr?.subsets) ? dr.subsets : []).map((x: Any) => x?.name).filter((
        n: unknown,
      ) => typeof n === "string" && n),
    ];
    for (const p of svc.ports) {
      if (p.protocol === "UDP") continue;
      for (const subset of subsets) {
        const cluster = outboundClusterName(p.port, subset, svc.hostname);
        chains.push({
          filter_chain_match: {
            server_names: [`outbound_.${p.port}_.${subset}_.${svc.hostname}`],
          },
          filters: [tcpProxyFilter(cluster, cluster)],
        });
      }
    }
  }
  return chains;
}

/**
 * Whether the servers a VirtualService of `namespace` is bound to admit it: a server host without
 * a namespace part, or with `*`, the VirtualService's namespace, or `.` in the Gateway's own.
 */
function hostsAdmit(refs: { gw: GatewayEntry; server: Any }[], namespace: string): boolean {
  return refs.some(({ gw, server }) =>
    (Array.isArray(server?.hosts) ? server.hosts : []).some((h: unknown) => {
      if (typeof h !== "string") return false;
      const slash = h.indexOf("/");
      if (slash < 0) return true;
      const ns = h.slice(0, slash);
      return ns === "*" || ns === namespace ||
        (ns === "." && gw.config.metadata.namespace === namespace);
    })
  );
}

/** A server whose TLS is passed through to the destination (protocol TLS, or HTTPS/TLS mode PASSTHROUGH). */
function isPassthroughServer(server: Any): boolean {
  const p = String(server?.port?.protocol ?? "").toUpperCase();
  const mode = server?.tls?.mode;
  return (p === "TLS" && (mode === undefined || mode === "PASSTHROUGH")) ||
    (p === "HTTPS" && mode === "PASSTHROUGH");
}

/**
 * Filter chains for the `tls` routes (SNI) of the VirtualServices bound to `gwNames` on `port`:
 * one chain per route match, matching its `sniHosts`, forwarding to its destination (weighted
 * when several). The first route claiming an SNI wins.
 */
export function tlsRouteChains(
  ctx: PushContext,
  gwNames: Set<string>,
  port: number,
): XdsResource[] {
  const chains: XdsResource[] = [];
  const claimed = new Set<string>();
  for (const vs of indexOf(ctx).virtualServices) {
    if (!vs.gateways.some((g) => gwNames.has(g))) continue;
    for (const r of Array.isArray(vs.spec.tls) ? vs.spec.tls : []) {
      const dests = (Array.isArray(r?.route) ? r.route : []).filter((d: Any) => d?.destination);
      if (!dests.length) continue;
      const clusters = dests.map((d: Any) => ({
        name: destinationCluster(ctx, d.destination, vs.namespace, port),
        weight: typeof d.weight === "number" ? d.weight : dests.length === 1 ? 100 : 0,
      })).filter((c: { weight: number }) => c.weight > 0);
      if (!clusters.length) continue;
      const target = clusters.length === 1 ? clusters[0].name : clusters;
      for (const m of Array.isArray(r.match) ? r.match : []) {
        if (typeof m?.port === "number" && m.port !== port) continue;
        if (Array.isArray(m?.gateways) && m.gateways.length) {
          const refs = m.gateways.map((g: string) =>
            resolveGatewayRef(g, vs.namespace, ctx.domain)
          );
          if (!refs.some((g: string) => gwNames.has(g))) continue;
        }
        const names = (Array.isArray(m?.sniHosts) ? m.sniHosts : [])
          .filter((h: unknown) => typeof h === "string" && !claimed.has(h));
        if (!names.length) continue;
        for (const h of names) claimed.add(h);
        const stat = typeof target === "string" ? target : `${vs.config.metadata.name}_tls`;
        chains.push({
          filter_chain_match: { server_names: names },
          filters: [tcpProxyFilter(stat, target)],
        });
      }
    }
  }
  return chains;
}

const HTTP_FILTERS = () => [
  httpFilter("envoy.filters.http.cors", { "@type": EXT_TYPE_URLS.cors }),
  httpFilter("envoy.filters.http.fault", { "@type": EXT_TYPE_URLS.fault }),
];

/** Listeners `0.0.0.0_<port>` for every Gateway server port selected by the proxy. */
export function gatewayListeners(ctx: PushContext, proxy: Proxy): XdsResource[] {
  const gws = selectedGateways(ctx, proxy);
  const byPort = serversByPort(gws);
  const out: XdsResource[] = [];
  for (const port of [...byPort.keys()].sort((a, b) => a - b)) {
    const refs = byPort.get(port)!;
    const name = `0.0.0.0_${port}`;
    const httpRefs = refs.filter((r) => isHttpServer(r.server));
    if (httpRefs.length) {
      const chains: Any[] = [];
      const seen = new Set<string>();
      let sni = false;
      for (const { server } of httpRefs) {
        const tls = withServerCredential(server.tls); // credentialName: the mounted Secret's files
        const terminate = tls && (tls.mode === "SIMPLE" || tls.mode === "MUTUAL" || !tls.mode) &&
          tls.serverCertificate && tls.privateKey;
        const chain: Any = {
          filters: [hcmFilter({
            statPrefix: `gateway_${port}`,
            rds: String(port),
            filters: HTTP_FILTERS(),
            accessLogFile: ctx.meshConfig.accessLogFile,
            useRemoteAddress: true,
          })],
        };
        if (terminate) {
          const hosts: string[] = (Array.isArray(server.hosts) ? server.hosts : []).filter((
            h: unknown,
          ) => typeof h === "string").map(gatewayHostName); // `ns/host`: the namespace is not enforced
          if (hosts.length && !hosts.includes("*")) {
            chain.filter_chain_match = { server_names: hosts };
            sni = true;
          }
          chain.transport_socket = downstreamTlsSocket({
            certChain: tls.serverCertificate,
            privateKey: tls.privateKey,
            caCertificates: tls.caCertificates,
            requireClientCertificate: tls.mode === "MUTUAL",
            sans: Array.isArray(tls.subjectAltNames) ? tls.subjectAltNames : undefined,
            alpn: ["h2", "http/1.1"],
          });
        }
        const key = JSON.stringify(chain.filter_chain_match ?? {});
        if (seen.has(key)) continue;
        seen.add(key);
        chains.push(chain);
      }
      const l: Any = { name, address: socketAddress("0.0.0.0", port), filter_chains: chains };
      if (sni) l.listener_filters = [tlsInspectorFilter()];
      out.push(l);
      continue;
    }
    const gwNames = new Set(refs.map((r) => r.gw.fqdn));
    // TLS passthrough servers: a filter chain per SNI of the VirtualServices' `tls` routes
    const sniChains = [
      ...(refs.some((r) => isPassthroughServer(r.server))
        ? tlsRouteChains(ctx, gwNames, port)
        : []),
      ...(refs.some((r) => r.server?.tls?.mode === "AUTO_PASSTHROUGH")
        ? autoPassthroughChains(ctx)
        : []),
    ];
    if (sniChains.length) {
      out.push({
        name,
        address: socketAddress("0.0.0.0", port),
        listener_filters: [tlsInspectorFilter()],
        filter_chains: sniChains,
      });
      continue;
    }
    // TCP-like servers: forward to the first matching tcp route of a VirtualService bound here.
    let target: string | undefined;
    for (const vs of indexOf(ctx).virtualServices) {
      if (target || !vs.gateways.some((g) => gwNames.has(g))) continue;
      for (const r of Array.isArray(vs.spec.tcp) ? vs.spec.tcp : []) {
        const ms = Array.isArray(r?.match) && r.match.length ? r.match : [{}];
        if (!ms.some((m: Any) => m?.port === undefined || m.port === port)) continue;
        const d = (Array.isArray(r.route) ? r.route : []).find((x: Any) => x?.destination);
        if (d) {
          target = destinationCluster(ctx, d.destination, vs.namespace, port);
          break;
        }
      }
    }
    if (target) {
      out.push({
        name,
        address: socketAddress("0.0.0.0", port),
        filter_chains: [{ filters: [tcpProxyFilter(target, target)] }],
      });
    }
  }
  return out;
}

/**
 * Gateway RouteConfiguration `<port>`: one virtual host `<vs name>:<port>` per VirtualService bound
 * to a selected Gateway with an HTTP server on that port (domains = its hosts and `host:port`), or
 * `blackhole:<port>` answering 404 when there is none; undefined when no selected Gateway has an
 * HTTP server on the port.
 */
export function gatewayRouteConfig(
  ctx: PushContext,
  proxy: Proxy,
  gws: GatewayEntry[],
  port: number,
): XdsResource | undefined {
  const refs = (serversByPort(gws).get(port) ?? []).filter((r) => isHttpServer(r.server));
  if (!refs.length) return undefined; // no HTTP server on this port: no listener refers to it
  const gwNames = new Set(refs.map((r) => r.gw.fqdn));
  const redirect = refs.some((r) => r.server?.tls?.httpsRedirect === true);
  const labels = proxyLabels(proxy);
  const vhosts: XdsResource[] = [];
  if (gwNames.size) {
    const ns = proxyNamespace(proxy);
    for (const vs of indexOf(ctx).virtualServices) {
      const bound = vs.gateways.filter((g) => gwNames.has(g));
      if (!bound.length || !exportedTo(vs, ns)) continue;
      if (!hostsAdmit(refs.filter((r) => bound.includes(r.gw.fqdn)), vs.namespace)) continue;
      const routes = translateHttpRoutes(ctx, [vs], {
        port,
        gateways: new Set(bound),
        labels,
        sidecar: false,
        headerMatcher: headerMatcherForm(proxy.client),
      });
      if (!routes.length) continue;
      const domains: string[] = [];
      for (const h of vs.hosts) {
        domains.push(h);
        if (h !== "*") domains.push(`${h}:${port}`);
      }
      const vh: Any = { name: `${vs.config.metadata.name}:${port}`, domains, routes };
      if (redirect) vh.require_tls = "ALL";
      vhosts.push(vh);
    }
  }
  const deduped = dedupeDomains(vhosts);
  if (!deduped.length) {
    deduped.push({
      name: `blackhole:${port}`,
      domains: ["*"],
      routes: [{ match: { prefix: "/" }, direct_response: { status: 404 } }],
    });
  }
  return { name: String(port), virtual_hosts: deduped, validate_clusters: { value: false } };
}

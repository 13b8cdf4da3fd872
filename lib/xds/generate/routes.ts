/**
 * RDS: sidecar route configurations named `<port>` and proxyless route configurations named
 * `<host>:<port>`; routers' come from ./gateway.ts. The translation of VirtualService routes is in
 * ./route_translate.ts.
 * @module
 */

import type { Service, ServicePort } from "../../model/types.ts";
import type { Proxy, PushContext, XdsResource } from "../types.ts";
import { headerMatcherForm, proxyLabels } from "../node.ts";
import { indexOf } from "./context.ts";
import { gatewayRouteConfig, selectedGateways } from "./gateway.ts";
import {
  dedupeDomains,
  exportedTo,
  hashPolicy,
  proxyNamespace,
  resolveTarget,
  type RouteScope,
  translateHttpRoutes,
} from "./route_translate.ts";
import { isHttpProtocol, outboundClusterName, serviceDomains } from "./util.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/**
 * The default route to `outbound|port||host` (timeout disabled), with the hash policy of the
 * host's DestinationRule when it asks for consistent hashing (given `ctx`).
 */
export function defaultRoute(host: string, port: number, ctx?: PushContext): XdsResource {
  const cluster = outboundClusterName(port, "", host);
  const route: Any = { cluster, timeout: { seconds: 0 } };
  const hp = ctx && hashPolicy(ctx, cluster);
  if (hp) route.hash_policy = hp;
  return { match: { prefix: "/" }, route };
}

/** One virtual host of a sidecar (or proxyless) route config for a service port. */
function serviceVirtualHost(
  ctx: PushContext,
  proxy: Proxy,
  svc: Service,
  port: ServicePort,
  labels: Record<string, string>,
  proxylessAuthority?: string,
): XdsResource {
  const ns = proxyNamespace(proxy);
  const vss = (indexOf(ctx).meshVsByHost.get(svc.hostname) ?? []).filter((vs) =>
    exportedTo(vs, ns)
  );
  const scope: RouteScope = {
    port: port.port,
    gateways: new Set(["mesh"]),
    labels,
    sidecar: true,
    headerMatcher: headerMatcherForm(proxy.client),
  };
  if (proxylessAuthority !== undefined) scope.proxylessAuthority = proxylessAuthority;
  let routes = vss.length ? translateHttpRoutes(ctx, vss, scope, port.protocol === "GRPC") : [];
  if (!routes.length) routes = [defaultRoute(svc.hostname, port.port, ctx)];
  return {
    name: `${svc.hostname}:${port.port}`,
    domains: serviceDomains(svc.hostname, port.port, proxy.domain, svc.address),
    routes,
  };
}

/**
 * Sidecar RouteConfiguration `<port>`: a virtual host per HTTP service port with that number;
 * undefined when no service has an HTTP port with that number (no listener refers to it).
 */
export function sidecarRouteConfig(
  ctx: PushContext,
  proxy: Proxy,
  port: number,
): XdsResource | undefined {
  const idx = indexOf(ctx);
  const labels = proxyLabels(proxy);
  const vhosts: XdsResource[] = [];
  for (const svc of idx.servicesByPort.get(port) ?? []) {
    const sp = svc.ports.find((p) => p.port === port && isHttpProtocol(p.protocol));
    if (sp) vhosts.push(serviceVirtualHost(ctx, proxy, svc, sp, labels));
  }
  if (!vhosts.length) return undefined; // no HTTP service port with this number: no such route
  return {
    name: String(port),
    virtual_hosts: dedupeDomains(vhosts),
    validate_clusters: { value: false },
  };
}

/** Proxyless RouteConfiguration named `<host>:<port>` (one vhost; domains include the name). */
export function apiRouteConfig(
  ctx: PushContext,
  proxy: Proxy,
  name: string,
): XdsResource | undefined {
  const t = resolveTarget(ctx, proxy, name);
  if (!t) return undefined;
  const vh = serviceVirtualHost(ctx, proxy, t.service, t.port, proxyLabels(proxy), name);
  const domains = [name, ...(vh.domains as string[]).filter((d) => d !== name)];
  return { name, virtual_hosts: [{ ...vh, domains }] };
}

/**
 * Builds the requested route configurations. `<port>` names give the sidecar (or, for routers,
 * the gateway) configuration of that port; `<host>:<port>` names give proxyless configurations.
 * Names no listener of the proxy can refer to (a port with no HTTP service, or no HTTP Gateway
 * server for routers; an unknown `<host>:<port>`) are left out, so ADS reports them as absent
 * (SotW) or removed (delta).
 */
export function buildRoutes(ctx: PushContext, proxy: Proxy, names: string[]): XdsResource[] {
  const out: XdsResource[] = [];
  const gws = proxy.type === "sidecar" ? [] : selectedGateways(ctx, proxy);
  for (const name of names) {
    if (/^\d{1,5}$/.test(name)) {
      const port = Number(name);
      const r = proxy.type === "sidecar"
        ? sidecarRouteConfig(ctx, proxy, port)
        : gatewayRouteConfig(ctx, proxy, gws, port);
      if (r) out.push(r);
      continue;
    }
    const api = apiRouteConfig(ctx, proxy, name);
    if (api) out.push(api);
  }
  return out;
}

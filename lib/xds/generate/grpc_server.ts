/**
 * Proxyless gRPC servers (gRFC A36, with A29 mutual TLS and A41 RBAC): the server listener a gRPC
 * xDS server asks for (`grpc/server?xds.resource.listening_address=<ip>:<port>`). Its TLS context
 * (certificate provider instance `default`, no certificate files) comes from ./grpc_tls.ts.
 *
 * - Server listener: the address of the name, one filter chain (no `filter_chain_match`: gRPC
 *   servers match only `raw_buffer`) holding an HTTP connection manager with the route
 *   configuration inline: a virtual host per service served on that address and port (its
 *   domains) plus a `*` catch-all, every route a `non_forwarding_action`; the RBAC filter of the
 *   services (ServiceRole/ServiceRoleBinding) before the router, which is last.
 * - Mutual TLS: when a service served on the address is STRICT ({@link mtlsModeOf}: mesh
 *   `authPolicy: MUTUAL_TLS`, a Policy asking for peer mTLS, the `auth.mesh.io/<port>` attribute),
 *   the chain gets a DownstreamTlsContext using provider `default` for its certificate and to
 *   validate the client's, with `require_client_certificate`. PERMISSIVE serves plaintext: a gRPC
 *   server cannot tell TLS from plaintext by filter chain (A36 allows only `raw_buffer`), so the
 *   one chain it can have stays plaintext and existing clients keep working; proxyless clients
 *   use plaintext for PERMISSIVE destinations (see docs/proxyless.md).
 * @module
 */

import type { Service, ServiceInstance } from "../../model/types.ts";
import { GRPC_SERVER_LISTENER_PREFIX } from "../grpc_bootstrap.ts";
import type { Proxy, PushContext, XdsResource } from "../types.ts";
import { indexOf } from "./context.ts";
import { proxylessDownstreamTls } from "./grpc_tls.ts";
import { hcmFilter } from "./filters.ts";
import { rbacConfig } from "./rbac.ts";
import { authzHttpFilters } from "./authz_policy.ts";
import { headerMatcherForm } from "../node.ts";
import { dedupeDomains } from "./route_translate.ts";
import { mtlsModeOf } from "./security.ts";
import { serviceDomains, socketAddress } from "./util.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** True when `name` is a server listener name (it may still be malformed). */
export function isServerListenerName(name: string): boolean {
  return name.startsWith(GRPC_SERVER_LISTENER_PREFIX);
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/**
 * The listening address of a server listener name: `<ipv4>:<port>` or `[<ipv6>]:<port>`;
 * undefined when the name is not one or the address is malformed (port 1–65535, a literal IP).
 */
export function parseListeningAddress(name: string): { host: string; port: number } | undefined {
  if (!isServerListenerName(name)) return undefined;
  const addr = name.slice(GRPC_SERVER_LISTENER_PREFIX.length);
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(addr);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  if (m[2] !== undefined) {
    const v4 = IPV4.exec(m[2]);
    if (!v4 || v4.slice(1).some((o) => Number(o) > 255)) return undefined;
    return { host: m[2], port };
  }
  const v6 = m[1];
  if (!v6.includes(":") || (v6.match(/::/g)?.length ?? 0) > 1) return undefined;
  return { host: v6, port };
}

const WILDCARD = new Set(["0.0.0.0", "::"]);

/**
 * The instances a server on `host:port` serves: those whose address is `host` (the proxy's own IP
 * for a wildcard address) and whose endpoint port is `port`, with a known service.
 */
export function serverInstances(
  ctx: PushContext,
  proxy: Proxy,
  host: string,
  port: number,
): { instance: ServiceInstance; service: Service }[] {
  const idx = indexOf(ctx);
  const ip = WILDCARD.has(host) ? proxy.ip : host;
  const out: { instance: ServiceInstance; service: Service }[] = [];
  const seen = new Set<string>();
  for (const i of idx.instancesByIp.get(ip) ?? []) {
    if (i.port !== port || i.servicePort.protocol === "UDP") continue;
    const service = idx.serviceByHost.get(i.hostname);
    const k = `${i.hostname}|${i.servicePort.port}`;
    if (!service || seen.has(k)) continue;
    seen.add(k);
    out.push({ instance: i, service });
  }
  return out;
}

/**
 * The RBAC filter config of the services a server listener serves (their ServiceRole policies
 * merged, first name wins), undefined when no role names any of them.
 *
 * AuthorizationPolicies of the workload join this ALLOW filter, and add a DENY filter before it
 * (authz_policy.ts `authzHttpFilters`; paths are `/pkg.Service/Method`).
 */
export function serverRbac(
  ctx: PushContext,
  services: readonly Service[],
): XdsResource | undefined {
  let out: XdsResource | undefined;
  for (const svc of services) {
    const r = rbacConfig(ctx, svc);
    if (!r) continue;
    if (!out) out = { ...r, rules: { ...r.rules, policies: { ...r.rules.policies } } };
    else {
      for (const [k, v] of Object.entries(r.rules.policies as Record<string, unknown>)) {
        out.rules.policies[k] ??= v;
      }
    }
  }
  return out;
}

/**
 * The server listener `grpc/server?xds.resource.listening_address=<ip>:<port>` of a proxyless
 * gRPC server (see the module doc); undefined when the name is malformed or no service instance
 * has that address and port (the resource does not exist: no NACK, nothing to serve).
 */
export function buildServerListener(
  ctx: PushContext,
  proxy: Proxy,
  name: string,
): XdsResource | undefined {
  const addr = parseListeningAddress(name);
  if (!addr) return undefined;
  const served = serverInstances(ctx, proxy, addr.host, addr.port);
  if (!served.length) return undefined;
  const route = { match: { prefix: "/" }, non_forwarding_action: {} };
  const vhosts = dedupeDomains([
    ...served.map(({ service, instance }) => ({
      name: `inbound|grpc|${instance.servicePort.port}|${service.hostname}`,
      domains: serviceDomains(service.hostname, instance.servicePort.port, proxy.domain, ""),
      routes: [route],
    })),
    { name: `inbound|grpc|${addr.port}`, domains: ["*"], routes: [route] },
  ]);
  const services = served.map((s) => s.service);
  const rbac = serverRbac(ctx, services);
  const strict = served.some(({ service, instance }) =>
    mtlsModeOf(ctx, service, instance.servicePort, instance) === "STRICT"
  );
  const authz = authzHttpFilters(
    ctx,
    served[0].service,
    served[0].instance,
    rbac,
    true,
    headerMatcherForm(proxy.client) === "legacy",
  );
  const chain: Any = {
    name: `inbound|${addr.port}`,
    filters: [hcmFilter({
      // The stat prefix tells mTLS and plaintext apart on purpose: grpc-js-xds 1.14 compares a
      // new server Listener with the one in force filter by filter before it looks at the
      // transport socket, and that last check is inverted (plaintext → TLS throws, TLS →
      // plaintext is taken as "unchanged"); a different HCM makes it apply either switch.
      statPrefix: strict ? `inbound_mtls_${addr.port}` : `inbound_${addr.port}`,
      routeConfig: { name: `inbound|${addr.port}`, virtual_hosts: vhosts },
      filters: authz,
    })],
  };
  if (strict) chain.transport_socket = proxylessDownstreamTls();
  return {
    name,
    address: socketAddress(addr.host, addr.port),
    filter_chains: [chain],
    traffic_direction: "INBOUND",
  };
}

/**
 * VirtualService HTTP routes → Envoy routes (matches, actions, retries, faults, CORS, hash
 * policies, delegates), and the look-ups the route, listener and gateway builders share:
 * destination clusters, proxyless targets, `exportTo` visibility, domain de-duplication.
 * @module
 */

import type { Service, ServicePort } from "../../model/types.ts";
import { EXT_TYPE_URLS } from "../protos.ts";
import type { Proxy, PushContext, XdsResource } from "../types.ts";
import { headerMatcherForm } from "../node.ts";
import { indexOf, type VsEntry } from "./context.ts";
import { policyForPort } from "./clusters.ts";
import {
  durationOf,
  findPort,
  isHttpProtocol,
  labelsMatch,
  outboundClusterName,
  parseClusterName,
  resolveGatewayRef,
  resolveShortName,
  stringMatcher,
} from "./util.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** Where routes are being generated: which port, which gateways, which workload. */
export interface RouteScope {
  /** The listener/virtual-host port the routes serve. */
  port: number;
  /** Gateway names in force: `mesh` for sidecars, expanded Gateway names for routers. */
  gateways: Set<string>;
  /** Labels of the proxy (for `sourceLabels`). */
  labels: Record<string, string>;
  /** True for sidecars: a match `port` is compared with the service port. */
  sidecar: boolean;
  /** How header matchers are written for this client ({@link headerMatcherForm}). */
  headerMatcher: HeaderMatcherForm;
  /**
   * Proxyless route configurations (`<host>:<port>`): the `:authority` every call carries (the
   * requested name). gRPC clients do not expose pseudo-headers to route matching, so `authority`
   * and `method` matches are decided here instead (see {@link routeMatch}).
   */
  proxylessAuthority?: string;
}

/** True when an Istio StringMatch (`exact`, `prefix`, `suffix`, `regex`: RE2, whole value) matches. */
export function stringMatches(sm: unknown, value: string): boolean {
  const s = stringMatcher(sm);
  if (!s) return true;
  if (typeof s.exact === "string") return value === s.exact;
  if (typeof s.prefix === "string") return value.startsWith(s.prefix);
  if (typeof s.suffix === "string") return value.endsWith(s.suffix);
  const re = (s.safe_regex as { regex?: string } | undefined)?.regex;
  if (typeof re !== "string") return false;
  try {
    return new RegExp(`^(?:${re})$`).test(value);
  } catch {
    return false; // not a regex JavaScript understands: the match never holds
  }
}

/** See {@link headerMatcherForm}. */
export type HeaderMatcherForm = ReturnType<typeof headerMatcherForm>;

const LEGACY_FIELDS: Record<string, string> = {
  exact: "exact_match",
  prefix: "prefix_match",
  suffix: "suffix_match",
  safe_regex: "safe_regex_match",
};

/**
 * An Envoy HeaderMatcher for `name` from an Istio StringMatch, in the client's form: `string_match`
 * or the older oneof fields (`exact_match`, `prefix_match`, `suffix_match`, `safe_regex_match`);
 * undefined when the match is empty.
 */
export function headerMatcher(
  name: string,
  sm: unknown,
  form: HeaderMatcherForm,
): XdsResource | undefined {
  const s = stringMatcher(sm);
  if (!s) return undefined;
  // An empty prefix or suffix holds for every value: Envoy's rules refuse it (min_len 1, in
  // StringMatcher and in the older fields alike), so it is written as "the header is present".
  if (s.prefix === "" || s.suffix === "") return { name, present_match: true };
  if (form === "string_match") return { name, string_match: s };
  const [kind, value] = Object.entries(s)[0];
  return { name, [LEGACY_FIELDS[kind]]: value };
}

const GRPC_CODES: Record<string, number> = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
};

/** Percent (0–100, fractional allowed) → FractionalPercent. */
export function fractionalPercent(p: number): Record<string, unknown> {
  if (Number.isInteger(p)) return { numerator: p, denominator: "HUNDRED" };
  return { numerator: Math.round(p * 10000), denominator: "MILLION" };
}

function percentOf(f: Any): number {
  if (typeof f?.percentage?.value === "number") return f.percentage.value;
  if (typeof f?.percent === "number") return f.percent;
  return 100;
}

/** Istio HTTPFaultInjection → Envoy HTTPFault (as typed_per_filter_config); undefined if empty. */
export function faultConfig(fault: Any): XdsResource | undefined {
  if (!fault || typeof fault !== "object") return undefined;
  const out: Any = { "@type": EXT_TYPE_URLS.fault };
  const d = fault.delay;
  if (d && typeof d === "object" && d.fixedDelay) {
    out.delay = {
      fixed_delay: durationOf(d.fixedDelay),
      percentage: fractionalPercent(percentOf(d)),
    };
  }
  const a = fault.abort;
  if (a && typeof a === "object") {
    const abort: Any = { percentage: fractionalPercent(percentOf(a)) };
    if (typeof a.httpStatus === "number") abort.http_status = a.httpStatus;
    else if (typeof a.grpcStatus === "number") abort.grpc_status = a.grpcStatus;
    else if (typeof a.grpcStatus === "string" && a.grpcStatus.toUpperCase() in GRPC_CODES) {
      abort.grpc_status = GRPC_CODES[a.grpcStatus.toUpperCase()];
    }
    if (abort.http_status !== undefined || abort.grpc_status !== undefined) out.abort = abort;
  }
  return out.delay || out.abort ? out : undefined;
}

/** Istio CorsPolicy → Envoy CorsPolicy (typed_per_filter_config); undefined if empty. */
export function corsConfig(c: Any): XdsResource | undefined {
  if (!c || typeof c !== "object") return undefined;
  const out: Any = { "@type": EXT_TYPE_URLS.corsPolicy };
  const list = (v: unknown) => Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
  // Istio's "*" (any origin) stays `{exact: "*"}`: Envoy's CORS filter allows an origin when a
  // matcher matches the origin *or the literal "*"* (CorsFilter::isOriginAllowed), so this is
  // Envoy's own "any origin" form. (`{prefix: ""}` breaks PGV's min_len 1 and gets the whole
  // RouteConfiguration rejected.)
  const origins: Any[] = list(c.allowOrigin).map((o: string) => ({ exact: o }));
  // today's `allowOrigins`: StringMatch values (exact, prefix, regex)
  for (const sm of Array.isArray(c.allowOrigins) ? c.allowOrigins : []) {
    const m = stringMatcher(sm);
    if (m && m.prefix !== "") origins.push(m);
  }
  if (origins.length) out.allow_origin_string_match = origins;
  if (list(c.allowMethods).length) out.allow_methods = list(c.allowMethods).join(",");
  if (list(c.allowHeaders).length) out.allow_headers = list(c.allowHeaders).join(",");
  if (list(c.exposeHeaders).length) out.expose_headers = list(c.exposeHeaders).join(",");
  if (c.maxAge) out.max_age = String(Math.round(durationOf(c.maxAge)!.seconds));
  if (typeof c.allowCredentials === "boolean") {
    out.allow_credentials = { value: c.allowCredentials };
  }
  return out;
}

/**
 * Istio HTTPMatchRequest → Envoy RouteMatch; undefined when it cannot apply in `scope`.
 *
 * In proxyless route configurations (`scope.proxylessAuthority`) `authority` and `method` are
 * decided at generation: gRPC clients (grpc-js-xds, C-core) match headers against call metadata,
 * where `:authority` and `:method` never appear, so such a matcher would never match there. Every
 * proxyless call is a POST to the requested `<host>:<port>`: a match that holds for those values is
 * dropped (always true), a route whose match cannot hold is left out.
 */
export function routeMatch(m: Any, scope: RouteScope): XdsResource | undefined {
  if (!m || typeof m !== "object") return { prefix: "/" };
  if (typeof m.port === "number" && m.port !== scope.port) return undefined;
  if (Array.isArray(m.gateways) && m.gateways.length) {
    if (!m.gateways.some((g: string) => scope.gateways.has(g))) return undefined;
  }
  if (m.sourceLabels && !labelsMatch(m.sourceLabels, scope.labels)) return undefined;
  const out: Any = {};
  const uri = m.uri;
  if (typeof uri?.exact === "string") out.path = uri.exact;
  else if (typeof uri?.prefix === "string") out.prefix = uri.prefix;
  // an empty regex holds only for an empty path (Envoy refuses an empty `regex`): exact ""
  else if (uri?.regex === "") out.path = "";
  else if (typeof uri?.regex === "string") out.safe_regex = { regex: uri.regex };
  else out.prefix = "/";
  const headers: Any[] = [];
  const addHeader = (name: string, sm: unknown) => {
    const h = headerMatcher(name, sm, scope.headerMatcher);
    if (h) headers.push(h);
  };
  if (m.headers && typeof m.headers === "object") {
    for (const [name, sm] of Object.entries(m.headers)) addHeader(name.toLowerCase(), sm);
  }
  if (scope.proxylessAuthority !== undefined) {
    if (m.authority && !stringMatches(m.authority, scope.proxylessAuthority)) return undefined;
    if (m.method && !stringMatches(m.method, "POST")) return undefined;
  } else {
    if (m.authority) addHeader(":authority", m.authority);
    if (m.method) addHeader(":method", m.method);
  }
  if (m.scheme) addHeader(":scheme", m.scheme);
  if (headers.length) out.headers = headers;
  return out;
}

/** Resolves the destination of a DestinationWeight into an outbound cluster name. */
export function destinationCluster(
  ctx: PushContext,
  dest: Any,
  vsNamespace: string,
  defaultPort: number,
): string {
  const host = resolveShortName(String(dest?.host ?? ""), vsNamespace, ctx.domain);
  const svc = indexOf(ctx).serviceByHost.get(host);
  let port: number | undefined;
  if (typeof dest?.port?.number === "number") port = dest.port.number;
  else if (typeof dest?.port?.name === "string" && svc) port = findPort(svc.ports, dest.port)?.port;
  if (port === undefined && svc) {
    if (svc.ports.length === 1) port = svc.ports[0].port;
    else if (svc.ports.some((p) => p.port === defaultPort)) port = defaultPort;
    else port = svc.ports.find((p) => isHttpProtocol(p.protocol))?.port;
  }
  return outboundClusterName(
    port ?? defaultPort,
    typeof dest?.subset === "string" ? dest.subset : "",
    host,
  );
}

/**
 * Route hash policy for a cluster whose DestinationRule (subset, port level or top level) asks
 * for consistent hashing on a header, a cookie or the source IP.
 */
export function hashPolicy(ctx: PushContext, clusterName: string): XdsResource[] | undefined {
  const key = parseClusterName(clusterName);
  if (!key) return undefined;
  const dr = indexOf(ctx).destinationRuleByHost.get(key.host)?.spec as Any;
  if (!dr) return undefined;
  const svc = indexOf(ctx).serviceByHost.get(key.host);
  const port = svc?.ports.find((p) => p.port === key.port);
  const subset = key.subset && Array.isArray(dr.subsets)
    ? dr.subsets.find((x: Any) => x?.name === key.subset)
    : undefined;
  let ch: Any;
  for (const pol of [dr.trafficPolicy, subset?.trafficPolicy]) {
    const p = port ? policyForPort(pol, port) : pol;
    if (p?.loadBalancer?.consistentHash) ch = p.loadBalancer.consistentHash;
    else if (p?.loadBalancer?.simple) ch = undefined;
  }
  if (!ch) return undefined;
  // "" is proto3's "not set" (and Envoy refuses an empty name): such a form hashes nothing
  const named = (v: unknown): v is string => typeof v === "string" && v !== "";
  if (named(ch.httpHeader)) return [{ header: { header_name: ch.httpHeader } }];
  if (named(ch.httpHeaderName)) {
    return [{ header: { header_name: ch.httpHeaderName } }];
  }
  if (ch.httpCookie && named(ch.httpCookie.name)) {
    const c: Any = { name: ch.httpCookie.name };
    const ttl = durationOf(ch.httpCookie.ttl);
    if (ttl) c.ttl = ttl;
    if (typeof ch.httpCookie.path === "string") c.path = ch.httpCookie.path;
    return [{ cookie: c }];
  }
  if (ch.useSourceIp === true) return [{ connection_properties: { source_ip: true } }];
  if (named(ch.httpQueryParameterName)) {
    return [{ query_parameter: { name: ch.httpQueryParameterName } }];
  }
  return undefined;
}

/**
 * Retry conditions of a VirtualService `retries` without `retryOn`. HTTP: Istio 1.0's
 * `5xx,connect-failure,refused-stream` (it used the same for gRPC ports). gRPC ports add the gRPC
 * statuses later Istio versions retry on (`unavailable,cancelled,resource-exhausted`): gRPC errors
 * arrive with HTTP 200, so `5xx` alone never fires for them. Never `deadline-exceeded` (the
 * caller's deadline has passed; a retry only adds load) nor `internal` (not known to be safe).
 */
export const RETRY_ON_HTTP = "5xx,connect-failure,refused-stream";
/** See {@link RETRY_ON_HTTP}. */
export const RETRY_ON_GRPC = `${RETRY_ON_HTTP},unavailable,cancelled,resource-exhausted`;

/**
 * Istio `headers` (`request`/`response`: `set`, `add`, `remove`) → Envoy header options
 * (`request_headers_to_add`, `request_headers_to_remove`, `response_...`): `set` overwrites,
 * `add` appends. For a route, a weighted cluster, or (merged) a route's single destination.
 */
export function headerOperations(h: Any): XdsResource {
  const out: Any = {};
  if (!h || typeof h !== "object") return out;
  for (const side of ["request", "response"] as const) {
    const ops = h[side];
    if (!ops || typeof ops !== "object") continue;
    const add: Any[] = [];
    for (
      const [field, action] of [
        ["set", "OVERWRITE_IF_EXISTS_OR_ADD"],
        ["add", "APPEND_IF_EXISTS_OR_ADD"],
      ] as const
    ) {
      const m = ops[field];
      if (!m || typeof m !== "object") continue;
      for (const [key, value] of Object.entries(m)) {
        if (typeof value === "string") add.push({ header: { key, value }, append_action: action });
      }
    }
    if (add.length) out[`${side}_headers_to_add`] = add;
    const remove = Array.isArray(ops.remove)
      ? ops.remove.filter((x: unknown) => typeof x === "string")
      : [];
    if (remove.length) out[`${side}_headers_to_remove`] = remove;
  }
  return out;
}

/** Adds header options `extra` to `target`, appending to lists already there. */
function mergeHeaderOps(target: Any, extra: Any): void {
  for (const [k, v] of Object.entries(extra)) {
    target[k] = [...(target[k] ?? []), ...(v as unknown[])];
  }
}

/** Route action (or redirect) plus per-route extras for one Istio HTTPRoute. */
function routeBody(ctx: PushContext, vs: VsEntry, r: Any, scope: RouteScope, grpc: boolean): Any {
  const body: Any = {};
  if (r.redirect && typeof r.redirect === "object") {
    const red: Any = {};
    if (typeof r.redirect.uri === "string") red.path_redirect = r.redirect.uri;
    if (typeof r.redirect.authority === "string") red.host_redirect = r.redirect.authority;
    body.redirect = red;
  } else {
    const dests = (Array.isArray(r.route) ? r.route : []).filter((d: Any) => d?.destination);
    const action: Any = {};
    let destHeaders: Any = {};
    if (dests.length === 1) {
      action.cluster = destinationCluster(ctx, dests[0].destination, vs.namespace, scope.port);
      destHeaders = headerOperations(dests[0].headers);
    } else if (dests.length > 1) {
      const clusters = dests.map((d: Any) => ({
        name: destinationCluster(ctx, d.destination, vs.namespace, scope.port),
        weight: { value: typeof d.weight === "number" ? d.weight : 0 },
        ...headerOperations(d.headers),
      })).filter((c: Any) => c.weight.value > 0);
      if (clusters.length === 1) {
        const { name, weight: _, ...ops } = clusters[0];
        action.cluster = name;
        destHeaders = ops;
      } else if (clusters.length) action.weighted_clusters = { clusters };
    }
    if (!action.cluster && !action.weighted_clusters) {
      return { direct_response: { status: 503 } };
    }
    const hp = hashPolicy(ctx, action.cluster ?? action.weighted_clusters.clusters[0].name);
    if (hp) action.hash_policy = hp;
    // No timeout given: disabled (0s), as later Istio versions do; Envoy's own default (15 s)
    // would cut long-running requests and gRPC streams.
    action.timeout = durationOf(r.timeout) ?? { seconds: 0 };
    if (r.retries && typeof r.retries.attempts === "number") {
      const rp: Any = {
        retry_on: typeof r.retries.retryOn === "string"
          ? r.retries.retryOn
          : grpc
          ? RETRY_ON_GRPC
          : RETRY_ON_HTTP,
        num_retries: { value: r.retries.attempts },
      };
      const pt = durationOf(r.retries.perTryTimeout);
      if (pt) rp.per_try_timeout = pt;
      action.retry_policy = rp;
    }
    if (r.rewrite && typeof r.rewrite === "object") {
      if (typeof r.rewrite.uri === "string") action.prefix_rewrite = r.rewrite.uri;
      if (typeof r.rewrite.authority === "string") {
        action.host_rewrite_literal = r.rewrite.authority;
      }
    }
    if (r.mirror && typeof r.mirror === "object") {
      const mirror: Any = { cluster: destinationCluster(ctx, r.mirror, vs.namespace, scope.port) };
      // mirrorPercentage: the share of requests mirrored (all when unset)
      if (typeof r.mirrorPercentage?.value === "number") {
        mirror.runtime_fraction = { default_value: fractionalPercent(r.mirrorPercentage.value) };
      }
      action.request_mirror_policies = [mirror];
    }
    if (r.websocketUpgrade === true) action.upgrade_configs = [{ upgrade_type: "websocket" }];
    body.route = action;
    mergeHeaderOps(body, destHeaders);
  }
  if (typeof r.name === "string" && r.name) body.name = r.name;
  const tpfc: Any = {};
  const f = faultConfig(r.fault);
  if (f) tpfc["envoy.filters.http.fault"] = f;
  const c = corsConfig(r.corsPolicy);
  // Wrapped in an optional FilterConfig: proxyless gRPC clients have no CORS filter and would
  // otherwise reject the whole RouteConfiguration.
  if (c) {
    tpfc["envoy.filters.http.cors"] = {
      "@type": EXT_TYPE_URLS.routeFilterConfig,
      config: c,
      is_optional: true,
    };
  }
  if (Object.keys(tpfc).length) body.typed_per_filter_config = tpfc;
  if (r.appendHeaders && typeof r.appendHeaders === "object") {
    const hs = Object.entries(r.appendHeaders).filter(([, v]) => typeof v === "string");
    if (hs.length) {
      body.request_headers_to_add = [
        ...hs.map(([key, value]) => ({ header: { key, value } })),
        ...(body.request_headers_to_add ?? []),
      ];
    }
  }
  mergeHeaderOps(body, headerOperations(r.headers));
  return body;
}

/**
 * A parent match narrowed by a delegate's match: the delegate's `uri`, `scheme`, `method`,
 * `authority`, `port` when it sets them, else the parent's; headers and source labels of both.
 */
export function mergeMatch(parent: Any, child: Any): Any {
  if (!parent) return child;
  if (!child) return parent;
  const out: Any = { ...parent };
  for (const k of ["uri", "scheme", "method", "authority", "port", "name"]) {
    if (child[k] !== undefined) out[k] = child[k];
  }
  if (parent.headers || child.headers) out.headers = { ...parent.headers, ...child.headers };
  if (parent.sourceLabels || child.sourceLabels) {
    out.sourceLabels = { ...parent.sourceLabels, ...child.sourceLabels };
  }
  return out;
}

/**
 * The routes of a `delegate`: the delegate VirtualService's http routes (one level, as the
 * reference system), each match narrowed from the parent route's; destinations resolve in the
 * delegate's namespace. A delegate that is missing (or itself delegates) gives 503.
 */
function delegateRoutes(
  ctx: PushContext,
  parent: VsEntry,
  parentMatches: Any[],
  ref: Any,
  scope: RouteScope,
  grpc: boolean,
): XdsResource[] {
  const ns = typeof ref.namespace === "string" && ref.namespace ? ref.namespace : parent.namespace;
  const child = indexOf(ctx).virtualServices.find((v) =>
    v.config.metadata.name === ref.name && v.namespace === ns
  );
  const out: XdsResource[] = [];
  for (const r of Array.isArray(child?.spec.http) ? child!.spec.http : []) {
    if (!r || typeof r !== "object" || r.delegate) continue;
    const childMatches = Array.isArray(r.match) && r.match.length ? r.match : [undefined];
    const body = routeBody(ctx, child!, r, scope, grpc);
    for (const pm of parentMatches) {
      for (const cm of childMatches) {
        const match = routeMatch(mergeMatch(pm, cm), scope);
        if (match) out.push({ match, ...body });
      }
    }
  }
  if (out.length) return out;
  // nothing to delegate to: the parent's matches answer 503, as a route without destinations
  return parentMatches.map((m) => routeMatch(m, scope)).filter(Boolean).map((match) => ({
    match,
    direct_response: { status: 503 },
  }));
}

/**
 * Translates the `http` routes of VirtualServices into Envoy routes for `scope`. One Envoy route
 * per match (a route without matches becomes a catch-all `prefix: /`). Routes whose matches all
 * exclude the scope (port, gateways, sourceLabels) are skipped.
 */
export function translateHttpRoutes(
  ctx: PushContext,
  vss: VsEntry[],
  scope: RouteScope,
  grpc = false,
): XdsResource[] {
  const out: XdsResource[] = [];
  for (const vs of vss) {
    const http = Array.isArray(vs.spec.http) ? vs.spec.http : [];
    for (const r of http) {
      if (!r || typeof r !== "object") continue;
      const matches = Array.isArray(r.match) && r.match.length ? r.match : [undefined];
      const resolved = matches.map((m: Any) =>
        Array.isArray(m?.gateways)
          ? {
            ...m,
            gateways: m.gateways.map((g: string) =>
              resolveGatewayRef(String(g), vs.namespace, ctx.domain)
            ),
          }
          : m
      );
      const pairs = resolved.map((m: Any) => [m, routeMatch(m, scope)] as const)
        .filter(([, em]: readonly [Any, Any]) => em);
      if (!pairs.length) continue;
      if (r.delegate && typeof r.delegate === "object") {
        out.push(...delegateRoutes(ctx, vs, resolved, r.delegate, scope, grpc));
        continue;
      }
      const body = routeBody(ctx, vs, r, scope, grpc);
      for (const [m, match] of pairs) {
        // a match's `name` joins the route's (`<route>.<match>`), as the reference system names them
        const name = typeof m?.name === "string" && m.name
          ? (body.name ? `${body.name}.${m.name}` : m.name)
          : body.name;
        out.push({ match, ...body, ...(name ? { name } : {}) });
      }
    }
  }
  return out;
}

/** The namespace of a proxy: the first label of its domain (`default.svc.cluster.local`). */
export function proxyNamespace(proxy: Proxy): string {
  return proxy.domain ? proxy.domain.split(".")[0] : "";
}

/**
 * Whether a VirtualService is visible to proxies of `namespace` under its `exportTo`: unset or
 * `*`: everywhere; `.`: its own namespace; else the namespaces named. A proxy of unknown
 * namespace sees what is exported anywhere.
 */
export function exportedTo(vs: VsEntry, namespace: string): boolean {
  const list = Array.isArray(vs.spec.exportTo) ? vs.spec.exportTo : [];
  if (!list.length || list.includes("*") || !namespace) return true;
  return list.some((x: unknown) => x === namespace || (x === "." && vs.namespace === namespace));
}

/** Removes domains already used by an earlier virtual host; drops hosts left without domains. */
export function dedupeDomains(vhosts: XdsResource[]): XdsResource[] {
  const used = new Set<string>();
  const out: XdsResource[] = [];
  for (const vh of vhosts) {
    const domains = (vh.domains as string[]).filter((d) => !used.has(d));
    for (const d of domains) used.add(d);
    if (domains.length) out.push({ ...vh, domains });
  }
  return out;
}

/**
 * Resolves a proxyless target `<host>:<port>` (FQDN, or a short form relative to the proxy's
 * domain: `hello:80`, `hello.default:80`) to a service port; undefined when unknown.
 */
export function resolveTarget(
  ctx: PushContext,
  proxy: Proxy,
  name: string,
): { service: Service; port: ServicePort } | undefined {
  const m = /^(.+):(\d{1,5})$/.exec(name);
  if (!m) return undefined;
  const host = m[1];
  const portNum = Number(m[2]);
  const idx = indexOf(ctx);
  const candidates = [host];
  const dl = proxy.domain ? proxy.domain.split(".") : [];
  for (let i = 0; i < dl.length; i++) candidates.push(`${host}.${dl.slice(i).join(".")}`);
  if (!host.includes(".")) candidates.push(`${host}.default.svc.${ctx.domain}`);
  for (const c of candidates) {
    const svc = idx.serviceByHost.get(c);
    const port = svc?.ports.find((p) => p.port === portNum);
    if (svc && port) return { service: svc, port };
  }
  return undefined;
}

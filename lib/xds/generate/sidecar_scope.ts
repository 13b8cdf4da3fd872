/**
 * Sidecar scoping: what a sidecar (or proxyless client) sees of the mesh, as Istio decides it.
 *
 * - **Which Sidecar applies** ({@link selectSidecar}): in the proxy's namespace, a Sidecar whose
 *   `workloadSelector.labels` select the proxy's labels (the oldest when several do), else the
 *   namespace's Sidecar without a selector (the oldest), else the one without a selector in the
 *   root namespace `mesh-system` (mesh-wide default); none: the whole mesh.
 * - **What it lets through** ({@link scopedContext}): a service is visible when an egress
 *   listener's `hosts` entry `<namespace>/<dnsName>` selects it — namespace `*` (any), `.` (the
 *   Sidecar's namespace; for the root default, the proxy's), `~` (none) or a name, against the
 *   namespace the service is defined in; dnsName `*`, `*.<suffix>` or the host — on the
 *   listener's port (every port for the listener without one). A Sidecar without egress sees
 *   everything. VirtualServices are visible the same way (by their namespace and hosts) and pull
 *   in the services their routes go to. `outboundTrafficPolicy.mode` replaces the mesh's.
 * - **exportTo and workloadSelector**: a ServiceEntry's services and a DestinationRule are hidden
 *   from namespaces they are not exported to (`.`: their own; `~`: none); a DestinationRule with
 *   a `workloadSelector` is hidden from proxies it does not select.
 *
 * The result is a {@link PushContext} restricted to what the proxy sees, built once per distinct
 * scope (Sidecar × namespace × hidden DestinationRules) and shared by every proxy with that
 * scope: {@link scopeFor} costs a few map look-ups per proxy, and proxies with no Sidecar and
 * nothing hidden share the context itself.
 * @module
 */

import type { ConfigObject, Service, ServiceInstance } from "../../model/types.ts";
import { groupBy } from "../../model/object.ts";
import { proxyLabels } from "../node.ts";
import type { Proxy, PushContext, XdsMeshConfig, XdsResource } from "../types.ts";
import { configOrder } from "./context.ts";
import { ROOT_NAMESPACE } from "./peer_authn.ts";
import { proxyNamespace } from "./route_translate.ts";
import { inboundClusterName, resolveShortName } from "./util.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** What one proxy sees: the restricted context and the key shared by proxies that see the same. */
export interface ProxyScope {
  /**
   * Structural key: proxies with equal keys see the same context. `""`: no Sidecar applies and
   * nothing is hidden (the context itself).
   */
  readonly key: string;
  /** The context restricted to what the proxy sees (the full context when `key` is `""`). */
  readonly ctx: PushContext;
  /** The Sidecar that applies, if any. */
  readonly sidecar?: ConfigObject;
}

/** One egress listener, resolved for a namespace. */
interface EgressRule {
  /** Listener port; undefined: every port. */
  port?: number;
  hosts: { ns: string; dns: string }[];
}

const labelsOf = (o: ConfigObject): Record<string, string> | undefined => {
  const l = (o.spec as Any)?.workloadSelector?.labels;
  return l && typeof l === "object" && Object.keys(l).length ? l : undefined;
};

function selects(sel: Record<string, string>, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(sel)) if (labels[k] !== v) return false;
  return true;
}

/** Sidecars of one namespace: with a selector (oldest first) and the default (oldest). */
interface NamespaceSidecars {
  selected: ConfigObject[];
  fallback?: ConfigObject;
}

function indexSidecars(sidecars: readonly ConfigObject[]): Map<string, NamespaceSidecars> {
  const out = new Map<string, NamespaceSidecars>();
  for (const s of [...sidecars].sort(configOrder)) {
    const ns = s.metadata.namespace ?? "";
    let e = out.get(ns);
    if (!e) out.set(ns, e = { selected: [] });
    if (labelsOf(s)) e.selected.push(s);
    else e.fallback ??= s;
  }
  return out;
}

/**
 * The Sidecar that applies to a workload of `namespace` with `labels`: a selecting one of its
 * namespace (oldest), else its namespace's default, else the root namespace's default.
 */
export function selectSidecar(
  sidecars: readonly ConfigObject[],
  namespace: string,
  labels: Record<string, string>,
): ConfigObject | undefined {
  return pick(indexSidecars(sidecars), namespace, labels);
}

function pick(
  idx: Map<string, NamespaceSidecars>,
  namespace: string,
  labels: Record<string, string>,
): ConfigObject | undefined {
  const own = idx.get(namespace);
  for (const s of own?.selected ?? []) if (selects(labelsOf(s)!, labels)) return s;
  return own?.fallback ?? idx.get(ROOT_NAMESPACE)?.fallback;
}

/** The egress rules of a Sidecar for a proxy of `namespace` (`.` resolved). */
function egressRules(sidecar: ConfigObject, namespace: string): EgressRule[] {
  const egress = (sidecar.spec as Any)?.egress;
  const own = sidecar.metadata.namespace ?? "";
  // `.` is the Sidecar's namespace, or the proxy's for the mesh-wide default
  const dot = own === ROOT_NAMESPACE && !labelsOf(sidecar) ? namespace || own : own;
  if (!Array.isArray(egress) || !egress.length) return [{ hosts: [{ ns: "*", dns: "*" }] }];
  return egress.map((l: Any) => ({
    port: typeof l?.port?.number === "number" ? l.port.number : undefined,
    hosts: (Array.isArray(l?.hosts) ? l.hosts : []).flatMap((h: unknown) => {
      if (typeof h !== "string" || !h.includes("/")) return [];
      const i = h.indexOf("/");
      const ns = h.slice(0, i);
      return [{ ns: ns === "." ? dot : ns, dns: h.slice(i + 1) }];
    }),
  }));
}

/** True when an egress `dnsName` selects `host` (`*`, `*.<suffix>`, or the host itself). */
export function dnsNameMatches(dns: string, host: string): boolean {
  if (dns === "*" || dns === host) return true;
  return dns.startsWith("*.") && host.endsWith(dns.slice(1));
}

function hostSelected(
  rule: EgressRule,
  namespace: string,
  hosts: readonly string[],
): boolean {
  return rule.hosts.some((h) =>
    h.ns !== "~" && (h.ns === "*" || h.ns === namespace) &&
    hosts.some((x) => dnsNameMatches(h.dns, x))
  );
}

/** True when an `exportTo` list (absent or empty: everywhere) exports from `own` to `namespace`. */
export function exportedToNamespace(exportTo: unknown, own: string, namespace: string): boolean {
  if (!Array.isArray(exportTo) || !exportTo.length || exportTo.includes("*")) return true;
  if (!namespace) return false;
  return exportTo.some((x) => x === namespace || (x === "." && own === namespace));
}

/** Destination hosts of a VirtualService's routes (FQDNs). */
function destinationHosts(vs: ConfigObject, domain: string): string[] {
  const ns = vs.metadata.namespace ?? "";
  const spec = vs.spec as Any;
  const out: string[] = [];
  for (const kind of ["http", "tcp", "tls"]) {
    for (const r of Array.isArray(spec?.[kind]) ? spec[kind] : []) {
      const dests = [...(Array.isArray(r?.route) ? r.route : []), ...(r?.mirror ? [r] : [])];
      for (const d of dests) {
        const host = d?.destination?.host ?? d?.mirror?.host;
        if (typeof host === "string") out.push(resolveShortName(host, ns, domain));
      }
    }
  }
  return out;
}

/** Everything of a context the scoping reads, indexed once per context. */
class ScopeIndex {
  readonly sidecars: Map<string, NamespaceSidecars>;
  /** DestinationRules with a workload selector. */
  readonly selectiveRules: ConfigObject[];
  /** DestinationRules and ServiceEntries whose exportTo is not everywhere. */
  readonly restricted: ConfigObject[];
  /** Hidden-by-exportTo keys per namespace. */
  readonly hiddenByNamespace = new Map<string, string[]>();
  /** Scopes by key. */
  readonly scopes = new Map<string, ProxyScope>();
  /** Scopes by proxy object (the same proxy asks for several types in a push). */
  readonly byProxy = new WeakMap<Proxy, ProxyScope>();
  readonly full: ProxyScope;
  #byHost?: Map<string, ServiceInstance[]>;

  constructor(readonly ctx: PushContext) {
    this.sidecars = indexSidecars(ctx.configs.sidecars ?? []);
    const drs = ctx.configs.destinationRules ?? [];
    this.selectiveRules = drs.filter((d) => {
      const ml = (d.spec as Any)?.workloadSelector?.matchLabels;
      return ml && typeof ml === "object" && Object.keys(ml).length > 0;
    });
    this.restricted = [...drs, ...(ctx.configs.serviceEntries ?? [])].filter((o) => {
      const e = (o.spec as Any)?.exportTo;
      return Array.isArray(e) && e.length > 0 && !e.includes("*");
    });
    this.full = { key: "", ctx };
  }

  /** The context's instances by hostname (built on first use). */
  instancesByHost(): Map<string, ServiceInstance[]> {
    return this.#byHost ??= groupByHost(this.ctx.instances);
  }

  /** Keys (`<kind>/<ns>/<name>`) of what exportTo hides from `namespace`. */
  hiddenFor(namespace: string): string[] {
    let h = this.hiddenByNamespace.get(namespace);
    if (!h) {
      h = this.restricted.filter((o) =>
        !exportedToNamespace((o.spec as Any).exportTo, o.metadata.namespace ?? "", namespace)
      ).map(objectKey).sort();
      this.hiddenByNamespace.set(namespace, h);
    }
    return h;
  }
}

const objectKey = (o: ConfigObject) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;

const INDEXES = new WeakMap<PushContext, ScopeIndex>();

function indexFor(ctx: PushContext): ScopeIndex {
  let i = INDEXES.get(ctx);
  if (!i) INDEXES.set(ctx, i = new ScopeIndex(ctx));
  return i;
}

/**
 * The scope of `proxy` in `ctx`: built once per distinct key and context; a proxy object's
 * scope is remembered for the context. Gateways (router, ingress) are not scoped by Sidecars;
 * exportTo and DestinationRule selectors apply to them too.
 */
export function scopeFor(ctx: PushContext, proxy: Proxy): ProxyScope {
  const idx = indexFor(ctx);
  const known = idx.byProxy.get(proxy);
  if (known) return known;
  const namespace = proxyNamespace(proxy);
  const labels = proxyLabels(proxy);
  const sidecar = proxy.type === "sidecar" ? pick(idx.sidecars, namespace, labels) : undefined;
  const hidden = [...idx.hiddenFor(namespace)];
  for (const d of idx.selectiveRules) {
    if (!selects((d.spec as Any).workloadSelector.matchLabels, labels)) hidden.push(objectKey(d));
  }
  hidden.sort();
  const key = !sidecar && !hidden.length
    ? ""
    : `${sidecar ? objectKey(sidecar) + "@" + namespace : "-"}|${hidden.join(",")}`;
  let scope = idx.scopes.get(key);
  if (!scope) {
    scope = key === "" ? idx.full : lazyScope(key, sidecar, () =>
      scopedContext(ctx, {
        sidecar,
        namespace,
        hidden: new Set(hidden),
        instancesByHost: idx.instancesByHost(),
      }));
    idx.scopes.set(key, scope);
  }
  idx.byProxy.set(proxy, scope);
  return scope;
}

/** A scope whose context is built on first use (views already built for its key need none). */
function lazyScope(
  key: string,
  sidecar: ConfigObject | undefined,
  build: () => PushContext,
): ProxyScope {
  let ctx: PushContext | undefined;
  return {
    key,
    get ctx() {
      return ctx ??= build();
    },
    ...(sidecar ? { sidecar } : {}),
  };
}

/**
 * The context as seen through `sidecar` by a proxy of `namespace`, without the objects whose
 * keys (`<kind>/<namespace>/<name>`) are in `hidden` (ServiceEntries: their services).
 */
export function scopedContext(
  ctx: PushContext,
  opts: {
    sidecar?: ConfigObject;
    namespace: string;
    hidden?: ReadonlySet<string>;
    /** The context's instances by hostname (built once per context by {@link scopeFor}). */
    instancesByHost?: ReadonlyMap<string, readonly ServiceInstance[]>;
  },
): PushContext {
  const hidden = opts.hidden ?? new Set<string>();
  const hiddenSe = (ctx.configs.serviceEntries ?? []).filter((o) => hidden.has(objectKey(o)));
  const hiddenSeKeys = new Set<string>();
  for (const se of hiddenSe) {
    for (const h of (se.spec as Any)?.hosts ?? []) {
      hiddenSeKeys.add(`${se.metadata.namespace ?? "default"}|${h}`);
    }
  }
  const visible = (s: Service) =>
    !(s.registry === "ServiceEntry" && hiddenSeKeys.has(`${s.namespace}|${s.hostname}`));
  let services = ctx.services.filter(visible);
  let virtualServices = ctx.configs.virtualServices;
  let meshConfig: XdsMeshConfig = ctx.meshConfig;
  if (opts.sidecar) {
    const rules = egressRules(opts.sidecar, opts.namespace);
    // a service's visible ports: every port for a rule without one, else the rules' ports
    const ports = new Map<Service, Set<number> | "all">();
    const allow = (s: Service, port: number | undefined) => {
      if (port === undefined) return void ports.set(s, "all");
      const p = ports.get(s);
      if (p === "all") return;
      if (!s.ports.some((x) => x.port === port)) return;
      if (p) p.add(port);
      else ports.set(s, new Set([port]));
    };
    for (const r of rules) {
      for (const s of services) if (hostSelected(r, s.namespace, [s.hostname])) allow(s, r.port);
    }
    // VirtualServices selected by their namespace and hosts pull in their destinations
    virtualServices = virtualServices.filter((vs) => {
      const ns = vs.metadata.namespace ?? "";
      const hosts = ((vs.spec as Any)?.hosts ?? []).filter((h: unknown) => typeof h === "string")
        .map((h: string) => resolveShortName(h, ns, ctx.domain));
      return rules.some((r) => hostSelected(r, ns, hosts));
    });
    const byHost = new Map<string, Service[]>();
    for (const s of services) {
      const l = byHost.get(s.hostname);
      if (l) l.push(s);
      else byHost.set(s.hostname, [s]);
    }
    for (const vs of virtualServices) {
      for (const h of destinationHosts(vs, ctx.domain)) {
        for (const s of byHost.get(h) ?? []) if (!ports.has(s)) allow(s, undefined);
      }
    }
    services = services.flatMap((s) => {
      const p = ports.get(s);
      if (!p) return [];
      if (p === "all" || p.size === s.ports.length) return [s];
      return [{ ...s, ports: s.ports.filter((x) => p.has(x.port)) }];
    });
    const mode = (opts.sidecar.spec as Any)?.outboundTrafficPolicy?.mode;
    if (mode === "ALLOW_ANY" || mode === "REGISTRY_ONLY") {
      meshConfig = { ...meshConfig, outboundTrafficPolicy: mode };
    }
  }
  const destinationRules = hidden.size
    ? ctx.configs.destinationRules.filter((d) => !hidden.has(objectKey(d)))
    : ctx.configs.destinationRules;
  // only the visible services' instances (DNS clusters carry theirs): indexing the scoped
  // context then costs what the proxy sees, not the mesh
  let instances = ctx.instances;
  if (services.length !== ctx.services.length) {
    const byHost = opts.instancesByHost ?? groupByHost(ctx.instances);
    instances = [...new Set(services.map((s) => s.hostname))].flatMap((h) => byHost.get(h) ?? []);
  }
  return {
    ...ctx,
    services,
    instances,
    configs: { ...ctx.configs, virtualServices, destinationRules },
    meshConfig,
  };
}

function groupByHost(instances: readonly ServiceInstance[]): Map<string, ServiceInstance[]> {
  return groupBy(instances, (i) => i.hostname);
}

/** A Sidecar ingress listener: the workload port it receives on and where it forwards. */
interface IngressRule {
  port: number;
  defaultEndpoint?: string;
}

function ingressRules(sidecar: ConfigObject | undefined): IngressRule[] | undefined {
  const list = (sidecar?.spec as Any)?.ingress;
  if (!Array.isArray(list) || !list.length) return undefined;
  return list.flatMap((l: Any) =>
    typeof l?.port?.number === "number"
      ? [{
        port: l.port.number,
        ...(typeof l.defaultEndpoint === "string" ? { defaultEndpoint: l.defaultEndpoint } : {}),
      }]
      : []
  );
}

/** True when a Sidecar has ingress listeners (its proxies' inbound side then depends on it). */
export function hasIngress(sidecar: ConfigObject | undefined): boolean {
  return ingressRules(sidecar) !== undefined;
}

/**
 * A sidecar's own instances as its Sidecar's `ingress` admits them: with ingress listeners, only
 * the instances whose workload port (the endpoint port) one of them names; without, all of them.
 */
export function ingressInstances<T extends { port: number }>(
  own: readonly T[],
  sidecar: ConfigObject | undefined,
): T[] {
  const rules = ingressRules(sidecar);
  if (!rules) return [...own];
  const ports = new Set(rules.map((r) => r.port));
  return own.filter((i) => ports.has(i.port));
}

/** The endpoint address a `defaultEndpoint` names (`0.0.0.0`: the proxy's own IP). */
function endpointOf(defaultEndpoint: string, proxyIp: string): Record<string, unknown> {
  if (defaultEndpoint.startsWith("unix://")) {
    return { pipe: { path: defaultEndpoint.slice("unix://".length) } };
  }
  const i = defaultEndpoint.lastIndexOf(":");
  let host = defaultEndpoint.slice(0, i).replace(/^\[|\]$/g, "");
  if (host === "0.0.0.0" || host === "::") host = proxyIp;
  return { socket_address: { address: host, port_value: Number(defaultEndpoint.slice(i + 1)) } };
}

/**
 * Inbound clusters with the Sidecar `ingress[].defaultEndpoint` of their workload port as their
 * endpoint (`127.0.0.1:<port>`, `0.0.0.0:<port>` = the proxy's IP, `unix://<path>`); clusters of
 * ports without a defaultEndpoint, and every cluster without a Sidecar ingress, unchanged.
 * `own` are the proxy's instances (inbound cluster `inbound|<service port>||<host>` ← workload port).
 */
export function withIngressEndpoints(
  clusters: readonly XdsResource[],
  own: readonly {
    hostname: string;
    port: number;
    servicePort: { port: number };
  }[],
  sidecar: ConfigObject | undefined,
  proxyIp: string,
): XdsResource[] {
  const rules = ingressRules(sidecar);
  if (!rules?.some((r) => r.defaultEndpoint)) return [...clusters];
  const byPort = new Map(rules.map((r) => [r.port, r.defaultEndpoint]));
  const target = new Map<string, string>();
  for (const i of own) {
    const de = byPort.get(i.port);
    if (de) target.set(inboundClusterName(i.servicePort.port, i.hostname), de);
  }
  return clusters.map((c) => {
    const de = target.get(String(c.name));
    if (!de) return c;
    return {
      ...c,
      load_assignment: {
        cluster_name: c.name,
        endpoints: [{ lb_endpoints: [{ endpoint: { address: endpointOf(de, proxyIp) } }] }],
      },
    };
  });
}

/**
 * What one-off generation for a proxy (REST xDS, debug pages) reads: the scoped context for its
 * outbound resources and the whole context, without the own instances its Sidecar's `ingress`
 * does not admit, for its inbound ones.
 */
export interface ProxyContexts {
  readonly scope: ProxyScope;
  /** The context of inbound resources. */
  readonly inbound: PushContext;
  /** The proxy's own instances the Sidecar's ingress admits. */
  readonly own: readonly ServiceInstance[];
}

/** The {@link ProxyContexts} of `proxy` in `full`. */
export function proxyContexts(full: PushContext, proxy: Proxy): ProxyContexts {
  const scope = scopeFor(full, proxy);
  const ownAll = proxy.type === "sidecar"
    ? full.instances.filter((i) => i.address === proxy.ip)
    : [];
  const own = ingressInstances(ownAll, scope.sidecar);
  const inbound = own.length === ownAll.length ? full : {
    ...full,
    instances: full.instances.filter((i) => i.address !== proxy.ip || own.includes(i)),
  };
  return { scope, inbound, own };
}

const isInbound = (r: XdsResource) =>
  r.traffic_direction === "INBOUND" || String(r.name).startsWith("inbound|");

/**
 * Resources of a proxy built by `build` from both contexts: inbound ones (INBOUND listeners,
 * `inbound|` clusters) from `pc.inbound`, the others from the scoped context.
 */
export function buildScoped(
  pc: ProxyContexts,
  build: (ctx: PushContext) => XdsResource[],
): XdsResource[] {
  if (pc.scope.key === "" && pc.inbound === pc.scope.ctx) return build(pc.inbound);
  const mine = build(pc.inbound).filter(isInbound);
  const names = new Set(mine.map((r) => r.name));
  return [...mine, ...build(pc.scope.ctx).filter((r) => !isInbound(r) && !names.has(r.name))];
}

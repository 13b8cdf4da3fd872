/**
 * What discovery knows, kept current: the config snapshot (from the store's watch), the
 * aggregate registry, the mesh configuration; the {@link PushContext} built from them (rebuilt
 * on the next read after a change, or built ahead in slices while the previous one serves:
 * {@link DiscoveryModel.prepare}); and the generator the ADS server calls (`resourcesFor`), which builds and
 * encodes each distinct resource once per context into a shared {@link ResourceCache} and gives
 * proxies with the same inputs the same view object.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";
import type { ConfigObject, MeshConfig, Service, ServiceInstance } from "../../lib/model/mod.ts";
import { instanceSignature, parseDurationMs } from "../../lib/model/mod.ts";
import type { ConfigStore, StoreEvent } from "../../lib/store/mod.ts";
import {
  buildApiListener,
  buildClusters,
  buildEndpoints,
  buildListeners,
  buildRoutes,
  buildScoped,
  buildServerListener,
  CERT_DIR_METADATA_KEY,
  certDirOf,
  deriveIndex,
  describeConflict,
  emptyPushConfigs,
  encodeAny,
  hasIngress,
  headerMatcherForm,
  indexOf,
  ingressesToConfigs,
  ingressInstances,
  isKnownCluster,
  isProxyless,
  isServerListenerName,
  loadAssignment,
  type OutboundListenerConflict,
  outboundListenerConflicts,
  parseClusterName,
  prepareIndex,
  type Proxy,
  proxyContexts,
  proxyLabels,
  type PushContext,
  ringHashCrashes,
  scopeFor,
  TYPE_URLS,
  unselectedGatewayReason,
  withIngressEndpoints,
  type XdsMeshConfig,
  type XdsResource,
} from "../../lib/xds/mod.ts";
import {
  type CachedResource,
  contentVersion,
  type ResourceCache,
  type ResourceEntry,
  type ResourceMap,
} from "../../lib/xds/server/mod.ts";

/** A registry as discovery reads it (the aggregate), with optional Ingress objects. */
export interface DiscoveryRegistry {
  services(): Service[];
  instances(): ServiceInstance[];
  /** The instances of the services named `hosts` (`ServiceRegistry.instancesOf`). */
  instancesOf?(hosts: ReadonlySet<string>): ServiceInstance[];
  /** Ingress objects (orchestrator registry only). */
  ingresses?(): ConfigObject[];
}

/** The subset of the mesh configuration the generators use. */
export function toXdsMeshConfig(mc: MeshConfig): XdsMeshConfig {
  return {
    authPolicy: mc.authPolicy,
    connectTimeoutMs: parseDurationMs(mc.connectTimeout) ?? 1000,
    proxyListenPort: mc.proxyListenPort,
    ingressClass: mc.ingressClass,
    ingressControllerMode: mc.ingressControllerMode,
    accessLogFile: mc.accessLogFile,
    outboundTrafficPolicy: mc.outboundTrafficPolicy.mode === "ALLOW_ANY"
      ? "ALLOW_ANY"
      : "REGISTRY_ONLY",
    mtlsExcludedServices: [...mc.mtlsExcludedServices],
  };
}

const key = (o: ConfigObject) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/**
 * The config snapshot: every object of the store, kept current from its watch so the push
 * context can be built synchronously.
 */
export class ConfigSnapshot {
  readonly #objects = new Map<string, ConfigObject>();
  #watch?: { close(): void };

  /**
   * Starts watching `store`, lists every type, and calls `onChange` after each later change with
   * the object held before it (undefined when it was added).
   */
  async open(
    store: ConfigStore,
    onChange: (ev: StoreEvent, previous: ConfigObject | undefined) => void,
  ): Promise<void> {
    // what the watch delivered while the listing ran (newer than the listing); forgotten after
    let seen: Set<string> | undefined = new Set<string>();
    this.#watch = store.watch((ev) => {
      const k = key(ev.object);
      seen?.add(k);
      const previous = this.#objects.get(k);
      if (ev.type === "DELETED") this.#objects.delete(k);
      else this.#objects.set(k, ev.object);
      this.#sortedCache = undefined;
      onChange(ev, previous);
    });
    for (const schema of store.schemas) {
      for (const o of await store.list(schema.type)) {
        if (!seen.has(key(o))) this.#objects.set(key(o), o);
        this.#sortedCache = undefined;
      }
    }
    seen = undefined;
  }

  /** Every object, sorted by kind, namespace, name. */
  all(): ConfigObject[] {
    return this.#sorted().all.slice();
  }

  /** Objects of one kind (`VirtualService`). */
  byKind(kind: string): ConfigObject[] {
    return this.#sorted().byKind.get(kind)?.slice() ?? [];
  }

  /**
   * The objects sorted, and by kind, kept until the next change (a context rebuild asks for a
   * dozen kinds: with thousands of objects, sorting each time held the event loop).
   */
  #sorted(): { all: ConfigObject[]; byKind: Map<string, ConfigObject[]> } {
    if (this.#sortedCache) return this.#sortedCache;
    const all = [...this.#objects.entries()].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map((
      [, o],
    ) => o);
    const byKind = new Map<string, ConfigObject[]>();
    for (const o of all) {
      const l = byKind.get(o.kind);
      if (l) l.push(o);
      else byKind.set(o.kind, [o]);
    }
    return this.#sortedCache = { all, byKind };
  }
  #sortedCache?: { all: ConfigObject[]; byKind: Map<string, ConfigObject[]> };

  /** Stops watching. */
  close(): void {
    this.#watch?.close();
  }
}

/** Counts of the push context (for metrics). */
export interface ContextCounts {
  services: number;
  virtualServices: number;
  configsByKind: Record<string, number>;
  /** Outbound listeners a TCP port took from HTTP services ({@link DiscoveryModel.conflicts}). */
  conflictsTcpOverHttp: number;
}

/** Matches no instance address: the proxy used to build what every sidecar shares. */
const SHARED_IP = "\u0000shared";

/** A per-proxy view of one type (shared by every proxy with the same inputs). */
interface View {
  readonly map: ResourceMap;
  /** Listener views: RDS route names; cluster views: EDS service names. */
  readonly refs: readonly string[];
}

/**
 * Everything built for one push context, keyed by exactly the proxy fields each resource depends
 * on (see docs/ads.md, "Shared generation in mesh-discovery"). Dropped when the context is rebuilt.
 */
interface Memo {
  readonly ctx: PushContext;
  /** The instances at an address (a sidecar's own; from the context's index). */
  readonly instancesAt: (ip: string) => readonly ServiceInstance[];
  /** Services by hostname, in context order (for the inbound-only contexts). */
  readonly servicesByHost: Map<string, Service[]>;
  /** Label keys any VirtualService matches with `sourceLabels` (the only labels routes read). */
  readonly sourceLabelKeys: readonly string[];
  /** Sidecar listeners without inbound ones, by "TPROXY interception". */
  readonly sharedListeners: Map<string, View>;
  /** Listener views: gateways by type + labels; sidecars with instances by mode + IP + shape. */
  readonly listenerViews: Map<string, View>;
  /** Cluster views by own-instance shape ("" = no own instances: outbound only). */
  readonly clusterViews: Map<string, View>;
  /** `<host>:<port>` api listeners by domain + name. */
  readonly apiListeners: Map<string, CachedResource | null>;
  /** Route configurations by type + domain + relevant labels + name. */
  readonly routes: Map<string, CachedResource | null>;
  /** ClusterLoadAssignments by cluster name. */
  readonly eds: Map<string, CachedResource | null>;
  /**
   * The outbound cluster names of `eds` by `host|port` (names of earlier memos of the same
   * context too: shared by the memos {@link DiscoveryModel.updateEndpoints} derives, and only
   * ever added to), so that an endpoint update finds its clusters' assignments without parsing
   * every name.
   */
  readonly edsNames: Map<string, Set<string>>;
  /** EDS responses by query array (the server's interned subscription lists). */
  readonly edsViews: WeakMap<readonly string[], ResourceMap>;
  /**
   * RDS views by content (the entries' versions in order): proxies whose route configurations
   * are the same get one map, so a push compares and encodes it once, not once per proxy.
   */
  readonly routeViews: Map<string, ResourceMap>;
  /**
   * After {@link DiscoveryModel.updateEndpoints}: the `host|port` keys whose instances changed and
   * a small context with only their instances (and the DestinationRules, for subsets), from which
   * their assignments are rebuilt without indexing the whole new context.
   */
  readonly edsChanged?: { keys: ReadonlySet<string>; ctx: PushContext };
  /**
   * The context whose index holds the current services and DestinationRules (the memo's own
   * context, kept across {@link DiscoveryModel.updateEndpoints}, which changes neither): which
   * cluster names are real.
   */
  readonly shape: PushContext;
}

/** Own entries first, then the shared base's (own names win). Immutable. */
class LayeredMap implements ReadonlyMap<string, ResourceEntry> {
  readonly size: number;
  constructor(
    readonly own: ReadonlyMap<string, ResourceEntry>,
    readonly base: ReadonlyMap<string, ResourceEntry>,
  ) {
    let n = own.size;
    for (const k of base.keys()) if (!own.has(k)) n++;
    this.size = n;
  }
  get(k: string): ResourceEntry | undefined {
    return this.own.get(k) ?? this.base.get(k);
  }
  has(k: string): boolean {
    return this.own.has(k) || this.base.has(k);
  }
  *entries(): MapIterator<[string, ResourceEntry]> {
    yield* this.own;
    for (const e of this.base) if (!this.own.has(e[0])) yield e;
  }
  *keys(): MapIterator<string> {
    for (const [k] of this.entries()) yield k;
  }
  *values(): MapIterator<ResourceEntry> {
    for (const [, v] of this.entries()) yield v;
  }
  [Symbol.iterator](): MapIterator<[string, ResourceEntry]> {
    return this.entries();
  }
  forEach(
    fn: (v: ResourceEntry, k: string, m: ReadonlyMap<string, ResourceEntry>) => void,
  ): void {
    for (const [k, v] of this.entries()) fn(v, k, this);
  }
}

/** Canonical text of `labels` restricted to `keys` (all keys when omitted). */
function labelsKey(labels: Record<string, string>, keys?: readonly string[]): string {
  const ks = (keys ?? Object.keys(labels).sort()).filter((k) => Object.hasOwn(labels, k));
  return JSON.stringify(ks.map((k) => [k, labels[k]]));
}

/** Fields of own instances that inbound clusters (and listeners, with the IP) are built from. */
function shapeKey(own: readonly ServiceInstance[]): string {
  return JSON.stringify(
    own.map((i) => [
      i.hostname,
      i.servicePort.port,
      i.servicePort.name,
      i.servicePort.protocol,
      i.port,
    ]),
  );
}

/**
 * Keys of every `sourceLabels` object inside VirtualService specs, sorted. Each spec is walked
 * once while it lives (the store hands out the same objects until they change): a rebuild after
 * one edit among 12,500 VirtualServices does not walk the other 12,499 again.
 */
function sourceLabelKeys(vss: readonly ConfigObject[]): string[] {
  const keys = new Set<string>();
  for (const vs of vss) for (const k of specSourceLabelKeys(vs.spec)) keys.add(k);
  return [...keys].sort();
}

/** The `sourceLabels` keys of one spec (walked once per spec object). */
function specSourceLabelKeys(spec: unknown): readonly string[] {
  if (!spec || typeof spec !== "object") return [];
  const hit = sourceLabelKeysBySpec.get(spec);
  if (hit) return hit;
  const keys = new Set<string>();
  const walk = (o: unknown): void => {
    if (!o || typeof o !== "object") return;
    if (Array.isArray(o)) return o.forEach(walk);
    for (const [k, v] of Object.entries(o)) {
      if (k === "sourceLabels" && v && typeof v === "object") {
        for (const l of Object.keys(v)) keys.add(l);
      }
      walk(v);
    }
  };
  walk(spec);
  const list = [...keys];
  sourceLabelKeysBySpec.set(spec, list);
  return list;
}

const sourceLabelKeysBySpec = new WeakMap<object, readonly string[]>();

/** RDS names referenced by listeners. */
function routeRefs(listeners: readonly XdsResource[]): string[] {
  const names = new Set<string>();
  const visit = (o: unknown): void => {
    if (!o || typeof o !== "object") return;
    if (Array.isArray(o)) return o.forEach(visit);
    const r = o as Record<string, unknown>;
    const rds = r.rds as { route_config_name?: string } | undefined;
    if (rds?.route_config_name) names.add(rds.route_config_name);
    for (const v of Object.values(r)) visit(v);
  };
  visit(listeners);
  return [...names];
}

/** EDS service names of clusters. */
function edsRefs(clusters: readonly XdsResource[]): string[] {
  return clusters.filter((c) => c.type === "EDS").map((c) =>
    c.eds_cluster_config?.service_name ?? c.name
  );
}

/** The previous generation's map when it has the same names and versions (keeps identity). */
function stable(prev: ResourceMap | undefined, next: ResourceMap): ResourceMap {
  if (!prev || prev.size !== next.size) return next;
  for (const [n, e] of next) if (prev.get(n)?.version !== e.version) return next;
  return prev;
}

/** Counters of the shared generator (tests, debugging). */
export interface GeneratorStats {
  /** Context rebuilds so far. */
  generation: number;
  /** Resources encoded so far (each distinct resource once per context). */
  encoded: number;
  /** Views built so far (each distinct view once per context). */
  views: number;
}

/**
 * Holds the current push context and generates what proxies see. Call {@link invalidate} after
 * any change; the next read rebuilds the context. Within one context every distinct resource is
 * built and encoded once, and proxies with the same inputs share the same view object.
 */
export class DiscoveryModel {
  readonly #registry: DiscoveryRegistry;
  readonly #configs: ConfigSnapshot;
  #mesh: XdsMeshConfig;
  readonly #domain: string;
  readonly #cache: ResourceCache;
  readonly #log: Logger;
  #ctx?: PushContext;
  #memo?: Memo;
  #prev?: Memo;
  #stats: GeneratorStats = { generation: 0, encoded: 0, views: 0 };
  /** Cache keys of EDS entries replaced by endpoint updates since the last collection. */
  #replaced = new Set<string>();
  /** Conflicts of the current context (with the context they belong to). */
  #conflicts?: { ctx: PushContext; list: OutboundListenerConflict[] };
  /** Conflicts already logged (each once while it lasts). */
  #conflictsLogged = new Set<string>();
  /** Router/ingress label sets already logged as selected by no Gateway (each logged once). */
  #unselectedLogged = new Set<string>();
  /** Called before a rebuild with the cache keys (`<type> <name>|<version>`) clients hold (kept). */
  referencedKeys: () => Iterable<string> = () => [];

  constructor(opts: {
    registry: DiscoveryRegistry;
    configs: ConfigSnapshot;
    meshConfig: MeshConfig;
    domain: string;
    cache: ResourceCache;
    logger: Logger;
  }) {
    this.#registry = opts.registry;
    this.#configs = opts.configs;
    this.#mesh = toXdsMeshConfig(opts.meshConfig);
    this.#domain = opts.domain;
    this.#cache = opts.cache;
    this.#log = opts.logger;
  }

  /**
   * Replaces the mesh configuration (a live edit of `--meshConfig`); the context is rebuilt on
   * next use. The caller pushes.
   */
  setMeshConfig(mc: MeshConfig): void {
    this.#mesh = toXdsMeshConfig(mc);
    this.invalidate();
  }

  /** Marks the context stale (rebuilt on next use). */
  invalidate(): void {
    this.#ctx = undefined;
    this.#changes++;
  }

  /**
   * Marks the context stale but keeps serving it until {@link prepare} has built the next one
   * (in slices) and put it in force: every read meanwhile sees the previous configuration whole,
   * none pays for the rebuild. Without a current context it is {@link invalidate}.
   */
  invalidateLater(): void {
    if (!this.#ctx) return this.invalidate();
    this.#changes++;
  }

  /** Whether a change is waiting for {@link prepare} (the context in force predates it). */
  get stale(): boolean {
    return this.#ctx !== undefined && this.#builtAt !== this.#changes;
  }

  /** Changes so far ({@link invalidate}, {@link invalidateLater}); the context's is {@link #builtAt}. */
  #changes = 0;
  /** The value of {@link #changes} when the context in force was built. */
  #builtAt = 0;
  /** Endpoint updates applied so far ({@link updateEndpoints}). */
  #endpointUpdates = 0;

  /**
   * Applies an endpoints-only registry change: the instances of the `host|port` keys in `changed`
   * differ, services and configs do not. Every view of the current context stays (clusters,
   * listeners and routes do not read other services' endpoints); only the assignments (EDS) of the
   * affected clusters are dropped, rebuilt on demand from the new instances, and the next context
   * shares everything else. When the change can alter more (a DNS service's clusters carry its
   * endpoints) or there is no current context, it falls back to {@link invalidate}. Returns
   * whether the incremental path was taken. `instances` are the registry's (read when not given),
   * `candidates` those among them that may be of the changed keys (default: all of them; the
   * router passes the instances of the hosts it compared), so that the work is in proportion to
   * the change.
   */
  updateEndpoints(
    changed: ReadonlySet<string>,
    instances: ServiceInstance[] = this.#registry.instances(),
    candidates: readonly ServiceInstance[] = instances,
  ): boolean {
    const m = this.#memo;
    if (!this.#ctx || !m || m.ctx !== this.#ctx) {
      this.invalidate();
      return false;
    }
    for (const k of changed) {
      const host = k.slice(0, k.lastIndexOf("|"));
      if (m.servicesByHost.get(host)?.some((s) => s.resolution === "DNSLB")) {
        this.invalidate();
        return false;
      }
    }
    const ctx: PushContext = { ...m.ctx, instances };
    const keys = new Set(changed);
    const eds = new Map(m.eds);
    for (const k of keys) {
      for (const name of m.edsNames.get(k) ?? []) {
        const e = eds.get(name);
        if (e) this.#replaced.add(`${name}|${e.version}`);
        eds.delete(name);
      }
    }
    const hosts = new Set([...keys].map((k) => k.slice(0, k.lastIndexOf("|"))));
    const edsCtx: PushContext = {
      services: [],
      instances: candidates.filter((i) =>
        hosts.has(i.hostname) && keys.has(`${i.hostname}|${i.servicePort.port}`)
      ),
      configs: {
        ...emptyPushConfigs(),
        destinationRules: m.ctx.configs.destinationRules,
        serviceEntries: [],
      },
      meshConfig: m.ctx.meshConfig,
      domain: m.ctx.domain,
    };
    // the new context's index is the old one's with the changed keys' instances
    deriveIndex(m.ctx, ctx, keys, edsCtx.instances);
    this.#ctx = ctx;
    this.#endpointUpdates++;
    this.#prev = m;
    // proxyless server listeners read the instances at their address: rebuilt on demand
    const apiListeners = new Map([...m.apiListeners].filter(([k]) => !k.startsWith("server ")));
    this.#memo = {
      ...m,
      ctx,
      instancesAt: instancesAt(ctx),
      apiListeners,
      eds,
      edsViews: new WeakMap(),
      routeViews: new Map(),
      edsChanged: { keys, ctx: edsCtx },
    };
    // Replaced assignments no client holds any more are dropped now and then (a collection walks
    // every client's resources, too costly for each change).
    if (this.#replaced.size >= 1000) this.#collectReplaced();
    return true;
  }

  /** Drops the replaced EDS entries that no client holds. */
  #collectReplaced(): void {
    const held = new Set(this.referencedKeys());
    for (const k of this.#replaced) {
      if (!held.has(`${TYPE_URLS.endpoint} ${k}`)) this.#cache.delete(TYPE_URLS.endpoint, k);
    }
    this.#replaced.clear();
  }

  /** Number of context rebuilds so far. */
  get generation(): number {
    return this.#stats.generation;
  }

  /** Counters of the generator. */
  stats(): GeneratorStats {
    return { ...this.#stats };
  }

  /** The current push context (rebuilt when stale). */
  context(): PushContext {
    if (this.#ctx) return this.#ctx;
    return this.#install(this.#build(), this.#changes);
  }

  /** A new push context from the configuration and registry in force. */
  #build(): PushContext {
    const byKind = (k: string) => this.#configs.byKind(k);
    return {
      services: this.#registry.services(),
      instances: this.#registry.instances(),
      configs: {
        virtualServices: byKind("VirtualService"),
        destinationRules: byKind("DestinationRule"),
        gateways: byKind("Gateway"),
        serviceEntries: byKind("ServiceEntry"),
        policies: byKind("Policy"),
        serviceRoles: byKind("ServiceRole"),
        serviceRoleBindings: byKind("ServiceRoleBinding"),
        peerAuthentications: byKind("PeerAuthentication"),
        authorizationPolicies: byKind("AuthorizationPolicy"),
        requestAuthentications: byKind("RequestAuthentication"),
        ingresses: this.#registry.ingresses?.() ?? [],
        sidecars: byKind("Sidecar"),
      },
      meshConfig: this.#mesh,
      domain: this.#domain,
    };
  }

  /** Puts `ctx` (built when {@link #changes} was `builtAt`) in force. */
  #install(ctx: PushContext, builtAt: number): PushContext {
    this.#ctx = ctx;
    this.#builtAt = builtAt;
    this.#stats.generation++;
    if (this.#memo) this.#prev = this.#memo;
    this.#memo = undefined;
    this.#gc();
    return ctx;
  }

  /**
   * Builds the next push context after {@link invalidateLater} and puts it in force in one step,
   * with what the first read of a new context would otherwise build at once: its indexes
   * ({@link prepareIndex}), the VirtualServices' `sourceLabels` keys and the conflicts. Between
   * batches it calls `pause` (a {@link TimeSlicer}'s), and the previous context serves every read
   * meanwhile: a read sees one configuration or the other, whole, and never waits for the rebuild.
   * The context is built from the configuration in force when it starts; changes made meanwhile
   * leave {@link stale} true (prepare again). Returns whether it put a context in force (false:
   * nothing was stale, or a read rebuilt a newer one meanwhile after {@link invalidate}).
   */
  async prepare(pause: () => Promise<void>): Promise<boolean> {
    if (!this.stale) return false;
    const builtAt = this.#changes;
    const endpoints = this.#endpointUpdates;
    let ctx = this.#build();
    const wanted = () => this.#ctx !== undefined && this.#builtAt < builtAt;
    await pause();
    await prepareIndex(ctx, pause, wanted);
    const vss = ctx.configs.virtualServices;
    for (let i = 0; i < vss.length && wanted(); i++) {
      specSourceLabelKeys(vss[i].spec);
      if (i % 256 === 255) await pause();
    }
    // invalidate() came meanwhile (the next read rebuilds), or a read after it built a context
    // as new as this one or newer: keep that
    if (!wanted()) return false;
    // endpoints changed meanwhile: the context in force has them, this one must too (correct,
    // if no longer indexed ahead)
    if (endpoints !== this.#endpointUpdates) {
      ctx = { ...ctx, instances: this.#registry.instances() };
    }
    this.#install(ctx, builtAt);
    this.#currentMemo();
    return true;
  }

  /** Drops cache entries no client holds (the new context's are added as they are built). */
  #gc(): void {
    this.#replaced.clear();
    const keep = new Set(this.referencedKeys());
    for (const t of Object.values(TYPE_URLS)) {
      for (const k of this.#cache.keys(t)) if (!keep.has(`${t} ${k}`)) this.#cache.delete(t, k);
    }
  }

  #currentMemo(): Memo {
    const ctx = this.context();
    if (this.#memo?.ctx === ctx) return this.#memo;
    this.conflicts(); // logs new conflicts once per context, scraped or not
    const servicesByHost = new Map<string, Service[]>();
    for (const s of ctx.services) {
      const l = servicesByHost.get(s.hostname);
      if (l) l.push(s);
      else servicesByHost.set(s.hostname, [s]);
    }
    const vss = [...ctx.configs.virtualServices, ...ingressesToConfigs(ctx).virtualServices];
    return this.#memo = {
      ctx,
      shape: ctx,
      instancesAt: instancesAt(ctx),
      servicesByHost,
      sourceLabelKeys: sourceLabelKeys(vss),
      sharedListeners: new Map(),
      listenerViews: new Map(),
      clusterViews: new Map(),
      apiListeners: new Map(),
      routes: new Map(),
      eds: new Map(),
      edsNames: new Map(),
      edsViews: new WeakMap(),
      routeViews: new Map(),
    };
  }

  /**
   * Every config object (for /debug/configz), then the Gateway and VirtualService generated from
   * the selected Ingress objects (`mesh-system/mesh-autogenerated-k8s-ingress`).
   */
  configs(): ConfigObject[] {
    const derived = ingressesToConfigs(this.context());
    return [...this.#configs.all(), ...derived.gateways, ...derived.virtualServices];
  }

  /**
   * The outbound listener conflicts of the current context (a TCP port without an address of its
   * own taking `0.0.0.0_<port>` from the HTTP services of that port). A new conflict is logged
   * once (warning); one that went away may be logged again when it comes back.
   */
  conflicts(): OutboundListenerConflict[] {
    const ctx = this.context();
    if (this.#conflicts?.ctx === ctx) return this.#conflicts.list;
    const list = outboundListenerConflicts(ctx);
    const keys = new Set(list.map((c) => JSON.stringify(c)));
    for (const c of list) {
      const k = JSON.stringify(c);
      if (!this.#conflictsLogged.has(k)) this.#log.warn(describeConflict(c));
    }
    this.#conflictsLogged = keys;
    this.#conflicts = { ctx, list };
    return list;
  }

  /** Counts for the gauges. */
  counts(): ContextCounts {
    const ctx = this.context();
    const configsByKind: Record<string, number> = {};
    for (const o of this.#configs.all()) configsByKind[o.kind] = (configsByKind[o.kind] ?? 0) + 1;
    return {
      services: ctx.services.length,
      virtualServices: ctx.configs.virtualServices.length,
      configsByKind,
      conflictsTcpOverHttp: this.conflicts().length,
    };
  }

  #entry(typeUrl: string, name: string, obj: XdsResource): CachedResource {
    const bytes = encodeAny(typeUrl, obj).value;
    this.#stats.encoded++;
    return this.#cache.set(typeUrl, name, bytes, `${name}|${contentVersion(bytes)}`);
  }

  /** Encodes resources into a view (later duplicates of a name are dropped, as generate does). */
  #view(typeUrl: string, objs: readonly XdsResource[], refs: readonly string[]): View {
    const map = new Map<string, CachedResource>();
    for (const o of objs) if (!map.has(o.name)) map.set(o.name, this.#entry(typeUrl, o.name, o));
    this.#stats.views++;
    return { map, refs };
  }

  /** Keeps the previous generation's view object when its content is unchanged. */
  #keep(prev: View | undefined, next: View): View {
    if (!prev) return next;
    const map = stable(prev.map, next.map);
    return map === prev.map && prev.refs.join("\n") === next.refs.join("\n") ? prev : next;
  }

  /** A sidecar's own instances that are not UDP (what inbound clusters and listeners use). */
  #own(m: Memo, proxy: Proxy): ServiceInstance[] {
    if (proxy.type !== "sidecar") return [];
    return m.instancesAt(proxy.ip).filter((i) => i.servicePort.protocol !== "UDP");
  }

  /**
   * A context with only the proxy's own instances and services and the configs inbound resources
   * read (DestinationRules, Policies, ServiceRoles and bindings): generating from it yields the
   * proxy's inbound resources at the cost of its own instances, not of the mesh.
   */
  #inboundContext(m: Memo, own: readonly ServiceInstance[]): PushContext {
    const hosts = new Set(own.map((i) => i.hostname));
    const c = m.ctx.configs;
    return {
      services: [...hosts].flatMap((h) => m.servicesByHost.get(h) ?? []),
      instances: [...own],
      configs: {
        ...emptyPushConfigs(),
        destinationRules: c.destinationRules,
        serviceEntries: [],
        policies: c.policies,
        serviceRoles: c.serviceRoles,
        serviceRoleBindings: c.serviceRoleBindings,
        peerAuthentications: c.peerAuthentications,
        authorizationPolicies: c.authorizationPolicies,
        requestAuthentications: c.requestAuthentications,
      },
      meshConfig: m.ctx.meshConfig,
      domain: m.ctx.domain,
    };
  }

  #sharedProxy(metadata: Record<string, unknown> = {}): Proxy {
    return { type: "sidecar", ip: SHARED_IP, id: "", domain: "", metadata };
  }

  /** What a proxy's clusters depend on: the context and the shape of its own instances. */
  #clusterView(m: Memo, proxy: Proxy): View {
    // what the proxy's Sidecar, exportTo and DestinationRule selectors let it see
    const scope = scopeFor(m.ctx, proxy);
    const own = ingressInstances(this.#own(m, proxy), scope.sidecar);
    // Clients that crash on ring hash get their own views (round robin in its place), so do
    // proxyless gRPC clients (TLS from the bootstrap's certificate provider) and proxies whose
    // certificates are not in /etc/certs (node metadata CERT_DIR).
    const proxyless = isProxyless(proxy);
    const dir = certDirOf(proxy);
    const compat = (scope.key ? `scope=${scope.key} ` : "") +
      (ringHashCrashes(proxy.client) ? "no-ring-hash " : "") +
      (proxyless ? "grpc " : "") + (dir ? `certs=${dir} ` : "");
    // a Sidecar's ingress endpoints may name the proxy's own IP (`0.0.0.0:<port>`)
    const key = compat + (own.length ? shapeKey(own) : "") +
      (own.length && hasIngress(scope.sidecar) ? ` ip=${proxy.ip}` : "");
    const hit = m.clusterViews.get(key);
    if (hit) return hit;
    let v: View;
    const shared = m.clusterViews.get(compat) ?? (() => {
      const sp = this.#sharedProxy({
        ...(dir ? { [CERT_DIR_METADATA_KEY]: dir } : {}),
        ...(proxyless ? { GENERATOR: "grpc" } : {}),
      });
      if (ringHashCrashes(proxy.client) || proxyless) sp.client = proxy.client;
      const all = buildClusters(scope.ctx, sp);
      const sv = this.#keep(
        this.#prev?.clusterViews.get(compat),
        this.#view(TYPE_URLS.cluster, all, edsRefs(all)),
      );
      m.clusterViews.set(compat, sv);
      return sv;
    })();
    if (!own.length) v = shared;
    else {
      const inbound = withIngressEndpoints(
        buildClusters(this.#inboundContext(m, own), proxy).filter((c) =>
          c.name.startsWith("inbound|")
        ),
        own,
        scope.sidecar,
        proxy.ip,
      );
      const part = this.#view(TYPE_URLS.cluster, inbound, edsRefs(inbound));
      v = { map: new LayeredMap(part.map, shared.map), refs: [...part.refs, ...shared.refs] };
    }
    m.clusterViews.set(key, v);
    return v;
  }

  /**
   * What a proxy's listeners depend on. Gateways: type and labels (Gateway selection). Sidecars:
   * TPROXY interception (capture listener), plus, for own instances, the IP and their shape.
   */
  #listenerView(m: Memo, proxy: Proxy): View {
    if (proxy.type !== "sidecar") {
      const key = `g ${proxy.type} ${labelsKey(proxyLabels(proxy))}`;
      let v = m.listenerViews.get(key);
      if (!v) {
        const ls = buildListeners(m.ctx, proxy);
        const why = ls.length ? undefined : unselectedGatewayReason(m.ctx, proxy);
        if (why && !this.#unselectedLogged.has(key)) {
          this.#unselectedLogged.add(key);
          this.#log.warn(why);
        }
        v = this.#keep(
          this.#prev?.listenerViews.get(key),
          this.#view(TYPE_URLS.listener, ls, routeRefs(ls)),
        );
        m.listenerViews.set(key, v);
      }
      return v;
    }
    const tproxy = proxy.metadata?.["INTERCEPTION_MODE"] === "TPROXY";
    const dir = certDirOf(proxy);
    const scope = scopeFor(m.ctx, proxy);
    const sharedKey = `${tproxy} ${dir ?? ""}${scope.key ? ` scope=${scope.key}` : ""}`;
    let shared = m.sharedListeners.get(sharedKey);
    if (!shared) {
      const ls = buildListeners(
        scope.ctx,
        this.#sharedProxy({
          ...(tproxy ? { INTERCEPTION_MODE: "TPROXY" } : {}),
          ...(dir ? { [CERT_DIR_METADATA_KEY]: dir } : {}),
        }),
      );
      shared = this.#keep(
        this.#prev?.sharedListeners.get(sharedKey),
        this.#view(TYPE_URLS.listener, ls, routeRefs(ls)),
      );
      m.sharedListeners.set(sharedKey, shared);
    }
    const own = ingressInstances(this.#own(m, proxy), scope.sidecar).filter((i) =>
      m.servicesByHost.has(i.hostname)
    );
    if (!own.length) return shared;
    const key = `s ${sharedKey} ${proxy.ip} ${shapeKey(own)}`;
    let v = m.listenerViews.get(key);
    if (!v) {
      const inbound = buildListeners(this.#inboundContext(m, own), proxy).filter((l) =>
        l.traffic_direction === "INBOUND"
      );
      const part = this.#view(TYPE_URLS.listener, inbound, routeRefs(inbound));
      v = {
        map: new LayeredMap(part.map, shared.map),
        refs: [...new Set([...part.refs, ...shared.refs])],
      };
      m.listenerViews.set(key, v);
    }
    return v;
  }

  #apiListener(m: Memo, proxy: Proxy, name: string): CachedResource | null {
    // server listeners (gRFC A36) depend on the proxy's IP (wildcard addresses) and domain
    const server = isServerListenerName(name);
    const scope = server ? undefined : scopeFor(m.ctx, proxy);
    const key = server
      ? `server ${proxy.ip} ${proxy.domain} ${name}`
      : `${scope!.key} ${proxy.domain} ${name}`;
    let e = m.apiListeners.get(key);
    if (e === undefined) {
      const api = server
        ? buildServerListener(m.ctx, proxy, name)
        : buildApiListener(scope!.ctx, proxy, name);
      e = api ? this.#entry(TYPE_URLS.listener, name, api) : null;
      m.apiListeners.set(key, e);
    }
    return e;
  }

  /**
   * Route configurations depend on the proxy type, its domain (short-name domains, proxyless
   * targets) and labels: for sidecars only those `sourceLabels` match on; for gateways all of them
   * (Gateway selection).
   */
  #route(m: Memo, proxy: Proxy, name: string): CachedResource | null {
    const labels = proxyLabels(proxy);
    const lk = proxy.type === "sidecar" ? labelsKey(labels, m.sourceLabelKeys) : labelsKey(labels);
    // header matchers are written in the form the client reads (string_match or the older fields)
    const form = headerMatcherForm(proxy.client);
    const scope = scopeFor(m.ctx, proxy);
    const key = `${scope.key} ${proxy.type} ${proxy.domain} ${lk} ${form} ${name}`;
    let e = m.routes.get(key);
    if (e === undefined) {
      const [r] = buildRoutes(scope.ctx, proxy, [name]);
      e = r ? this.#entry(TYPE_URLS.route, name, r) : null;
      m.routes.set(key, e);
    }
    return e;
  }

  #endpoints(m: Memo, name: string): CachedResource | null {
    let e = m.eds.get(name);
    if (e === undefined) {
      const c = parseClusterName(name);
      const key = c && c.direction === "outbound" ? `${c.host}|${c.port}` : undefined;
      if (key !== undefined) {
        const names = m.edsNames.get(key);
        if (names) names.add(name);
        else m.edsNames.set(key, new Set([name]));
      }
      const changed = key !== undefined && m.edsChanged?.keys.has(key);
      // only real clusters get an assignment (checked against the context that holds the
      // services and DestinationRules; endpoint-only updates keep it)
      e = isKnownCluster(m.shape, name)
        ? this.#entry(
          TYPE_URLS.endpoint,
          name,
          loadAssignment(changed ? m.edsChanged!.ctx : m.ctx, name),
        )
        : null;
      // an assignment back to an earlier content is in use again: not to be collected
      if (e && this.#replaced.size) this.#replaced.delete(`${name}|${e.version}`);
      m.eds.set(name, e);
    }
    return e;
  }

  /** The plain resource objects a proxy sees (REST xDS, debug pages). */
  resourceObjects(proxy: Proxy, typeUrl: string, names: readonly string[] | null): XdsResource[] {
    const full = this.context();
    // outbound as the proxy's Sidecar and exportTo let it see; inbound as its ingress admits
    const pc = proxyContexts(full, proxy);
    const ctx = pc.scope.ctx;
    const merged = (build: (c: PushContext) => XdsResource[]) => buildScoped(pc, build);
    switch (typeUrl) {
      case TYPE_URLS.cluster: {
        const all = withIngressEndpoints(
          merged((c) => buildClusters(c, proxy)),
          pc.own,
          pc.scope.sidecar,
          proxy.ip,
        );
        return names === null ? all : all.filter((c) => names.includes(c.name));
      }
      case TYPE_URLS.listener: {
        const all = merged((c) => buildListeners(c, proxy));
        if (names === null) return all;
        return names.flatMap((n) => {
          const l = all.find((x) => x.name === n) ??
            (isServerListenerName(n)
              ? buildServerListener(full, proxy, n)
              : buildApiListener(ctx, proxy, n));
          return l ? [l] : [];
        });
      }
      case TYPE_URLS.route:
        return buildRoutes(
          ctx,
          proxy,
          names === null ? routeRefs(merged((c) => buildListeners(c, proxy))) : [...names],
        );
      case TYPE_URLS.endpoint:
        return buildEndpoints(
          full,
          names === null ? edsRefs(merged((c) => buildClusters(c, proxy))) : [...names],
        );
      default:
        return [];
    }
  }

  /**
   * The generator of the ADS server: what `proxy` sees of `typeUrl` (`names` null = wildcard),
   * as shared cache entries. Proxies with the same inputs get the same map object.
   */
  resourcesFor(proxy: Proxy, typeUrl: string, names: readonly string[] | null): ResourceMap {
    const m = this.#currentMemo();
    switch (typeUrl) {
      case TYPE_URLS.cluster:
        return pick(this.#clusterView(m, proxy).map, names);
      case TYPE_URLS.listener: {
        // proxyless gRPC nodes ask only for api and server listeners by name: no sidecar view
        const view = names !== null && isProxyless(proxy)
          ? undefined
          : this.#listenerView(m, proxy);
        if (names === null) return view!.map;
        const out = new Map<string, ResourceEntry>();
        for (const n of names) {
          const e = view?.map.get(n) ?? this.#apiListener(m, proxy, n);
          if (e) out.set(n, e);
        }
        return out;
      }
      case TYPE_URLS.route: {
        const wanted = names ?? this.#listenerView(m, proxy).refs;
        const out = new Map<string, CachedResource>();
        let key = "";
        for (const n of wanted) {
          const e = this.#route(m, proxy, n);
          if (e) {
            out.set(n, e);
            key += e.version + "\n";
          }
        }
        const hit = m.routeViews.get(key) ?? this.#prev?.routeViews.get(key);
        if (hit) {
          m.routeViews.set(key, hit);
          return hit;
        }
        m.routeViews.set(key, out);
        return out;
      }
      case TYPE_URLS.endpoint: {
        const wanted = names ?? this.#clusterView(m, proxy).refs;
        const hit = m.edsViews.get(wanted);
        if (hit) return hit;
        const out = new Map<string, CachedResource>();
        for (const n of wanted) {
          const e = this.#endpoints(m, n);
          if (e) out.set(n, e);
        }
        const prev = this.#prev?.edsViews.get(wanted);
        const v = stable(prev, out);
        m.edsViews.set(wanted, v);
        return v;
      }
      default:
        return new Map();
    }
  }
}

function pick<E>(
  m: ReadonlyMap<string, E>,
  names: readonly string[] | null,
): ReadonlyMap<string, E> {
  if (names === null) return m;
  const out = new Map<string, E>();
  for (const n of names) {
    const e = m.get(n);
    if (e) out.set(n, e);
  }
  return out;
}

/** The instances at an address in `ctx` (its index's, built or derived at the first call). */
function instancesAt(ctx: PushContext): (ip: string) => readonly ServiceInstance[] {
  return (ip) => indexOf(ctx).instancesByIp.get(ip) ?? [];
}

/** `host|port` keys of instances, each with a stable fingerprint of its instance list. */
export function instanceFingerprints(instances: readonly ServiceInstance[]): Map<string, string> {
  const groups = new Map<string, string[]>();
  for (const i of instances) {
    const k = `${i.hostname}|${i.servicePort.port}`;
    const s = instanceSignature(i);
    const g = groups.get(k);
    if (g) g.push(s);
    else groups.set(k, [s]);
  }
  return new Map([...groups].map(([k, g]) => [k, g.sort().join("\n")]));
}

/** Keys whose fingerprint differs between two {@link instanceFingerprints} results. */
export function changedKeys(a: Map<string, string>, b: Map<string, string>): Set<string> {
  const out = new Set<string>();
  for (const [k, v] of a) if (b.get(k) !== v) out.add(k);
  for (const k of b.keys()) if (!a.has(k)) out.add(k);
  return out;
}

/** Cluster names among `watched` whose `host|port` is in `changed` (outbound clusters only). */
export function affectedClusters(watched: Iterable<string>, changed: Set<string>): string[] {
  const out: string[] = [];
  for (const name of watched) {
    const k = parseClusterName(name);
    if (k && k.direction === "outbound" && changed.has(`${k.host}|${k.port}`)) out.push(name);
  }
  return out.sort();
}

/**
 * What discovery knows, kept current: the config snapshot (from the store's watch), the
 * aggregate registry, the mesh configuration; the {@link PushContext} built from them (rebuilt
 * lazily after a change); and the generator the ADS server calls (`resourcesFor`), which encodes
 * each proxy's view once per change into a shared {@link ResourceCache}.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";
import type { ConfigObject, MeshConfig, Service, ServiceInstance } from "../../lib/model/mod.ts";
import { parseDurationMs } from "../../lib/model/mod.ts";
import type { ConfigStore, StoreEvent } from "../../lib/store/mod.ts";
import {
  buildApiListener,
  buildClusters,
  buildEndpoints,
  buildListeners,
  buildRoutes,
  encodeAny,
  parseClusterName,
  type Proxy,
  type PushContext,
  TYPE_URLS,
  type XdsMeshConfig,
  type XdsResource,
} from "../../lib/xds/mod.ts";
import { contentVersion, type ResourceCache, type ResourceMap } from "../../lib/xds/server/mod.ts";

/** A registry as discovery reads it (the aggregate), with optional Ingress objects. */
export interface DiscoveryRegistry {
  services(): Service[];
  instances(): ServiceInstance[];
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

  /** Starts watching `store`, lists every type, and calls `onChange` after each later change. */
  async open(store: ConfigStore, onChange: (ev: StoreEvent) => void): Promise<void> {
    const seen = new Set<string>();
    this.#watch = store.watch((ev) => {
      const k = key(ev.object);
      seen.add(k);
      if (ev.type === "DELETED") this.#objects.delete(k);
      else this.#objects.set(k, ev.object);
      onChange(ev);
    });
    for (const schema of store.schemas) {
      for (const o of await store.list(schema.type)) {
        if (!seen.has(key(o))) this.#objects.set(key(o), o);
      }
    }
  }

  /** Every object, sorted by kind, namespace, name. */
  all(): ConfigObject[] {
    return [...this.#objects.entries()].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map((
      [, o],
    ) => o);
  }

  /** Objects of one kind (`VirtualService`). */
  byKind(kind: string): ConfigObject[] {
    return this.all().filter((o) => o.kind === kind);
  }

  /** Stops watching. */
  close(): void {
    this.#watch?.close();
  }
}

interface ProxyView {
  generation: number;
  clusters?: ResourceMap;
  listeners?: Map<string, XdsResource>;
  listenerEntries?: ResourceMap;
  routes: Map<string, ReturnType<ResourceCache["set"]> | null>;
}

/** Counts of the push context (for metrics). */
export interface ContextCounts {
  services: number;
  virtualServices: number;
  configsByKind: Record<string, number>;
}

/**
 * Holds the current push context and generates per-proxy views. Call {@link invalidate} after
 * any change; the next read rebuilds the context.
 */
export class DiscoveryModel {
  readonly #registry: DiscoveryRegistry;
  readonly #configs: ConfigSnapshot;
  readonly #mesh: XdsMeshConfig;
  readonly #domain: string;
  readonly #cache: ResourceCache;
  readonly #log: Logger;
  #ctx?: PushContext;
  #generation = 0;
  #views = new WeakMap<Proxy, ProxyView>();
  #eds = new Map<string, ReturnType<ResourceCache["set"]>>();
  /** Called before a rebuild with the cache keys still referenced by clients (kept). */
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

  /** Marks the context stale (rebuilt on next use). */
  invalidate(): void {
    this.#ctx = undefined;
  }

  /** Number of context rebuilds so far. */
  get generation(): number {
    return this.#generation;
  }

  /** The current push context (rebuilt when stale). */
  context(): PushContext {
    if (this.#ctx) return this.#ctx;
    const byKind = (k: string) => this.#configs.byKind(k);
    this.#ctx = {
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
        ingresses: this.#registry.ingresses?.() ?? [],
      },
      meshConfig: this.#mesh,
      domain: this.#domain,
    };
    this.#generation++;
    this.#views = new WeakMap();
    this.#eds = new Map();
    this.#gc();
    return this.#ctx;
  }

  /** Drops cache entries no client holds and the new context does not produce. */
  #gc(): void {
    const keep = new Set(this.referencedKeys());
    for (const t of Object.values(TYPE_URLS)) {
      for (const k of this.#cache.keys(t)) if (!keep.has(`${t} ${k}`)) this.#cache.delete(t, k);
    }
  }

  /** Every config object (for /debug/configz). */
  configs(): ConfigObject[] {
    return this.#configs.all();
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
    };
  }

  #entry(typeUrl: string, name: string, obj: XdsResource) {
    const bytes = encodeAny(typeUrl, obj).value;
    return this.#cache.set(typeUrl, name, bytes, `${name}|${contentVersion(bytes)}`);
  }

  #view(proxy: Proxy): ProxyView {
    this.context(); // rebuilds (and forgets old views) when stale
    let v = this.#views.get(proxy);
    if (!v || v.generation !== this.#generation) {
      v = { generation: this.#generation, routes: new Map() };
      this.#views.set(proxy, v);
    }
    return v;
  }

  /** The plain resource objects a proxy sees (REST xDS, debug pages). */
  resourceObjects(proxy: Proxy, typeUrl: string, names: readonly string[] | null): XdsResource[] {
    const ctx = this.context();
    switch (typeUrl) {
      case TYPE_URLS.cluster: {
        const all = buildClusters(ctx, proxy);
        return names === null ? all : all.filter((c) => names.includes(c.name));
      }
      case TYPE_URLS.listener: {
        const all = buildListeners(ctx, proxy);
        if (names === null) return all;
        return names.flatMap((n) => {
          const l = all.find((x) => x.name === n) ?? buildApiListener(ctx, proxy, n);
          return l ? [l] : [];
        });
      }
      case TYPE_URLS.route:
        return buildRoutes(ctx, proxy, names === null ? this.#routeNames(ctx, proxy) : [...names]);
      case TYPE_URLS.endpoint:
        return buildEndpoints(
          ctx,
          names === null ? this.#edsNames(ctx, proxy) : [...names],
        );
      default:
        return [];
    }
  }

  /** Route names used by the proxy's listeners (RDS over ADS). */
  #routeNames(ctx: PushContext, proxy: Proxy): string[] {
    const names = new Set<string>();
    const visit = (o: unknown): void => {
      if (!o || typeof o !== "object") return;
      if (Array.isArray(o)) return o.forEach(visit);
      const r = o as Record<string, unknown>;
      const rds = r.rds as { route_config_name?: string } | undefined;
      if (rds?.route_config_name) names.add(rds.route_config_name);
      for (const v of Object.values(r)) visit(v);
    };
    visit(buildListeners(ctx, proxy));
    return [...names];
  }

  /** EDS cluster names of the proxy's clusters. */
  #edsNames(ctx: PushContext, proxy: Proxy): string[] {
    return buildClusters(ctx, proxy).filter((c) => c.type === "EDS").map((c) =>
      c.eds_cluster_config?.service_name ?? c.name
    );
  }

  /**
   * The generator of the ADS server: what `proxy` sees of `typeUrl` (`names` null = wildcard),
   * as shared cache entries.
   */
  resourcesFor(proxy: Proxy, typeUrl: string, names: readonly string[] | null): ResourceMap {
    const view = this.#view(proxy);
    const ctx = this.context();
    switch (typeUrl) {
      case TYPE_URLS.cluster: {
        view.clusters ??= new Map(
          buildClusters(ctx, proxy).map((c) => [c.name, this.#entry(typeUrl, c.name, c)]),
        );
        return pick(view.clusters, names);
      }
      case TYPE_URLS.listener: {
        if (!view.listenerEntries) {
          const ls = buildListeners(ctx, proxy);
          view.listeners = new Map(ls.map((l) => [l.name, l]));
          view.listenerEntries = new Map(ls.map((l) => [l.name, this.#entry(typeUrl, l.name, l)]));
        }
        if (names === null) return view.listenerEntries;
        const out = new Map();
        for (const n of names) {
          let e = view.listenerEntries.get(n);
          if (!e) {
            const api = buildApiListener(ctx, proxy, n);
            if (api) {
              e = this.#entry(typeUrl, n, api);
              (view.listenerEntries as Map<string, typeof e>).set(n, e);
            }
          }
          if (e) out.set(n, e);
        }
        return out;
      }
      case TYPE_URLS.route: {
        const wanted = names ?? this.#routeNames(ctx, proxy);
        const out = new Map();
        for (const n of wanted) {
          let e = view.routes.get(n);
          if (e === undefined) {
            const [r] = buildRoutes(ctx, proxy, [n]);
            e = r ? this.#entry(typeUrl, n, r) : null;
            view.routes.set(n, e);
          }
          if (e) out.set(n, e);
        }
        return out;
      }
      case TYPE_URLS.endpoint: {
        const wanted = names ?? this.#edsNames(ctx, proxy);
        const out = new Map();
        for (const n of wanted) {
          let e = this.#eds.get(n);
          if (!e) {
            const [cla] = buildEndpoints(ctx, [n]);
            e = this.#entry(typeUrl, n, cla);
            this.#eds.set(n, e);
          }
          out.set(n, e);
        }
        return out;
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

/** `host|port` keys of instances, each with a stable fingerprint of its instance list. */
export function instanceFingerprints(instances: readonly ServiceInstance[]): Map<string, string> {
  const groups = new Map<string, string[]>();
  for (const i of instances) {
    const k = `${i.hostname}|${i.servicePort.port}`;
    const s = JSON.stringify([i.address, i.port, i.labels, i.locality, i.serviceAccount]);
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

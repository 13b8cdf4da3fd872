/**
 * The Orchestrator registry's cache: the watched objects by kind, the indexes conversion reads,
 * and the converted services with the tokens they depend on, so that a change reconverts only
 * the services it touches.
 * @module
 */
import {
  type ClusterObjects,
  type Converted,
  type ConvertOptions,
  convertWithInstances,
} from "./orchestrator_convert.ts";
import {
  type KEndpoints,
  keyOf,
  type KNode,
  type KPod,
  type KService,
  type KSlice,
  type Meta,
  SERVICE_NAME_LABEL,
} from "./orchestrator_objects.ts";

/** The collections the registry watches. */
export type Kind = "services" | "endpoints" | "slices" | "pods" | "nodes";

const addTo = <K, V>(m: Map<K, Set<V>>, k: K, v: V) => {
  let s = m.get(k);
  if (!s) m.set(k, s = new Set());
  s.add(v);
};
const removeFrom = <K, V>(m: Map<K, Set<V>>, k: K, v: V) => {
  const s = m.get(k);
  if (s?.delete(v) && s.size === 0) m.delete(k);
};

function podIps(p: KPod | undefined): string[] {
  if (!p) return [];
  const ips = new Set<string>();
  if (p.status?.podIP) ips.add(p.status.podIP);
  for (const x of p.status?.podIPs ?? []) if (x.ip) ips.add(x.ip);
  return [...ips];
}

function sliceService(s: KSlice | undefined): string | undefined {
  const svc = s?.metadata?.labels?.[SERVICE_NAME_LABEL];
  return svc ? `${s?.metadata?.namespace ?? ""}/${svc}` : undefined;
}

/** Watched objects, their indexes, and the converted services kept current. */
export class ClusterCache implements ClusterObjects {
  // ---- raw caches and indexes
  readonly services = new Map<string, KService>();
  readonly endpoints = new Map<string, KEndpoints>();
  readonly slices = new Map<string, KSlice>();
  readonly slicesByService = new Map<string, Set<string>>();
  readonly pods = new Map<string, KPod>();
  readonly podsByIp = new Map<string, Set<string>>();
  readonly nodes = new Map<string, KNode>();
  // ---- conversion
  /** Converted services by `<namespace>/<name>`. */
  readonly converted = new Map<string, Converted>();
  /** token → keys of the services that depend on it. */
  readonly #depIndex = new Map<string, Set<string>>();
  /** Keys of the services to reconvert. */
  readonly #dirty = new Set<string>();
  readonly #convert: ConvertOptions;

  constructor(convert: ConvertOptions) {
    this.#convert = convert;
  }

  /** Applies one watch event (or list difference) of `kind`, marking the services affected. */
  apply(kind: Kind, type: string, o: unknown): void {
    switch (kind) {
      case "services":
        return this.#keyed(this.services, type, o as KService);
      case "endpoints":
        return this.#keyed(this.endpoints, type, o as KEndpoints);
      case "slices":
        return this.#slice(type, o as KSlice);
      case "pods":
        return this.#pod(type, o as KPod);
      case "nodes": {
        const n = o as KNode;
        const name = n.metadata?.name ?? "";
        if (type === "DELETED") this.nodes.delete(name);
        else this.nodes.set(name, n);
        return this.#markToken(`node:${name}`);
      }
    }
  }

  /** Replaces a whole collection after a (re)list: applies only the differences. */
  replaceAll(kind: Kind, items: unknown[]): void {
    const store: Map<string, { metadata?: Meta }> = this[kind];
    const key = (o: { metadata?: Meta }) =>
      kind === "nodes" ? o.metadata?.name ?? "" : keyOf(o.metadata);
    const seen = new Set<string>();
    for (const raw of items) {
      const o = raw as { metadata?: Meta };
      const k = key(o);
      seen.add(k);
      const old = store.get(k);
      if (old && old.metadata?.resourceVersion === o.metadata?.resourceVersion) continue;
      this.apply(kind, old ? "MODIFIED" : "ADDED", o);
    }
    for (const [k, old] of [...store]) if (!seen.has(k)) this.apply(kind, "DELETED", old);
  }

  /** Marks every service for reconversion (the first load). */
  markAll(): void {
    for (const k of this.services.keys()) this.#dirty.add(k);
  }

  /**
   * Reconverts the marked services; returns which kind of change happened (undefined: none) and
   * the hostnames whose instances changed.
   */
  recompute(): { kind: "services" | "endpoints" | undefined; hosts: Set<string> } {
    let servicesChanged = false;
    const hosts = new Set<string>();
    for (const k of this.#dirty) {
      const old = this.converted.get(k);
      const next = convertWithInstances(this, k, this.#convert);
      for (const t of old?.deps ?? []) removeFrom(this.#depIndex, t, k);
      if (next) {
        for (const t of next.deps) addTo(this.#depIndex, t, k);
        this.converted.set(k, next);
      } else this.converted.delete(k);
      if ((old?.json ?? "") !== (next?.json ?? "")) servicesChanged = true;
      if ((old?.instJson ?? "") !== (next?.instJson ?? "")) {
        for (const c of [old, next]) if (c) hosts.add(c.service.hostname);
      }
    }
    this.#dirty.clear();
    return { kind: servicesChanged ? "services" : hosts.size ? "endpoints" : undefined, hosts };
  }

  #keyed<T extends { metadata?: Meta }>(map: Map<string, T>, type: string, o: T): void {
    const k = keyOf(o.metadata);
    if (type === "DELETED") map.delete(k);
    else map.set(k, o);
    this.#dirty.add(k);
  }

  #slice(type: string, o: KSlice): void {
    const k = keyOf(o.metadata);
    const old = sliceService(this.slices.get(k));
    if (old) {
      removeFrom(this.slicesByService, old, k);
      this.#dirty.add(old);
    }
    if (type === "DELETED") this.slices.delete(k);
    else {
      this.slices.set(k, o);
      const svc = sliceService(o);
      if (svc) {
        addTo(this.slicesByService, svc, k);
        this.#dirty.add(svc);
      }
    }
  }

  #pod(type: string, o: KPod): void {
    const k = keyOf(o.metadata);
    for (const ip of podIps(this.pods.get(k))) {
      removeFrom(this.podsByIp, ip, k);
      this.#markToken(`ip:${ip}`);
    }
    if (type === "DELETED") this.pods.delete(k);
    else {
      this.pods.set(k, o);
      for (const ip of podIps(o)) {
        addTo(this.podsByIp, ip, k);
        this.#markToken(`ip:${ip}`);
      }
    }
    this.#markToken(`pod:${k}`);
  }

  #markToken(token: string): void {
    for (const k of this.#depIndex.get(token) ?? []) this.#dirty.add(k);
  }
}

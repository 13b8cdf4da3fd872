/**
 * Indexes over a PushContext, built once per context object (cached in a WeakMap) so that each
 * generator call is proportional to what it emits, not to the size of the mesh.
 * @module
 */

import type { ConfigObject, Service, ServiceInstance } from "../../model/types.ts";
import { instanceSignature } from "../../model/instance.ts";
import { groupBy } from "../../model/object.ts";
import type { PushContext } from "../types.ts";
import { cmp, resolveGatewayRef, resolveShortName } from "./util.ts";
import { ingressesToConfigs } from "./ingress.ts";

/** A VirtualService with its hosts and gateways expanded to FQDNs. */
export interface VsEntry {
  config: ConfigObject;
  // deno-lint-ignore no-explicit-any
  spec: any;
  namespace: string;
  hosts: string[];
  /** Expanded gateway names; `mesh` stays `mesh`. */
  gateways: string[];
}

/** A Gateway with its expanded name. */
export interface GatewayEntry {
  config: ConfigObject;
  // deno-lint-ignore no-explicit-any
  spec: any;
  /** `<name>.<namespace>.svc.<domain>` */
  fqdn: string;
  /** True for gateways generated from Ingress objects (also apply to `ingress` proxies). */
  fromIngress: boolean;
}

/** The indexes of one push context. */
export interface PushIndex {
  services: Service[];
  serviceByHost: Map<string, Service>;
  instancesByHostPort: Map<string, ServiceInstance[]>;
  /** The instances at an address, in context order (a Map, or a derived index's lookup). */
  instancesByIp: InstancesAt;
  /** Services sorted by hostname, per HTTP-or-not port number. */
  servicesByPort: Map<number, Service[]>;
  destinationRuleByHost: Map<string, ConfigObject>;
  virtualServices: VsEntry[];
  /** VirtualServices bound to `mesh`, by expanded host. */
  meshVsByHost: Map<string, VsEntry[]>;
  gateways: GatewayEntry[];
}

/** The instances at each address. */
export interface InstancesAt {
  get(ip: string): ServiceInstance[] | undefined;
}

const cache = new WeakMap<PushContext, PushIndex>();

/**
 * How a derived index finds the instances at an address: `root` is the address index of an
 * earlier context, right for every address but those in `touched` (the addresses of every
 * instance that changed since), for which `full` (built at the first such read) answers.
 */
interface DerivedAt {
  root: ReadonlyMap<string, ServiceInstance[]> | undefined;
  touched: ReadonlySet<string>;
  full?: Map<string, ServiceInstance[]>;
}
const derivedAt = new WeakMap<PushIndex, DerivedAt>();

/** Addresses changed since the root past which a derived index builds its own at first read. */
const MAX_TOUCHED = 4096;

/** Config ordering: oldest first, then namespace/name. */
export function configOrder(a: ConfigObject, b: ConfigObject): number {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  return cmp(ta, tb) || cmp(a.metadata.namespace ?? "", b.metadata.namespace ?? "") ||
    cmp(a.metadata.name, b.metadata.name);
}

/** `host|port` key. */
export function hostPortKey(host: string, port: number): string {
  return `${host}|${port}`;
}

/** Returns (building once) the indexes of a push context. */
export function indexOf(ctx: PushContext): PushIndex {
  const hit = cache.get(ctx);
  if (hit) return hit;
  const steps = buildIndex(ctx);
  for (let r = steps.next(); !r.done; r = steps.next()) { /* no pause: one synchronous build */ }
  return cache.get(ctx)!;
}

/**
 * Builds the indexes of a push context ahead of its first use, pausing (`pause`) every few
 * hundred objects, so that a context of thousands of configs is indexed without holding the
 * event loop; {@link indexOf} then finds them built. Stops early, leaving nothing cached, when
 * `wanted()` turns false (the context was replaced meanwhile). The same steps as
 * {@link indexOf}, which runs them without pauses.
 */
export async function prepareIndex(
  ctx: PushContext,
  pause: () => Promise<void>,
  wanted: () => boolean = () => true,
): Promise<void> {
  if (cache.has(ctx)) return;
  const steps = buildIndex(ctx);
  for (let r = steps.next(); !r.done; r = steps.next()) {
    await pause();
    if (!wanted()) return;
    if (cache.has(ctx)) return; // indexed meanwhile by a request that could not wait
  }
}

/**
 * Indexes `next`, a context that is `prev` with other instances for the `host|port` keys of
 * `changed` and nothing else (the same services and configs, the other instances in the same
 * order, as registries keep them; `changedInstances` are next's instances of those keys, in
 * next's order), from `prev`'s index: in proportion to the change,
 * not to every instance. The instances at an address come from an earlier index for every
 * address no changed instance had or has since (a proxy's own instances, mostly), else from an
 * address index of `next` built at the first such read. Does nothing when `prev` has no index
 * (the first use of `next` builds one) or `next` has one.
 */
export function deriveIndex(
  prev: PushContext,
  next: PushContext,
  changed: ReadonlySet<string>,
  changedInstances: readonly ServiceInstance[],
): void {
  const base = cache.get(prev);
  if (!base || cache.has(next)) return;
  const instancesByHostPort = new Map(base.instancesByHostPort);
  for (const k of changed) instancesByHostPort.delete(k);
  for (const inst of changedInstances) {
    const k = hostPortKey(inst.hostname, inst.servicePort.port);
    const l = instancesByHostPort.get(k);
    if (l) l.push(inst);
    else instancesByHostPort.set(k, [inst]);
  }
  // the root and the addresses touched since: the base's full index, or what the base had
  const from = derivedAt.get(base);
  let root = from ? from.full ?? from.root : base.instancesByIp as Map<string, ServiceInstance[]>;
  const touched = new Set(from && !from.full && from.root ? from.touched : []);
  if (root) {
    for (const a of changedAddresses(base.instancesByHostPort, instancesByHostPort, changed)) {
      touched.add(a);
    }
    // past the bound, the first read indexes `next` whole (and later derivations root there)
    if (touched.size > MAX_TOUCHED) root = undefined;
  }
  const at: DerivedAt = { root, touched: root ? touched : new Set() };
  const index: PushIndex = {
    services: base.services,
    serviceByHost: base.serviceByHost,
    instancesByHostPort,
    instancesByIp: {
      get(ip) {
        if (at.root && !at.touched.has(ip)) return at.root.get(ip);
        at.full ??= groupBy(next.instances, (i) => i.address);
        return at.full.get(ip);
      },
    },
    servicesByPort: base.servicesByPort,
    destinationRuleByHost: base.destinationRuleByHost,
    virtualServices: base.virtualServices,
    meshVsByHost: base.meshVsByHost,
    gateways: base.gateways,
  };
  derivedAt.set(index, at);
  cache.set(next, index);
}

/**
 * The addresses of the instances of the `changed` keys that are in `before` or `after` but not in
 * both (compared by {@link instanceSignature}, in proportion to those keys' instances).
 */
function* changedAddresses(
  before: ReadonlyMap<string, ServiceInstance[]>,
  after: ReadonlyMap<string, ServiceInstance[]>,
  changed: ReadonlySet<string>,
): Generator<string> {
  for (const k of changed) {
    const gone = groupBy(before.get(k) ?? [], instanceSignature);
    for (const inst of after.get(k) ?? []) {
      const same = gone.get(instanceSignature(inst));
      if (same?.length) same.pop();
      else yield inst.address;
    }
    for (const l of gone.values()) for (const inst of l) yield inst.address;
  }
}

/** Objects handled between two points where {@link prepareIndex} may pause. */
const INDEX_STEP = 256;

/** The steps of an index build: yields between batches, caches the index at the end. */
function* buildIndex(ctx: PushContext): Generator<void, void> {
  const services = [...ctx.services].sort((a, b) => cmp(a.hostname, b.hostname));
  const serviceByHost = new Map<string, Service>();
  for (const s of services) if (!serviceByHost.has(s.hostname)) serviceByHost.set(s.hostname, s);
  const servicesByPort = new Map<number, Service[]>();
  for (const s of serviceByHost.values()) {
    for (const p of s.ports) {
      const list = servicesByPort.get(p.port);
      if (list) list.push(s);
      else servicesByPort.set(p.port, [s]);
    }
  }
  const instancesByHostPort = new Map<string, ServiceInstance[]>();
  const instancesByIp = new Map<string, ServiceInstance[]>();
  yield;
  for (const [n, inst] of ctx.instances.entries()) {
    if (n % INDEX_STEP === INDEX_STEP - 1) yield;
    const k = hostPortKey(inst.hostname, inst.servicePort.port);
    const l = instancesByHostPort.get(k);
    if (l) l.push(inst);
    else instancesByHostPort.set(k, [inst]);
    const li = instancesByIp.get(inst.address);
    if (li) li.push(inst);
    else instancesByIp.set(inst.address, [inst]);
  }
  yield;
  const destinationRuleByHost = new Map<string, ConfigObject>();
  for (const [n, dr] of [...(ctx.configs.destinationRules ?? [])].sort(configOrder).entries()) {
    if (n % INDEX_STEP === INDEX_STEP - 1) yield;
    const spec = dr.spec as { host?: unknown };
    if (typeof spec.host !== "string") continue;
    const host = resolveShortName(spec.host, dr.metadata.namespace ?? "", ctx.domain);
    if (!destinationRuleByHost.has(host)) destinationRuleByHost.set(host, dr);
  }
  yield;
  const derived = ingressesToConfigs(ctx);
  const vsConfigs = [...(ctx.configs.virtualServices ?? []), ...derived.virtualServices].sort(
    configOrder,
  );
  yield;
  const virtualServices: VsEntry[] = [];
  for (const config of vsConfigs) {
    if (virtualServices.length % INDEX_STEP === INDEX_STEP - 1) yield;
    // deno-lint-ignore no-explicit-any
    const spec = config.spec as any;
    const ns = config.metadata.namespace ?? "";
    const hosts = (Array.isArray(spec.hosts) ? spec.hosts : []).filter((h: unknown) =>
      typeof h === "string"
    ).map((h: string) => resolveShortName(h, ns, ctx.domain));
    const gws = Array.isArray(spec.gateways) && spec.gateways.length
      ? spec.gateways.filter((g: unknown) => typeof g === "string")
      : ["mesh"];
    const gateways = gws.map((g: string) => resolveGatewayRef(g, ns, ctx.domain));
    virtualServices.push({ config, spec, namespace: ns, hosts, gateways });
  }
  yield;
  const meshVsByHost = new Map<string, VsEntry[]>();
  for (const vs of virtualServices) {
    if (!vs.gateways.includes("mesh")) continue;
    for (const h of vs.hosts) {
      const l = meshVsByHost.get(h);
      if (l) l.push(vs);
      else meshVsByHost.set(h, [vs]);
    }
  }
  const gateways: GatewayEntry[] = [
    ...[...(ctx.configs.gateways ?? [])].sort(configOrder).map((config) => ({
      config,
      spec: config.spec,
      fqdn: resolveShortName(config.metadata.name, config.metadata.namespace ?? "", ctx.domain),
      fromIngress: false,
    })),
    ...derived.gateways.map((config) => ({
      config,
      spec: config.spec,
      fqdn: resolveShortName(config.metadata.name, config.metadata.namespace ?? "", ctx.domain),
      fromIngress: true,
    })),
  ];
  const index: PushIndex = {
    services,
    serviceByHost,
    instancesByHostPort,
    instancesByIp,
    servicesByPort,
    destinationRuleByHost,
    virtualServices,
    meshVsByHost,
    gateways,
  };
  cache.set(ctx, index);
}

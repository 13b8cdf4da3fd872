/**
 * Orchestrator objects → mesh services and instances (pure): {@link convertService} for one
 * Service, {@link convertWithInstances} for a Service with its endpoints, pods and nodes.
 * @module
 */
import { SELECTOR_ATTRIBUTE, targetPortAttribute } from "./workload_entries.ts";
import type { Service, ServiceInstance, ServicePort } from "../model/types.ts";
import { annotatedServiceAccounts, spiffeId } from "./accounts.ts";
import type {
  EndpointPort,
  KEndpoints,
  KNode,
  KPod,
  KService,
  KSlice,
  ObjectRef,
} from "./orchestrator_objects.ts";
import { protocolFromPortName } from "./protocol.ts";

const AUTH_PREFIXES = ["auth.mesh.io/", "auth.istio.io/"];
const AUTH_VALUES = new Set(["NONE", "MUTUAL_TLS"]);

/** Locality `region/zone` (or whichever is known) from node labels. */
export function nodeLocality(labels: Record<string, string> | undefined): string {
  const l = labels ?? {};
  const region = l["topology.kubernetes.io/region"] ??
    l["failure-domain.beta.kubernetes.io/region"] ?? "";
  const zone = l["topology.kubernetes.io/zone"] ?? l["failure-domain.beta.kubernetes.io/zone"] ??
    "";
  return region && zone ? `${region}/${zone}` : region || zone;
}

/**
 * The attributes that let WorkloadEntries be selected by a Service: its non-empty selector and
 * its numeric target ports by port number (`SELECTOR_ATTRIBUTE`, `targetPortAttribute(port)`).
 */
function selectorAttributes(
  selector: Record<string, string> | undefined,
  ports: readonly { port?: number; targetPort?: number | string }[],
): Record<string, string> {
  if (!selector || typeof selector !== "object" || !Object.keys(selector).length) return {};
  const out: Record<string, string> = { [SELECTOR_ATTRIBUTE]: JSON.stringify(selector) };
  for (const p of ports) {
    if (typeof p.port === "number" && typeof p.targetPort === "number") {
      out[targetPortAttribute(p.port)] = String(p.targetPort);
    }
  }
  return out;
}

/**
 * Converts one orchestrator Service to a mesh service (pure; service accounts from annotations
 * only: the pods' accounts are added by the registry). `warn` receives annotation problems.
 */
export function convertService(
  svc: KService,
  domain: string,
  warn: (msg: string) => void = () => {},
): Service {
  const name = svc.metadata?.name ?? "";
  const ns = svc.metadata?.namespace ?? "";
  const spec = svc.spec ?? {};
  const ports: ServicePort[] = (spec.ports ?? []).map((p) => ({
    name: p.name ?? "",
    port: p.port ?? 0,
    protocol: protocolFromPortName(p.name ?? "", p.protocol ?? "TCP"),
  }));
  const ip = spec.clusterIP ?? "";
  const address = ip && ip !== "None" ? ip : "0.0.0.0";
  const external = spec.type === "ExternalName" && !!spec.externalName;
  const resolution = external || address === "0.0.0.0" ? "Passthrough" : "ClientSideLB";
  const annotations = svc.metadata?.annotations ?? {};
  const attributes: Record<string, string> = {};
  for (const [k, v] of Object.entries(annotations)) {
    const prefix = AUTH_PREFIXES.find((p) => k.startsWith(p));
    if (!prefix) continue;
    const port = k.slice(prefix.length);
    const value = String(v).trim().toUpperCase();
    if (!/^\d+$/.test(port) || !AUTH_VALUES.has(value)) {
      warn(
        `Service ${ns}/${name}: ignoring annotation ${k}="${v}": expected ${prefix}<port number> ` +
          `with value NONE or MUTUAL_TLS`,
      );
      continue;
    }
    attributes[`auth.mesh.io/${port}`] = value;
  }
  if (external) attributes.externalName = spec.externalName!;
  // what WorkloadEntries it selects (./workload_entries.ts)
  const selection = selectorAttributes(spec.selector, spec.ports ?? []);
  Object.assign(attributes, selection);
  const out: Service = {
    hostname: `${name}.${ns}.svc.${domain}`,
    address,
    ports,
    namespace: ns,
    meshExternal: external,
    resolution,
    serviceAccounts: annotatedServiceAccounts(annotations, domain, ns),
    registry: "Orchestrator",
  };
  if (Object.keys(attributes).length > 0) out.attributes = attributes;
  return out;
}

/** A converted service: the service, its instances, what they depend on, and their JSON. */
export interface Converted {
  service: Service;
  instances: ServiceInstance[];
  /** Tokens (`pod:<ns>/<name>`, `ip:<address>`, `node:<name>`) whose change reconverts it. */
  deps: string[];
  json: string;
  instJson: string;
}

/** The objects a conversion reads (the registry's caches and indexes). */
export interface ClusterObjects {
  services: ReadonlyMap<string, KService>;
  endpoints: ReadonlyMap<string, KEndpoints>;
  slices: ReadonlyMap<string, KSlice>;
  slicesByService: ReadonlyMap<string, ReadonlySet<string>>;
  pods: ReadonlyMap<string, KPod>;
  podsByIp: ReadonlyMap<string, ReadonlySet<string>>;
  nodes: ReadonlyMap<string, KNode>;
}

/** How {@link convertWithInstances} converts. */
export interface ConvertOptions {
  domain: string;
  /** Where endpoints come from: `slices`, `endpoints`, or `auto` (a service's slices if any). */
  source: "auto" | "slices" | "endpoints";
  warn(msg: string): void;
}

/** The pod behind an endpoint address (by `targetRef`, else by IP) and the token to watch. */
function podFor(o: ClusterObjects, ref: ObjectRef | undefined, address: string, svcNs: string) {
  if (ref?.name && (ref.kind ?? "Pod") === "Pod") {
    const k = `${ref.namespace || svcNs}/${ref.name}`;
    return { token: `pod:${k}`, pod: o.pods.get(k) };
  }
  const ks = o.podsByIp.get(address);
  if (!ks) return { token: `ip:${address}`, pod: undefined };
  // Several pods can share the IP (host network): the first of the service's namespace by
  // name, else the first by namespace and name (keys are `<namespace>/<name>`).
  const keys = [...ks].sort();
  const best = keys.find((k) => k.startsWith(`${svcNs}/`)) ?? keys[0];
  return { token: `ip:${address}`, pod: o.pods.get(best) };
}

/**
 * Converts the Service at key `k` (`<namespace>/<name>`) with its instances: from its
 * EndpointSlices or Endpoints, labels and service account of the pods, locality of the nodes;
 * the pods' service accounts join the service's. Undefined when no such Service is cached.
 */
export function convertWithInstances(
  o: ClusterObjects,
  k: string,
  opts: ConvertOptions,
): Converted | undefined {
  const svc = o.services.get(k);
  if (!svc) return undefined;
  const service = convertService(svc, opts.domain, opts.warn);
  const deps: string[] = [];
  const instances = service.meshExternal
    ? externalInstances(svc, service)
    : endpointInstances(o, k, service, deps, opts);
  if (!service.meshExternal) {
    const accounts = new Set(service.serviceAccounts);
    for (const i of instances) if (i.serviceAccount) accounts.add(i.serviceAccount);
    service.serviceAccounts = [...accounts].sort();
  }
  return {
    service,
    instances,
    deps,
    json: JSON.stringify(service),
    instJson: JSON.stringify(instances),
  };
}

/** An `ExternalName` service's instances: one per port at the external name. */
function externalInstances(svc: KService, service: Service): ServiceInstance[] {
  return service.ports.map((p) => ({
    hostname: service.hostname,
    servicePort: p,
    address: svc.spec!.externalName!,
    port: p.port,
    labels: { ...svc.metadata?.labels },
    locality: "",
    serviceAccount: "",
  }));
}

/** The ready endpoints of the service at `k` × its named ports, sorted; pushes their deps. */
function endpointInstances(
  o: ClusterObjects,
  k: string,
  service: Service,
  deps: string[],
  opts: ConvertOptions,
): ServiceInstance[] {
  const svcNs = service.namespace;
  const instances: ServiceInstance[] = [];
  const portByName = new Map(service.ports.map((p) => [p.name, p]));
  const seen = new Set<string>();
  const add = (
    address: string,
    ep: EndpointPort,
    ref: ObjectRef | undefined,
    nodeName: string | undefined,
    zone: string | undefined,
  ) => {
    const sp = portByName.get(ep.name ?? "");
    if (!sp || !address || typeof ep.port !== "number") return;
    const id = `${sp.name}|${address}|${ep.port}`;
    if (seen.has(id)) return;
    seen.add(id);
    const { token, pod } = podFor(o, ref, address, svcNs);
    deps.push(token);
    const node = pod?.spec?.nodeName || nodeName || "";
    if (node) deps.push(`node:${node}`);
    const locality = (node && nodeLocality(o.nodes.get(node)?.metadata?.labels)) || zone || "";
    instances.push({
      hostname: service.hostname,
      servicePort: sp,
      address,
      port: ep.port,
      labels: { ...pod?.metadata?.labels },
      locality,
      serviceAccount: pod
        ? spiffeId(
          opts.domain,
          pod.metadata?.namespace ?? svcNs,
          pod.spec?.serviceAccountName || "default",
        )
        : "",
    });
  };
  const sliceKeys = opts.source === "endpoints" ? undefined : o.slicesByService.get(k);
  if (sliceKeys && sliceKeys.size > 0) {
    for (const sk of [...sliceKeys].sort()) {
      const s = o.slices.get(sk)!;
      for (const e of s.endpoints ?? []) {
        if (e.conditions?.ready === false) continue;
        for (const a of e.addresses ?? []) {
          for (const p of s.ports ?? []) add(a, p, e.targetRef, e.nodeName, e.zone);
        }
      }
    }
  } else if (opts.source !== "slices") {
    for (const sub of o.endpoints.get(k)?.subsets ?? []) {
      for (const a of sub.addresses ?? []) {
        for (const p of sub.ports ?? []) add(a.ip ?? "", p, a.targetRef, a.nodeName, undefined);
      }
    }
  }
  return instances.sort((a, b) =>
    a.servicePort.port - b.servicePort.port || a.address.localeCompare(b.address) ||
    a.port - b.port
  );
}

/**
 * Management ports of `pod`: its containers' liveness and readiness probe ports (`httpGet` →
 * HTTP, `tcpSocket` → TCP), named `mgmt-<port>-<protocol>`, sorted by port.
 */
export function managementPorts(pod: KPod | undefined): ServicePort[] {
  const out = new Map<string, ServicePort>();
  for (const c of pod?.spec?.containers ?? []) {
    const named = new Map((c.ports ?? []).map((p) => [p.name ?? "", p.containerPort ?? 0]));
    for (const probe of [c.livenessProbe, c.readinessProbe]) {
      const target = probe?.httpGet ?? probe?.tcpSocket;
      if (!target || target.port === undefined) continue;
      const port = typeof target.port === "number"
        ? target.port
        : /^\d+$/.test(target.port)
        ? Number(target.port)
        : named.get(target.port) ?? 0;
      if (!port) continue;
      const protocol = probe!.httpGet ? "HTTP" : "TCP";
      const name = `mgmt-${port}-${protocol.toLowerCase()}`;
      out.set(name, { name, port, protocol });
    }
  }
  return [...out.values()].sort((a, b) => a.port - b.port);
}

/**
 * The `Orchestrator` registry: services and endpoints of a Kubernetes-style cluster, kept by list +
 * watch of Services, Endpoints and/or EndpointSlices, Pods and Nodes.
 *
 * Mapping (reference §1.10):
 * - hostname `<service>.<namespace>.svc.<domain>`; address = the cluster IP, `0.0.0.0` when the
 *   service is headless (`None`) or has none;
 * - `ExternalName` services are mesh-external with `Passthrough` resolution and one instance per
 *   port at the external name; headless services resolve `Passthrough`; others `ClientSideLB`;
 * - port protocol from the port-name prefix ({@linkcode protocolFromPortName}), UDP ports are UDP;
 * - service accounts: `spiffe://<domain>/ns/<ns>/sa/<sa>` of the pods behind the service, plus
 *   the annotations `alpha.mesh.io/orchestrator-serviceaccounts` (comma list of account names of
 *   the service's namespace) and `alpha.mesh.io/canonical-serviceaccounts` (comma list, each
 *   prefixed with `spiffe://`); the `alpha.istio.io/kubernetes-serviceaccounts` and
 *   `alpha.istio.io/canonical-serviceaccounts` spellings are accepted too;
 * - per-port authentication annotations `auth.mesh.io/<port>` (or `auth.istio.io/<port>`) with
 *   value `NONE` or `MUTUAL_TLS` are recorded in `Service.attributes["auth.mesh.io/<port>"]`;
 * - instances: each ready endpoint address × endpoint port whose name matches a service port
 *   name; labels and service account from the pod (by `targetRef`, else by IP: when several pods
 *   share the IP, the first by name of the service's namespace, else the first by namespace and
 *   name); locality `region/zone` from the pod's node labels (`topology.kubernetes.io/*`, else
 *   the old `failure-domain.beta.kubernetes.io/*`), else the EndpointSlice's zone.
 *
 * Endpoints come from `discovery.k8s.io/v1` EndpointSlices when the cluster serves them: a service
 * with at least one slice (label `kubernetes.io/service-name`) takes its endpoints from its
 * slices, a service without any from its v1 Endpoints object (clusters without slice mirroring,
 * hand-written Endpoints). {@linkcode OrchestratorRegistryOptions.endpointsSource} can force one.
 *
 * Handlers registered with `onChange` are called after the cache is updated: `"services"` when
 * any converted service changed (including its service accounts), `"endpoints"` when only
 * instances changed.
 * @module
 */
import type { Service, ServiceInstance, ServicePort, ServiceRegistry } from "../model/types.ts";
import { getLogger } from "../log/mod.ts";
import { annotatedServiceAccounts, spiffeId } from "./accounts.ts";
export { spiffeId } from "./accounts.ts";
import { type InClusterEnv, kubeClient, type KubeConfig, loadKubeConfig } from "../kube/mod.ts";
import {
  createInformer,
  describeApiError,
  type Informer,
  type ListPage,
} from "../kube/informer.ts";
import { protocolFromPortName } from "./protocol.ts";

/** Where a registry takes endpoints from (see the module documentation). */
export type EndpointsSource = "auto" | "slices" | "endpoints";

/** Options of {@linkcode createOrchestratorRegistry}. */
export interface OrchestratorRegistryOptions {
  /** Kubeconfig file; empty or undefined = in-cluster configuration. Ignored with `kubeConfig`. */
  kubeconfigPath?: string;
  /** In-cluster environment (used when `kubeconfigPath` is empty), read by the program. */
  inCluster?: InClusterEnv;
  /** Kubeconfig context other than the current one. */
  context?: string;
  /** An already loaded kubeconfig (multicluster: parsed from a config map). */
  kubeConfig?: KubeConfig;
  /** DNS domain suffix (`--domain`, e.g. `cluster.local`). */
  domain: string;
  /** Restricts every namespaced watch to this namespace (`--appNamespace`); empty = all. */
  appNamespace?: string;
  /** Relist period in ms (`--resync`); 0 relists only when a watch answers 410 Gone. */
  resyncMs: number;
  /** Cluster id (multicluster key); empty for the local cluster. */
  clusterId?: string;
  /** Endpoint source (default `auto`). */
  endpointsSource?: EndpointsSource;
  /** Server-side watch timeout in seconds (default 300-599, random). */
  watchTimeoutSeconds?: number;
  /** Page size of list requests (default 500). */
  pageSize?: number;
}

/** The Orchestrator registry: a {@linkcode ServiceRegistry} with a few extras for discovery. */
export interface OrchestratorRegistry extends ServiceRegistry {
  /** Cluster id given in the options, or "". */
  readonly clusterId: string;
  /** Instances whose endpoint address is `ip` (the proxy instances of a sidecar at `ip`). */
  instancesByAddress(ip: string): ServiceInstance[];
  /**
   * Management ports of the pod at `ip`: its containers' liveness and readiness probe ports
   * (`httpGet` → HTTP, `tcpSocket` → TCP), named `mgmt-<port>-<protocol>`.
   */
  managementPorts(ip: string): ServicePort[];
  /** Relists every collection now; resolves when the lists are applied. */
  resync(): Promise<void>;
}

// ---- orchestrator objects (only the fields we read) -----------------------------------------

interface Meta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  resourceVersion?: string;
}
interface ObjectRef {
  kind?: string;
  name?: string;
  namespace?: string;
}
interface KService {
  metadata?: Meta;
  spec?: {
    type?: string;
    clusterIP?: string;
    externalName?: string;
    ports?: { name?: string; port?: number; protocol?: string }[];
  };
}
interface EndpointPort {
  name?: string;
  port?: number;
  protocol?: string;
}
interface KEndpoints {
  metadata?: Meta;
  subsets?: {
    addresses?: { ip?: string; nodeName?: string; targetRef?: ObjectRef }[];
    ports?: EndpointPort[];
  }[];
}
interface KSlice {
  metadata?: Meta;
  addressType?: string;
  endpoints?: {
    addresses?: string[];
    conditions?: { ready?: boolean | null };
    nodeName?: string;
    zone?: string;
    targetRef?: ObjectRef;
  }[];
  ports?: EndpointPort[];
}
interface Probe {
  httpGet?: { port?: number | string };
  tcpSocket?: { port?: number | string };
}
interface KPod {
  metadata?: Meta;
  spec?: {
    serviceAccountName?: string;
    nodeName?: string;
    containers?: {
      ports?: { name?: string; containerPort?: number }[];
      livenessProbe?: Probe;
      readinessProbe?: Probe;
    }[];
  };
  status?: { podIP?: string; podIPs?: { ip?: string }[] };
}
interface KNode {
  metadata?: Meta;
}

/** The label linking an EndpointSlice to its service. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

const AUTH_PREFIXES = ["auth.mesh.io/", "auth.istio.io/"];
const AUTH_VALUES = new Set(["NONE", "MUTUAL_TLS"]);

const keyOf = (m: Meta | undefined) => `${m?.namespace ?? ""}/${m?.name ?? ""}`;

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

interface Converted {
  service: Service;
  instances: ServiceInstance[];
  deps: string[];
  json: string;
  instJson: string;
}

/**
 * Creates the Orchestrator registry. The client library is loaded here (lazily); the kubeconfig
 * is loaded now so that a bad file fails early. Nothing is listed until `start()`.
 */
export async function createOrchestratorRegistry(
  options: OrchestratorRegistryOptions,
): Promise<OrchestratorRegistry> {
  if (!options.domain) throw new Error("Invalid orchestrator registry domain: must not be empty");
  if (!Number.isFinite(options.resyncMs) || options.resyncMs < 0) {
    throw new Error(`Invalid orchestrator registry resync ${options.resyncMs} ms: must be >= 0`);
  }
  const source = options.endpointsSource ?? "auto";
  if (!["auto", "slices", "endpoints"].includes(source)) {
    throw new Error(
      `Invalid orchestrator endpoints source "${source}": expected auto, slices or endpoints`,
    );
  }
  const k8s = await kubeClient();
  const kc = options.kubeConfig ??
    await loadKubeConfig(options.kubeconfigPath, options.context, options.inCluster);
  const domain = options.domain;
  const ns = options.appNamespace ?? "";
  const clusterId = options.clusterId ?? "";
  const what = clusterId ? `Orchestrator registry (cluster ${clusterId})` : "Orchestrator registry";
  const log = getLogger("default");
  const warn = (m: string) => log.warn(`${what}: ${m}`);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const discoveryApi = kc.makeApiClient(k8s.DiscoveryV1Api);
  const limit = options.pageSize ?? 500;
  const nsPath = ns ? `/namespaces/${encodeURIComponent(ns)}` : "";

  // ---- raw caches and indexes ------------------------------------------------------------------
  const services = new Map<string, KService>();
  const endpoints = new Map<string, KEndpoints>();
  const slices = new Map<string, KSlice>();
  const slicesByService = new Map<string, Set<string>>();
  const pods = new Map<string, KPod>();
  const podsByIp = new Map<string, Set<string>>();
  const nodes = new Map<string, KNode>();

  const converted = new Map<string, Converted>();
  const depIndex = new Map<string, Set<string>>(); // token → service keys
  const dirty = new Set<string>();
  const handlers: ((kind: "services" | "endpoints") => void)[] = [];
  let loaded = false;
  let servicesCache: Service[] | undefined;
  let instancesCache: ServiceInstance[] | undefined;
  let byAddressCache: Map<string, ServiceInstance[]> | undefined;

  const addTo = <K, V>(m: Map<K, Set<V>>, k: K, v: V) => {
    let s = m.get(k);
    if (!s) m.set(k, s = new Set());
    s.add(v);
  };
  const removeFrom = <K, V>(m: Map<K, Set<V>>, k: K, v: V) => {
    const s = m.get(k);
    if (s?.delete(v) && s.size === 0) m.delete(k);
  };
  const markToken = (token: string) => {
    for (const k of depIndex.get(token) ?? []) dirty.add(k);
  };

  const podIps = (p: KPod | undefined): string[] => {
    if (!p) return [];
    const ips = new Set<string>();
    if (p.status?.podIP) ips.add(p.status.podIP);
    for (const x of p.status?.podIPs ?? []) if (x.ip) ips.add(x.ip);
    return [...ips];
  };
  const sliceService = (s: KSlice | undefined) => {
    const svc = s?.metadata?.labels?.[SERVICE_NAME_LABEL];
    return svc ? `${s?.metadata?.namespace ?? ""}/${svc}` : undefined;
  };

  // ---- per-kind apply (update cache + mark affected services) --------------------------------
  const apply = {
    services(type: string, o: KService) {
      const k = keyOf(o.metadata);
      if (type === "DELETED") services.delete(k);
      else services.set(k, o);
      dirty.add(k);
    },
    endpoints(type: string, o: KEndpoints) {
      const k = keyOf(o.metadata);
      if (type === "DELETED") endpoints.delete(k);
      else endpoints.set(k, o);
      dirty.add(k);
    },
    slices(type: string, o: KSlice) {
      const k = keyOf(o.metadata);
      const old = sliceService(slices.get(k));
      if (old) {
        removeFrom(slicesByService, old, k);
        dirty.add(old);
      }
      if (type === "DELETED") slices.delete(k);
      else {
        slices.set(k, o);
        const svc = sliceService(o);
        if (svc) {
          addTo(slicesByService, svc, k);
          dirty.add(svc);
        }
      }
    },
    pods(type: string, o: KPod) {
      const k = keyOf(o.metadata);
      for (const ip of podIps(pods.get(k))) {
        removeFrom(podsByIp, ip, k);
        markToken(`ip:${ip}`);
      }
      if (type === "DELETED") pods.delete(k);
      else {
        pods.set(k, o);
        for (const ip of podIps(o)) {
          addTo(podsByIp, ip, k);
          markToken(`ip:${ip}`);
        }
      }
      markToken(`pod:${k}`);
    },
    nodes(type: string, o: KNode) {
      const name = o.metadata?.name ?? "";
      if (type === "DELETED") nodes.delete(name);
      else nodes.set(name, o);
      markToken(`node:${name}`);
    },
  };
  type Kind = keyof typeof apply;
  const stores: Record<Kind, Map<string, { metadata?: Meta }>> = {
    services,
    endpoints,
    slices,
    pods,
    nodes,
  };

  /** Replaces a whole collection after a (re)list: applies only the differences. */
  function replaceAll(kind: Kind, items: unknown[]) {
    const store = stores[kind];
    const key = (o: { metadata?: Meta }) =>
      kind === "nodes" ? o.metadata?.name ?? "" : keyOf(o.metadata);
    const seen = new Set<string>();
    const fn = apply[kind] as (t: string, o: unknown) => void;
    for (const raw of items) {
      const o = raw as { metadata?: Meta };
      const k = key(o);
      seen.add(k);
      const old = store.get(k);
      if (old && old.metadata?.resourceVersion === o.metadata?.resourceVersion) continue;
      fn(old ? "MODIFIED" : "ADDED", o);
    }
    for (const [k, old] of [...store]) if (!seen.has(k)) fn("DELETED", old);
  }

  // ---- conversion ------------------------------------------------------------------------------
  function podFor(ref: ObjectRef | undefined, address: string, svcNs: string) {
    if (ref?.name && (ref.kind ?? "Pod") === "Pod") {
      const k = `${ref.namespace || svcNs}/${ref.name}`;
      return { token: `pod:${k}`, pod: pods.get(k) };
    }
    const ks = podsByIp.get(address);
    if (!ks) return { token: `ip:${address}`, pod: undefined };
    // Several pods can share the IP (host network): the first of the service's namespace by
    // name, else the first by namespace and name (keys are `<namespace>/<name>`).
    const keys = [...ks].sort();
    const best = keys.find((k) => k.startsWith(`${svcNs}/`)) ?? keys[0];
    return { token: `ip:${address}`, pod: pods.get(best) };
  }

  function convert(k: string): Converted | undefined {
    const svc = services.get(k);
    if (!svc) return undefined;
    const service = convertService(svc, domain, warn);
    const svcNs = service.namespace;
    const deps: string[] = [];
    const instances: ServiceInstance[] = [];
    const portByName = new Map(service.ports.map((p) => [p.name, p]));
    if (service.meshExternal) {
      for (const p of service.ports) {
        instances.push({
          hostname: service.hostname,
          servicePort: p,
          address: svc.spec!.externalName!,
          port: p.port,
          labels: { ...svc.metadata?.labels },
          locality: "",
          serviceAccount: "",
        });
      }
    } else {
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
        const { token, pod } = podFor(ref, address, svcNs);
        deps.push(token);
        const node = pod?.spec?.nodeName || nodeName || "";
        if (node) deps.push(`node:${node}`);
        const locality = (node && nodeLocality(nodes.get(node)?.metadata?.labels)) || zone || "";
        instances.push({
          hostname: service.hostname,
          servicePort: sp,
          address,
          port: ep.port,
          labels: { ...pod?.metadata?.labels },
          locality,
          serviceAccount: pod
            ? spiffeId(
              domain,
              pod.metadata?.namespace ?? svcNs,
              pod.spec?.serviceAccountName || "default",
            )
            : "",
        });
      };
      const sliceKeys = source === "endpoints" ? undefined : slicesByService.get(k);
      if (sliceKeys && sliceKeys.size > 0) {
        for (const sk of [...sliceKeys].sort()) {
          const s = slices.get(sk)!;
          for (const e of s.endpoints ?? []) {
            if (e.conditions?.ready === false) continue;
            for (const a of e.addresses ?? []) {
              for (const p of s.ports ?? []) add(a, p, e.targetRef, e.nodeName, e.zone);
            }
          }
        }
      } else if (source !== "slices") {
        for (const sub of endpoints.get(k)?.subsets ?? []) {
          for (const a of sub.addresses ?? []) {
            for (const p of sub.ports ?? []) add(a.ip ?? "", p, a.targetRef, a.nodeName, undefined);
          }
        }
      }
      instances.sort((a, b) =>
        a.servicePort.port - b.servicePort.port || a.address.localeCompare(b.address) ||
        a.port - b.port
      );
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

  /** Recomputes dirty services; returns which kind of change happened. */
  function recompute(): "services" | "endpoints" | undefined {
    let servicesChanged = false;
    let endpointsChanged = false;
    for (const k of dirty) {
      const old = converted.get(k);
      const next = convert(k);
      for (const t of old?.deps ?? []) removeFrom(depIndex, t, k);
      if (next) {
        for (const t of next.deps) addTo(depIndex, t, k);
        converted.set(k, next);
      } else converted.delete(k);
      if ((old?.json ?? "") !== (next?.json ?? "")) servicesChanged = true;
      if ((old?.instJson ?? "") !== (next?.instJson ?? "")) endpointsChanged = true;
    }
    dirty.clear();
    if (servicesChanged || endpointsChanged) {
      servicesCache = undefined;
      instancesCache = undefined;
      byAddressCache = undefined;
    }
    return servicesChanged ? "services" : endpointsChanged ? "endpoints" : undefined;
  }

  function flush() {
    if (!loaded) return;
    const kind = recompute();
    if (!kind) return;
    for (const h of [...handlers]) {
      try {
        h(kind);
      } catch (err) {
        log.error(`${what}: change handler failed: ${(err as Error).message}`);
      }
    }
  }

  // ---- informers -------------------------------------------------------------------------------
  type Lister = (p: { limit: number; _continue?: string; namespace: string }) => Promise<ListPage>;
  function informer(kind: Kind, path: string, list: Lister, namespaced = true): Informer {
    const scope = namespaced && ns ? ` in namespace ${ns}` : "";
    return createInformer({
      name: `${kind === "slices" ? "endpointslices" : kind}${scope}${
        clusterId ? ` of cluster ${clusterId}` : ""
      }`,
      kubeConfig: kc,
      watchPath: path,
      resyncMs: options.resyncMs,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
      list: (cont) => list({ limit, _continue: cont, namespace: ns }),
      onList: (items) => {
        replaceAll(kind, items);
        flush();
      },
      onEvent: (type, obj) => {
        (apply[kind] as (t: string, o: unknown) => void)(type, obj);
        flush();
      },
    });
  }

  const informers: Informer[] = [];
  let started = false;
  let stopped = false;

  async function slicesServed(): Promise<boolean> {
    if (source === "endpoints") return false;
    try {
      const res = await discoveryApi.getAPIResources();
      return (res.resources ?? []).some((r) => r.name === "endpointslices");
    } catch (err) {
      const code = (err as { code?: number }).code;
      if (code === 404) return false;
      throw new Error(`cannot read the discovery.k8s.io/v1 API: ${describeApiError(err)}`);
    }
  }

  const sortedConverted = () =>
    [...converted.values()].sort((a, b) =>
      a.service.hostname < b.service.hostname ? -1 : a.service.hostname > b.service.hostname ? 1 : 0
    );

  const registry: OrchestratorRegistry = {
    name: "Orchestrator",
    clusterId,
    services() {
      servicesCache ??= sortedConverted().map((c) => c.service);
      return servicesCache;
    },
    instances() {
      instancesCache ??= sortedConverted().flatMap((c) => c.instances);
      return instancesCache;
    },
    instancesByAddress(ip) {
      if (!byAddressCache) {
        byAddressCache = new Map();
        for (const i of registry.instances()) {
          let l = byAddressCache.get(i.address);
          if (!l) byAddressCache.set(i.address, l = []);
          l.push(i);
        }
      }
      return byAddressCache.get(ip) ?? [];
    },
    managementPorts(ip) {
      const ks = podsByIp.get(ip);
      const pod = ks ? pods.get([...ks][0]) : undefined;
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
    },
    onChange(h) {
      handlers.push(h);
    },
    async start() {
      if (started) throw new Error(`${what} already started`);
      started = true;
      try {
        const useSlices = await slicesServed();
        if (source === "slices" && !useSlices) {
          throw new Error("endpointslices (discovery.k8s.io/v1) are not served by this cluster");
        }
        informers.push(
          informer(
            "services",
            `/api/v1${nsPath}/services`,
            (p) => ns ? core.listNamespacedService(p) : core.listServiceForAllNamespaces(p),
          ),
          informer(
            "pods",
            `/api/v1${nsPath}/pods`,
            (p) => ns ? core.listNamespacedPod(p) : core.listPodForAllNamespaces(p),
          ),
        );
        if (source !== "slices") {
          informers.push(
            informer(
              "endpoints",
              `/api/v1${nsPath}/endpoints`,
              (p) => ns ? core.listNamespacedEndpoints(p) : core.listEndpointsForAllNamespaces(p),
            ),
          );
        }
        if (useSlices) {
          informers.push(
            informer(
              "slices",
              `/apis/discovery.k8s.io/v1${nsPath}/endpointslices`,
              (p) =>
                ns
                  ? discoveryApi.listNamespacedEndpointSlice(p)
                  : discoveryApi.listEndpointSliceForAllNamespaces(p),
            ),
          );
        }
        const results = await Promise.allSettled(informers.map((i) => i.start()));
        const failed = results.find((r) => r.status === "rejected");
        if (failed) throw (failed as PromiseRejectedResult).reason;
        // Nodes only give localities: a cluster that refuses them (RBAC) still works.
        const nodeInformer = informer(
          "nodes",
          "/api/v1/nodes",
          (p) => core.listNode({ limit: p.limit, _continue: p._continue }),
          false,
        );
        try {
          await nodeInformer.start();
          informers.push(nodeInformer);
        } catch (err) {
          warn(`${(err as Error).message}; instances will have no locality`);
        }
      } catch (err) {
        stopped = true;
        await Promise.all(informers.map((i) => i.stop()));
        throw new Error(`Cannot start the ${what}: ${(err as Error).message}`);
      }
      loaded = true;
      for (const k of services.keys()) dirty.add(k);
      recompute();
      log.info(
        `${what}: ${converted.size} services, ${registry.instances().length} instances loaded from ${
          kc.getCurrentCluster()?.server ?? "?"
        }`,
      );
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.all(informers.map((i) => i.stop()));
    },
    async resync() {
      await Promise.all(informers.map((i) => i.resync()));
    },
  };
  return registry;
}

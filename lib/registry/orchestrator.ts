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
import type {
  RegistryChangeHandler,
  Service,
  ServiceInstance,
  ServicePort,
  ServiceRegistry,
} from "../model/types.ts";
import { getLogger } from "../log/mod.ts";
import { type InClusterEnv, kubeClient, type KubeConfig, loadKubeConfig } from "../kube/mod.ts";
import {
  createInformer,
  describeApiError,
  type Informer,
  type ListPage,
} from "../kube/informer.ts";
import { ClusterCache, type Kind } from "./orchestrator_cache.ts";
import { managementPorts } from "./orchestrator_convert.ts";

export { spiffeId } from "./accounts.ts";
export { convertService, nodeLocality } from "./orchestrator_convert.ts";
export { SERVICE_NAME_LABEL } from "./orchestrator_objects.ts";

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
  return new KubeRegistry(options, source, kc, k8s);
}

type Lister = (p: { limit: number; _continue?: string; namespace: string }) => Promise<ListPage>;
type KubeClientModule = Awaited<ReturnType<typeof kubeClient>>;

/** The Orchestrator registry: a cache kept by informers, with the converted views memoized. */
class KubeRegistry implements OrchestratorRegistry {
  readonly name = "Orchestrator";
  readonly clusterId: string;
  readonly #options: OrchestratorRegistryOptions;
  readonly #source: EndpointsSource;
  readonly #kc: KubeConfig;
  readonly #core;
  readonly #discoveryApi;
  readonly #ns: string;
  readonly #what: string;
  readonly #log = getLogger("default");
  readonly #cache: ClusterCache;
  readonly #handlers: RegistryChangeHandler[] = [];
  readonly #informers: Informer[] = [];
  #loaded = false;
  #started = false;
  #stopped = false;
  // ---- views, reset by every change
  #services: Service[] | undefined;
  #instances: ServiceInstance[] | undefined;
  #byAddress: Map<string, ServiceInstance[]> | undefined;

  constructor(
    options: OrchestratorRegistryOptions,
    source: EndpointsSource,
    kc: KubeConfig,
    k8s: KubeClientModule,
  ) {
    this.#options = options;
    this.#source = source;
    this.#kc = kc;
    this.#ns = options.appNamespace ?? "";
    this.clusterId = options.clusterId ?? "";
    this.#what = this.clusterId
      ? `Orchestrator registry (cluster ${this.clusterId})`
      : "Orchestrator registry";
    this.#core = kc.makeApiClient(k8s.CoreV1Api);
    this.#discoveryApi = kc.makeApiClient(k8s.DiscoveryV1Api);
    this.#cache = new ClusterCache({
      domain: options.domain,
      source,
      warn: (m) => this.#warn(m),
    });
  }

  services(): Service[] {
    this.#services ??= this.#sortedConverted().map((c) => c.service);
    return this.#services;
  }

  instances(): ServiceInstance[] {
    this.#instances ??= this.#sortedConverted().flatMap((c) => c.instances);
    return this.#instances;
  }

  instancesOf(hosts: ReadonlySet<string>): ServiceInstance[] {
    const out: ServiceInstance[] = [];
    for (const host of [...hosts].sort()) {
      // `<name>.<namespace>.svc.<domain>`: neither a name nor a namespace holds a dot
      const [name, ns] = host.split(".", 2);
      const c = this.#cache.converted.get(`${ns}/${name}`);
      if (c?.service.hostname === host) { for (const i of c.instances) out.push(i); }
    }
    return out;
  }

  instancesByAddress(ip: string): ServiceInstance[] {
    if (!this.#byAddress) {
      const byAddress = this.#byAddress = new Map();
      for (const i of this.instances()) {
        let l = byAddress.get(i.address);
        if (!l) byAddress.set(i.address, l = []);
        l.push(i);
      }
    }
    return this.#byAddress.get(ip) ?? [];
  }

  managementPorts(ip: string): ServicePort[] {
    const ks = this.#cache.podsByIp.get(ip);
    return managementPorts(ks ? this.#cache.pods.get([...ks][0]) : undefined);
  }

  onChange(h: RegistryChangeHandler): void {
    this.#handlers.push(h);
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error(`${this.#what} already started`);
    this.#started = true;
    try {
      await this.#startInformers();
    } catch (err) {
      this.#stopped = true;
      await Promise.all(this.#informers.map((i) => i.stop()));
      throw new Error(`Cannot start the ${this.#what}: ${(err as Error).message}`);
    }
    this.#loaded = true;
    this.#cache.markAll();
    this.#recompute();
    this.#log.info(
      `${this.#what}: ${this.#cache.converted.size} services, ${this.instances().length} ` +
        `instances loaded from ${this.#kc.getCurrentCluster()?.server ?? "?"}`,
    );
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all(this.#informers.map((i) => i.stop()));
  }

  async resync(): Promise<void> {
    await Promise.all(this.#informers.map((i) => i.resync()));
  }

  #warn(m: string): void {
    this.#log.warn(`${this.#what}: ${m}`);
  }

  #sortedConverted() {
    return [...this.#cache.converted.values()].sort((a, b) =>
      a.service.hostname < b.service.hostname ? -1 : a.service.hostname > b.service.hostname ? 1 : 0
    );
  }

  /** Reconverts what changed; returns which kind of change happened, and to which hostnames. */
  #recompute(): { kind: "services" | "endpoints" | undefined; hosts: Set<string> } {
    const changed = this.#cache.recompute();
    if (changed.kind) {
      this.#services = undefined;
      this.#instances = undefined;
      this.#byAddress = undefined;
    }
    return changed;
  }

  /** After a list or event: reconverts and tells the handlers (once loaded). */
  #flush(): void {
    if (!this.#loaded) return;
    const { kind, hosts } = this.#recompute();
    if (!kind) return;
    for (const h of [...this.#handlers]) {
      try {
        h(kind, kind === "endpoints" ? hosts : undefined);
      } catch (err) {
        this.#log.error(`${this.#what}: change handler failed: ${(err as Error).message}`);
      }
    }
  }

  /** Lists and watches services, pods, endpoints and/or slices, then nodes (optional). */
  async #startInformers(): Promise<void> {
    const ns = this.#ns;
    const nsPath = ns ? `/namespaces/${encodeURIComponent(ns)}` : "";
    const core = this.#core;
    const discoveryApi = this.#discoveryApi;
    const source = this.#source;
    const useSlices = await this.#slicesServed();
    if (source === "slices" && !useSlices) {
      throw new Error("endpointslices (discovery.k8s.io/v1) are not served by this cluster");
    }
    this.#informers.push(
      this.#informer(
        "services",
        `/api/v1${nsPath}/services`,
        (p) => ns ? core.listNamespacedService(p) : core.listServiceForAllNamespaces(p),
      ),
      this.#informer(
        "pods",
        `/api/v1${nsPath}/pods`,
        (p) => ns ? core.listNamespacedPod(p) : core.listPodForAllNamespaces(p),
      ),
    );
    if (source !== "slices") {
      this.#informers.push(
        this.#informer(
          "endpoints",
          `/api/v1${nsPath}/endpoints`,
          (p) => ns ? core.listNamespacedEndpoints(p) : core.listEndpointsForAllNamespaces(p),
        ),
      );
    }
    if (useSlices) {
      this.#informers.push(
        this.#informer(
          "slices",
          `/apis/discovery.k8s.io/v1${nsPath}/endpointslices`,
          (p) =>
            ns
              ? discoveryApi.listNamespacedEndpointSlice(p)
              : discoveryApi.listEndpointSliceForAllNamespaces(p),
        ),
      );
    }
    const results = await Promise.allSettled(this.#informers.map((i) => i.start()));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    // Nodes only give localities: a cluster that refuses them (RBAC) still works.
    const nodeInformer = this.#informer(
      "nodes",
      "/api/v1/nodes",
      (p) => core.listNode({ limit: p.limit, _continue: p._continue }),
      false,
    );
    try {
      await nodeInformer.start();
      this.#informers.push(nodeInformer);
    } catch (err) {
      this.#warn(`${(err as Error).message}; instances will have no locality`);
    }
  }

  #informer(kind: Kind, path: string, list: Lister, namespaced = true): Informer {
    const ns = this.#ns;
    const scope = namespaced && ns ? ` in namespace ${ns}` : "";
    const limit = this.#options.pageSize ?? 500;
    return createInformer({
      name: `${kind === "slices" ? "endpointslices" : kind}${scope}${
        this.clusterId ? ` of cluster ${this.clusterId}` : ""
      }`,
      kubeConfig: this.#kc,
      watchPath: path,
      resyncMs: this.#options.resyncMs,
      watchTimeoutSeconds: this.#options.watchTimeoutSeconds,
      list: (cont) => list({ limit, _continue: cont, namespace: ns }),
      onList: (items) => {
        this.#cache.replaceAll(kind, items);
        this.#flush();
      },
      onEvent: (type, obj) => {
        this.#cache.apply(kind, type, obj);
        this.#flush();
      },
    });
  }

  async #slicesServed(): Promise<boolean> {
    if (this.#source === "endpoints") return false;
    try {
      const res = await this.#discoveryApi.getAPIResources();
      return (res.resources ?? []).some((r) => r.name === "endpointslices");
    } catch (err) {
      const code = (err as { code?: number }).code;
      if (code === 404) return false;
      throw new Error(`cannot read the discovery.k8s.io/v1 API: ${describeApiError(err)}`);
    }
  }
}

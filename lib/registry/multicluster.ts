/**
 * Multicluster: one {@linkcode OrchestratorRegistry} per remote cluster listed in a config map
 * (`--clusterRegistriesConfigMap` in `--clusterRegistriesNamespace`).
 *
 * Each data key of the config map is a cluster id; its value is a kubeconfig (YAML) for that
 * cluster, whose current context is used. The config map is watched: a new key starts a registry,
 * a removed key stops it, a changed value replaces it. A value that is not a usable kubeconfig,
 * or a cluster that cannot be listed, is reported by {@linkcode ClusterRegistries.errors} (and
 * logged) naming the key; the other clusters keep working, and the failed key is retried on the
 * next change of the config map or resync.
 *
 * The returned object is itself a {@linkcode ServiceRegistry} (name `Multicluster`) that discovery
 * can aggregate after the local orchestrator: its services are those of the remote clusters in
 * cluster-id order (first wins per hostname) and its instances are the instances of every remote
 * cluster (the endpoints of a service present in several clusters are merged).
 * @module
 */
import type {
  RegistryChangeHandler,
  Service,
  ServiceInstance,
  ServiceRegistry,
} from "../model/types.ts";
import { getLogger } from "../log/mod.ts";
import { concatenation, instancesOfHosts } from "./aggregate.ts";
import { type InClusterEnv, kubeClient, type KubeConfig, loadKubeConfig } from "../kube/mod.ts";
import { createInformer, type Informer } from "../kube/informer.ts";
import {
  createOrchestratorRegistry,
  type EndpointsSource,
  type OrchestratorRegistry,
} from "./orchestrator.ts";

/** Options of {@linkcode createClusterRegistries}. */
export interface ClusterRegistriesOptions {
  /** Kubeconfig of the cluster holding the config map; empty = in-cluster. */
  kubeconfigPath?: string;
  /** In-cluster environment (used when `kubeconfigPath` is empty), read by the program. */
  inCluster?: InClusterEnv;
  /** Context of that kubeconfig other than the current one. */
  context?: string;
  /** An already loaded kubeconfig of that cluster (instead of `kubeconfigPath`). */
  kubeConfig?: KubeConfig;
  /** Config map name (`--clusterRegistriesConfigMap`). */
  configMapName: string;
  /** Config map namespace (`--clusterRegistriesNamespace`). */
  namespace: string;
  /** DNS domain suffix of every cluster (`--domain`). */
  domain: string;
  /** Restricts the remote registries to one namespace (`--appNamespace`); empty = all. */
  appNamespace?: string;
  /** Relist period of the config map and of every remote registry, in ms (`--resync`). */
  resyncMs: number;
  /** Endpoint source of the remote registries (default `auto`). */
  endpointsSource?: EndpointsSource;
  /** Server-side watch timeout in seconds (tests). */
  watchTimeoutSeconds?: number;
  /** Creates each remote registry (default {@linkcode createOrchestratorRegistry}; tests wrap it). */
  createRegistry?: typeof createOrchestratorRegistry;
}

/** A failed cluster entry of the config map. */
export interface ClusterError {
  /** The config map key (cluster id). */
  cluster: string;
  /** One-line reason. */
  message: string;
}

/** The remote cluster registries, combined as one registry. */
export interface ClusterRegistries extends ServiceRegistry {
  /** The running remote registries, in cluster-id order. */
  registries(): OrchestratorRegistry[];
  /** Config map keys that could not be used, in key order. */
  errors(): ClusterError[];
  /** Called with the cluster ids whenever the set of running remote registries changes. */
  onClustersChange(handler: (clusterIds: string[]) => void): void;
}

interface Entry {
  text: string;
  registry?: OrchestratorRegistry;
  error?: string;
}

/**
 * Creates the multicluster registry set. Nothing is read until `start()`, which resolves once the
 * config map has been read and every cluster in it has been started (or has failed).
 */
export async function createClusterRegistries(
  options: ClusterRegistriesOptions,
): Promise<ClusterRegistries> {
  if (!options.configMapName) {
    throw new Error("Invalid cluster registries config map name: must not be empty");
  }
  if (!options.namespace) {
    throw new Error("Invalid cluster registries namespace: must not be empty");
  }
  const k8s = await kubeClient();
  const kc = options.kubeConfig ??
    await loadKubeConfig(options.kubeconfigPath, options.context, options.inCluster);
  return new ClusterRegistrySet(options, k8s, kc);
}

type KubeModule = Awaited<ReturnType<typeof kubeClient>>;

const byKey = <T>([a]: [string, T], [b]: [string, T]) => a < b ? -1 : a > b ? 1 : 0;

/**
 * The registries of the clusters the config map lists: the config map's informer sets the
 * `desired` kubeconfigs, and reconciles (one at a time, on `chain`) start, stop and replace the
 * per-cluster `entries` to match.
 */
class ClusterRegistrySet implements ClusterRegistries {
  readonly name = "Multicluster";
  readonly entries = new Map<string, Entry>();
  readonly handlers: RegistryChangeHandler[] = [];
  readonly clusterHandlers: ((ids: string[]) => void)[] = [];
  desired = new Map<string, string>();
  chain: Promise<void> = Promise.resolve();
  closed = false;
  started = false;
  readonly log = getLogger("default");
  readonly where: string;
  readonly informer: Informer;

  constructor(
    readonly options: ClusterRegistriesOptions,
    readonly k8s: KubeModule,
    kc: KubeConfig,
  ) {
    this.where = `config map ${options.namespace}/${options.configMapName}`;
    this.informer = this.configMapInformer(kc);
  }

  /** The informer of the one config map (a field selector on its name). */
  configMapInformer(kc: KubeConfig): Informer {
    const options = this.options;
    const core = kc.makeApiClient(this.k8s.CoreV1Api);
    const fieldSelector = `metadata.name=${options.configMapName}`;
    return createInformer({
      name: this.where,
      kubeConfig: kc,
      watchPath: `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/configmaps`,
      watchParams: { fieldSelector },
      resyncMs: options.resyncMs,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
      list: (cont) =>
        core.listNamespacedConfigMap({
          namespace: options.namespace,
          fieldSelector,
          limit: 50,
          _continue: cont,
        }),
      onList: (items) => {
        if (items.length === 0 && !this.started) {
          this.log.info(`Multicluster: ${this.where} not found`);
        }
        this.setDesired(items[0]);
      },
      onEvent: (type, obj) => this.setDesired(type === "DELETED" ? undefined : obj),
    });
  }

  /** The running entries, in cluster-id order. */
  running(): [string, Entry][] {
    return [...this.entries.entries()].filter(([, e]) => e.registry).sort(byKey);
  }

  notify(kind: "services" | "endpoints", hosts?: ReadonlySet<string>) {
    for (const h of [...this.handlers]) {
      try {
        h(kind, hosts);
      } catch (err) {
        this.log.error(`Multicluster: change handler failed: ${(err as Error).message}`);
      }
    }
  }

  /** Starts the registry of cluster `id` from its kubeconfig text; an entry with an error when not. */
  async addCluster(id: string, text: string): Promise<Entry> {
    const { options, where } = this;
    const entry: Entry = { text };
    let remote: KubeConfig;
    try {
      remote = new this.k8s.KubeConfig();
      remote.loadFromString(text);
      if (!remote.getCurrentCluster()) {
        throw new Error(
          `no current context with a cluster ("${remote.getCurrentContext() ?? ""}")`,
        );
      }
    } catch (err) {
      entry.error = `Cluster "${id}" in ${where}: invalid kubeconfig: ${firstLine(err)}`;
      return entry;
    }
    let reg: OrchestratorRegistry | undefined;
    try {
      reg = await (this.options.createRegistry ?? createOrchestratorRegistry)({
        kubeConfig: remote,
        clusterId: id,
        domain: options.domain,
        appNamespace: options.appNamespace,
        resyncMs: options.resyncMs,
        endpointsSource: options.endpointsSource,
        watchTimeoutSeconds: options.watchTimeoutSeconds,
      });
      await reg.start();
    } catch (err) {
      await reg?.stop();
      entry.error = `Cluster "${id}" in ${where}: ${firstLine(err)}`;
      return entry;
    }
    // Only the registry in force speaks for its cluster: one replaced or removed (a change
    // racing its stop()) is not forwarded.
    const started = reg;
    reg.onChange((kind, hosts) => {
      if (this.entries.get(id)?.registry === started) this.notify(kind, hosts);
    });
    entry.registry = reg;
    return entry;
  }

  /** Stops what is no longer wanted (or failed), starts what is missing, tells the handlers. */
  async reconcile(): Promise<void> {
    if (this.closed) return;
    const want = this.desired;
    const before = this.running();
    for (const [id, e] of [...this.entries]) {
      if (want.get(id) === e.text && e.registry) continue;
      this.entries.delete(id);
      await e.registry?.stop();
    }
    // stop() was called while a registry stopped: nothing more is told (stop() stops the rest).
    if (this.closed) return;
    for (const [id, text] of want) {
      if (this.entries.has(id) || this.closed) continue;
      const e = await this.addCluster(id, text);
      if (this.closed) {
        await e.registry?.stop();
        return;
      }
      if (e.error) this.log.warn(`Multicluster: ${e.error}`);
      else this.log.info(`Multicluster: added the registry of cluster "${id}"`);
      this.entries.set(id, e);
    }
    const now = this.running();
    const ids = now.map(([id]) => id);
    if (ids.join(",") !== before.map(([id]) => id).join(",")) {
      for (const h of [...this.clusterHandlers]) h(ids);
    }
    // A cluster added, removed or replaced (same key, another kubeconfig): what is served changed.
    const replaced = now.length !== before.length ||
      now.some(([, e], i) => e.registry !== before[i][1].registry);
    if (replaced && this.started) this.notify("services");
  }

  setDesired(obj: unknown) {
    const data = (obj as { data?: Record<string, string> } | undefined)?.data ?? {};
    this.desired = new Map(Object.entries(data).sort(byKey));
    const reconcile = () => this.reconcile();
    this.chain = this.chain.then(reconcile, reconcile);
  }

  registries(): OrchestratorRegistry[] {
    return this.running().map(([, e]) => e.registry!);
  }

  errors(): ClusterError[] {
    return [...this.entries].filter(([, e]) => e.error).sort(byKey)
      .map(([cluster, e]) => ({ cluster, message: e.error! }));
  }

  services(): Service[] {
    const seen = new Set<string>();
    const out: Service[] = [];
    for (const r of this.registries()) {
      for (const s of r.services()) {
        if (seen.has(s.hostname)) continue;
        seen.add(s.hostname);
        out.push(s);
      }
    }
    return out;
  }

  instances(): ServiceInstance[] {
    return this.#instances();
  }
  readonly #instances = concatenation(() => this.registries().map((r) => r.instances()));

  instancesOf(hosts: ReadonlySet<string>): ServiceInstance[] {
    return this.registries().flatMap((r) => instancesOfHosts(r, hosts));
  }

  onChange(h: RegistryChangeHandler): void {
    this.handlers.push(h);
  }

  onClustersChange(h: (clusterIds: string[]) => void): void {
    this.clusterHandlers.push(h);
  }

  async start() {
    await this.informer.start();
    await this.chain;
    this.started = true;
  }

  async stop() {
    this.closed = true;
    await this.informer.stop();
    await this.chain;
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((e) => e.registry?.stop()));
  }
}

function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split("\n")[0].trim();
}

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
import type { Service, ServiceInstance, ServiceRegistry } from "../model/types.ts";
import { getLogger } from "../log/mod.ts";
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

// long: closure over the config map watch and the per-cluster registries; split left to issue 25
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
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const log = getLogger("default");
  const where = `config map ${options.namespace}/${options.configMapName}`;
  const fieldSelector = `metadata.name=${options.configMapName}`;

  const entries = new Map<string, Entry>();
  const handlers: ((kind: "services" | "endpoints") => void)[] = [];
  const clusterHandlers: ((ids: string[]) => void)[] = [];
  let desired = new Map<string, string>();
  let chain: Promise<void> = Promise.resolve();
  let closed = false;
  let started = false;

  const running = () =>
    [...entries.entries()].filter(([, e]) => e.registry).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0
    );

  const notify = (kind: "services" | "endpoints") => {
    for (const h of [...handlers]) {
      try {
        h(kind);
      } catch (err) {
        log.error(`Multicluster: change handler failed: ${(err as Error).message}`);
      }
    }
  };

  async function addCluster(id: string, text: string): Promise<Entry> {
    const entry: Entry = { text };
    let remote: KubeConfig;
    try {
      remote = new k8s.KubeConfig();
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
      reg = await (options.createRegistry ?? createOrchestratorRegistry)({
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
    reg.onChange((kind) => {
      if (entries.get(id)?.registry === reg) notify(kind);
    });
    entry.registry = reg;
    return entry;
  }

  async function reconcile(): Promise<void> {
    if (closed) return;
    const want = desired;
    const before = running();
    for (const [id, e] of [...entries]) {
      if (want.get(id) === e.text && e.registry) continue;
      entries.delete(id);
      await e.registry?.stop();
    }
    // stop() was called while a registry stopped: nothing more is told (stop() stops the rest).
    if (closed) return;
    for (const [id, text] of want) {
      if (entries.has(id) || closed) continue;
      const e = await addCluster(id, text);
      if (closed) {
        await e.registry?.stop();
        return;
      }
      if (e.error) log.warn(`Multicluster: ${e.error}`);
      else log.info(`Multicluster: added the registry of cluster "${id}"`);
      entries.set(id, e);
    }
    const now = running();
    const ids = now.map(([id]) => id);
    if (ids.join(",") !== before.map(([id]) => id).join(",")) {
      for (const h of [...clusterHandlers]) h(ids);
    }
    // A cluster added, removed or replaced (same key, another kubeconfig): what is served changed.
    const replaced = now.length !== before.length ||
      now.some(([, e], i) => e.registry !== before[i][1].registry);
    if (replaced && started) notify("services");
  }

  const schedule = () => {
    chain = chain.then(reconcile, reconcile);
  };

  const setDesired = (obj: unknown) => {
    const data = (obj as { data?: Record<string, string> } | undefined)?.data ?? {};
    desired = new Map(Object.entries(data).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0));
    schedule();
  };

  const informer: Informer = createInformer({
    name: where,
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
      if (items.length === 0 && !started) log.info(`Multicluster: ${where} not found`);
      setDesired(items[0]);
    },
    onEvent: (type, obj) => setDesired(type === "DELETED" ? undefined : obj),
  });

  const combined: ClusterRegistries = {
    name: "Multicluster",
    registries: () => running().map(([, e]) => e.registry!),
    errors: () =>
      [...entries].filter(([, e]) => e.error).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
        .map(([cluster, e]) => ({ cluster, message: e.error! })),
    services(): Service[] {
      const seen = new Set<string>();
      const out: Service[] = [];
      for (const r of combined.registries()) {
        for (const s of r.services()) {
          if (seen.has(s.hostname)) continue;
          seen.add(s.hostname);
          out.push(s);
        }
      }
      return out;
    },
    instances(): ServiceInstance[] {
      return combined.registries().flatMap((r) => r.instances());
    },
    onChange: (h) => void handlers.push(h),
    onClustersChange: (h) => void clusterHandlers.push(h),
    async start() {
      await informer.start();
      await chain;
      started = true;
    },
    async stop() {
      closed = true;
      await informer.stop();
      await chain;
      const all = [...entries.values()];
      entries.clear();
      await Promise.all(all.map((e) => e.registry?.stop()));
    },
  };
  return combined;
}

function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split("\n")[0].trim();
}

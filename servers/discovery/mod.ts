/**
 * mesh-discovery's server: registries + config store → push context → xDS over ADS (gRPC,
 * plaintext and TLS) and REST, plus the debug/monitoring HTTP mux and ControlZ.
 *
 * ```ts ignore
 * const config = toConfig(flags, env);           // throws ConfigError listing every problem
 * const handle = await start(config, { certs: await readMeshCerts(config.certDir) });
 * await handle.ready;                            // registries and config store synced
 * await handle.shutdown();
 * ```
 * See docs/mesh-discovery.md.
 * @module
 */

import { startCtrlz } from "../../lib/ctrlz/mod.ts";
import { getLogger, type Logger } from "../../lib/log/mod.ts";
import {
  type ConfigObject,
  defaultMeshConfig,
  ingressClassMatches,
  ingressSchema,
  type MeshConfig,
  meshctlSchemas,
  normalizeIngress,
  parseMeshConfig,
  type ServiceRegistry,
} from "../../lib/model/mod.ts";
import {
  aggregateRegistries,
  createConsulRegistry,
  createEurekaRegistry,
  createMockRegistry,
  createPlatformCRegistry,
  createServiceEntryRegistry,
  parsePlatformCConfig,
} from "../../lib/registry/mod.ts";
import { type ConfigStore, createFileStore, openKubeStore } from "../../lib/store/mod.ts";
import { formatVersion, versionInfo } from "../../lib/version/mod.ts";
import { loadXdsProtos, type Proxy, proxyFromNode, TYPE_URLS } from "../../lib/xds/mod.ts";
import {
  type AdsServerHandle,
  ResourceCache,
  startAdsServer,
  XdsServer,
} from "../../lib/xds/server/mod.ts";
import type { IngressWatcher } from "../../lib/registry/ingress.ts";
import type { DiscoveryConfig, ListenAddress } from "./config.ts";
import { discoveryApp, RestCache } from "./http.ts";
import { createMetrics } from "./metrics.ts";
import {
  affectedClusters,
  changedKeys,
  ConfigSnapshot,
  DiscoveryModel,
  instanceFingerprints,
} from "./model.ts";
import { ProtoJson } from "./protojson.ts";
import { createWebhookClient } from "./webhook.ts";
import { DebugRegistry } from "./debug_registry.ts";
import { checkMeshCerts, type MeshCerts, watchMeshCerts } from "./certs.ts";

export { CERT_FILES, checkMeshCerts, type MeshCerts, readMeshCerts } from "./certs.ts";

export {
  ConfigError,
  DEFAULT_CERT_DIR,
  type DiscoveryConfig,
  type DiscoveryEnv,
  type DiscoveryFlags,
  type ListenAddress,
  parseListenAddress,
  parseWebhook,
  toConfig,
  type WebhookTarget,
} from "./config.ts";

/** What {@link start} needs besides the config. */
export interface DiscoveryDeps {
  /** Certificates for `--secureGrpcAddr` (see {@link readMeshCerts}); null/absent = no TLS port. */
  certs?: MeshCerts | null;
  /** Why `certs` is null, for the log line. */
  certsMissingReason?: string;
  /** Program arguments, shown by ControlZ. */
  args?: string[];
  /** Logger (default scope `default`). */
  logger?: Logger;
  /** Debounce of pushes in ms (default: the ADS server's, 100). */
  debounceAfterMs?: number;
  /** How often the certificate directory is checked while the TLS port waits for it (ms). */
  certPollMs?: number;
}

/** Addresses actually bound (`host:port`). */
export interface DiscoveryAddresses {
  http: string;
  grpc: string;
  secureGrpc?: string;
  monitoring: string;
  ctrlz: string;
}

/** A running discovery server. */
export interface DiscoveryHandle {
  readonly addresses: DiscoveryAddresses;
  /** Resolves once the registries and the config store have synced. */
  readonly ready: Promise<void>;
  /** Closes every listener and stops watching; idempotent. */
  shutdown(): Promise<void>;
}

function hostOf(a: ListenAddress): string {
  return a.host === "" ? "0.0.0.0" : a.host;
}

/**
 * `Cannot listen on <flag> <address>: address already in use`, from a Deno or grpc-js (Node
 * `EADDRINUSE`...) listen error.
 */
function listenError(where: string, e: unknown): Error {
  const text = e instanceof Error ? e.message : String(e);
  const reason = e instanceof Deno.errors.AddrInUse || /EADDRINUSE/.test(text)
    ? "address already in use"
    : e instanceof Deno.errors.AddrNotAvailable || /EADDRNOTAVAIL/.test(text)
    ? "address not available"
    : e instanceof Deno.errors.PermissionDenied || /EACCES/.test(text)
    ? "permission denied"
    : text;
  return new Error(`Cannot listen on ${where}: ${reason}`);
}

function hostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Reads the mesh configuration: a missing file gives the defaults (logged once). */
async function loadMeshConfig(file: string, log: Logger): Promise<MeshConfig> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      log.info(`Mesh configuration ${file} not found; using the default mesh configuration`);
      return defaultMeshConfig();
    }
    throw new Error(`Cannot read mesh configuration ${file}: ${(e as Error).message}`);
  }
  return parseMeshConfig(text, file);
}

/**
 * Starts the discovery server. Rejects (after closing whatever was opened) when a listener cannot
 * be bound, the mesh configuration is invalid, or a store/registry cannot be created.
 */
export async function start(
  config: DiscoveryConfig,
  deps: DiscoveryDeps = {},
): Promise<DiscoveryHandle> {
  const log = deps.logger ?? getLogger("default");
  const cleanups: (() => Promise<void> | void)[] = [];
  const cleanup = async () => {
    for (const fn of cleanups.splice(0).reverse()) {
      try {
        await fn();
      } catch (e) {
        log.warn(`Shutdown step failed: ${(e as Error).message}`);
      }
    }
  };
  try {
    for (const w of config.warnings) log.warn(w);
    const meshConfig = await loadMeshConfig(config.meshConfigPath, log);
    const defs = await loadXdsProtos();

    // Config store.
    let store: ConfigStore;
    if (config.configDir) {
      // Ingress objects too (meshctl -p fs stores them): they feed the gateway config below
      store = await createFileStore({
        dir: config.configDir,
        schemas: [...meshctlSchemas, ingressSchema],
      });
    } else {
      store = await openKubeStore({
        kubeconfigPath: config.orchconfig,
        inCluster: config.inCluster,
        schemas: meshctlSchemas,
        resyncMs: config.resyncMs,
        namespace: config.appNamespace,
      });
    }
    cleanups.push(() => store.close());

    // Registries, in --registries order (the remote clusters of --clusterRegistriesConfigMap
    // right after Orchestrator, else after the listed ones), then ServiceEntry, then the debug
    // registry.
    const members: ServiceRegistry[] = [];
    let ingressWatcher: IngressWatcher | undefined;
    let multicluster: ServiceRegistry | undefined;
    if (config.clusterRegistriesConfigMap) {
      const { createClusterRegistries } = await import("../../lib/registry/multicluster.ts");
      multicluster = await createClusterRegistries({
        kubeconfigPath: config.orchconfig,
        inCluster: config.inCluster,
        configMapName: config.clusterRegistriesConfigMap,
        namespace: config.clusterRegistriesNamespace,
        domain: config.domain,
        appNamespace: config.appNamespace,
        resyncMs: config.resyncMs,
      });
    }
    for (const name of config.registries) {
      switch (name) {
        case "Orchestrator": {
          const { createOrchestratorRegistry } = await import(
            "../../lib/registry/orchestrator.ts"
          );
          members.push(
            await createOrchestratorRegistry({
              kubeconfigPath: config.orchconfig,
              inCluster: config.inCluster,
              domain: config.domain,
              appNamespace: config.appNamespace,
              resyncMs: config.resyncMs,
            }),
          );
          if (multicluster) members.push(multicluster);
          const { createIngressWatcher } = await import("../../lib/registry/ingress.ts");
          ingressWatcher = await createIngressWatcher({
            kubeconfigPath: config.orchconfig,
            inCluster: config.inCluster,
            appNamespace: config.appNamespace,
            resyncMs: config.resyncMs,
            meshConfig,
          });
          break;
        }
        case "RegistryA":
          members.push(createConsulRegistry(config.regaserverURL, config.regaserverIntervalMs));
          break;
        case "RegistryB":
          members.push(createEurekaRegistry(config.regbserverURL, config.regbserverIntervalMs));
          break;
        case "PlatformC": {
          let text: string;
          try {
            text = await Deno.readTextFile(config.platformcConfig);
          } catch (e) {
            throw new Error(
              `Cannot read --platformcConfig ${config.platformcConfig}: ${(e as Error).message}`,
            );
          }
          members.push(
            await createPlatformCRegistry(parsePlatformCConfig(text, config.platformcConfig)),
          );
          break;
        }
        case "Mock":
          members.push(createMockRegistry(config.domain, config.mockPortOffset));
          break;
        case "ServiceEntry": // always read (below): no platform registry
          break;
      }
    }
    if (multicluster && !members.includes(multicluster)) members.push(multicluster);
    members.push(createServiceEntryRegistry(store, config.domain));
    const debugRegistry = new DebugRegistry();
    members.push(debugRegistry);
    const aggregate = aggregateRegistries(members);
    const configs = new ConfigSnapshot();
    cleanups.push(() => configs.close());
    const fileIngresses = config.configDir
      ? await fileIngressSource(() => configs.byKind("Ingress"), meshConfig)
      : undefined;
    const registry = {
      services: () => aggregate.services(),
      instances: () => aggregate.instances(),
      ingresses: (): ConfigObject[] => [
        ...(ingressWatcher?.ingresses() ?? []),
        ...(fileIngresses?.() ?? []),
      ],
    };

    // Model, ADS server, metrics.
    const cache = new ResourceCache();
    const model = new DiscoveryModel({
      registry,
      configs,
      meshConfig,
      domain: config.domain,
      cache,
      logger: log,
    });
    const holder: { server?: XdsServer<Proxy> } = {};
    /** The ADS listeners (plaintext, TLS), for readiness and metrics. */
    const listeners: { accepting: boolean; refused: number; throttled: number }[] = [];
    // Filled once every listener is up (the TLS port may start later and adds itself).
    const addresses = {} as DiscoveryAddresses;
    const transport = () => ({
      accepting: listeners.every((l) => l.accepting),
      refused: listeners.reduce((n, l) => n + l.refused, 0),
      throttled: listeners.reduce((n, l) => n + l.throttled, 0),
    });
    const metrics = await createMetrics(
      () => model.counts(),
      () => holder.server?.connectionCount ?? 0,
      transport,
    );
    const server = holder.server = new XdsServer<Proxy>({
      parseNode: (n) => proxyFromNode(n),
      resourcesFor: (proxy, typeUrl, names) => model.resourcesFor(proxy, typeUrl, names),
      knownTypes: [TYPE_URLS.cluster, TYPE_URLS.endpoint, TYPE_URLS.listener, TYPE_URLS.route],
      metrics: metrics.xds,
      logger: getLogger("ads"),
      ...(deps.debounceAfterMs !== undefined ? { debounceAfter: deps.debounceAfterMs } : {}),
    });
    cleanups.push(() => server.close());
    model.referencedKeys = () => {
      const keys: string[] = [];
      server.forEachHeld((t, n, v) => keys.push(`${t} ${n}|${v}`));
      return keys;
    };
    const restCache = config.discoveryCache ? new RestCache() : null;

    // Change events → pushes.
    let fingerprints = instanceFingerprints(registry.instances());
    const configChanged = () => {
      model.invalidate();
      restCache?.clear();
      server.push({ kind: "config" });
    };
    aggregate.onChange((kind) => {
      const next = instanceFingerprints(registry.instances());
      const changed = changedKeys(fingerprints, next);
      fingerprints = next;
      if (kind === "services") return configChanged();
      // only the affected clusters' assignments are rebuilt (a DNS service's change rebuilds all)
      model.updateEndpoints(changed);
      restCache?.clear();
      const watched = server.watchedNames(TYPE_URLS.endpoint);
      const proxyIps = new Set(server.proxies().map((p) => p.ip));
      const clusters = affectedClusters(watched, changed);
      if (clusters.length) server.push({ kind: "eds", clusters });
      // Clusters and listeners also depend on instances for DNS services and a proxy's own
      // instances: recompute those (only proxies whose output changed are sent anything).
      const ctx = model.context();
      const dns = new Set(
        ctx.services.filter((s) => s.resolution === "DNSLB").map((s) => s.hostname),
      );
      const touchesProxy = ctx.instances.some((i) =>
        proxyIps.has(i.address) && changed.has(`${i.hostname}|${i.servicePort.port}`)
      );
      if ([...changed].some((k) => dns.has(k.split("|")[0])) || touchesProxy) {
        server.push({ kind: "config", types: [TYPE_URLS.cluster, TYPE_URLS.listener] });
      }
    });
    ingressWatcher?.onChange(() => configChanged());
    if (config.ingressStatus) {
      await startIngressStatus(ingressWatcher, meshConfig, config, log, cleanups);
    }
    await configs.open(store, () => configChanged());

    // Listeners.
    const grpcHost = hostOf(config.grpcAddr);
    const ads = await startAdsServer({
      address: hostPort(grpcHost, config.grpcAddr.port),
      server,
      logger: getLogger("ads"),
      transport: config.grpc,
    }).catch((e) => {
      throw listenError(`--grpcAddr ${hostPort(grpcHost, config.grpcAddr.port)}`, e);
    });
    listeners.push(ads);
    cleanups.push(() => ads.shutdown());
    let secureGrpc: string | undefined;
    let secure: AdsServerHandle | undefined;
    const startSecure = async (certs: MeshCerts) => {
      const host = hostOf(config.secureGrpcAddr!);
      const listener = await startAdsServer({
        address: hostPort(host, config.secureGrpcAddr!.port),
        server,
        logger: getLogger("ads"),
        // Client certificates are verified when presented (proxies without one stay anonymous).
        tls: { ...certs, requireClientCert: false },
        transport: config.grpc,
      }).catch((e) => {
        throw listenError(`--secureGrpcAddr ${hostPort(host, config.secureGrpcAddr!.port)}`, e);
      });
      listeners.push(listener);
      cleanups.push(() => listener.shutdown());
      secure = listener;
      secureGrpc = hostPort(host, listener.port);
      return secureGrpc;
    };
    if (config.secureGrpcAddr) {
      // A half-written or mismatched set at start-up: wait for good files as for absent ones.
      const problem = deps.certs
        ? await checkMeshCerts(deps.certs, config.certDir).then(() => "", (e) => e.message)
        : "";
      if (deps.certs && !problem) {
        await startSecure(deps.certs);
      } else if (problem) {
        log.warn(
          `Secure gRPC (--secureGrpcAddr) not started: ${problem}; it starts once the certificate files in ${config.certDir} are valid`,
        );
      } else {
        log.info(
          `Secure gRPC (--secureGrpcAddr) not started: ${
            deps.certsMissingReason || `no certificates in ${config.certDir}`
          }; it starts once the certificate files appear in ${config.certDir}`,
        );
      }
      // The agent or the CA writes the files while discovery runs: start the port when they
      // appear, and serve rotated ones to new connections (established streams keep theirs).
      const watcher = watchMeshCerts({
        dir: config.certDir,
        current: deps.certs && !problem ? deps.certs : null,
        rejected: problem ? deps.certs : null,
        logger: log,
        pollMs: deps.certPollMs,
        apply: async (certs) => {
          if (secure) {
            secure.setTls(certs);
            log.info(
              `Secure gRPC: certificates reloaded from ${config.certDir} (new connections use them; established streams continue)`,
            );
            return;
          }
          const address = await startSecure(certs);
          addresses.secureGrpc = address;
          log.info(
            `Secure gRPC started: listening secureGrpc=${address} (certificates appeared in ${config.certDir})`,
          );
        },
      });
      cleanups.push(() => watcher.close());
    }

    let ready = false;
    const webhook = config.webhook ? createWebhookClient(config.webhook) : null;
    if (webhook) cleanups.push(() => webhook.close());
    const app = discoveryApp({
      model,
      server,
      cache,
      registry,
      metrics,
      protojson: new ProtoJson(defs),
      restCache,
      debugRegistry,
      webhook,
      profile: config.profile,
      isReady: () => ready,
      notReady: () =>
        !ready
          ? "registries or config store not synced"
          : !transport().accepting
          ? "ADS cannot accept connections (out of file descriptors?)"
          : undefined,
      stalled: () => store.stalled?.(),
      versionText: formatVersion(versionInfo(), false),
      logger: log,
    });
    const serve = (port: number, what: string) => {
      let s: Deno.HttpServer<Deno.NetAddr>;
      try {
        s = Deno.serve({ hostname: config.httpAddress, port, onListen: () => {} }, app.fetch);
      } catch (e) {
        throw listenError(`${what} ${port}`, e);
      }
      cleanups.push(async () => {
        await s.shutdown();
        await s.finished;
      });
      return s.addr.port;
    };
    const httpPort = serve(config.port, "--port");
    const monitoringPort = serve(config.monitoringPort, "--monitoringPort");
    const ctrlz = await startCtrlz({
      address: config.ctrlz.address,
      port: config.ctrlz.port,
      program: "mesh-discovery",
      args: deps.args ?? [],
      scopes: ["ads", "default"],
    });
    cleanups.push(() => ctrlz.shutdown());

    Object.assign(addresses, {
      http: hostPort(config.httpAddress, httpPort),
      grpc: hostPort(grpcHost, ads.port),
      ...(secureGrpc ? { secureGrpc } : {}),
      monitoring: hostPort(config.httpAddress, monitoringPort),
      ctrlz: ctrlz.address,
    });
    log.info(
      `listening http=${addresses.http} grpc=${addresses.grpc}` +
        (secureGrpc ? ` secureGrpc=${secureGrpc}` : "") +
        ` monitoring=${addresses.monitoring} ctrlz=${addresses.ctrlz}`,
    );

    const readyPromise = Promise.all([aggregate.start(), ingressWatcher?.start()]).then(() => {
      ready = true;
      model.invalidate();
      fingerprints = instanceFingerprints(registry.instances());
      server.push({ kind: "full" });
      log.info("Registries and config store synced; discovery is ready");
    });
    cleanups.push(() => aggregate.stop());
    if (ingressWatcher) cleanups.push(() => ingressWatcher.stop());
    readyPromise.catch((e) => log.error(`Registries failed to start: ${(e as Error).message}`));

    let stopping: Promise<void> | undefined;
    return {
      addresses,
      ready: readyPromise,
      shutdown: () => stopping ??= cleanup(),
    };
  } catch (e) {
    await cleanup();
    throw e;
  }
}

/**
 * The Ingress objects of the file store (`--configDir`) in the gateway generator's form: those of
 * the mesh ingress class (`ingressControllerMode`), converted as the orchestrator watcher does.
 */
async function fileIngressSource(
  stored: () => ConfigObject[],
  meshConfig: MeshConfig,
): Promise<() => ConfigObject[]> {
  const { ingressConfigObject } = await import("../../lib/registry/ingress.ts");
  return () =>
    stored().flatMap((o) => {
      const { ingress } = normalizeIngress(o, o.metadata.name, o.metadata.namespace);
      return ingress && ingressClassMatches(ingress, meshConfig)
        ? [ingressConfigObject(ingress)]
        : [];
    });
}

/** How often the Ingress status is checked against the gateway service (also after changes). */
const INGRESS_STATUS_PERIOD_MS = 10_000;

/**
 * `--ingressStatus`: keeps `status.loadBalancer` of the mesh's Ingresses equal to the addresses of
 * the ingress gateway service (mesh config `ingressService`, in `--namespace`), after every change
 * of the selected Ingresses and every 10 s. Needs the Orchestrator registry (the Ingress watcher).
 */
async function startIngressStatus(
  watcher: IngressWatcher | undefined,
  meshConfig: MeshConfig,
  config: DiscoveryConfig,
  log: Logger,
  cleanups: (() => Promise<void> | void)[],
): Promise<void> {
  const service = meshConfig.ingressService;
  if (!watcher || !service) {
    log.warn(
      `--ingressStatus: not started (${
        !watcher ? "needs the Orchestrator registry" : "the mesh config sets no ingressService"
      })`,
    );
    return;
  }
  const { loadKubeConfig } = await import("../../lib/kube/mod.ts");
  const { syncIngressStatus } = await import("../../lib/registry/ingress_status.ts");
  const kc = await loadKubeConfig(config.orchconfig, undefined, config.inCluster);
  const namespace = config.namespace || "mesh-system";
  let running = false;
  let again = false;
  const sync = async () => {
    if (running) return void (again = true);
    running = true;
    try {
      do {
        again = false;
        if (!watcher.apiVersion) continue;
        const ingresses = watcher.ingresses().map((o) => ({
          name: o.metadata.name,
          namespace: o.metadata.namespace ?? "default",
        }));
        const n = await syncIngressStatus({
          kubeConfig: kc,
          apiVersion: watcher.apiVersion,
          service: { name: service, namespace },
          ingresses,
        });
        if (n) log.info(`Ingress status: updated ${n} Ingress${n === 1 ? "" : "es"}`);
      } while (again);
    } finally {
      running = false;
    }
  };
  watcher.onChange(() => void sync());
  const timer = setInterval(() => void sync(), INGRESS_STATUS_PERIOD_MS);
  cleanups.push(() => clearInterval(timer));
  void sync();
}

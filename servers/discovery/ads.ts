/**
 * The xDS side of mesh-discovery's `start`: the model and resource cache, the ADS state machine
 * (`XdsServer`) with its metrics, and the gRPC listeners (plaintext `--grpcAddr`, TLS
 * `--secureGrpcAddr`) that feed it.
 * @module
 */

import { getLogger, type Logger } from "../../lib/log/mod.ts";
import type { PoolFigures } from "../../lib/monitoring/mod.ts";
import type { MeshConfig } from "../../lib/model/mod.ts";
import type { Cleanups } from "../../lib/process/mod.ts";
import { type Proxy, proxyFromNode, TYPE_URLS } from "../../lib/xds/mod.ts";
import {
  ResourceCache,
  startAdsServer,
  sumListenerStates,
  XdsServer,
} from "../../lib/xds/server/mod.ts";
import type { XdsServerView } from "../../lib/xds/server/worker_control.ts";
import { checkMeshCerts, type MeshCerts, watchMeshCerts } from "./certs.ts";
import type { DiscoveryConfig, ListenAddress } from "./config.ts";
import { adsAcceptLoops, hostOf, hostPort, listenError } from "./listen.ts";
import { createMetrics, type DiscoveryMetrics, type TransportState } from "./metrics.ts";
import { ConfigSnapshot, DiscoveryModel, type DiscoveryRegistry } from "./model.ts";

/** The ADS listeners (plaintext, TLS), summed for `/ready` and the metrics. */
export class AdsListeners {
  readonly #all: (() => TransportState)[] = [];

  /** Counts `listener` from now on. */
  add(listener: TransportState): void {
    this.#all.push(() => listener);
  }

  /** Counts the listeners whose state `read` gives, summed (the workers'), from now on. */
  addSum(read: () => TransportState): void {
    this.#all.push(read);
  }

  /** Whether every listener accepts, and the connections refused, throttled and shed by all. */
  transport(): TransportState {
    return sumListenerStates(this.#all.map((read) => read()));
  }
}

/** The model and the ADS server built over it. */
export interface XdsCore {
  cache: ResourceCache;
  model: DiscoveryModel;
  /** What the rest of the server reads: `local`, or with `--workers` every isolate's streams. */
  server: XdsServerView<Proxy>;
  /** This isolate's own ADS server (its listeners feed it). */
  local: XdsServer<Proxy>;
  metrics: DiscoveryMetrics;
  listeners: AdsListeners;
  /** The worker pools running (the HTTP front, `--workers`), for `mesh_worker_*`. */
  pools: PoolFigures[];
}

/**
 * Creates the resource cache, the model over `registry` and `configs`, the metrics and the ADS
 * server (closed by `cleanups`). No listener is opened yet.
 */
export async function createXdsCore(opts: {
  registry: DiscoveryRegistry;
  configs: ConfigSnapshot;
  meshConfig: MeshConfig;
  domain: string;
  logger: Logger;
  debounceAfterMs?: number;
  cleanups: Cleanups;
}): Promise<XdsCore> {
  const cache = new ResourceCache();
  const model = new DiscoveryModel({
    registry: opts.registry,
    configs: opts.configs,
    meshConfig: opts.meshConfig,
    domain: opts.domain,
    cache,
    logger: opts.logger,
  });
  // read through `core`: `--workers` replaces `core.server` (servers/discovery/workers/)
  let core: XdsCore | undefined;
  const listeners = new AdsListeners();
  const pools: PoolFigures[] = [];
  const metrics = await createMetrics(
    () => model.counts(),
    () => core?.server.connectionCount ?? 0,
    () => listeners.transport(),
    () => pools,
  );
  opts.cleanups.push(() => metrics.close());
  const server = new XdsServer<Proxy>({
    parseNode: (n) => proxyFromNode(n),
    proxyKey: (p) => p.ip,
    resourcesFor: (proxy, typeUrl, names) => model.resourcesFor(proxy, typeUrl, names),
    knownTypes: [TYPE_URLS.cluster, TYPE_URLS.endpoint, TYPE_URLS.listener, TYPE_URLS.route],
    metrics: metrics.xds,
    logger: getLogger("ads"),
    ...(opts.debounceAfterMs !== undefined ? { debounceAfter: opts.debounceAfterMs } : {}),
  });
  const c: XdsCore = core = { cache, model, server, local: server, metrics, listeners, pools };
  opts.cleanups.push(() => c.server.close());
  model.referencedKeys = () => {
    const keys: string[] = [];
    c.server.forEachHeld((t, n, v) => keys.push(`${t} ${n}|${v}`));
    return keys;
  };
  return c;
}

/** Opens the plaintext ADS listener (`--grpcAddr`) and returns its `host:port`. */
export async function listenAds(
  config: DiscoveryConfig,
  core: XdsCore,
  cleanups: Cleanups,
): Promise<string> {
  const host = hostOf(config.grpcAddr);
  const ads = await startAdsServer({
    address: hostPort(host, config.grpcAddr.port),
    server: core.local,
    logger: getLogger("ads"),
    transport: config.grpc,
    nativeReads: config.grpcReusedReads,
    acceptLoops: adsAcceptLoops(config, 1),
  }).catch((e) => {
    throw listenError(`--grpcAddr ${hostPort(host, config.grpcAddr.port)}`, e);
  });
  core.listeners.add(ads);
  cleanups.push(() => ads.shutdown());
  return hostPort(host, ads.port);
}

/** What {@link listenSecureAds} needs besides the config and the core. */
export interface SecureAdsDeps {
  certs?: MeshCerts | null;
  certsMissingReason?: string;
  certPollMs?: number;
  logger: Logger;
  cleanups: Cleanups;
  /** Called with the `host:port` when the TLS port starts after `start` returned. */
  startedLater(address: string): void;
  /**
   * Opens the TLS listener on `host`:`port` with `certs` (default: in this isolate, serving
   * `core.local`; with `--workers`, on the worker isolates). Rejects with the reason it cannot.
   */
  open?(host: string, port: number, certs: MeshCerts): Promise<SecureListener>;
}

/** An open TLS ADS listener: its bound port, and new certificates for new connections. */
export interface SecureListener {
  port: number;
  setTls(certs: MeshCerts): void | Promise<void>;
}

/**
 * `--secureGrpcAddr`: opens the TLS ADS listener when valid certificates are at hand, and watches
 * the certificate directory (the agent or the CA writes the files while discovery runs): the port
 * starts when they appear, and rotated ones are served to new connections (established streams
 * keep theirs). Resolves to the bound `host:port`, or undefined while the port waits.
 */
export async function listenSecureAds(
  config: DiscoveryConfig,
  address: ListenAddress,
  core: XdsCore,
  deps: SecureAdsDeps,
): Promise<string | undefined> {
  const { logger: log, cleanups } = deps;
  let secure: SecureListener | undefined;
  const open = deps.open ?? (async (host: string, port: number, certs: MeshCerts) => {
    const listener = await startAdsServer({
      address: hostPort(host, port),
      server: core.local,
      logger: getLogger("ads"),
      // Client certificates are verified when presented (proxies without one stay anonymous).
      tls: { ...certs, requireClientCert: false },
      transport: config.grpc,
      acceptLoops: adsAcceptLoops(config, 1),
    });
    core.listeners.add(listener);
    cleanups.push(() => listener.shutdown());
    return listener;
  });
  const startSecure = async (certs: MeshCerts) => {
    const host = hostOf(address);
    secure = await open(host, address.port, certs).catch((e) => {
      throw listenError(`--secureGrpcAddr ${hostPort(host, address.port)}`, e);
    });
    return hostPort(host, secure.port);
  };
  // A half-written or mismatched set at start-up: wait for good files as for absent ones.
  const problem = deps.certs
    ? await checkMeshCerts(deps.certs, config.certDir).then(() => "", (e) => e.message)
    : "";
  let bound: string | undefined;
  if (deps.certs && !problem) {
    bound = await startSecure(deps.certs);
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
  const watcher = watchMeshCerts({
    dir: config.certDir,
    current: deps.certs && !problem ? deps.certs : null,
    rejected: problem ? deps.certs : null,
    logger: log,
    pollMs: deps.certPollMs,
    apply: async (certs) => {
      if (secure) {
        await secure.setTls(certs);
        log.info(
          `Secure gRPC: certificates reloaded from ${config.certDir} (new connections use them; established streams continue)`,
        );
        return;
      }
      const later = await startSecure(certs);
      deps.startedLater(later);
      log.info(
        `Secure gRPC started: listening secureGrpc=${later} (certificates appeared in ${config.certDir})`,
      );
    },
  });
  cleanups.push(() => watcher.close());
  return bound;
}

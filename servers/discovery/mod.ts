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
import { Cleanups } from "../../lib/process/mod.ts";
import type { ConfigStore } from "../../lib/store/mod.ts";
import { formatVersion, versionInfo } from "../../lib/version/mod.ts";
import { loadXdsProtos } from "../../lib/xds/mod.ts";
import {
  createXdsCore,
  listenAds,
  listenSecureAds,
  type SecureAdsDeps,
  type XdsCore,
} from "./ads.ts";
import type { DiscoveryConfig } from "./config.ts";
import { discoveryApp, MAX_REQUEST_BYTES, RestCache } from "./http.ts";
import { startIngressStatus } from "./ingress_status.ts";
import { hostPort, listenError } from "./listen.ts";
import { ProtoJson } from "../../lib/xds/json.ts";
import { PREPARE_SLICE_MS, PushRouter } from "./pushes.ts";
import { loadMeshConfig, openConfigStore, openSources, type Sources } from "./sources.ts";
import { createWebhookClient } from "./webhook.ts";
import { FrontListenError, HttpFront, workerCount } from "../../lib/workers/mod.ts";
import { watchMeshConfig } from "./mesh_config_watch.ts";
import { traceIsolate } from "../../lib/xds/server/push_trace.ts";
import type { MeshCerts } from "./certs.ts";

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
  /** How often `--meshConfig` is re-read for live changes (ms, default 500). */
  meshConfigPollMs?: number;
  /** With `--workers`: delay before a worker that died is started again (ms, default 1000). */
  workerRestartDelayMs?: number;
  /** With `--workers`: called with the workers before they start (tests). */
  onAdsWorkers?: (workers: import("./workers/mod.ts").AdsWorkers) => void;
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

/**
 * Starts the discovery server. Rejects (after closing whatever was opened) when a listener cannot
 * be bound, the mesh configuration is invalid, or a store/registry cannot be created.
 */
export async function start(
  config: DiscoveryConfig,
  deps: DiscoveryDeps = {},
): Promise<DiscoveryHandle> {
  const log = deps.logger ?? getLogger("default");
  const cleanups = new Cleanups({
    onError: (e) => log.warn(`Shutdown step failed: ${(e as Error).message}`),
  });
  try {
    return await startSteps(config, deps, log, cleanups);
  } catch (e) {
    await cleanups.run();
    throw e;
  }
}

/**
 * `start`'s steps, in order; each pushes on `cleanups` what undoes it. A new step goes where its
 * inputs exist: inputs (mesh config, store, registries) → model and ADS server → change routing
 * → listeners → sync.
 */
async function startSteps(
  config: DiscoveryConfig,
  deps: DiscoveryDeps,
  log: Logger,
  cleanups: Cleanups,
): Promise<DiscoveryHandle> {
  for (const w of config.warnings) log.warn(w);
  // The HTTP front's isolate loads while the rest starts; it serves the mux once there is one.
  const front = startHttpFront(config, log, cleanups);

  // Inputs: the mesh configuration, the config store, the registries.
  const meshConfig = await loadMeshConfig(config.meshConfigPath, log);
  const defs = await loadXdsProtos();
  const store = await openConfigStore(config);
  cleanups.push(() => store.close());
  const sources = await openSources(config, store, meshConfig, cleanups);

  // Model and ADS server; change events → pushes.
  const core = await createXdsCore({
    registry: sources.registry,
    configs: sources.configs,
    meshConfig,
    domain: config.domain,
    logger: log,
    debounceAfterMs: deps.debounceAfterMs,
    cleanups,
  });
  // with --workers the streams of --grpcAddr live in worker isolates: core.server sees them all
  const ads = await planAds(config, core, deps, log, cleanups);
  const restCache = config.discoveryCache ? new RestCache() : null;
  const pushes = new PushRouter({
    ...core,
    registry: sources.registry,
    restCache,
    prepareSliceMs: PREPARE_SLICE_MS,
  });
  cleanups.push(() => pushes.close());
  sources.aggregate.onChange((kind, hosts) => pushes.registryChanged(kind, hosts));
  sources.ingressWatcher?.onChange(() => pushes.configChanged());
  if (config.ingressStatus) {
    await startIngressStatus(sources.ingressWatcher, meshConfig, config, log, cleanups);
  }
  await sources.configs.open(store, (ev, previous) => pushes.storeChanged(ev, previous));
  // Live mesh configuration (servers/discovery/mesh_config_watch.ts).
  const meshWatch = watchMeshConfig({
    path: config.meshConfigPath,
    initial: meshConfig,
    logger: log,
    intervalMs: deps.meshConfigPollMs,
    onChange: (mc) => {
      core.model.setMeshConfig(mc);
      pushes.configChanged();
    },
  });
  cleanups.push(() => meshWatch.close());

  // Listeners: ADS (plaintext, TLS), HTTP and monitoring, ControlZ.
  // Filled once every listener is up (the TLS port may start later and adds itself).
  const addresses = {} as DiscoveryAddresses;
  const grpc = await ads.listen();
  const secureGrpc = config.secureGrpcAddr
    ? await listenSecureAds(config, config.secureGrpcAddr, core, {
      open: ads.openSecure,
      certs: deps.certs,
      certsMissingReason: deps.certsMissingReason,
      certPollMs: deps.certPollMs,
      logger: log,
      cleanups,
      startedLater: (address) => addresses.secureGrpc = address,
    })
    : undefined;
  const readiness = { synced: false };
  const http = await serveHttpPorts({
    front,
    config,
    core,
    sources,
    store,
    restCache,
    protojson: new ProtoJson(defs),
    isReady: () => readiness.synced,
    log,
    cleanups,
  });
  const ctrlz = await startCtrlz({
    address: config.ctrlz.address,
    port: config.ctrlz.port,
    program: "mesh-discovery",
    args: deps.args ?? [],
    scopes: ["ads", "default"],
  });
  cleanups.push(() => ctrlz.shutdown());
  Object.assign(addresses, {
    http: hostPort(config.httpAddress, http.port),
    grpc,
    ...(secureGrpc ? { secureGrpc } : {}),
    monitoring: hostPort(config.httpAddress, http.monitoringPort),
    ctrlz: ctrlz.address,
  });
  log.info(
    `listening http=${addresses.http} grpc=${addresses.grpc}` +
      (secureGrpc ? ` secureGrpc=${secureGrpc}` : "") +
      ` monitoring=${addresses.monitoring} ctrlz=${addresses.ctrlz}`,
  );

  // Sync: ready once the registries and the config store have synced.
  const ready = Promise.all([sources.aggregate.start(), sources.ingressWatcher?.start()]).then(
    async () => {
      readiness.synced = true;
      pushes.synced();
      await http.front.refresh(); // `/ready` says so from now on, not at the next heartbeat
      log.info("Registries and config store synced; discovery is ready");
    },
  );
  cleanups.push(() => sources.aggregate.stop());
  if (sources.ingressWatcher) cleanups.push(() => sources.ingressWatcher!.stop());
  ready.catch((e) => log.error(`Registries failed to start: ${(e as Error).message}`));

  return { addresses, ready, shutdown: () => cleanups.run() };
}

/**
 * `--grpcAddr` and `--secureGrpcAddr`: in this isolate, or with `--workers` on worker isolates
 * (servers/discovery/workers/, loaded only then; `core.server` is replaced at once, the workers
 * start when `listen` is called, and `openSecure` opens the TLS port on them).
 */
async function planAds(
  config: DiscoveryConfig,
  core: XdsCore,
  deps: DiscoveryDeps,
  log: Logger,
  cleanups: Cleanups,
): Promise<{ listen(): Promise<string>; openSecure?: SecureAdsDeps["open"] }> {
  const { count, reason } = workerCount(config.workers);
  if (reason) log.warn(`${reason}; serving ADS on one isolate`);
  if (count <= 1) {
    traceIsolate("main"); // MESH_XDS_TRACE: this isolate's stalls (no-op unless set)
    return { listen: () => listenAds(config, core, cleanups) };
  }
  const { AdsWorkers } = await import("./workers/mod.ts");
  const workers = new AdsWorkers(config, core, {
    count,
    debounceAfterMs: deps.debounceAfterMs,
    restartDelayMs: deps.workerRestartDelayMs,
    log,
    cleanups,
  });
  deps.onAdsWorkers?.(workers);
  return {
    async listen() {
      const address = await workers.listen();
      log.info(`ADS: --grpcAddr ${address} served by ${count} worker isolates`);
      return address;
    },
    async openSecure(host, port, certs) {
      const secure = await workers.listenSecure(host, port, certs);
      log.info(
        `ADS: --secureGrpcAddr ${hostPort(host, secure.port)} served by ${count} worker isolates`,
      );
      return secure;
    },
  };
}

/** A handler of the HTTP ports. */
type Mux = (
  req: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
) => Response | Promise<Response>;

/** The HTTP front while it starts, and how to give it the mux. */
interface StartingFront {
  started: Promise<HttpFront>;
  /** Requests reach `mux` from now on (before it: 503, not ready, starting). */
  serve(mux: Mux): void;
  /** From now on the front is closed where the caller says, not by a failed start's cleanup. */
  takeOver(): void;
}

/**
 * `--port` and `--monitoringPort`, owned by the HTTP front's isolate (lib/workers/http_front.ts):
 * `/ready` is answered there from this isolate's heartbeat, so that a kubelet probe is not held
 * up by ADS pushes; every other request is handed to the mux here. Started first so that its
 * isolate loads while the rest of `start` runs; a start that fails before {@link serveHttpPorts}
 * takes it over closes it.
 */
function startHttpFront(config: DiscoveryConfig, log: Logger, cleanups: Cleanups): StartingFront {
  let mux: Mux | undefined;
  let takenOver = false;
  const ports = [["--port", config.port], ["--monitoringPort", config.monitoringPort]] as const;
  const started = HttpFront.start({
    listeners: ports.map(([, port]) => ({ hostname: config.httpAddress, port })),
    handler: (req, info) =>
      mux ? mux(req, info) : new Response("not ready: starting\n", { status: 503 }),
    maxRequestBytes: MAX_REQUEST_BYTES,
    log,
  }).catch((e) => {
    if (!(e instanceof FrontListenError)) throw e;
    const [flag, port] = ports[e.index];
    throw listenError(`${flag} ${port}`, e.cause);
  });
  started.catch(() => {}); // told where it is awaited (or nowhere, when an earlier step failed)
  cleanups.push(async () => {
    if (!takenOver) await (await started.catch(() => undefined))?.close();
  });
  return { started, serve: (m) => mux = m, takeOver: () => takenOver = true };
}

/** Serves the discovery mux on the HTTP front's ports; returns the bound ports. */
async function serveHttpPorts(o: {
  front: StartingFront;
  config: DiscoveryConfig;
  core: XdsCore;
  sources: Sources;
  store: ConfigStore;
  restCache: RestCache | null;
  protojson: ProtoJson;
  isReady(): boolean;
  log: Logger;
  cleanups: Cleanups;
}): Promise<{ port: number; monitoringPort: number; front: HttpFront }> {
  const { config, core, cleanups } = o;
  const front = await o.front.started;
  if (front.pool) core.pools.push(front.pool);
  o.front.takeOver();
  const webhook = config.webhook ? createWebhookClient(config.webhook) : null;
  if (webhook) cleanups.push(() => webhook.close());
  const app = discoveryApp({
    model: core.model,
    server: core.server,
    cache: core.cache,
    registry: o.sources.registry,
    metrics: core.metrics,
    protojson: o.protojson,
    restCache: o.restCache,
    debugRegistry: o.sources.debugRegistry,
    webhook,
    profile: config.profile,
    isReady: o.isReady,
    notReady: () =>
      !o.isReady()
        ? "registries or config store not synced"
        : !core.listeners.transport().accepting
        ? "ADS cannot accept connections (out of file descriptors?)"
        : undefined,
    stalled: () => o.store.stalled?.(),
    versionText: formatVersion(versionInfo(), false),
    logger: o.log,
  });
  o.front.serve(app.fetch);
  await front.refresh();
  cleanups.push(() => front.close());
  return { port: front.ports[0], monitoringPort: front.ports[1], front };
}

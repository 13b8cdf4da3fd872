/**
 * mesh-policy, the policy and telemetry server: `toConfig(flags)` then `start(config, deps)`.
 *
 * `start` loads the configuration (`--configStoreURL`, over the built-in default telemetry
 * configuration), serves `mesh.mixer.v1.Mixer` (Check, Report) on our gRPC transport at
 * `--address` or `--port`, the monitoring listener, and the probe files, and returns a handle
 * whose `shutdown()` stops everything.
 *
 * @example
 * ```ts ignore
 * const handle = await start(toConfig(flags), {});
 * console.log(handle.addresses.grpc);
 * await handle.shutdown();
 * ```
 * @module
 */

import { type GrpcListener, listenGrpc } from "../../lib/grpc/mod.ts";
import { hostPort } from "../../lib/net/mod.ts";
import { getLogger, type Logger } from "../../lib/log/mod.ts";
import { Cleanups } from "../../lib/process/mod.ts";
import { mixerCodec } from "../../lib/mixer/mod.ts";
import { allSchemas } from "../../lib/model/registry.ts";
import type { ConfigObject } from "../../lib/model/types.ts";
import type { KubeConfig } from "../../lib/kube/mod.ts";
import { orchKubeConfig } from "./kubeconfig.ts";
import { startProbeUpdater } from "../../lib/probe/mod.ts";
import { type ConfigStore, openStoreFromURL } from "../../lib/store/mod.ts";
import type { AdapterEnv } from "./adapters/mod.ts";
import type { PolicyConfig } from "./config.ts";
import { withDefaults } from "./defaults.ts";
import { listenerLogging, mixerHandlers, mixerWork } from "./grpc.ts";
import type { PolicyWorkers } from "./workers.ts";
import { isPortProblem, workerCount } from "../../lib/workers/mod.ts";
import { aggregateMetrics } from "../../lib/monitoring/mod.ts";
import { createPolicyMetrics, monitoringHandler } from "./monitoring.ts";
import { Pool } from "./pool.ts";
import { Snapshot } from "./runtime.ts";
import type { ConfigIssue } from "./templates.ts";
import { createTracer, type ExportTiming } from "./tracing.ts";

export {
  type ApiAddress,
  ConfigError,
  parseAddress,
  type PolicyConfig,
  type PolicyFlags,
  toConfig,
} from "./config.ts";
export { defaultTelemetry } from "./defaults.ts";
export { ADAPTERS } from "./adapters/mod.ts";
export { TEMPLATES } from "./templates.ts";

/** The store types mesh-policy reads: its own kinds and the RBAC ones. */
export const POLICY_STORE_SCHEMAS = allSchemas.filter((s) =>
  s.policyCategory !== undefined || s.type === "servicerole" || s.type === "servicerolebinding"
);

/** Injected dependencies of {@link start}. */
export interface PolicyDeps {
  /** gRPC port override (tests: 0 picks a free port) when the address is TCP. */
  port?: number;
  /** Host override for TCP listeners (default: the address's host, `0.0.0.0` for --port). */
  host?: string;
  /** Monitoring port override (0 picks a free one; null turns it off). */
  monitoringPort?: number | null;
  /** A store to use instead of opening `--configStoreURL`. */
  store?: ConfigStore;
  /** Text of `/version`. */
  versionText?: string;
  /** Delay that groups store changes into one reload (ms, default 50). */
  reloadDelayMs?: number;
  /** stdio adapter output (default: process stdout/stderr). */
  write?: AdapterEnv["write"];
  log?: Logger;
  now?: () => number;
  /**
   * The orchestrator's kubeconfig for attribute generation (kubernetesenv). Default: the
   * kubeconfig of an `orch://<path>` `--configStoreURL`; none on the fs platform.
   */
  kubeConfig?: () => Promise<KubeConfig>;
  /** Batch delay and export timeout of the tracing exporters (default 1 s and 5 s). */
  traceTiming?: ExportTiming;
}

/** Bound addresses. */
export interface PolicyAddresses {
  /** `host:port` of the gRPC API, or `unix:<path>`. */
  grpc: string;
  /** `host:port` of the monitoring listener, or null when off. */
  monitoring: string | null;
}

/** A running policy server. */
export interface PolicyHandle {
  readonly addresses: PolicyAddresses;
  /** Resolves once the first configuration was loaded. */
  readonly ready: Promise<void>;
  /** Problems of the last configuration seen (empty when it is in force). */
  issues(): readonly ConfigIssue[];
  /** Reloads the configuration now (with `--workers`: resolves once every worker has it). */
  reload(): Promise<void>;
  /** Worker isolates serving the API (0 when the API is served by this isolate). */
  readonly workers: number;
  /** Each worker's own metrics registry as `getMetricsAsJSON()` (`[]` without workers). */
  workerMetrics(): Promise<unknown[]>;
  shutdown(): Promise<void>;
}

const enc = new TextEncoder();
const defaultWrite: AdapterEnv["write"] = (stream, line) => {
  (stream === "stdout" ? Deno.stdout : Deno.stderr).writeSync(enc.encode(line + "\n"));
};

/**
 * Starts the server.
 * @throws Error with a one-line startup message (store unreadable, port in use...).
 */
export async function start(config: PolicyConfig, deps: PolicyDeps = {}): Promise<PolicyHandle> {
  const log = deps.log ?? getLogger("default");
  const cleanups = new Cleanups();
  try {
    return await startParts(config, deps, log, cleanups);
  } catch (e) {
    await cleanups.run().catch(() => {});
    throw e;
  }
}

/** start's steps in order: store, configuration reloads, gRPC API, monitoring, probes. */
async function startParts(
  config: PolicyConfig,
  deps: PolicyDeps,
  log: Logger,
  cleanups: Cleanups,
): Promise<PolicyHandle> {
  const metrics = createPolicyMetrics();
  const env: AdapterEnv = {
    log: getLogger("adapters"),
    now: deps.now ?? Date.now,
    rbac: () => ({ roles: [], bindings: [] }),
    write: deps.write ?? defaultWrite,
    fetch: (...a) => fetch(...a),
    kubeConfig: deps.kubeConfig ?? orchKubeConfig(config.configStoreURL),
    traceUrl: config.tracing.zipkinUrl || undefined,
  };
  const store = deps.store ?? await openStore(config, cleanups);
  const loader = new ConfigLoader(store, config.configDefaultNamespace, env, metrics, log);
  cleanups.push(() => loader.close());
  const ready = loader.reload();
  if (store) loader.watch(deps.reloadDelayMs ?? 50, cleanups);
  const parts: Parts = { config, deps, log, cleanups, loader, metrics, ready };
  const grpc = await serveApi(parts);
  const monitoring = await serveMonitoring(parts);
  startProbes(config, ready, cleanups);
  return {
    addresses: { grpc, monitoring },
    ready,
    issues: () => loader.issues,
    reload: () => loader.reload(),
    workers: loader.workers?.count ?? 0,
    workerMetrics: async () => loader.workers ? await loader.workers.metrics() : [],
    shutdown: () => cleanups.run(),
  };
}

/** What the listeners share: the config, the configuration in force, metrics and cleanups. */
interface Parts {
  config: PolicyConfig;
  deps: PolicyDeps;
  log: Logger;
  cleanups: Cleanups;
  loader: ConfigLoader;
  metrics: ReturnType<typeof createPolicyMetrics>;
  /** The first configuration loaded. */
  ready: Promise<void>;
}

/** The store of `--configStoreURL`, when given (closed by the cleanups). */
async function openStore(
  config: PolicyConfig,
  cleanups: Cleanups,
): Promise<ConfigStore | undefined> {
  if (!config.configStoreURL) return undefined;
  let store: ConfigStore;
  try {
    store = await openStoreFromURL(config.configStoreURL, {
      schemas: POLICY_STORE_SCHEMAS,
      defaultNamespace: config.configDefaultNamespace,
    });
  } catch (e) {
    throw new Error(
      `Cannot open --configStoreURL "${config.configStoreURL}": ${(e as Error).message}`,
    );
  }
  cleanups.push(() => store.close());
  return store;
}

/**
 * The configuration in force: the snapshot built from the store's objects, the problems found,
 * and the chain of reloads (one at a time; a new snapshot retires the old one).
 */
class ConfigLoader {
  current: Snapshot;
  issues: ConfigIssue[] = [];
  loaded = false;
  loading: Promise<void> = Promise.resolve();
  /** The objects in force (defaults included) and their generation, as workers are sent them. */
  inForce: { objects: readonly ConfigObject[]; generation: number } = {
    objects: [],
    generation: 0,
  };
  /** With `--workers`: the worker isolates, each given every configuration in force. */
  workers: PolicyWorkers | undefined;

  constructor(
    readonly store: ConfigStore | undefined,
    readonly ns: string,
    readonly env: AdapterEnv,
    readonly metrics: ReturnType<typeof createPolicyMetrics>,
    readonly log: Logger,
  ) {
    this.current = Snapshot.empty(ns);
  }

  /** Queues a reload after those pending; resolves when it is done (errors are logged). */
  reload(): Promise<void> {
    this.loading = this.loading.then(() => this.loadOnce()).catch((e) =>
      this.log.error(`Cannot load the configuration: ${(e as Error).message}`)
    );
    return this.loading;
  }

  /** Reloads `delayMs` after the last change the store reports. */
  watch(delayMs: number, cleanups: Cleanups) {
    let timer: number | undefined;
    const w = this.store!.watch(() => {
      clearTimeout(timer);
      timer = setTimeout(() => this.reload(), delayMs);
    });
    cleanups.push(() => {
      clearTimeout(timer);
      w.close();
    });
  }

  /** Waits for the pending reloads, then retires the snapshot in force. */
  async close() {
    await this.loading;
    await this.current.retire(undefined);
  }

  async loadOnce() {
    const { ns, log } = this;
    let objects: ConfigObject[] = [];
    if (this.store) {
      const s = this.store;
      objects = (await Promise.all(POLICY_STORE_SCHEMAS.map((t) => s.list(t.type)))).flat();
    }
    const prev = this.loaded ? this.current : undefined;
    const all = withDefaults(objects, ns);
    const res = Snapshot.build(all, ns, this.env, prev);
    this.inForce = { objects: all, generation: this.inForce.generation + 1 };
    const fresh = res.issues.map((i) => i.message).join("\n") !==
      this.issues.map((i) => i.message).join("\n");
    const issues = this.issues = res.issues;
    this.metrics.config(issues.length === 0, issues.length);
    if (fresh) {
      for (const i of issues) {
        log.error(
          `Configuration object rejected (${
            i.previousInForce ? "its previous version stays in force" : "not in force"
          }): ${i.message}`,
        );
      }
    }
    const old = this.current;
    const current = this.current = res.snapshot;
    this.loaded = true;
    log.info(
      `Configuration loaded: ${current.rules.length} rules, ${current.handlers.size} handlers${
        issues.length ? `, ${issues.length} objects rejected` : ""
      }`,
    );
    await old.retire(current);
    await this.workers?.setConfig(this.inForce.objects, this.inForce.generation);
  }
}

/** How the API is served: its handlers and the pools and options they were built from. */
type ApiOptions = Parameters<typeof mixerHandlers>[0];

/**
 * The Mixer-style gRPC API on `--address` (TCP or a unix socket): in `--workers` worker isolates
 * sharing the port, or in this isolate; returns its address.
 */
async function serveApi(p: Parts): Promise<string> {
  const { config, deps, log, cleanups, loader, metrics } = p;
  const codec = await mixerCodec();
  const tracer = await createTracer(config.tracing, log, deps.traceTiming);
  if (tracer) cleanups.push(() => tracer.close());
  const apiOptions: ApiOptions = {
    codec,
    api: new Pool(config.apiWorkerPoolSize),
    adapters: new Pool(config.adapterWorkerPoolSize),
    snapshot: () => loader.current,
    metrics,
    log: getLogger("api"),
    maxMessageSize: config.maxMessageSize,
    span: tracer?.span,
  };
  const a = config.address;
  const count = workerCount(config.workers, { unixSocket: a.kind === "unix" });
  if (count.reason) log.warn(`${count.reason}: serving on one isolate`);
  let address: string | undefined;
  if (count.count > 1 && a.kind === "tcp") {
    address = await serveOnWorkers(p, apiOptions, count.count, a.host);
  }
  address ??= await serveHere(p, apiOptions);
  log.info(
    `Policy API listening on ${address}${
      loader.workers ? ` in ${loader.workers.count} worker isolates` : ""
    }`,
  );
  return address;
}

/** Serves the API in this isolate. */
async function serveHere(
  { config, deps, log, cleanups, metrics }: Parts,
  o: ApiOptions,
): Promise<string> {
  const a = config.address;
  const options = {
    handlers: mixerHandlers(o),
    ...listenerLogging(log),
    limits: {
      maxConcurrentStreams: config.maxConcurrentStreams,
      maxReceiveMessageBytes: config.maxMessageSize,
    },
  };
  let grpc: GrpcListener;
  let address: string;
  try {
    if (a.kind === "unix") {
      await Deno.remove(a.path).catch(() => {});
      grpc = await listenGrpc({ ...options, host: "", port: 0, path: a.path });
      address = `unix:${a.path}`;
    } else {
      const host = deps.host ?? a.host;
      grpc = await listenGrpc({ ...options, host, port: deps.port ?? a.port });
      address = hostPort(host, grpc.port);
    }
  } catch (e) {
    const where = a.kind === "unix" ? a.path : `port ${deps.port ?? a.port}`;
    throw new Error(`Cannot serve gRPC on ${where}: ${(e as Error).message}`);
  }
  metrics.listeners.push(grpc);
  cleanups.push(async () => {
    await grpc.close(14, "Server is shutting down", 2000);
    if (a.kind === "unix") await Deno.remove(a.path).catch(() => {});
  });
  return address;
}

/**
 * Serves the API in `n` worker isolates (see workers.ts), started from the first configuration;
 * the metrics become their sum. Undefined (this isolate serves) when the workers cannot start for
 * another reason than the port (logged).
 */
async function serveOnWorkers(
  { config, deps, log, cleanups, loader, metrics, ready }: Parts,
  o: ApiOptions,
  n: number,
  addressHost: string,
): Promise<string | undefined> {
  const host = deps.host ?? addressHost;
  const port = deps.port ?? (config.address as { port: number }).port;
  await ready;
  const { startPolicyWorkers } = await import("./workers.ts");
  let pool: PolicyWorkers;
  try {
    pool = await startPolicyWorkers({
      count: n,
      host,
      port,
      config,
      objects: () => loader.inForce,
      work: mixerWork(o),
      api: o.api,
      write: loader.env.write,
      log,
    });
  } catch (e) {
    const m = (e as Error).message;
    if (isPortProblem(m)) {
      throw new Error(`Cannot serve gRPC on port ${port}: ${m}`);
    }
    log.warn(`cannot serve the API in ${n} worker isolates (${m}): serving on one isolate`);
    return undefined;
  }
  loader.workers = pool;
  metrics.pools.push(pool.pool);
  cleanups.push(() => pool.close(2000));
  const own = metrics.text;
  metrics.text = async () =>
    await aggregateMetrics(await metrics.json(), await pool.metrics()).catch(own);
  return hostPort(host, pool.port);
}

/** The monitoring listener (`/metrics` with the adapters' metrics, `/version`, pprof). */
async function serveMonitoring(
  { config, deps, log, cleanups, loader, metrics }: Parts,
): Promise<string | null> {
  const monPort = deps.monitoringPort === undefined ? config.monitoringPort : deps.monitoringPort;
  if (monPort === null) return null;
  const a = config.address;
  const host = deps.host ?? (a.kind === "tcp" ? a.host : "0.0.0.0");
  const { serveHttp } = await import("../../lib/net/serve.ts");
  let server;
  try {
    server = serveHttp(
      { hostname: host, port: monPort, onError: (m) => log.warn(`Monitoring: ${m}`) },
      monitoringHandler({
        metrics: async () =>
          [await metrics.text(), await loader.current.metrics()].filter((t) => t).join("\n"),
        versionText: deps.versionText ?? "",
        profile: config.profile,
      }),
    );
  } catch (e) {
    throw new Error(`Cannot serve monitoring on port ${monPort}: ${(e as Error).message}`);
  }
  const s = server;
  cleanups.push(() => s.shutdown());
  const monitoring = hostPort(host, s.addr.port);
  log.info(`Monitoring listening on ${monitoring}`);
  return monitoring;
}

/** The liveness and readiness probe files: available once the first configuration loaded. */
function startProbes(config: PolicyConfig, ready: Promise<void>, cleanups: Cleanups) {
  let up = false;
  ready.then(() => up = true);
  for (const p of [config.liveness, config.readiness]) {
    if (!p) continue;
    const u = startProbeUpdater({ path: p.path, intervalMs: p.intervalMs, available: () => up });
    cleanups.push(() => u.stop());
  }
}

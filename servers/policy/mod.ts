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
import { mixerHandlers, mixerWork } from "./grpc.ts";
import type { PolicyWorkers } from "./workers.ts";
import { workerCount } from "../../lib/workers/mod.ts";
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

// long: start's steps (store, reloads, gRPC API, monitoring, probes); split: issue 25
async function startParts(
  config: PolicyConfig,
  deps: PolicyDeps,
  log: Logger,
  cleanups: Cleanups,
): Promise<PolicyHandle> {
  const ns = config.configDefaultNamespace;
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
  let store = deps.store;
  if (!store && config.configStoreURL) {
    try {
      store = await openStoreFromURL(config.configStoreURL, {
        schemas: POLICY_STORE_SCHEMAS,
        defaultNamespace: ns,
      });
    } catch (e) {
      throw new Error(
        `Cannot open --configStoreURL "${config.configStoreURL}": ${(e as Error).message}`,
      );
    }
    const opened = store;
    cleanups.push(() => opened.close());
  }

  // ---- configuration
  let current = Snapshot.empty(ns);
  let inForce: { objects: readonly ConfigObject[]; generation: number } = {
    objects: [],
    generation: 0,
  };
  let workers: PolicyWorkers | undefined;
  let issues: ConfigIssue[] = [];
  let loaded = false;
  let loading: Promise<void> = Promise.resolve();
  const loadOnce = async () => {
    let objects: ConfigObject[] = [];
    if (store) {
      const s = store;
      objects = (await Promise.all(POLICY_STORE_SCHEMAS.map((t) => s.list(t.type)))).flat();
    }
    const all = withDefaults(objects, ns);
    const res = Snapshot.build(all, ns, env, loaded ? current : undefined);
    inForce = { objects: all, generation: inForce.generation + 1 };
    const fresh = res.issues.map((i) => i.message).join("\n") !==
      issues.map((i) => i.message).join("\n");
    issues = res.issues;
    metrics.config(issues.length === 0, issues.length);
    if (fresh) {
      for (const i of issues) {
        log.error(
          `Configuration object rejected (${
            i.previousInForce ? "its previous version stays in force" : "not in force"
          }): ${i.message}`,
        );
      }
    }
    const old = current;
    current = res.snapshot;
    loaded = true;
    log.info(
      `Configuration loaded: ${current.rules.length} rules, ${current.handlers.size} handlers${
        issues.length ? `, ${issues.length} objects rejected` : ""
      }`,
    );
    await old.retire(current);
    await workers?.setConfig(inForce.objects, inForce.generation);
  };
  const reload = () => {
    loading = loading.then(loadOnce).catch((e) =>
      log.error(`Cannot load the configuration: ${(e as Error).message}`)
    );
    return loading;
  };
  cleanups.push(async () => {
    await loading;
    await current.retire(undefined);
  });
  const ready = reload();
  if (store) {
    let timer: number | undefined;
    const w = store.watch(() => {
      clearTimeout(timer);
      timer = setTimeout(reload, deps.reloadDelayMs ?? 50);
    });
    cleanups.push(() => {
      clearTimeout(timer);
      w.close();
    });
  }

  // ---- gRPC API
  const codec = await mixerCodec();
  const tracer = await createTracer(config.tracing, log, deps.traceTiming);
  if (tracer) cleanups.push(() => tracer.close());
  const apiOptions = {
    codec,
    api: new Pool(config.apiWorkerPoolSize),
    adapters: new Pool(config.adapterWorkerPoolSize),
    snapshot: () => current,
    metrics,
    log: getLogger("api"),
    maxMessageSize: config.maxMessageSize,
    span: tracer?.span,
  };
  const handlers = mixerHandlers(apiOptions);
  /** Serves the API in this isolate. */
  const listenHere = async (a: PolicyConfig["address"]): Promise<string> => {
    const options = {
      handlers,
      onError: (m: string) => log.debug(m),
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
        address = `${host.includes(":") ? `[${host}]` : host}:${grpc.port}`;
      }
    } catch (e) {
      const where = a.kind === "unix" ? a.path : `port ${deps.port ?? a.port}`;
      throw new Error(`Cannot serve gRPC on ${where}: ${(e as Error).message}`);
    }
    cleanups.push(async () => {
      await grpc.close(14, "Server is shutting down", 2000);
      if (a.kind === "unix") await Deno.remove(a.path).catch(() => {});
    });
    return address;
  };
  /** Serves the API in `n` worker isolates (see workers.ts); the metrics become their sum. */
  const startWorkers = async (n: number, addressHost: string): Promise<string | undefined> => {
    const host = deps.host ?? addressHost;
    const port = deps.port ?? (config.address as { port: number }).port;
    await ready; // the workers start from the first configuration
    const { startPolicyWorkers } = await import("./workers.ts");
    let pool: PolicyWorkers;
    try {
      pool = await startPolicyWorkers({
        count: n,
        host,
        port,
        config,
        objects: () => inForce,
        work: mixerWork(apiOptions),
        api: apiOptions.api,
        write: env.write,
        log,
      });
    } catch (e) {
      const m = (e as Error).message;
      if (/EADDRINUSE|EACCES|EADDRNOTAVAIL/.test(m)) {
        throw new Error(`Cannot serve gRPC on port ${port}: ${m}`);
      }
      log.warn(`cannot serve the API in ${n} worker isolates (${m}): serving on one isolate`);
      return undefined;
    }
    workers = pool;
    cleanups.push(() => pool.close(2000));
    const own = metrics.text;
    metrics.text = async () =>
      await aggregateMetrics(await metrics.json(), await pool.metrics()).catch(own);
    return `${host.includes(":") ? `[${host}]` : host}:${pool.port}`;
  };
  const a = config.address;
  let grpcAddress: string;
  const count = workerCount(config.workers, { unixSocket: a.kind === "unix" });
  if (count.reason) log.warn(`${count.reason}: serving on one isolate`);
  if (count.count > 1 && a.kind === "tcp") {
    grpcAddress = await startWorkers(count.count, a.host) ?? await listenHere(a);
  } else grpcAddress = await listenHere(a);
  log.info(
    `Policy API listening on ${grpcAddress}${
      workers ? ` in ${workers.count} worker isolates` : ""
    }`,
  );

  // ---- monitoring
  let monitoring: string | null = null;
  const monPort = deps.monitoringPort === undefined ? config.monitoringPort : deps.monitoringPort;
  if (monPort !== null) {
    const { promise, resolve } = Promise.withResolvers<number>();
    const host = deps.host ?? (a.kind === "tcp" ? a.host : "0.0.0.0");
    let server;
    try {
      server = Deno.serve(
        { hostname: host, port: monPort, onListen: ({ port }) => resolve(port) },
        monitoringHandler({
          metrics: async () =>
            [await metrics.text(), await current.metrics()].filter((t) => t).join("\n"),
          versionText: deps.versionText ?? "",
          profile: config.profile,
        }),
      );
    } catch (e) {
      throw new Error(`Cannot serve monitoring on port ${monPort}: ${(e as Error).message}`);
    }
    const s = server;
    cleanups.push(() => s.shutdown());
    monitoring = `${host.includes(":") ? `[${host}]` : host}:${await promise}`;
    log.info(`Monitoring listening on ${monitoring}`);
  }

  // ---- probes
  let up = false;
  ready.then(() => up = true);
  for (const p of [config.liveness, config.readiness]) {
    if (!p) continue;
    const u = startProbeUpdater({ path: p.path, intervalMs: p.intervalMs, available: () => up });
    cleanups.push(() => u.stop());
  }

  return {
    addresses: { grpc: grpcAddress, monitoring },
    ready,
    issues: () => issues,
    reload,
    workers: workers?.count ?? 0,
    workerMetrics: async () => workers ? await workers.metrics() : [],
    shutdown: () => cleanups.run(),
  };
}

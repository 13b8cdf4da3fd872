/**
 * mesh_ca's monitoring listener (`--monitoring-port`): `/metrics` (Prometheus: requests, errors
 * by reason, certificates issued, signing latency, Secrets written by the controller, process
 * metrics), `/version`, and with `--enable-profiling` `/debug/pprof/profile?seconds=N` (a V8 CPU
 * profile), `/debug/pprof/allocs?seconds=N` (an allocation profile) and `/debug/pprof/heap` (a
 * heap snapshot).
 * @module
 */

import {
  DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND,
  type ListenerState,
  sumListenerStates,
} from "../../lib/grpc/listener_state.ts";
import {
  type PoolFigures,
  promRegistry,
  registerListenerMetrics,
  registerWorkerPoolMetrics,
  startMonitoring as startSharedMonitoring,
} from "../../lib/monitoring/mod.ts";
import type { SignMetrics } from "./grpc.ts";

/** Everything mesh_ca records. */
export interface CaMetrics extends SignMetrics {
  /** The controller wrote (`created`, `rotated`, `recreated`) or deleted a Secret. */
  secret(action: string): void;
  /** The liveness self-check ran. */
  selfCheck(ok: boolean): void;
  /** Prometheus text exposition. */
  text(): Promise<string>;
  /** The registry as `getMetricsAsJSON()` (a worker's part of the aggregated metrics). */
  json(): Promise<unknown>;
  readonly contentType: string;
  /** Stops the process metrics' event-loop lag sampler. */
  close(): void;
  /** Worker pools to report (`mesh_worker_*`; the control isolate's registry only). */
  readonly pools: PoolFigures[];
  /** The signing API's listeners in this isolate (`mesh_ca_grpc_*`; none with `--workers`). */
  readonly listeners: ListenerState[];
}

/**
 * Creates the metrics on a private registry (prom-client, loaded here); with the process metrics
 * unless `processMetrics` is false (a worker isolate).
 */
export async function createCaMetrics(processMetrics = true): Promise<CaMetrics> {
  const { prom, register, counter, histogram, close } = await promRegistry(processMetrics);
  const pools: PoolFigures[] = [];
  // the control isolate's: a worker's registry is summed into it and has no pools of its own
  if (processMetrics) registerWorkerPoolMetrics(prom, register, () => pools);
  const listeners: ListenerState[] = [];
  registerListenerMetrics(prom, register, {
    prefix: "mesh_ca_grpc",
    what: "signing API",
    refusedBecause: "their address held half of the file descriptors left for connections",
    budget: String(DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND),
    read: () => sumListenerStates(listeners),
  });
  const requests = counter(
    "mesh_ca_csr_requests_total",
    "Certificate signing requests received, by method.",
    ["method"],
  );
  const errors = counter(
    "mesh_ca_csr_errors_total",
    "Certificate signing requests refused or failed, by method and reason.",
    ["method", "reason"],
  );
  const issued = counter(
    "mesh_ca_certs_issued_total",
    "Certificates issued through the gRPC API, by method.",
    ["method"],
  );
  const latency = histogram(
    "mesh_ca_signing_duration_seconds",
    "Time to check and sign one CSR (authentication excluded).",
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
  );
  const secrets = counter(
    "mesh_ca_secrets_total",
    "Workload Secrets written or deleted by the controller, by action.",
    ["action"],
  );
  const checks = counter(
    "mesh_ca_self_checks_total",
    "Liveness self-checks (a real CSR to the gRPC API), by result.",
    ["result"],
  );
  return {
    pools,
    listeners,
    request: (method) => requests.inc({ method }),
    error: (method, reason) => errors.inc({ method, reason }),
    issued(method, seconds) {
      issued.inc({ method });
      latency.observe(seconds);
    },
    secret: (action) => secrets.inc({ action }),
    selfCheck: (ok) => checks.inc({ result: ok ? "ok" : "failed" }),
    text: () => register.metrics(),
    json: () => register.getMetricsAsJSON(),
    contentType: register.contentType,
    close,
  };
}

/** Options of {@link startMonitoring}. */
export interface MonitoringOptions {
  host: string;
  port: number;
  profiling: boolean;
  metrics: CaMetrics;
  versionText: string;
  /** Told when the listener stopped accepting and when it serves again. */
  onError?: (message: string) => void;
}

/** Serves mesh_ca's monitoring handler (lib/monitoring); resolves once listening. */
export function startMonitoring(
  o: MonitoringOptions,
): Promise<{ port: number; shutdown(): Promise<void> }> {
  return startSharedMonitoring({
    host: o.host,
    port: o.port,
    metrics: () => o.metrics.text(),
    contentType: o.metrics.contentType,
    versionText: o.versionText,
    profiling: o.profiling,
    profilingFlag: "--enable-profiling",
    profileName: "mesh_ca",
    onError: o.onError,
  });
}

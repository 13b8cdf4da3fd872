/**
 * The self-monitoring HTTP listener (`--monitoringPort`): `/metrics` (the server's own metrics
 * and those of its prometheus handlers), `/version`, and with `--profile` `/debug/pprof/heap`,
 * `/debug/pprof/profile?seconds=N` and `/debug/pprof/allocs?seconds=N`.
 * @module
 */

import * as prom from "../../lib/deps/prom.ts";
import {
  DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND,
  type ListenerState,
  sumListenerStates,
} from "../../lib/grpc/listener_state.ts";
import {
  metricBuilders,
  monitoringHandler as sharedHandler,
  type PoolFigures,
  registerListenerMetrics,
  registerWorkerPoolMetrics,
} from "../../lib/monitoring/mod.ts";
import type { ApiMetrics } from "./grpc.ts";

/** The server's own metrics. */
export interface PolicyMetrics extends ApiMetrics {
  /** A configuration load: every object accepted, or `issues` objects rejected (partial). */
  config(ok: boolean, issues: number): void;
  /** The Prometheus text of the server's own metrics. */
  text(): Promise<string>;
  /** The registry as `getMetricsAsJSON()` (a worker's part of the aggregated metrics). */
  json(): Promise<unknown>;
  /** Worker pools to report (`mesh_worker_*`; none in a worker's own registry). */
  readonly pools: PoolFigures[];
  /** The API's listeners in this isolate (`mesh_policy_grpc_*`; none with `--workers`). */
  readonly listeners: ListenerState[];
}

/** Creates the server's metrics in a registry of their own. */
export function createPolicyMetrics(): PolicyMetrics {
  const register = new prom.Registry();
  const { counter, histogram, gauge } = metricBuilders(prom, register);
  const pools: PoolFigures[] = [];
  registerWorkerPoolMetrics(prom, register, () => pools);
  const listeners: ListenerState[] = [];
  registerListenerMetrics(prom, register, {
    prefix: "mesh_policy_grpc",
    what: "Check/Report API",
    refusedBecause: "their address held half of the file descriptors left for connections",
    budget: String(DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND),
    read: () => sumListenerStates(listeners),
  });
  const checks = counter(
    "mesh_policy_check_total",
    "Check calls by precondition status code (or the gRPC status of a failed call).",
    ["code"],
  );
  const checkSeconds = histogram(
    "mesh_policy_check_duration_seconds",
    "Time to answer a Check.",
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1, 1],
  );
  const reports = counter("mesh_policy_report_total", "Report calls by gRPC status code.", [
    "code",
  ]);
  const bags = counter(
    "mesh_policy_report_attribute_bags_total",
    "Attribute bags received in Report calls.",
  );
  const loads = counter(
    "mesh_policy_config_loads_total",
    "Configuration loads by result (accepted: every object in force; partial: some rejected).",
    ["result"],
  );
  const issues = gauge(
    "mesh_policy_config_issues",
    "Objects rejected from the last configuration loaded (0 when every object is in force).",
  );
  return {
    pools,
    listeners,
    check(code, seconds) {
      checks.inc({ code: String(code) });
      if (seconds > 0) checkSeconds.observe(seconds);
    },
    report(code, n) {
      reports.inc({ code: String(code) });
      bags.inc(n);
    },
    config(ok, n) {
      loads.inc({ result: ok ? "accepted" : "partial" });
      issues.set(n);
    },
    text: () => register.metrics(),
    json: () => register.getMetricsAsJSON(),
  };
}

/** Options of {@link monitoringHandler}. */
export interface MonitoringOptions {
  metrics: () => Promise<string>;
  versionText: string;
  profile: boolean;
}

/** The monitoring HTTP handler (lib/monitoring with mesh-policy's flag name). */
export function monitoringHandler(o: MonitoringOptions): (req: Request) => Promise<Response> {
  return sharedHandler({
    metrics: o.metrics,
    contentType: prom.register.contentType,
    versionText: o.versionText,
    profiling: o.profile,
    profilingFlag: "--profile",
  });
}

/**
 * Prometheus metrics of mesh-discovery (prom-client, loaded lazily): the ADS server's
 * {@link XdsMetrics} hooks, gauges read at scrape time, REST cache and webhook counters, and the
 * process metrics. Names follow Istio's `pilot_*` with `mesh_` instead.
 * @module
 */

import type { ListenerState, XdsMetrics } from "../../lib/xds/server/mod.ts";
import { typeShortName } from "../../lib/xds/server/mod.ts";
import type { ContextCounts } from "./model.ts";
import {
  type PoolFigures,
  promRegistry,
  registerListenerMetrics,
  registerWorkerPoolMetrics,
} from "../../lib/monitoring/mod.ts";

/** Everything the discovery server records, plus the exposition. */
export interface DiscoveryMetrics {
  /** Hooks given to the ADS server. */
  readonly xds: XdsMetrics;
  /** A REST xDS call (`cds`, `lds`, `rds`, `eds`), failed or not. */
  restCall(type: string, ok: boolean): void;
  /** A REST response served from the cache (hit) or built (miss). */
  cache(type: string, hit: boolean): void;
  /** A webhook call, failed or not. */
  webhook(type: string, ok: boolean): void;
  /** A change that may push: a registry's `endpoint` or `service` event, or a `config` change. */
  trigger(type: PushTrigger): void;
  /** Prometheus text exposition. */
  text(): Promise<string>;
  /** The exposition content type. */
  readonly contentType: string;
  /** Stops the process metrics' event-loop lag sampler. */
  close(): void;
}

/** What set off a push (Istio's `pilot_push_triggers` types). */
export type PushTrigger = "endpoint" | "service" | "config";

const PUSH_BUCKETS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 3, 5, 10, 20, 30];

/**
 * The state of the gRPC listeners, read at scrape time, summed over all (refused: by
 * `--grpcMaxConnections` and `--grpcMaxConnectionsPerAddress`; throttled: by
 * `--grpcMaxFailedConnectionRate`).
 */
export type TransportState = ListenerState;

// long: a declarative list of the metric definitions
/**
 * Creates the metrics on a private registry. `counts` is read at every scrape for the gauges
 * `mesh_services`, `mesh_virt_services` and `mesh_configs{type}`; `connections` for `mesh_xds`;
 * `transport` for `mesh_xds_accepting`, `mesh_xds_refused_connections`,
 * `mesh_xds_throttled_connections` and `mesh_xds_shed_connections`; `pools` for
 * `mesh_worker_isolates{pool}` and `mesh_worker_restarts_total{pool}`.
 */
export async function createMetrics(
  counts: () => ContextCounts,
  connections: () => number,
  transport: () => TransportState = () => ({ accepting: true, refused: 0, throttled: 0, shed: 0 }),
  pools: () => readonly PoolFigures[] = () => [],
): Promise<DiscoveryMetrics> {
  const { prom, register, close } = await promRegistry();
  registerWorkerPoolMetrics(prom, register, pools);
  const registers = [register];
  /** A gauge set from `read()` at every scrape. */
  const gauge = (name: string, help: string, read: () => number) =>
    new prom.Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read());
      },
    });
  /** A counter with one label, `type`. */
  const byType = (name: string, help: string) =>
    new prom.Counter({ name, help, labelNames: ["type"] as const, registers });
  gauge(
    "mesh_xds",
    "Number of proxies connected to this discovery instance over ADS.",
    connections,
  );
  registerListenerMetrics(prom, register, {
    prefix: "mesh_xds",
    what: "ADS",
    refusedBecause: "--grpcMaxConnections were open, or their address held " +
      "--grpcMaxConnectionsPerAddress",
    budget: "--grpcMaxFailedConnectionRate",
    notAccepting: "/ready answers 503 then",
    read: transport,
  });
  gauge("mesh_services", "Total services known to discovery.", () => counts().services);
  gauge(
    "mesh_virt_services",
    "Total virtual services known to discovery.",
    () => counts().virtualServices,
  );
  gauge(
    "mesh_conflict_outbound_listener_tcp_over_current_http",
    "Shared outbound listeners 0.0.0.0_<port> a TCP service port without an address took from " +
      "the HTTP services of that port (see /debug/conflictz).",
    () => counts().conflictsTcpOverHttp,
  );
  new prom.Gauge({
    name: "mesh_configs",
    help: "Configuration objects known to discovery, by kind.",
    labelNames: ["type"] as const,
    registers,
    collect() {
      this.reset();
      for (const [k, n] of Object.entries(counts().configsByKind)) this.set({ type: k }, n);
    },
  });
  const pushes = byType("mesh_xds_pushes", "xDS responses sent, by type (cds, eds, lds, rds).");
  const pushErrors = byType(
    "mesh_xds_push_errors",
    "xDS push failures, by type (<type>_senderr, <type>_builderr).",
  );
  const writeTimeouts = new prom.Counter({
    name: "mesh_xds_write_timeout",
    help: "xDS sends that timed out (the stream is closed).",
    registers,
  });
  const rejects = byType("mesh_xds_rejects", "xDS responses rejected by proxies (NACK), by type.");
  const pushTime = new prom.Histogram({
    name: "mesh_xds_push_time",
    help: "Seconds from the flush of a debounced push until every affected proxy was sent it.",
    buckets: PUSH_BUCKETS,
    registers,
  });
  const convergence = new prom.Histogram({
    name: "mesh_xds_convergence_time",
    help: "Seconds from the first change of a push until every affected proxy was sent it.",
    buckets: PUSH_BUCKETS,
    registers,
  });
  const calls = byType("mesh_discovery_calls", "REST xDS calls, by type.");
  const errors = byType("mesh_discovery_errors", "Failed REST xDS calls, by type.");
  const hits = byType(
    "mesh_discovery_cache_hit",
    "REST xDS responses served from the discovery cache, by type.",
  );
  const misses = byType(
    "mesh_discovery_cache_miss",
    "REST xDS responses built because the discovery cache had none, by type.",
  );
  const webhookCalls = byType(
    "mesh_discovery_webhook_calls",
    "Calls to the --webhookEndpoint, by type.",
  );
  const webhookErrors = byType(
    "mesh_discovery_webhook_errors",
    "Failed calls to the --webhookEndpoint, by type.",
  );
  const triggers = byType(
    "mesh_push_triggers",
    "Changes that may push, by type: endpoint and service (registry events; a ServiceEntry edit " +
      "of its endpoints only is an endpoint event), config (configuration, Ingress, mesh config).",
  );
  return {
    xds: {
      pushed: (t) => pushes.inc({ type: typeShortName(t) }),
      sendError: (t, reason) => {
        pushErrors.inc({ type: `${typeShortName(t)}_senderr` });
        if (reason === "timeout") writeTimeouts.inc();
      },
      buildError: (t) => pushErrors.inc({ type: `${typeShortName(t)}_builderr` }),
      nack: (t) => rejects.inc({ type: typeShortName(t) }),
      pushDuration: (s) => pushTime.observe(s),
      convergence: (s) => convergence.observe(s),
    },
    restCall(type, ok) {
      calls.inc({ type });
      if (!ok) errors.inc({ type });
    },
    cache: (type, hit) => (hit ? hits : misses).inc({ type }),
    webhook(type, ok) {
      webhookCalls.inc({ type });
      if (!ok) webhookErrors.inc({ type });
    },
    trigger: (type) => triggers.inc({ type }),
    text: () => register.metrics(),
    contentType: register.contentType,
    close,
  };
}

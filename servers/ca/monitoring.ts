/**
 * mesh_ca's monitoring listener (`--monitoring-port`): `/metrics` (Prometheus: requests, errors
 * by reason, certificates issued, signing latency, Secrets written by the controller, process
 * metrics), `/version`, and with `--enable-profiling` `/debug/pprof/profile?seconds=N` (a V8 CPU
 * profile) and `/debug/pprof/heap` (a heap snapshot).
 * @module
 */

import { startCpuProfile } from "../../lib/process/mod.ts";
import type { SignMetrics } from "./grpc.ts";

/** Everything mesh_ca records. */
export interface CaMetrics extends SignMetrics {
  /** The controller wrote (`created`, `rotated`, `recreated`) or deleted a Secret. */
  secret(action: string): void;
  /** The liveness self-check ran. */
  selfCheck(ok: boolean): void;
  /** Prometheus text exposition. */
  text(): Promise<string>;
  readonly contentType: string;
}

/** Creates the metrics on a private registry (prom-client, loaded here). */
export async function createCaMetrics(): Promise<CaMetrics> {
  const prom = await import("../../lib/deps/prom.ts");
  const register = new prom.Registry();
  prom.collectDefaultMetrics({ register });
  const registers = [register];
  const requests = new prom.Counter({
    name: "mesh_ca_csr_requests_total",
    help: "Certificate signing requests received, by method.",
    labelNames: ["method"] as const,
    registers,
  });
  const errors = new prom.Counter({
    name: "mesh_ca_csr_errors_total",
    help: "Certificate signing requests refused or failed, by method and reason.",
    labelNames: ["method", "reason"] as const,
    registers,
  });
  const issued = new prom.Counter({
    name: "mesh_ca_certs_issued_total",
    help: "Certificates issued through the gRPC API, by method.",
    labelNames: ["method"] as const,
    registers,
  });
  const latency = new prom.Histogram({
    name: "mesh_ca_signing_duration_seconds",
    help: "Time to check and sign one CSR (authentication excluded).",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers,
  });
  const secrets = new prom.Counter({
    name: "mesh_ca_secrets_total",
    help: "Workload Secrets written or deleted by the controller, by action.",
    labelNames: ["action"] as const,
    registers,
  });
  const checks = new prom.Counter({
    name: "mesh_ca_self_checks_total",
    help: "Liveness self-checks (a real CSR to the gRPC API), by result.",
    labelNames: ["result"] as const,
    registers,
  });
  return {
    request: (method) => requests.inc({ method }),
    error: (method, reason) => errors.inc({ method, reason }),
    issued(method, seconds) {
      issued.inc({ method });
      latency.observe(seconds);
    },
    secret: (action) => secrets.inc({ action }),
    selfCheck: (ok) => checks.inc({ result: ok ? "ok" : "failed" }),
    text: () => register.metrics(),
    contentType: register.contentType,
  };
}

/** Options of {@link startMonitoring}. */
export interface MonitoringOptions {
  host: string;
  port: number;
  profiling: boolean;
  metrics: CaMetrics;
  versionText: string;
}

const text = (status: number, body: string, type = "text/plain; charset=utf-8") =>
  new Response(body, { status, headers: { "content-type": type } });

/** The monitoring HTTP handler (exported for tests). */
export function monitoringHandler(o: Omit<MonitoringOptions, "host" | "port">) {
  return async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    if (req.method !== "GET" && req.method !== "HEAD") return text(405, "Use GET\n");
    switch (url.pathname) {
      case "/metrics":
        return text(200, await o.metrics.text(), o.metrics.contentType);
      case "/version":
        return text(200, o.versionText.endsWith("\n") ? o.versionText : o.versionText + "\n");
    }
    if (!url.pathname.startsWith("/debug/pprof")) {
      return text(404, `404 page not found: ${url.pathname}\n`);
    }
    if (!o.profiling) return text(404, "Profiling is off (start with --enable-profiling)\n");
    if (url.pathname === "/debug/pprof/profile") {
      const raw = url.searchParams.get("seconds") ?? "30";
      const seconds = Number(raw);
      if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 600) {
        return text(400, `Bad seconds ${JSON.stringify(raw)}: want a number in (0, 600]\n`);
      }
      let p;
      try {
        p = await startCpuProfile();
      } catch (e) {
        return text(409, `${(e as Error).message}\n`);
      }
      await new Promise((r) => setTimeout(r, seconds * 1000));
      return new Response(JSON.stringify(await p.stop()), {
        headers: {
          "content-type": "application/json",
          "content-disposition": 'attachment; filename="mesh_ca.cpuprofile"',
        },
      });
    }
    if (url.pathname === "/debug/pprof/heap") {
      const v8 = await import("node:v8");
      const chunks: Uint8Array[] = [];
      for await (const chunk of v8.getHeapSnapshot()) {
        chunks.push(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk);
      }
      return new Response(new Blob(chunks as BlobPart[]).stream(), {
        headers: {
          "content-type": "application/octet-stream",
          "content-disposition": 'attachment; filename="mesh_ca.heapsnapshot"',
        },
      });
    }
    return text(404, "Available: /debug/pprof/heap, /debug/pprof/profile?seconds=N\n");
  };
}

/** Serves the monitoring handler; resolves once listening. */
export async function startMonitoring(
  o: MonitoringOptions,
): Promise<{ port: number; shutdown(): Promise<void> }> {
  const { promise, resolve } = Promise.withResolvers<number>();
  const server = Deno.serve({
    hostname: o.host,
    port: o.port,
    onListen: ({ port }) => resolve(port),
  }, monitoringHandler(o));
  const port = await promise;
  return { port, shutdown: () => server.shutdown() };
}

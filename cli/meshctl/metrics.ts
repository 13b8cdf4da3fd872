/**
 * `meshctl experimental metrics <service>...`: per service, the total and error request rates
 * and the p50/p90/p99 latencies over the last minute, from Prometheus (reference §5.9, on our
 * metric names `mesh_request_count` and `mesh_request_duration`). Prometheus is `--prometheus`,
 * or the first running pod labelled `app=prometheus` in the mesh namespace (`-i`), reached at
 * its pod IP on its first container port (9090 when none is declared).
 * @module
 */

import { UsageError } from "../_shared/context.ts";
import type { CliContext } from "../_shared/context.ts";
import { formatDuration } from "../../lib/flags/duration.ts";
import type { MetricsOptions } from "./flags.ts";

/** The figures of one service. */
export interface ServiceMetrics {
  service: string;
  totalRps: number;
  errorRps: number;
  /** Seconds. */
  p50: number;
  p90: number;
  p99: number;
}

/** The PromQL queries of one service (reference §5.9). */
export function queries(
  service: string,
): Record<"total" | "error" | "p50" | "p90" | "p99", string> {
  const sel = `destination_service=~"${service.replace(/["\\]/g, "\\$&")}.*"`;
  const q = (p: string) =>
    `histogram_quantile(${p}, sum(rate(mesh_request_duration_bucket{${sel}}[1m])) by (le))`;
  return {
    total: `sum(rate(mesh_request_count{${sel}}[1m]))`,
    error: `sum(rate(mesh_request_count{${sel},response_code!="200"}[1m]))`,
    p50: q("0.500000"),
    p90: q("0.900000"),
    p99: q("0.990000"),
  };
}

async function instant(base: string, query: string): Promise<number> {
  const url = `${base}/api/v1/query?query=${encodeURIComponent(query)}`;
  const res = await fetch(url);
  const text = await res.text();
  if (!res.ok) {
    throw new Error(`Prometheus answered HTTP ${res.status}: ${text.trim().slice(0, 200)}`);
  }
  const body = JSON.parse(text);
  if (body.status !== "success") throw new Error(`query failed: ${body.error ?? text}`);
  const v = Number(body.data?.result?.[0]?.value?.[1] ?? 0);
  return Number.isFinite(v) ? v : 0;
}

/** Queries Prometheus at `base` for one service. */
export async function serviceMetrics(base: string, service: string): Promise<ServiceMetrics> {
  const q = queries(service);
  const [totalRps, errorRps, p50, p90, p99] = await Promise.all(
    [q.total, q.error, q.p50, q.p90, q.p99].map((x) => instant(base, x)),
  );
  return { service, totalRps, errorRps, p50, p90, p99 };
}

/** Right-aligned columns, Go tabwriter style (min width 13, padding 2). */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(13, ...rows.map((r) => r[c].length + 2)));
  return rows.map((r) => r.map((cell, c) => cell.padStart(widths[c])).join("") + "\n").join("");
}

/** Latency seconds as a Go duration truncated to milliseconds. */
export function latency(seconds: number): string {
  return formatDuration(Math.floor(seconds * 1000));
}

/** Formats the table of `metrics`. */
export function formatMetrics(metrics: ServiceMetrics[]): string {
  const header = ["SERVICE", "TOTAL RPS", "ERROR RPS", "P50 LATENCY", "P90 LATENCY", "P99 LATENCY"];
  return table([
    header,
    ...metrics.map((m) => [
      m.service,
      m.totalRps.toFixed(3),
      m.errorRps.toFixed(3),
      latency(m.p50),
      latency(m.p90),
      latency(m.p99),
    ]),
  ]);
}

async function findPrometheus(opts: MetricsOptions): Promise<string> {
  if (opts.platform !== "orch") {
    throw new UsageError(
      "no orchestrator to find Prometheus in: give --prometheus http://host:port",
    );
  }
  const { kubeClient, loadKubeConfig } = await import("../../lib/kube/mod.ts");
  const kc = await loadKubeConfig(opts.orchconfig);
  const k8s = await kubeClient();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let pods;
  try {
    pods = await core.listNamespacedPod({
      namespace: opts.meshNamespace,
      labelSelector: "app=prometheus",
    });
  } catch (e) {
    throw new Error(
      `Cannot list pods in ${opts.meshNamespace}: ${(e as Error).message.split("\n")[0]}`,
    );
  }
  // The first running pod with an address (a pending or finished one cannot answer).
  const pod = (pods.items ?? []).find((p) =>
    p.status?.podIP && (p.status.phase ?? "Running") === "Running"
  );
  if (!pod) throw new Error(`no running prometheus pods (app=prometheus) in ${opts.meshNamespace}`);
  const port = pod.spec?.containers?.flatMap((c) => c.ports ?? [])[0]?.containerPort ?? 9090;
  const ip = pod.status!.podIP!;
  return `http://${ip.includes(":") ? `[${ip}]` : ip}:${port}`;
}

/** Runs `meshctl experimental metrics`. */
export async function run(opts: MetricsOptions, args: string[], ctx: CliContext): Promise<number> {
  if (opts.prometheus && !/^https?:\/\/[^/]+/.test(opts.prometheus)) {
    throw new UsageError(`invalid --prometheus "${opts.prometheus}": want http://host:port`);
  }
  const base = (opts.prometheus || await findPrometheus(opts)).replace(/\/+$/, "");
  const out: ServiceMetrics[] = [];
  for (const s of args) {
    try {
      out.push(await serviceMetrics(base, s));
    } catch (e) {
      throw new Error(`could not build metrics for service '${s}': ${(e as Error).message}`);
    }
  }
  await ctx.stdout.write(formatMetrics(out));
  return 0;
}

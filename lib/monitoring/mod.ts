/**
 * The self-monitoring HTTP listener shared by the servers: `/metrics` (Prometheus text),
 * `/version`, and when profiling is on `/debug/pprof/profile?seconds=N` (a V8 CPU profile),
 * `/debug/pprof/allocs?seconds=N` (where the process allocated in those N seconds: V8's sampling
 * heap profile) and `/debug/pprof/heap` (a heap snapshot). Other methods than GET/HEAD get 405,
 * unknown paths 404.
 *
 * Also {@link promRegistry}, the small builder every server's metrics start from.
 * @module
 */

import { type Profiling, startAllocationProfile, startCpuProfile } from "../process/mod.ts";

export { aggregateMetrics } from "./aggregate.ts";
export { type ListenerMetricsOptions, registerListenerMetrics } from "./listeners.ts";
export { type PoolFigures, registerWorkerPoolMetrics } from "./worker_pools.ts";

/** Options of {@link monitoringHandler}. */
export interface MonitoringHandlerOptions {
  /** The Prometheus text exposition served on `/metrics`. */
  metrics: () => Promise<string>;
  /** The content type of that exposition. */
  contentType: string;
  /** The text served on `/version` (a newline is added when missing). */
  versionText: string;
  /** Serve `/debug/pprof/*`. */
  profiling: boolean;
  /** The flag that turns profiling on, named in the 404 while it is off (e.g. `--profile`). */
  profilingFlag: string;
  /**
   * Base name of the downloaded profiles (`<name>.cpuprofile`, `<name>.heapprofile`,
   * `<name>.heapsnapshot`, sent as `content-disposition: attachment`); none when absent.
   */
  profileName?: string;
}

const text = (status: number, body: string, type = "text/plain; charset=utf-8") =>
  new Response(body, { status, headers: { "content-type": type } });

const download = (type: string, name: string | undefined, ext: string): HeadersInit =>
  name === undefined
    ? { "content-type": type }
    : { "content-type": type, "content-disposition": `attachment; filename="${name}.${ext}"` };

/** The profiles recorded for `?seconds=N`, by path: how to start one, and its file extension. */
const RECORDED = new Map<string, { start: () => Promise<Profiling>; ext: string }>([
  ["/debug/pprof/profile", { start: startCpuProfile, ext: "cpuprofile" }],
  ["/debug/pprof/allocs", { start: () => startAllocationProfile(), ext: "heapprofile" }],
]);

/** The monitoring HTTP handler. */
export function monitoringHandler(
  o: MonitoringHandlerOptions,
): (req: Request) => Promise<Response> {
  return async (req) => {
    const url = new URL(req.url);
    if (req.method !== "GET" && req.method !== "HEAD") return text(405, "Use GET\n");
    switch (url.pathname) {
      case "/metrics":
        return text(200, await o.metrics(), o.contentType);
      case "/version":
        return text(200, o.versionText.endsWith("\n") ? o.versionText : o.versionText + "\n");
    }
    if (!url.pathname.startsWith("/debug/pprof")) {
      return text(404, `404 page not found: ${url.pathname}\n`);
    }
    if (!o.profiling) return text(404, `Profiling is off (start with ${o.profilingFlag})\n`);
    const recorded = RECORDED.get(url.pathname);
    if (recorded) {
      const raw = url.searchParams.get("seconds") ?? "30";
      const seconds = Number(raw);
      if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 600) {
        return text(400, `Bad seconds ${JSON.stringify(raw)}: want a number in (0, 600]\n`);
      }
      // asked now: Deno aborts a request's signal only once it was asked for (see
      // lib/workers/http_front_worker.ts)
      const left = req.signal;
      let p;
      try {
        p = await recorded.start();
      } catch (e) {
        return text(409, `${(e as Error).message}\n`);
      }
      // as Go's pprof: a client that leaves ends the recording (the next one need not wait)
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          left.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, seconds * 1000);
        if (left.aborted) done();
        else left.addEventListener("abort", done, { once: true });
      });
      const recording = await p.stop();
      if (left.aborted) return text(499, "client closed the request\n");
      return new Response(JSON.stringify(recording), {
        headers: download("application/json", o.profileName, recorded.ext),
      });
    }
    if (url.pathname === "/debug/pprof/heap") {
      const v8 = await import("node:v8");
      const chunks: Uint8Array[] = [];
      for await (const chunk of v8.getHeapSnapshot()) {
        chunks.push(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk);
      }
      return new Response(new Blob(chunks as BlobPart[]).stream(), {
        headers: download("application/octet-stream", o.profileName, "heapsnapshot"),
      });
    }
    return text(
      404,
      "Available: /debug/pprof/allocs?seconds=N, /debug/pprof/heap, /debug/pprof/profile?seconds=N\n",
    );
  };
}

/** Options of {@link startMonitoring}. */
export interface MonitoringOptions extends MonitoringHandlerOptions {
  host: string;
  port: number;
  /** Told when the listener stopped accepting and when it serves again (see `serveHttp`). */
  onError?: (message: string) => void;
}

/** Serves {@link monitoringHandler}; resolves once listening (port 0 picks a free port). */
export async function startMonitoring(
  o: MonitoringOptions,
): Promise<{ port: number; shutdown(): Promise<void> }> {
  const { serveHttp } = await import("../net/serve.ts");
  const server = serveHttp(
    { hostname: o.host, port: o.port, onError: o.onError },
    monitoringHandler(o),
  );
  return { port: server.addr.port, shutdown: () => server.shutdown() };
}

type Prom = typeof import("../deps/prom.ts");

type Registry = InstanceType<Prom["Registry"]>;

/** Builders of metrics registered on one registry. */
export interface MetricBuilders {
  /** A counter, with these label names (none by default). */
  counter(
    name: string,
    help: string,
    labelNames?: readonly string[],
  ): InstanceType<Prom["Counter"]>;
  /** A histogram without labels. */
  histogram(name: string, help: string, buckets: number[]): InstanceType<Prom["Histogram"]>;
  /** A gauge without labels. */
  gauge(name: string, help: string): InstanceType<Prom["Gauge"]>;
}

/** Builders registering on `register` (for callers that already hold prom-client). */
export function metricBuilders(prom: Prom, register: Registry): MetricBuilders {
  const registers = [register];
  return {
    counter: (name, help, labelNames = []) =>
      new prom.Counter({ name, help, labelNames, registers }),
    histogram: (name, help, buckets) => new prom.Histogram({ name, help, buckets, registers }),
    gauge: (name, help) => new prom.Gauge({ name, help, registers }),
  };
}

/** A private prom-client registry with the process metrics, and builders registering on it. */
export interface PromRegistry extends MetricBuilders {
  /** prom-client itself (for metric kinds the builders do not cover). */
  readonly prom: Prom;
  /** The registry. */
  readonly register: Registry;
  /** Stops the event-loop lag sampler of the process metrics (no-op without them). */
  close(): void;
}

/**
 * Loads prom-client (lazily) and creates a {@link PromRegistry} with the process metrics (unless
 * `processMetrics` is false: a worker isolate's registry, whose process is counted once by the
 * control isolate).
 */
export async function promRegistry(processMetrics = true): Promise<PromRegistry> {
  const prom = await import("../deps/prom.ts");
  const register = new prom.Registry();
  const lag = processMetrics
    ? (await import("./event_loop_lag.ts")).collectProcessMetrics(prom, register)
    : undefined;
  return { prom, register, ...metricBuilders(prom, register), close: () => lag?.stop() };
}

/**
 * Tracing of Check and Report with the OpenTelemetry JS SDK: one SERVER span per call, batched
 * (every second) to the collectors of `--trace_tracera_url` (Zipkin v2 JSON) and
 * `--trace_tracerb_url` (OTLP/HTTP JSON or Zipkin, see {@link traceTargets}), and logged with
 * `--trace_log_spans`. The SDK (~90 ms to import) is loaded only when tracing is on.
 * @module
 */

import type { GrpcCall } from "../../lib/grpc/mod.ts";
import type { Logger } from "../../lib/log/mod.ts";

import type * as OtelModule from "../../lib/deps/otel.ts";
import type { ReadableSpan, SpanExporter, SpanProcessor } from "../../lib/deps/otel.ts";

type Otel = typeof OtelModule;

/**
 * Not a string literal on purpose: Deno resolves a literal dynamic import's graph (these npm
 * packages) at every start, ~12 ms of CPU for `--help` too, even when it never runs. `deno compile`
 * is told to include the module (compile.ts).
 */
const OTEL_MODULE = new URL("../../lib/deps/otel.ts", import.meta.url).href;
let otelModule: Promise<Otel> | undefined;
/** The OpenTelemetry modules, imported on first use. */
export const loadOtel = (): Promise<Otel> => otelModule ??= import(OTEL_MODULE);

/** The tracer of the server. */
export interface Tracer {
  /** Starts a span for a call; the returned function ends it with the call's status. */
  span(name: string, call: GrpcCall): (status: number, message?: string) => void;
  /** Exports what is queued (bounded by the export timeout) and stops. */
  close(): Promise<void>;
}

/** A collector and the protocol spans are sent to it in. */
export interface TraceTarget {
  /** The flag that named it. */
  flag: "trace_tracera_url" | "trace_tracerb_url";
  /** Where spans are POSTed. */
  url: string;
  protocol: "zipkin" | "otlp";
}

/**
 * A Zipkin collector URL as the exporter needs it: Istio 0.8's `/api/v1/spans` form
 * (`http://zipkin:9411/api/v1/spans`) becomes `/api/v2/spans` (Zipkin serves both; the
 * OpenTelemetry exporter speaks v2 only). Other URLs are used as given.
 */
export function zipkinUrl(url: string): string {
  const u = new URL(url);
  if (u.pathname !== "/api/v1/spans") return url;
  u.pathname = "/api/v2/spans";
  return u.href;
}

/**
 * Where the `--trace_*_url` flags send spans:
 * - `--trace_tracera_url`: Zipkin v2 JSON ({@link zipkinUrl}).
 * - `--trace_tracerb_url` (a Jaeger collector): Istio 0.8's Thrift endpoint
 *   `http://jaeger:14268/api/traces[?format=jaeger.thrift]` → OTLP/HTTP JSON to the same host on
 *   port 4318, `/v1/traces` (Jaeger's OTLP receiver; Thrift is not spoken); a URL ending in
 *   `/api/v2/spans` (Jaeger's Zipkin receiver) → Zipkin v2 JSON as given; anything else → OTLP/HTTP
 *   JSON as given (`/v1/traces` appended to a URL without a path).
 */
export function traceTargets(o: { zipkinUrl: string; jaegerUrl: string }): TraceTarget[] {
  const targets: TraceTarget[] = [];
  if (o.zipkinUrl) {
    targets.push({ flag: "trace_tracera_url", url: zipkinUrl(o.zipkinUrl), protocol: "zipkin" });
  }
  if (o.jaegerUrl) {
    const u = new URL(o.jaegerUrl);
    let t: TraceTarget = { flag: "trace_tracerb_url", url: o.jaegerUrl, protocol: "otlp" };
    if (u.pathname === "/api/traces") {
      u.port = "4318";
      u.pathname = "/v1/traces";
      u.search = "";
      t = { ...t, url: u.href };
    } else if (u.pathname.endsWith("/api/v2/spans")) t = { ...t, protocol: "zipkin" };
    else if (u.pathname === "/") {
      u.pathname = "/v1/traces";
      t = { ...t, url: u.href };
    }
    targets.push(t);
  }
  return targets;
}

/** A function that logs at most once per `everyMs`, with the count of what it held back. */
function throttledWarn(log: Logger, everyMs: number): (msg: string) => void {
  let last = -Infinity, held = 0;
  return (msg) => {
    const now = performance.now();
    if (now - last < everyMs) {
      held++;
      return;
    }
    log.warn(held ? `${msg} (and ${held} more failure(s) since the last warning)` : msg);
    last = now;
    held = 0;
  };
}

/**
 * Wraps an exporter so that its failures are logged (at most one warning per 10 s) and at most one
 * export is in flight: a batch that comes while a collector has not answered the previous one is
 * dropped (a collector that never answers holds one request, not one per second).
 */
function loggedExporter(inner: SpanExporter, url: string, log: Logger): SpanExporter {
  const warn = throttledWarn(log, 10_000);
  let busy = false;
  return {
    export(spans, done) {
      if (busy) {
        warn(`Trace collector ${url} has not answered yet: ${spans.length} span(s) dropped`);
        return done({ code: 1 }); // ExportResultCode.FAILED
      }
      busy = true;
      inner.export(spans, (r) => {
        busy = false;
        if (r.code !== 0) warn(`Cannot send spans to ${url}: ${r.error?.message ?? "failed"}`);
        done(r);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

/** Timing of the exporters (tests shorten them). */
export interface ExportTiming {
  /** Delay between two batches (default 1000 ms). */
  delayMs?: number;
  /** How long one export (with the OTLP exporter's retries) may take (default 5000 ms). */
  timeoutMs?: number;
}

/** A batching span processor that exports to `target`. */
export function batchProcessor(
  otel: Otel,
  target: TraceTarget,
  log: Logger,
  timing: ExportTiming = {},
): InstanceType<Otel["BatchSpanProcessor"]> {
  const timeoutMs = timing.timeoutMs ?? 5000;
  const exporter = target.protocol === "zipkin"
    ? new otel.ZipkinExporter({ url: target.url })
    : new otel.OTLPTraceExporter({ url: target.url, timeoutMillis: timeoutMs });
  return new otel.BatchSpanProcessor({
    exporter: loggedExporter(exporter, target.url, log),
    scheduledDelayMillis: timing.delayMs ?? 1000,
    exportTimeoutMillis: timeoutMs,
    maxQueueSize: 10_000,
  });
}

/** Shuts `p` down, waiting at most `ms` (a collector that never answers must not hold a stop). */
export async function shutdownWithin(p: { shutdown(): Promise<void> }, ms: number): Promise<void> {
  let timer: number | undefined;
  await Promise.race([
    p.shutdown().catch(() => {}), // failures were logged by the exporter
    new Promise<void>((r) => timer = setTimeout(r, ms)),
  ]);
  clearTimeout(timer);
}

const micros = ([s, ns]: [number, number]) => Math.round(s * 1e6 + ns / 1e3);

/** A finished span as the Zipkin v2 JSON object `--trace_log_spans` logs. */
export function spanJson(span: ReadableSpan): Record<string, unknown> {
  const tags: Record<string, string> = {};
  for (const [k, v] of Object.entries(span.attributes)) tags[k] = String(v);
  return {
    traceId: span.spanContext().traceId,
    id: span.spanContext().spanId,
    ...(span.parentSpanContext ? { parentId: span.parentSpanContext.spanId } : {}),
    name: span.name,
    kind: "SERVER",
    timestamp: micros(span.startTime),
    duration: Math.max(1, micros(span.duration)),
    localEndpoint: { serviceName: "mesh-policy" },
    tags,
  };
}

const HEX16 = /^[0-9a-f]{16}$/, HEX32 = /^[0-9a-f]{32}$/;
const ZERO = /^0+$/;

function header(call: GrpcCall, name: string): string | undefined {
  for (const [k, v] of call.headers) if (k === name) return v.toLowerCase();
  return undefined;
}

/** The B3 trace id of a call (`x-b3-traceid`, 64-bit ids left-padded to 128), if valid. */
function b3TraceId(call: GrpcCall): string | undefined {
  const t = header(call, "x-b3-traceid");
  if (!t || ZERO.test(t)) return undefined;
  if (HEX32.test(t)) return t;
  return HEX16.test(t) ? t.padStart(32, "0") : undefined;
}

/**
 * Creates the tracer for the `--trace_*` flags, or undefined when tracing is off (then nothing is
 * imported). The caller's B3 headers (`x-b3-traceid`, `x-b3-spanid`, `x-b3-sampled`) make the span
 * a child of the caller's; `x-b3-sampled: 0` records nothing.
 */
export async function createTracer(
  o: { zipkinUrl: string; jaegerUrl: string; logSpans: boolean },
  log: Logger,
  timing: ExportTiming = {},
): Promise<Tracer | undefined> {
  const targets = traceTargets(o);
  if (targets.length === 0 && !o.logSpans) return undefined;
  const otel = await loadOtel();
  const processors: SpanProcessor[] = targets.map((t) => batchProcessor(otel, t, log, timing));
  for (const t of targets) {
    log.info(
      `Tracing: spans of Check and Report go to ${t.url} (${
        t.protocol === "zipkin" ? "Zipkin v2 JSON" : "OTLP/HTTP JSON"
      }, --${t.flag})`,
    );
  }
  if (o.logSpans) {
    processors.push({
      onStart() {},
      onEnd: (span) => log.info(`span ${JSON.stringify(spanJson(span))}`),
      forceFlush: () => Promise.resolve(),
      shutdown: () => Promise.resolve(),
    });
  }
  // A caller's trace id without a span id still names the trace: the id generator takes it.
  let nextTraceId: string | undefined;
  const random = (bytes: number): string => {
    const b = crypto.getRandomValues(new Uint8Array(bytes));
    let s = "";
    for (const x of b) s += x.toString(16).padStart(2, "0");
    return ZERO.test(s) ? random(bytes) : s;
  };
  const provider = new otel.TracerProvider({
    resource: otel.resourceFromAttributes({ "service.name": "mesh-policy" }),
    spanProcessors: processors,
    idGenerator: {
      generateTraceId: () => nextTraceId ?? random(16),
      generateSpanId: () => random(8),
    },
  });
  const tracer = provider.getTracer("mesh-policy");
  return {
    span(name, call) {
      const traceId = b3TraceId(call);
      const spanId = header(call, "x-b3-spanid");
      const sampled = header(call, "x-b3-sampled");
      const flags = sampled === "0" || sampled === "false"
        ? otel.TraceFlags.NONE
        : otel.TraceFlags.SAMPLED;
      let ctx = otel.ROOT_CONTEXT;
      if (traceId && spanId && HEX16.test(spanId) && !ZERO.test(spanId)) {
        ctx = otel.trace.setSpanContext(ctx, {
          traceId,
          spanId,
          traceFlags: flags,
          isRemote: true,
        });
      } else if (flags === otel.TraceFlags.NONE) {
        return () => {};
      }
      nextTraceId = traceId;
      let span;
      try {
        span = tracer.startSpan(
          `/mesh.mixer.v1.Mixer/${name}`,
          { kind: otel.SpanKind.SERVER },
          ctx,
        );
      } finally {
        nextTraceId = undefined;
      }
      return (status, message) => {
        span.setAttribute("grpc.status_code", status);
        if (message) span.setAttribute("error", message);
        if (status !== 0) span.setStatus({ code: otel.SpanStatusCode.ERROR, message });
        span.end();
      };
    },
    close: () => shutdownWithin(provider, (timing.timeoutMs ?? 5000) + 1000),
  };
}

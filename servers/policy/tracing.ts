/**
 * Tracing of Check and Report: one span per call, sent as Zipkin v2 JSON to
 * `--trace_tracera_url` (a Zipkin-compatible collector, e.g. `http://zipkin:9411/api/v2/spans`,
 * which Jaeger collectors also accept on their Zipkin port) and/or `--trace_tracerb_url`,
 * and logged with `--trace_log_spans`. Spans are batched and posted every second.
 * @module
 */

import type { GrpcCall } from "../../lib/grpc/mod.ts";
import type { Logger } from "../../lib/log/mod.ts";

/** One finished span (Zipkin v2 JSON). */
export interface Span {
  traceId: string;
  id: string;
  parentId?: string;
  name: string;
  kind: "SERVER";
  timestamp: number;
  duration: number;
  localEndpoint: { serviceName: string };
  tags: Record<string, string>;
}

/** The tracer of the server. */
export interface Tracer {
  readonly enabled: boolean;
  /** Starts a span for a call; the returned function ends it with the call's status. */
  span(name: string, call: GrpcCall): (status: number, message?: string) => void;
  /** Flushes and stops. */
  close(): Promise<void>;
}

const hex = (bytes: number) =>
  [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0"))
    .join("");

function header(call: GrpcCall, name: string): string | undefined {
  for (const [k, v] of call.headers) if (k === name) return v;
  return undefined;
}

/** Batches Zipkin v2 spans and posts them to collectors every `intervalMs`. */
export interface ZipkinExporter {
  /** Queues a span (dropped when there is no collector). */
  add(span: ZipkinSpan): void;
  /** Posts what is queued now. */
  flush(): Promise<void>;
  /** Flushes and stops. */
  close(): Promise<void>;
}

/** A Zipkin v2 JSON span. */
export type ZipkinSpan = Omit<Span, "kind" | "localEndpoint"> & {
  kind?: string;
  localEndpoint?: { serviceName: string };
};

/** The batching exporter of spans to `urls` (Zipkin v2 JSON, `POST <url>`). */
export function createZipkinExporter(
  urls: readonly string[],
  log: Logger,
  send: typeof fetch = fetch,
  intervalMs = 1000,
): ZipkinExporter {
  let batch: ZipkinSpan[] = [];
  const flush = async () => {
    if (batch.length === 0 || urls.length === 0) return;
    const body = JSON.stringify(batch);
    batch = [];
    await Promise.all(urls.map(async (u) => {
      try {
        const r = await send(u, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        await r.body?.cancel();
        if (!r.ok) log.warn(`Trace collector ${u} answered HTTP ${r.status}`);
      } catch (e) {
        log.warn(`Cannot send spans to ${u}: ${(e as Error).message}`);
      }
    }));
  };
  const timer = urls.length ? setInterval(flush, intervalMs) : undefined;
  return {
    add(span) {
      if (urls.length && batch.length < 10_000) batch.push(span);
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}

/** Creates the tracer for the `--trace_*` flags (disabled when none is set). */
export function createTracer(
  o: { zipkinUrl: string; jaegerUrl: string; logSpans: boolean },
  log: Logger,
  send: typeof fetch = fetch,
): Tracer {
  const urls = [o.zipkinUrl, o.jaegerUrl].filter((u) => u);
  const enabled = urls.length > 0 || o.logSpans;
  const exporter = createZipkinExporter(urls, log, send);
  return {
    enabled,
    span(name, call) {
      const start = Date.now() * 1000;
      const t0 = performance.now();
      const traceId = header(call, "x-b3-traceid") ?? hex(16);
      const parentId = header(call, "x-b3-spanid");
      return (status, message) => {
        const span: Span = {
          traceId,
          id: hex(8),
          ...(parentId ? { parentId } : {}),
          name: `/mesh.mixer.v1.Mixer/${name}`,
          kind: "SERVER",
          timestamp: start,
          duration: Math.max(1, Math.round((performance.now() - t0) * 1000)),
          localEndpoint: { serviceName: "mesh-policy" },
          tags: { "grpc.status_code": String(status), ...(message ? { error: message } : {}) },
        };
        if (o.logSpans) log.info(`span ${JSON.stringify(span)}`);
        exporter.add(span);
      };
    },
    close: () => exporter.close(),
  };
}

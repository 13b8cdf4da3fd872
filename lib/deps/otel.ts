/**
 * OpenTelemetry tracing: the API, the trace SDK and the Zipkin and OTLP/HTTP exporters (the 3.x
 * line: `@opentelemetry/sdk-trace` replaces `sdk-trace-base`, whose last release, 2.12.1, needs
 * `@opentelemetry/api` < 1.10 while the 3.x exporters need 1.10). Costs ~90 ms to import: load
 * lazily, only when tracing is on.
 */
export {
  ROOT_CONTEXT,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
} from "npm:@opentelemetry/api@1.10.0";
export {
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
  TracerProvider,
} from "npm:@opentelemetry/sdk-trace@3.1.0";
export { emptyResource, resourceFromAttributes } from "npm:@opentelemetry/resources@3.1.0";
export { ZipkinExporter } from "npm:@opentelemetry/exporter-zipkin@3.1.0";
export { OTLPTraceExporter } from "npm:@opentelemetry/exporter-trace-otlp-http@0.301.0";

/**
 * The `zipkin` adapter (Istio's `zipkin`): tracespan instances of Report become Zipkin v2 spans
 * posted, batched every second, to `url` (default: the server's `--trace_tracera_url`) with the
 * OpenTelemetry Zipkin exporter of the server's own tracing (loaded on the first span). Spans
 * with a malformed id or time are dropped (counted in a warning) rather than failing the Report.
 * @module
 */

import type { Value } from "../../../lib/expr/mod.ts";
import type { ReadableSpan } from "../../../lib/deps/otel.ts";
import { abortable } from "../abort.ts";
import { batchProcessor, loadOtel, shutdownWithin, zipkinUrl } from "../tracing.ts";
import { Params } from "./params.ts";
import type { Adapter, Instance } from "./types.ts";

const HEX_ID = /^[0-9a-f]{16}$|^[0-9a-f]{32}$/;

const micros = (v: Value | undefined) => v instanceof Date ? v.getTime() * 1000 : undefined;

/** A Zipkin v2 span (JSON). */
export interface ZipkinSpan {
  traceId: string;
  id: string;
  parentId?: string;
  name: string;
  /** Start, µs since the epoch. */
  timestamp: number;
  /** µs. */
  duration: number;
  localEndpoint: { serviceName: string };
  tags: Record<string, string>;
}

type Otel = Awaited<ReturnType<typeof loadOtel>>;

type Resource = ReturnType<Otel["resourceFromAttributes"]>;

const hrTime = (us: number): [number, number] => [Math.floor(us / 1e6), (us % 1e6) * 1000];

/**
 * A Zipkin span as the OpenTelemetry span the exporter turns back into it (its ids and times kept;
 * the exporter adds the resource's `service.name` to the tags).
 */
function readableSpan(otel: Otel, z: ZipkinSpan, resource: Resource): ReadableSpan {
  const ctx = { traceId: z.traceId, spanId: z.id, traceFlags: otel.TraceFlags.SAMPLED };
  return {
    name: z.name,
    kind: otel.SpanKind.INTERNAL,
    spanContext: () => ctx,
    parentSpanContext: z.parentId ? { ...ctx, spanId: z.parentId, isRemote: true } : undefined,
    startTime: hrTime(z.timestamp),
    endTime: hrTime(z.timestamp + z.duration),
    duration: hrTime(z.duration),
    status: { code: otel.SpanStatusCode.UNSET },
    attributes: z.tags,
    links: [],
    events: [],
    ended: true,
    resource,
    instrumentationScope: { name: "mesh-policy/zipkin" },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/** A tracespan instance as a Zipkin v2 span, or the reason it cannot be one. */
export function toZipkinSpan(inst: Instance, serviceName: string): ZipkinSpan | string {
  const v = inst.value;
  const id = (f: string) => typeof v[f] === "string" ? (v[f] as string).toLowerCase() : undefined;
  const traceId = id("trace_id"), spanId = id("span_id"), parentId = id("parent_span_id");
  if (!traceId || !HEX_ID.test(traceId)) return "trace_id is missing or not 16/32 hex digits";
  if (!spanId || !/^[0-9a-f]{16}$/.test(spanId)) return "span_id is missing or not 16 hex digits";
  if (parentId && !/^[0-9a-f]{16}$/.test(parentId)) return "parent_span_id is not 16 hex digits";
  const start = micros(v.start_time as Value), end = micros(v.end_time as Value);
  if (start === undefined || end === undefined) return "start_time or end_time is missing";
  const tags: Record<string, string> = {};
  for (const [k, t] of Object.entries((v.span_tags ?? {}) as Record<string, Value | undefined>)) {
    if (t === undefined) continue;
    tags[k] = t instanceof Date
      ? t.toISOString()
      : typeof t === "object" && !(t instanceof Uint8Array)
      ? JSON.stringify(t)
      : t instanceof Uint8Array
      ? [...t].join(".")
      : String(t);
  }
  return {
    traceId,
    id: spanId,
    ...(parentId ? { parentId } : {}),
    name: typeof v.span_name === "string" && v.span_name ? v.span_name : "unknown",
    timestamp: start,
    duration: Math.max(1, end - start),
    localEndpoint: { serviceName: tags["service_name"] ?? serviceName },
    tags,
  };
}

/** See the module doc. */
export const zipkin: Adapter = {
  kind: "zipkin",
  templates: ["tracespan"],
  build(spec, env, object) {
    const p = new Params(spec, object).only(["url", "sample_probability", "service_name"]);
    let url = p.string("url", env.traceUrl ?? "");
    if (!url) p.fail("url", "required when --trace_tracera_url is not set");
    if (!/^https?:\/\//.test(url) || !URL.canParse(url)) {
      p.fail("url", `want an http(s) URL, got ${JSON.stringify(url)}`);
    }
    url = zipkinUrl(url);
    const sample = p.number("sample_probability", 1, 0);
    if (sample > 1) p.fail("sample_probability", `must be between 0 and 1, got ${sample}`);
    const serviceName = p.string("service_name", "mesh");
    // The exporter is built on the first span (the SDK loads lazily).
    let sink: Promise<{ add(z: ZipkinSpan): void; close(): Promise<void> }> | undefined;
    const open = () =>
      sink ??= loadOtel().then((otel) => {
        const p = batchProcessor(
          otel,
          { flag: "trace_tracera_url", url, protocol: "zipkin" },
          env.log,
        );
        const resources = new Map<string, Resource>();
        return {
          add(z: ZipkinSpan) {
            const name = z.localEndpoint.serviceName;
            let r = resources.get(name);
            if (!r) {
              if (resources.size > 1000) resources.clear();
              resources.set(name, r = otel.resourceFromAttributes({ "service.name": name }));
            }
            p.onEnd(readableSpan(otel, z, r));
          },
          close: () => shutdownWithin(p, 6000),
        };
      });
    let dropped = 0, lastWarn = 0;
    return {
      async report(instances, signal) {
        for (const inst of instances) {
          if (sample < 1 && Math.random() >= sample) continue;
          const span = toZipkinSpan(inst, serviceName);
          if (typeof span !== "string") {
            (await abortable(open(), signal)).add(span);
            continue;
          }
          dropped++;
          if (env.now() - lastWarn >= 10_000) {
            env.log.warn(`${object}: dropped ${dropped} span(s): ${inst.name}: ${span}`);
            lastWarn = env.now();
            dropped = 0;
          }
        }
      },
      close: async () => await (await sink)?.close(),
    };
  },
};

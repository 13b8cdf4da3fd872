/**
 * Tracing of Check and Report through the OpenTelemetry exporters, seen by collector stand-ins on
 * 127.0.0.1 that decode what is sent: Zipkin v2 JSON (`POST /api/v2/spans`) and OTLP/HTTP JSON
 * (`POST /v1/traces`).
 */

import assert from "node:assert/strict";
import { Flag, frame, FrameType } from "../../lib/grpc/h2/frames.ts";
import { grpcFrame, grpcRequest, RawClient } from "../../lib/grpc/testing.ts";
import { DEFAULT_MANIFEST } from "../../lib/expr/mod.ts";
import { compress, MIXER_SERVICE, mixerCodec } from "../../lib/mixer/mod.ts";
import { eventually, startTestServer } from "./_testutil.ts";
import { traceTargets, zipkinUrl } from "./tracing.ts";

type Json = Record<string, unknown>;

/** A trace collector on 127.0.0.1: Zipkin v2 JSON and OTLP/HTTP JSON, decoded. */
function collectorStandIn() {
  const zipkin: Json[] = [];
  const otlp: Json[] = [];
  const requests: { path: string; contentType: string | null }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    requests.push({ path, contentType: req.headers.get("content-type") });
    if (req.method === "POST" && path === "/api/v2/spans") {
      zipkin.push(...await req.json());
      return new Response(null, { status: 202 });
    }
    if (req.method === "POST" && path === "/v1/traces") {
      // OTLP/HTTP JSON: resourceSpans[].scopeSpans[].spans[], the resource beside each span.
      const body = await req.json();
      for (const rs of body.resourceSpans ?? []) {
        for (const ss of rs.scopeSpans ?? []) {
          for (const span of ss.spans ?? []) otlp.push({ ...span, resource: rs.resource });
        }
      }
      return Response.json({});
    }
    await req.body?.cancel();
    return new Response("not found", { status: 404 });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  return { zipkin, otlp, requests, base, server };
}

/** OTLP attributes (`[{key, value: {stringValue|intValue}}]`) as a plain object. */
function otlpAttributes(list: unknown): Json {
  const out: Json = {};
  for (const { key, value } of list as { key: string; value: Json }[]) {
    out[key] = value.stringValue ?? value.intValue;
  }
  return out;
}

const TRACE = "463ac35c9f6413ad48485a3953bb6124", PARENT = "a2fb4a1d1a96d312";
const CHECK = `/${MIXER_SERVICE}/Check`;

Deno.test("the collector URLs of the flags: Zipkin for tracera, OTLP (or Zipkin) for tracerb", () => {
  const t = (zipkinUrl: string, jaegerUrl: string) =>
    traceTargets({ zipkinUrl, jaegerUrl }).map((x) => `${x.protocol} ${x.url}`);
  assert.deepEqual(t("", ""), []);
  // Istio 0.8's forms: Zipkin's v1 endpoint, Jaeger's Thrift endpoint.
  assert.deepEqual(
    t("http://zipkin:9411/api/v1/spans", "http://jaeger:14268/api/traces?format=jaeger.thrift"),
    ["zipkin http://zipkin:9411/api/v2/spans", "otlp http://jaeger:4318/v1/traces"],
  );
  assert.deepEqual(t("", "https://jaeger:14268/api/traces"), [
    "otlp https://jaeger:4318/v1/traces",
  ]);
  assert.deepEqual(t("https://z.example/api/v2/spans", "http://jaeger:4318/v1/traces"), [
    "zipkin https://z.example/api/v2/spans",
    "otlp http://jaeger:4318/v1/traces",
  ]);
  assert.deepEqual(t("", "http://jaeger:9411/api/v2/spans"), [
    "zipkin http://jaeger:9411/api/v2/spans",
  ]);
  assert.deepEqual(t("", "http://otel-collector:4318"), [
    "otlp http://otel-collector:4318/v1/traces",
  ]);
  assert.equal(zipkinUrl("http://zipkin:9411/custom"), "http://zipkin:9411/custom");
});

Deno.test("Check and Report spans reach a Zipkin and an OTLP collector, children of the caller's B3 trace", async () => {
  const c = collectorStandIn();
  const logged: string[] = [];
  const s = await startTestServer([], {
    trace_tracera_url: `${c.base}/api/v1/spans`, // Istio 0.8's form, sent to /api/v2/spans
    trace_tracerb_url: `${c.base}/v1/traces`,
    trace_log_spans: true,
  }, {
    log: { debug() {}, info: (m) => logged.push(m), warn: (m) => logged.push(m), error() {} },
    traceTiming: { delayMs: 50, timeoutMs: 1000 },
  });
  const port = Number(s.handle.addresses.grpc.split(":").pop());
  const raw = await RawClient.connect(port);
  try {
    const body = grpcFrame(
      (await mixerCodec()).encodeCheckRequest({
        attributes: compress({ "source.name": "a" }, DEFAULT_MANIFEST),
      } as never),
    );
    const b3 = [["x-b3-traceid", TRACE], ["x-b3-spanid", PARENT], ["x-b3-sampled", "1"]] as [
      string,
      string,
    ][];
    await raw.write(
      raw.headersFrame(1, grpcRequest(CHECK, b3)),
      frame(FrameType.DATA, Flag.END_STREAM, 1, body),
      // A failing Check (a malformed deadline) in a trace given by a 64-bit id alone.
      raw.headersFrame(
        3,
        grpcRequest(CHECK, [["x-b3-traceid", "00f067aa0ba902b7"], [
          "grpc-timeout",
          "soon",
        ]]),
      ),
      frame(FrameType.DATA, Flag.END_STREAM, 3, body),
      // The caller decided not to sample: nothing is recorded.
      raw.headersFrame(5, grpcRequest(CHECK, [...b3.slice(0, 2), ["x-b3-sampled", "0"]])),
      frame(FrameType.DATA, Flag.END_STREAM, 5, body),
    );
    const status = (id: number) =>
      raw.headers.get(id)?.flat().find(([k]) => k === "grpc-status")?.[1];
    assert.ok(await raw.until(() => [1, 3, 5].every((id) => status(id) !== undefined)));
    assert.equal(status(1), "0");
    assert.equal(status(3), "3");
    await s.report([{ "source.name": "a" }]);

    await eventually(() => c.zipkin.length >= 3 && c.otlp.length >= 3, "spans at both collectors");
    await new Promise((r) => setTimeout(r, 200)); // nothing more comes
    assert.equal(c.zipkin.length, 3, JSON.stringify(c.zipkin));
    assert.equal(c.otlp.length, 3, JSON.stringify(c.otlp));
    assert.ok(c.requests.every((r) => r.contentType?.startsWith("application/json")));

    // Zipkin v2 JSON.
    const zChild = c.zipkin.find((x) => x.parentId === PARENT)!;
    assert.ok(zChild, JSON.stringify(c.zipkin));
    assert.equal(zChild.traceId, TRACE);
    assert.equal(zChild.name, CHECK);
    assert.equal(zChild.kind, "SERVER");
    assert.match(zChild.id as string, /^[0-9a-f]{16}$/);
    assert.notEqual(zChild.id, PARENT);
    assert.deepEqual(zChild.localEndpoint, { serviceName: "mesh-policy" });
    assert.equal((zChild.tags as Json)["grpc.status_code"], "0");
    assert.equal((zChild.tags as Json).error, undefined);
    assert.ok((zChild.duration as number) >= 1);
    const zFailed = c.zipkin.find((x) => x.traceId === "000000000000000000f067aa0ba902b7")!;
    assert.ok(zFailed, JSON.stringify(c.zipkin));
    assert.equal(zFailed.parentId, undefined);
    assert.equal((zFailed.tags as Json)["grpc.status_code"], "3");
    assert.match((zFailed.tags as Json).error as string, /malformed grpc-timeout header "soon"/);
    const zReport = c.zipkin.find((x) => x.name === `/${MIXER_SERVICE}/Report`)!;
    assert.ok(zReport);
    assert.match(zReport.traceId as string, /^[0-9a-f]{32}$/);
    assert.equal(zReport.parentId, undefined);
    assert.equal((zReport.tags as Json)["grpc.status_code"], "0");

    // OTLP/HTTP JSON: the same spans, with their resource and numeric attributes.
    const oChild = c.otlp.find((x) => x.parentSpanId === PARENT)!;
    assert.ok(oChild, JSON.stringify(c.otlp));
    assert.equal(oChild.traceId, TRACE);
    assert.equal(oChild.spanId, zChild.id, "one span, two exporters");
    assert.equal(oChild.name, CHECK);
    assert.equal(oChild.kind, 2); // SPAN_KIND_SERVER
    assert.deepEqual(otlpAttributes(oChild.attributes), { "grpc.status_code": 0 });
    assert.deepEqual(otlpAttributes((oChild.resource as Json).attributes), {
      "service.name": "mesh-policy",
    });
    const oFailed = c.otlp.find((x) => x.spanId === zFailed.id)!;
    assert.deepEqual(otlpAttributes(oFailed.attributes), {
      "grpc.status_code": 3,
      error: (zFailed.tags as Json).error,
    });
    assert.deepEqual(oFailed.status, { code: 2, message: (zFailed.tags as Json).error });
    assert.ok(c.otlp.some((x) => x.name === `/${MIXER_SERVICE}/Report`));

    // --trace_log_spans logs each span; the startup says what goes where.
    const spanLines = logged.filter((l) => l.startsWith("span "));
    assert.equal(spanLines.length, 3, JSON.stringify(spanLines));
    const first = JSON.parse(spanLines.find((l) => l.includes(PARENT))!.slice(5));
    assert.equal(first.traceId, TRACE);
    assert.equal(first.id, zChild.id);
    assert.deepEqual(first.tags, { "grpc.status_code": "0" });
    assert.ok(logged.some((l) => l.includes(`${c.base}/api/v2/spans (Zipkin v2 JSON`)), logged[0]);
    assert.ok(logged.some((l) => l.includes(`${c.base}/v1/traces (OTLP/HTTP JSON`)));
  } finally {
    raw.socket.destroy();
    await s.close();
    await c.server.shutdown();
  }
});

Deno.test("an unreachable collector is logged and never fails a Check", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const dead = `http://127.0.0.1:${l.addr.port}`;
  l.close();
  const warnings: string[] = [];
  const s = await startTestServer([], {
    trace_tracera_url: `${dead}/api/v2/spans`,
    trace_tracerb_url: `${dead}/v1/traces`,
  }, {
    log: { debug() {}, info() {}, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
    traceTiming: { delayMs: 20, timeoutMs: 300 },
  });
  try {
    for (let i = 0; i < 3; i++) {
      const res = await s.check({ "source.name": "a" });
      assert.equal(res.precondition.status.code ?? 0, 0);
    }
    await eventually(
      () => warnings.some((w) => w.includes(`Cannot send spans to ${dead}/api/v2/spans`)),
      "the Zipkin failure in the log",
    );
    await eventually(
      () => warnings.some((w) => w.includes(`Cannot send spans to ${dead}/v1/traces`)),
      "the OTLP failure in the log",
    );
    const res = await s.check({ "source.name": "a" });
    assert.equal(res.precondition.status.code ?? 0, 0);
  } finally {
    await s.close();
  }
});

/**
 * Consumers of apikey instances (listchecker on Check) and tracespan instances (the zipkin
 * adapter on Report), through the gRPC API as a proxy calls it.
 */

import assert from "node:assert/strict";
import { eventually, obj, startTestServer } from "./_testutil.ts";

Deno.test("apikey instances are checked by a listchecker: known keys pass, others are NOT_FOUND, revoked keys PERMISSION_DENIED", async () => {
  const s = await startTestServer([
    obj("listchecker", "keys", { overrides: ["k-alice", "k-bob"], blacklist: false }),
    obj("listchecker", "revoked", { overrides: ["k-bob"], blacklist: true }),
    obj("apikey", "key", {
      api: 'destination.service | ""',
      api_key: 'request.api_key | request.headers["x-api-key"] | ""',
      api_operation: 'request.path | ""',
    }),
    obj("rule", "need-key", {
      match: 'destination.service == "ratings.shop.svc.cluster.local"',
      actions: [
        { handler: "keys.listchecker", instances: ["key.apikey"] },
        { handler: "revoked.listchecker", instances: ["key.apikey"] },
      ],
    }),
  ]);
  try {
    assert.deepEqual(s.handle.issues(), []);
    const code = async (attrs: Record<string, string | Record<string, string>>) =>
      (await s.check({ "destination.service": "ratings.shop.svc.cluster.local", ...attrs }))
        .precondition.status;
    assert.equal((await code({ "request.api_key": "k-alice" })).code ?? 0, 0);
    assert.equal((await code({ "request.headers": { "x-api-key": "k-alice" } })).code ?? 0, 0);
    const unknown = await code({ "request.api_key": "k-eve" });
    assert.equal(unknown.code, 5);
    assert.equal(unknown.message, "k-eve is not whitelisted");
    const revoked = await code({ "request.api_key": "k-bob" });
    assert.equal(revoked.code, 7);
    assert.equal(revoked.message, "k-bob is blacklisted");
    assert.equal((await code({})).code, 5, "no key at all is not whitelisted");
    // Other services need no key.
    const other = await s.check({ "destination.service": "reviews.shop.svc.cluster.local" });
    assert.equal(other.precondition.status.code ?? 0, 0);
  } finally {
    await s.close();
  }
});

/** A Zipkin collector on 127.0.0.1 that keeps the spans posted to /api/v2/spans. */
function collector() {
  const spans: Record<string, unknown>[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const u = new URL(req.url);
    if (req.method !== "POST" || u.pathname !== "/api/v2/spans") {
      return new Response("no", { status: 404 });
    }
    spans.push(...await req.json());
    return new Response(null, { status: 202 });
  });
  return { spans, url: `http://127.0.0.1:${server.addr.port}/api/v2/spans`, server };
}

const tracespan = obj("tracespan", "span", {
  trace_id: 'request.headers["x-b3-traceid"]',
  span_id: 'request.headers["x-b3-spanid"]',
  parent_span_id: 'request.headers["x-b3-parentspanid"] | ""',
  span_name: 'request.path | "/"',
  start_time: "request.time",
  end_time: "response.time",
  span_tags: {
    "http.status_code": "response.code | 200",
    "source.name": 'source.name | "unknown"',
    service_name: 'destination.service | "unknown"',
  },
});

Deno.test("tracespan instances become Zipkin spans sent to the collector at --trace_tracera_url", async () => {
  const c = collector();
  const s = await startTestServer([
    obj("zipkin", "tracer", {}),
    tracespan,
    obj("rule", "trace", {
      match: 'context.protocol == "http"',
      actions: [{ handler: "tracer.zipkin", instances: ["span.tracespan"] }],
    }),
  ], { trace_tracera_url: c.url });
  try {
    assert.deepEqual(s.handle.issues(), []);
    const start = new Date("2026-03-04T05:06:07.000Z"), end = new Date("2026-03-04T05:06:07.250Z");
    const headers = {
      "x-b3-traceid": "463ac35c9f6413ad48485a3953bb6124",
      "x-b3-spanid": "a2fb4a1d1a96d312",
      "x-b3-parentspanid": "0020000000000001",
    };
    await s.report([
      {
        "context.protocol": "http",
        "request.headers": headers,
        "request.path": "/ratings/1",
        "request.time": start,
        "response.time": end,
        "response.code": 503,
        "source.name": "reviews",
        "destination.service": "ratings.shop.svc.cluster.local",
      },
      // Not traced: a malformed span id is dropped, and TCP does not match the rule.
      { "request.headers": { ...headers, "x-b3-spanid": "nope" } },
      { "context.protocol": "tcp", "request.headers": headers },
    ]);
    const ours = () => c.spans.filter((x) => x.name === "/ratings/1");
    await eventually(() => ours().length >= 1, "the span at the collector");
    assert.deepEqual(ours(), [{
      traceId: "463ac35c9f6413ad48485a3953bb6124",
      id: "a2fb4a1d1a96d312",
      parentId: "0020000000000001",
      name: "/ratings/1",
      timestamp: start.getTime() * 1000,
      duration: 250_000,
      localEndpoint: { serviceName: "ratings.shop.svc.cluster.local" },
      tags: {
        "http.status_code": "503",
        "source.name": "reviews",
        service_name: "ratings.shop.svc.cluster.local",
        // The OpenTelemetry Zipkin exporter tags the span's resource (its service name).
        "service.name": "ratings.shop.svc.cluster.local",
      },
    }]);
    // The server's own Report span went to the same collector; nothing else from the bags.
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(ours().length, 1);
    assert.ok(c.spans.some((x) => x.name === "/mesh.mixer.v1.Mixer/Report"));
    assert.equal(c.spans.length, 2, JSON.stringify(c.spans.map((x) => x.name)));
  } finally {
    await s.close();
    await c.server.shutdown();
  }
});

Deno.test("a zipkin handler without a url nor --trace_tracera_url is rejected naming the field", async () => {
  const s = await startTestServer([
    obj("zipkin", "tracer", {}),
    obj("zipkin", "bad", { url: "ftp://x", sample_probability: 2 }),
  ]);
  try {
    const messages = s.handle.issues().map((i) => i.message);
    assert.ok(
      messages.includes(
        "zipkin/mesh-system/tracer: spec.url: required when --trace_tracera_url is not set",
      ),
      messages.join("\n"),
    );
    assert.ok(
      messages.includes('zipkin/mesh-system/bad: spec.url: want an http(s) URL, got "ftp://x"'),
      messages.join("\n"),
    );
  } finally {
    await s.close();
  }
});

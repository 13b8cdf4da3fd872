import assert from "node:assert/strict";
import { eventually, obj, startTestServer } from "./_testutil.ts";

Deno.test("a stdio handler logs each Report bag as a JSON line through a logentry instance", async () => {
  const s = await startTestServer([
    obj("stdio", "out", { severity_levels: { err: "ERROR" } }),
    obj("logentry", "accesslog", {
      severity: '"err"',
      variables: {
        path: 'request.path | ""',
        code: "response.code | 0",
        user: 'request.headers["x-user"] | "-"',
      },
      timestamp: "request.time",
    }),
    obj("rule", "log", {
      match: 'context.protocol == "http"',
      actions: [{ handler: "out.stdio", instances: ["accesslog.logentry"] }],
    }),
  ]);
  try {
    assert.deepEqual(s.handle.issues(), []);
    const t = new Date("2026-01-02T03:04:05Z");
    await s.report([
      { "context.protocol": "http", "request.path": "/a", "response.code": 200, "request.time": t },
      { "context.protocol": "tcp", "request.time": t },
      {
        "context.protocol": "http",
        "request.headers": { "x-user": "jo" },
        "request.time": t,
      },
    ]);
    await eventually(() => s.lines.length >= 2, "two log lines");
    assert.deepEqual(s.lines.map((l) => JSON.parse(l)), [
      {
        level: "error",
        time: t.toISOString(),
        instance: "accesslog.logentry.mesh-system",
        path: "/a",
        code: 200,
        user: "-",
      },
      {
        level: "error",
        time: t.toISOString(),
        instance: "accesslog.logentry.mesh-system",
        path: "/a", // Report bags are deltas: the first bag's attributes carry over
        code: 200,
        user: "jo",
      },
    ]);
  } finally {
    await s.close();
  }
});

Deno.test("an instance field with an unknown attribute rejects the configuration naming the field", async () => {
  const s = await startTestServer([
    obj("metric", "m", { value: "1", dimensions: { who: "source.nosuch" } }),
  ]);
  try {
    assert.equal(
      s.handle.issues()[0]?.message,
      'metric/mesh-system/m: spec.dimensions.who: Unknown attribute "source.nosuch" (at position 0) in "source.nosuch"',
    );
    // Nothing good was loaded yet: the built-in telemetry is in force.
    assert.equal((await s.check({})).precondition.valid_use_count, 200);
    await s.report([{ "context.protocol": "http", "destination.service": "a.b.svc" }]);
    const text = await (await fetch(`http://${s.handle.addresses.monitoring}/metrics`)).text();
    assert.match(text, /^mesh_request_count\{[^}]*destination_service="a.b.svc"[^}]*\} 1$/m);
  } finally {
    await s.close();
  }
});

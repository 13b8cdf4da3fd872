import assert from "node:assert/strict";
import { startCpuProfile } from "../process/mod.ts";
import {
  metricBuilders,
  monitoringHandler,
  type MonitoringHandlerOptions,
  promRegistry,
  startMonitoring,
} from "./mod.ts";

const base: MonitoringHandlerOptions = {
  metrics: () => Promise.resolve("# HELP x_total X.\n# TYPE x_total counter\nx_total 3\n"),
  contentType: "text/plain; version=0.0.4; charset=utf-8",
  versionText: "prog 1.2.3",
  profiling: false,
  profilingFlag: "--profile",
};
const get = (o: MonitoringHandlerOptions, path: string, method = "GET") =>
  monitoringHandler(o)(new Request(`http://m${path}`, { method }));

Deno.test("monitoringHandler serves /metrics with its content type and /version with a newline", async () => {
  const m = await get(base, "/metrics");
  assert.equal(m.status, 200);
  assert.equal(m.headers.get("content-type"), base.contentType);
  assert.match(await m.text(), /^x_total 3$/m);
  const v = await get(base, "/version", "HEAD");
  assert.equal(v.status, 200);
  assert.equal(await (await get(base, "/version")).text(), "prog 1.2.3\n");
  assert.equal(await (await get({ ...base, versionText: "a\n" }, "/version")).text(), "a\n");
});

Deno.test("monitoringHandler answers 405 to other methods and 404 to unknown paths", async () => {
  const post = await get(base, "/metrics", "POST");
  assert.equal(post.status, 405);
  assert.equal(await post.text(), "Use GET\n");
  const nf = await get(base, "/nope");
  assert.equal(nf.status, 404);
  assert.equal(await nf.text(), "404 page not found: /nope\n");
});

Deno.test("monitoringHandler keeps /debug/pprof off unless profiling, naming the flag", async () => {
  const off = await get({ ...base, profilingFlag: "--enable-profiling" }, "/debug/pprof/heap");
  assert.equal(off.status, 404);
  assert.equal(await off.text(), "Profiling is off (start with --enable-profiling)\n");
  const on = { ...base, profiling: true };
  const other = await get(on, "/debug/pprof/goroutine");
  assert.equal(other.status, 404);
  assert.match(
    await other.text(),
    /^Available: \/debug\/pprof\/allocs\?seconds=N, \/debug\/pprof\/heap/,
  );
  for (const path of ["profile", "allocs"]) {
    for (const s of ["0", "-1", "601", "abc"]) {
      const bad = await get(on, `/debug/pprof/${path}?seconds=${s}`);
      assert.equal(bad.status, 400, `${path} ${s}`);
      assert.match(await bad.text(), /want a number in \(0, 600\]/);
    }
  }
});

Deno.test("monitoringHandler records a CPU profile, named as a download only when asked", async () => {
  const plain = await get({ ...base, profiling: true }, "/debug/pprof/profile?seconds=0.05");
  assert.equal(plain.status, 200);
  assert.equal(plain.headers.get("content-type"), "application/json");
  assert.equal(plain.headers.get("content-disposition"), null);
  assert.ok(Array.isArray((await plain.json()).nodes));
  const named = await get(
    { ...base, profiling: true, profileName: "prog" },
    "/debug/pprof/profile?seconds=0.05",
  );
  assert.equal(named.headers.get("content-disposition"), 'attachment; filename="prog.cpuprofile"');
  await named.body?.cancel();
});

Deno.test("monitoringHandler answers 409 while another CPU profile is being recorded", async () => {
  const p = await startCpuProfile();
  try {
    const busy = await get({ ...base, profiling: true }, "/debug/pprof/profile?seconds=1");
    assert.equal(busy.status, 409);
    assert.match(await busy.text(), /already being recorded/);
  } finally {
    await p.stop();
  }
});

Deno.test("monitoringHandler ends a recording whose client left, so that the next one need not wait (as Go's pprof)", async () => {
  const handler = monitoringHandler({ ...base, profiling: true });
  const gone = new AbortController();
  const t0 = performance.now();
  const first = handler(
    new Request("http://m/debug/pprof/profile?seconds=600", { signal: gone.signal }),
  );
  await new Promise((r) => setTimeout(r, 100));
  gone.abort();
  const answered = await first;
  assert.equal(answered.status, 499);
  await answered.body?.cancel();
  assert.ok(performance.now() - t0 < 5_000, "the recording went on after its client left");
  const next = await handler(new Request("http://m/debug/pprof/profile?seconds=0.05"));
  assert.equal(next.status, 200);
  assert.ok(Array.isArray((await next.json()).nodes));
});

Deno.test("monitoringHandler records where the process allocates for N seconds", async () => {
  const handler = monitoringHandler({ ...base, profiling: true, profileName: "prog" });
  const pending = handler(new Request("http://m/debug/pprof/allocs?seconds=0.5"));
  // Allocated (and dropped) while the profile records: 1 MB of ~1 kB arrays every 10 ms for
  // 0.3 s (the profile starts after a few turns of the event loop).
  let n = 0;
  function allocatesWhileRecorded() {
    for (let i = 0; i < 1_000; i++) n += new Array(125).fill(i).length;
  }
  for (let i = 0; i < 30; i++) {
    allocatesWhileRecorded();
    await new Promise((r) => setTimeout(r, 10));
  }
  const busy = await get({ ...base, profiling: true }, "/debug/pprof/allocs?seconds=1");
  assert.equal(busy.status, 409);
  assert.equal(await busy.text(), "An allocation profile is already being recorded\n");
  const r = await pending;
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("content-type"), "application/json");
  assert.equal(r.headers.get("content-disposition"), 'attachment; filename="prog.heapprofile"');
  const profile = await r.json();
  let bytes = 0;
  const walk = (x: { callFrame: { functionName: string }; selfSize: number; children: [] }) => {
    if (x.callFrame.functionName === "allocatesWhileRecorded") bytes += x.selfSize;
    for (const c of x.children) walk(c);
  };
  walk(profile.head);
  assert.equal(n, 3_750_000);
  assert.ok(bytes > 10e6, `the function allocating is in the profile, with ${bytes} bytes`);
});

Deno.test("monitoringHandler serves a heap snapshot", async () => {
  const r = await get({ ...base, profiling: true, profileName: "prog" }, "/debug/pprof/heap");
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("content-type"), "application/octet-stream");
  assert.equal(r.headers.get("content-disposition"), 'attachment; filename="prog.heapsnapshot"');
  const snapshot = JSON.parse(await r.text());
  assert.ok(snapshot.snapshot?.meta, "a V8 heap snapshot");
});

Deno.test("startMonitoring listens on a free port and shuts down", async () => {
  const m = await startMonitoring({ ...base, host: "127.0.0.1", port: 0 });
  try {
    assert.ok(m.port > 0);
    const r = await fetch(`http://127.0.0.1:${m.port}/version`);
    assert.equal(await r.text(), "prog 1.2.3\n");
  } finally {
    await m.shutdown();
  }
});

Deno.test("promRegistry builds counters and histograms on a private registry with process metrics", async () => {
  const { register, counter, histogram, gauge, close } = await promRegistry();
  counter("t_requests_total", "Requests, by method.", ["method"]).inc({ method: "Get" });
  counter("t_plain_total", "Plain.").inc(2);
  histogram("t_seconds", "Latency.", [0.1, 1]).observe(0.5);
  gauge("t_level", "Level.").set(7);
  const text = await register.metrics();
  assert.match(text, /^t_requests_total\{method="Get"\} 1$/m);
  assert.match(text, /^t_plain_total 2$/m);
  assert.match(text, /^t_seconds_bucket\{le="0.1"\} 0$/m);
  assert.match(text, /^t_seconds_bucket\{le="1"\} 1$/m);
  assert.match(text, /^t_level 7$/m);
  assert.match(text, /^process_cpu_seconds_total /m);
  // A second registry is independent: the same names can be registered again.
  const other = await promRegistry();
  other.counter("t_plain_total", "Plain.");
  assert.doesNotMatch(await other.register.metrics(), /^t_plain_total 2$/m);
  close();
  other.close();
});

Deno.test("metricBuilders registers on the given registry only, without process metrics", async () => {
  const prom = await import("../deps/prom.ts");
  const register = new prom.Registry();
  metricBuilders(prom, register).gauge("t_only", "Only.").set(1);
  const text = await register.metrics();
  assert.match(text, /^t_only 1$/m);
  assert.doesNotMatch(text, /process_cpu_seconds_total/);
  assert.doesNotMatch(await prom.register.metrics(), /t_only/);
});

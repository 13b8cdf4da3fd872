import assert from "node:assert/strict";
import { collectProcessMetrics, LagHistogram } from "./event_loop_lag.ts";

Deno.test("LagHistogram gives exact count, min, max, mean and stddev, and percentiles within 9 %", () => {
  const h = new LagHistogram();
  assert.deepEqual([h.count, h.min, h.max, h.mean, h.stddev, h.percentile(99)], [0, 0, 0, 0, 0, 0]);
  // 1..100 ms
  for (let i = 1; i <= 100; i++) h.record(i / 1000);
  h.record(-0.001); // a timer early by a hair counts as no delay
  assert.equal(h.count, 101);
  assert.equal(h.min, 0);
  assert.equal(h.max, 0.1);
  assert.ok(Math.abs(h.mean - 5.05 / 101) < 1e-12, `mean ${h.mean}`);
  const m = 5.05 / 101;
  let sq = 0;
  for (let i = 1; i <= 100; i++) sq += (i / 1000 - m) ** 2;
  sq += m * m;
  assert.ok(Math.abs(h.stddev - Math.sqrt(sq / 101)) < 1e-9, `stddev ${h.stddev}`);
  for (const [p, exact] of [[50, 0.05], [90, 0.09], [99, 0.099]]) {
    const got = h.percentile(p);
    assert.ok(got >= exact * 0.99 && got <= exact * 1.09, `p${p}: ${got} against ${exact}`);
  }
  assert.equal(h.percentile(100), 0.1, "never above the max");
  h.reset();
  assert.deepEqual([h.count, h.max, h.percentile(50)], [0, 0, 0]);
  // the smallest is kept whatever the order; delays under 1 µs read as 0
  for (const v of [0.004, 0, 0, 0.002, 0.003]) h.record(v);
  assert.deepEqual([h.min, h.max, h.percentile(40)], [0, 0.004, 0]);
  h.reset();
  for (const v of [0.004, 0.002, 0.003]) h.record(v);
  assert.equal(h.min, 0.002);
});

Deno.test("collectProcessMetrics() shows a blocked event loop in nodejs_eventloop_lag_* and resets them at each scrape", async () => {
  const prom = await import("../deps/prom.ts");
  const register = new prom.Registry();
  const perf = (await import("node:perf_hooks")).default;
  const real = perf.monitorEventLoopDelay;
  let started = 0;
  perf.monitorEventLoopDelay = (o) => (started++, real(o));
  let stop: () => void;
  try {
    ({ stop } = collectProcessMetrics(prom, register, 5));
    assert.equal(perf.monitorEventLoopDelay.name, "", "the function is put back (here: the spy)");
  } finally {
    perf.monitorEventLoopDelay = real;
  }
  assert.equal(started, 0, "prom-client's own histogram is not started");
  try {
    const value = (text: string, name: string) => {
      const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
      assert.ok(m, `${name} in the scrape`);
      return Number(m[1]);
    };
    await new Promise((r) => setTimeout(r, 50));
    const start = performance.now();
    while (performance.now() - start < 200) { /* the event loop blocked for 200 ms */ }
    await new Promise((r) => setTimeout(r, 30));
    const first = await register.metrics();
    assert.ok(value(first, "nodejs_eventloop_lag_max_seconds") >= 0.15, first);
    assert.ok(value(first, "nodejs_eventloop_lag_p99_seconds") >= 0.1);
    assert.ok(value(first, "nodejs_eventloop_lag_mean_seconds") > 0);
    // every replaced metric once, beside prom-client's other process metrics
    for (const n of ["min", "max", "mean", "stddev", "p50", "p90", "p99"]) {
      assert.equal(first.split(`\n# TYPE nodejs_eventloop_lag_${n}_seconds gauge`).length, 2, n);
    }
    assert.match(first, /^process_cpu_user_seconds_total /m);
    await new Promise((r) => setTimeout(r, 60));
    const second = await register.metrics();
    assert.ok(value(second, "nodejs_eventloop_lag_max_seconds") < 0.15, "reset by the scrape");
    // how late the timer fired, not its period: some tick of 5 ms was less than 5 ms late
    assert.ok(value(second, "nodejs_eventloop_lag_min_seconds") < 0.005, second);
    const immediate = value(second, "nodejs_eventloop_lag_seconds"); // set after the first scrape
    assert.ok(immediate > 0 && immediate < 0.1, `the setImmediate lag ${immediate} s`);
  } finally {
    stop();
  }
});

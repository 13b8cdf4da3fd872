import assert from "node:assert/strict";
import { type ListenerState, sumListenerStates } from "../grpc/listener_state.ts";
import { aggregateMetrics } from "./aggregate.ts";
import { registerListenerMetrics } from "./listeners.ts";

type State = { -readonly [K in keyof ListenerState]: ListenerState[K] };
const fresh = (): State => ({ accepting: true, refused: 0, throttled: 0, shed: 0 });

/** A registry with the listener metrics of `listeners` (summed), prefix `mesh_test`. */
async function registry(listeners: ListenerState[], notAccepting = "/ready answers 503 then") {
  const prom = await import("../deps/prom.ts");
  const register = new prom.Registry();
  registerListenerMetrics(prom, register, {
    prefix: "mesh_test",
    what: "test API",
    refusedBecause: "of a test",
    budget: "--testBudget",
    notAccepting: notAccepting || undefined,
    read: () => sumListenerStates(listeners),
  });
  return register;
}

const series = (text: string) => text.split("\n").filter((l) => l.startsWith("mesh_test")).sort();

/** What {@link series} reads for these values. */
const gauges = (accepting: number, refused: number, throttled: number, shed: number) => [
  `mesh_test_accepting ${accepting}`,
  `mesh_test_refused_connections ${refused}`,
  `mesh_test_shed_connections ${shed}`,
  `mesh_test_throttled_connections ${throttled}`,
];

Deno.test("registerListenerMetrics(): the listeners' state, summed, read at every scrape", async () => {
  const a = fresh(), b = fresh();
  const register = await registry([a, b]);
  const text = await register.metrics();
  for (
    const n of ["accepting", "refused_connections", "throttled_connections", "shed_connections"]
  ) {
    assert.match(text, new RegExp(`^# TYPE mesh_test_${n} gauge$`, "m"));
  }
  assert.deepEqual(text.split("\n").filter((l) => l.startsWith("# HELP")).sort(), [
    "# HELP mesh_test_accepting 1 while the test API listeners accept connections, 0 while one " +
    "cannot (e.g. out of file descriptors; /ready answers 503 then).",
    "# HELP mesh_test_refused_connections test API connections closed at once since start " +
    "because of a test.",
    "# HELP mesh_test_shed_connections test API connections closed since start to keep file " +
    "descriptors free (the oldest that had not sent their HTTP/2 preface, else the newcomer).",
    "# HELP mesh_test_throttled_connections test API connections held or refused since start " +
    "because more than --testBudget connections a second from their address ended in an HTTP/2 " +
    "connection error.",
  ]);
  assert.deepEqual(series(text), gauges(1, 0, 0, 0));
  Object.assign(a, { refused: 2, throttled: 3, shed: 5 });
  Object.assign(b, { accepting: false, refused: 7, throttled: 11, shed: 13 });
  assert.deepEqual(series(await register.metrics()), gauges(0, 9, 14, 18));
  b.accepting = true;
  assert.equal(series(await register.metrics())[0], "mesh_test_accepting 1");
  // without a word on what else happens
  assert.match(
    await (await registry([], "")).metrics(),
    /^# HELP mesh_test_accepting .* 0 while one cannot \(e\.g\. out of file descriptors\)\.$/m,
  );
});

Deno.test("registerListenerMetrics() over isolates: the counts add up, and accepting is 0 when any worker's listener cannot accept, else 1", async () => {
  // the control isolate has no listener of its own; two workers have one each
  const control = await registry([]);
  const w1 = fresh(), w2 = fresh();
  const workers = [await registry([w1]), await registry([w2])];
  const aggregated = async () =>
    series(
      await aggregateMetrics(
        await control.getMetricsAsJSON(),
        await Promise.all(workers.map((r) => r.getMetricsAsJSON())),
      ),
    );
  assert.deepEqual(await aggregated(), gauges(1, 0, 0, 0));
  Object.assign(w1, { refused: 1, throttled: 4, shed: 2 });
  Object.assign(w2, { accepting: false, refused: 3, throttled: 1, shed: 6 });
  assert.deepEqual(await aggregated(), gauges(0, 4, 5, 8));
  w2.accepting = true;
  assert.equal((await aggregated())[0], "mesh_test_accepting 1");
});

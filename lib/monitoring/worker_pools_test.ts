import assert from "node:assert/strict";
import { type PoolFigures, registerWorkerPoolMetrics } from "./worker_pools.ts";

Deno.test("registerWorkerPoolMetrics(): each pool's serving workers and restarts, read at every scrape", async () => {
  const prom = await import("../deps/prom.ts");
  const register = new prom.Registry();
  const ads = { name: "ADS worker", running: 2, restarts: 0 };
  const pools: PoolFigures[] = [];
  registerWorkerPoolMetrics(prom, register, () => pools);
  // no pool yet: the metrics are described, with no series
  const empty = await register.metrics();
  assert.match(empty, /^# TYPE mesh_worker_isolates gauge$/m);
  assert.match(empty, /^# TYPE mesh_worker_restarts_total counter$/m);
  assert.doesNotMatch(empty, /^mesh_worker/m);
  pools.push(ads, { name: "HTTP front", running: 1, restarts: 0 });
  const series = async () =>
    (await register.metrics()).split("\n").filter((l) => l.startsWith("mesh_worker")).sort();
  assert.deepEqual(await series(), [
    'mesh_worker_isolates{pool="ADS worker"} 2',
    'mesh_worker_isolates{pool="HTTP front"} 1',
    'mesh_worker_restarts_total{pool="ADS worker"} 0',
    'mesh_worker_restarts_total{pool="HTTP front"} 0',
  ]);
  // a worker died and is not started again yet; then it is, and another dies
  Object.assign(ads, { running: 1, restarts: 1 });
  assert.deepEqual((await series()).filter((l) => l.includes("ADS")), [
    'mesh_worker_isolates{pool="ADS worker"} 1',
    'mesh_worker_restarts_total{pool="ADS worker"} 1',
  ]);
  Object.assign(ads, { running: 1, restarts: 2 });
  assert.deepEqual((await series()).filter((l) => l.includes("ADS")), [
    'mesh_worker_isolates{pool="ADS worker"} 1',
    'mesh_worker_restarts_total{pool="ADS worker"} 2',
  ]);
});

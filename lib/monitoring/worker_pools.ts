/**
 * {@link registerWorkerPoolMetrics}: the health of a program's worker isolates (`--workers`, the
 * HTTP front) as two metrics, so that a worker that keeps dying can be alerted on rather than
 * found in the logs.
 * @module
 */

type Prom = typeof import("../deps/prom.ts");
type Registry = InstanceType<Prom["Registry"]>;

/** What the metrics read of a worker pool (`WorkerPool` of lib/workers has these). */
export interface PoolFigures {
  /** The pool's name (`ADS worker`, `HTTP front`...): the `pool` label. */
  readonly name: string;
  /** Workers that answered their start and have not died since. */
  readonly running: number;
  /** Workers that died, or failed to start again, and were to be started again. */
  readonly restarts: number;
}

/**
 * Registers `mesh_worker_isolates{pool}` (a gauge: workers serving now) and
 * `mesh_worker_restarts_total{pool}` (a counter) on `register`, read from `pools()` at every
 * scrape (a pool not started yet is simply absent).
 */
export function registerWorkerPoolMetrics(
  prom: Prom,
  register: Registry,
  pools: () => readonly PoolFigures[],
): void {
  const registers = [register];
  const labelNames = ["pool"] as const;
  new prom.Gauge({
    name: "mesh_worker_isolates",
    help: "Worker isolates serving now, by pool (started, and not died since).",
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const p of pools()) this.set({ pool: p.name }, p.running);
    },
  });
  new prom.Counter({
    name: "mesh_worker_restarts_total",
    help: "Worker isolates that died, or failed to start again, and were started again, by pool.",
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const p of pools()) this.inc({ pool: p.name }, p.restarts);
    },
  });
}

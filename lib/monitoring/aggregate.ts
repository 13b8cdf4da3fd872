/**
 * {@link aggregateMetrics}: one Prometheus exposition from the registries of several isolates
 * (the control isolate and its workers), counters and histograms summed per label set.
 * @module
 */

type MetricJson = { name: string; aggregator?: string };

/**
 * The Prometheus text of the control isolate's registry and its workers' (each given as
 * `registry.getMetricsAsJSON()`): metrics the workers have are summed per label set (or
 * combined as their `aggregator` says), so W workers' counters read as one process's; metrics
 * only the control isolate has (the process metrics, its own counters) are its own values.
 */
export async function aggregateMetrics(
  own: unknown,
  workers: readonly unknown[],
): Promise<string> {
  const prom = await import("../deps/prom.ts");
  const theirs = workers.filter(Boolean) as MetricJson[][];
  const shared = new Set(theirs.flat().map((m) => m.name));
  const mine = (own as MetricJson[]).map((m) =>
    shared.has(m.name) ? m : { ...m, aggregator: "first" }
  );
  return await prom.AggregatorRegistry.aggregate([mine, ...theirs]).metrics();
}

/**
 * {@link aggregateMetrics}: one Prometheus exposition from the registries of several isolates
 * (the control isolate and its workers), counters and histograms summed per label set.
 * @module
 */

/**
 * The Prometheus text of registries given as `registry.getMetricsAsJSON()` outputs: metrics of
 * the same name and labels are summed (or combined as their `aggregator` says), so W workers'
 * counters read as one process's.
 */
export async function aggregateMetrics(jsons: readonly unknown[]): Promise<string> {
  const prom = await import("../deps/prom.ts");
  const merged = prom.AggregatorRegistry.aggregate(jsons.filter(Boolean) as object[]);
  return await merged.metrics();
}

/**
 * The `prometheus` adapter: metric instances become counters, gauges or histograms named
 * `<namespace>_<name>` (namespace default `mesh`), exposed on mesh-policy's monitoring port.
 * DURATION values are observed in seconds.
 * @module
 */

import * as prom from "../../../lib/deps/prom.ts";
import { Params } from "./params.ts";
import type { Adapter, Instance } from "./types.ts";

const KINDS = ["GAUGE", "COUNTER", "DISTRIBUTION"] as const;

/** Default buckets of DISTRIBUTION metrics (seconds-friendly, as Istio's request_duration). */
export const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

function buckets(p: Params | undefined): number[] {
  if (!p) return DEFAULT_BUCKETS;
  p.only(["linear_buckets", "exponential_buckets", "explicit_buckets"]);
  const lin = p.sub("linear_buckets"), exp = p.sub("exponential_buckets");
  const expl = p.sub("explicit_buckets");
  if ([lin, exp, expl].filter(Boolean).length !== 1) {
    p.fail(
      "linear_buckets",
      "set exactly one of linear_buckets, exponential_buckets, explicit_buckets",
    );
  }
  if (lin) {
    const n = lin.number("num_finite_buckets", 0, 1), w = lin.number("width", 0);
    if (w <= 0) lin.fail("width", "must be > 0");
    const o = lin.number("offset", 0);
    return Array.from({ length: n }, (_, i) => o + i * w);
  }
  if (exp) {
    const n = exp.number("num_finite_buckets", 0, 1), g = exp.number("growth_factor", 0);
    const s = exp.number("scale", 0);
    if (g <= 1) exp.fail("growth_factor", "must be > 1");
    if (s <= 0) exp.fail("scale", "must be > 0");
    return Array.from({ length: n }, (_, i) => s * g ** i);
  }
  const bounds = (expl!.get("bounds") ?? []) as unknown[];
  if (!Array.isArray(bounds) || bounds.length === 0 || bounds.some((b) => typeof b !== "number")) {
    expl!.fail("bounds", "must be a non-empty list of numbers");
  }
  const sorted = bounds as number[];
  if (sorted.some((b, i) => i > 0 && b <= sorted[i - 1])) expl!.fail("bounds", "must increase");
  return sorted;
}

type Recorder = (value: number, labels: Record<string, string>) => void;

/** prometheus: metric. */
export const prometheus: Adapter = {
  kind: "prometheus",
  templates: ["metric"],
  build(spec, env, object) {
    const p = new Params(spec, object).only(["metrics", "metricsExpirationPolicy"]);
    const registry = new prom.Registry();
    const byInstance = new Map<string, { record: Recorder; labels: string[] }[]>();
    for (const m of p.list("metrics")) {
      m.only([
        "namespace",
        "name",
        "instance_name",
        "description",
        "kind",
        "label_names",
        "buckets",
      ]);
      const name = m.string("name", "");
      if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name)) m.fail("name", `invalid metric name "${name}"`);
      const ns = m.string("namespace", "mesh");
      const full = ns ? `${ns}_${name}` : name;
      const instance = m.string("instance_name", "");
      if (!instance) m.fail("instance_name", "is required (<instance>.metric.<namespace>)");
      const labels = m.strings("label_names");
      const bad = labels.find((l) => !/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(l));
      if (bad !== undefined) m.fail("label_names", `invalid label name "${bad}"`);
      const kind = m.enumOf("kind", KINDS, "COUNTER");
      const help = m.string("description", `${full} (${instance})`) || full;
      const common = { name: full, help, labelNames: labels, registers: [registry] };
      let record: Recorder | undefined;
      try {
        if (kind === "COUNTER") {
          const c = new prom.Counter(common);
          record = (v, l) => c.inc(l, v);
        } else if (kind === "GAUGE") {
          const g = new prom.Gauge(common);
          record = (v, l) => g.set(l, v);
        } else {
          const h = new prom.Histogram({ ...common, buckets: buckets(m.sub("buckets")) });
          record = (v, l) => h.observe(l, v);
        }
      } catch (e) {
        m.fail("name", (e as Error).message);
      }
      const list = byInstance.get(instance) ?? [];
      list.push({ record: record!, labels });
      byInstance.set(instance, list);
    }
    const value = (i: Instance): number | undefined => {
      const v = i.value.value;
      if (typeof v === "number") return i.types.value === "DURATION" ? v / 1000 : v;
      if (typeof v === "boolean") return v ? 1 : 0;
      if (typeof v === "string" && v !== "" && Number.isFinite(Number(v))) return Number(v);
      return undefined;
    };
    return {
      report(instances) {
        for (const i of instances) {
          const metrics = byInstance.get(i.name);
          if (!metrics) continue;
          const v = value(i);
          if (v === undefined) {
            env.log.debug(`${object}: ${i.name}: value is missing or not a number`);
            continue;
          }
          const dims = (i.value.dimensions ?? {}) as Record<string, unknown>;
          for (const m of metrics) {
            const labels: Record<string, string> = {};
            for (const l of m.labels) labels[l] = dims[l] === undefined ? "" : String(dims[l]);
            m.record(v, labels);
          }
        }
      },
      metrics: () => registry.metrics(),
      close: () => registry.clear(),
    };
  },
};

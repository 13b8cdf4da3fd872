/**
 * The `memquota` adapter: in-memory quotas per instance name and dimensions, over a rolling
 * window (`valid_duration`; 0 = a counter that never expires), with per-dimension overrides,
 * best-effort allocation and deduplication of repeated allocation ids.
 * @module
 */

import { Params } from "./params.ts";
import type { Adapter, QuotaResult } from "./types.ts";

interface Limit {
  maxAmount: number;
  validDurationMs: number;
}

interface QuotaConfig extends Limit {
  overrides: { dimensions: Record<string, string>; limit: Limit }[];
}

/** memquota: quota. */
export const memquota: Adapter = {
  kind: "memquota",
  templates: ["quota"],
  build(spec, env, object) {
    const p = new Params(spec, object).only(["quotas", "min_deduplication_duration"]);
    const dedupMs = p.durationMs("min_deduplication_duration", 1000);
    const quotas = new Map<string, QuotaConfig>();
    for (const q of p.list("quotas")) {
      q.only(["name", "max_amount", "valid_duration", "overrides"]);
      const name = q.string("name", "");
      if (!name) q.fail("name", "is required");
      quotas.set(name, {
        maxAmount: q.number("max_amount", 0, 0),
        validDurationMs: q.durationMs("valid_duration", 0),
        overrides: q.list("overrides").map((o) => {
          o.only(["dimensions", "max_amount", "valid_duration"]);
          return {
            dimensions: o.stringMap("dimensions"),
            limit: {
              maxAmount: o.number("max_amount", 0, 0),
              validDurationMs: o.durationMs("valid_duration", q.durationMs("valid_duration", 0)),
            },
          };
        }),
      });
    }
    // key → allocations (time, amount) in the window, or a running total for counters.
    const windows = new Map<string, { at: number; amount: number }[]>();
    const dedup = new Map<string, { result: QuotaResult; expires: number }>();
    const find = (name: string) =>
      quotas.get(name) ?? quotas.get(name.split(".")[0]) ??
        [...quotas].find(([k]) => k.split(".")[0] === name.split(".")[0])?.[1];
    return {
      quota(inst, args) {
        const now = env.now();
        for (const [id, d] of dedup) if (d.expires <= now) dedup.delete(id);
        const seen = args.dedupId ? dedup.get(args.dedupId) : undefined;
        if (seen) return seen.result;
        const q = find(inst.name);
        if (!q) return { granted: 0, validDurationMs: 0 };
        const dims = Object.fromEntries(
          Object.entries((inst.value.dimensions ?? {}) as Record<string, unknown>)
            .map(([k, v]) => [k, String(v)]),
        );
        const over = q.overrides.find((o) =>
          Object.entries(o.dimensions).every(([k, v]) => dims[k] === v)
        );
        const limit = over?.limit ?? q;
        const key = inst.name + "\0" + JSON.stringify(Object.entries(dims).sort());
        let window = windows.get(key) ?? [];
        if (limit.validDurationMs > 0) {
          window = window.filter((a) => now - a.at < limit.validDurationMs);
        }
        const used = window.reduce((s, a) => s + a.amount, 0);
        const left = Math.max(0, limit.maxAmount - used);
        const granted = args.amount <= left ? args.amount : args.bestEffort ? left : 0;
        if (granted > 0) window.push({ at: now, amount: granted });
        windows.set(key, window);
        const result = { granted, validDurationMs: limit.validDurationMs };
        if (args.dedupId) dedup.set(args.dedupId, { result, expires: now + dedupMs });
        return result;
      },
    };
  },
};

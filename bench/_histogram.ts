/**
 * A Prometheus histogram read from the text of `/metrics`, and what its buckets say: the
 * observations made between two scrapes, how many fell under a bound, and the bucket bound under
 * which a share of them fell (a quantile to the resolution of the buckets).
 * @module
 */

/** One histogram of one scrape: cumulative counts by upper bound (`+Inf` last), sum and count. */
export interface Histogram {
  buckets: { le: number; count: number }[];
  sum: number;
  count: number;
}

/** The histogram `name` (without labels other than `le`) in `text`; throws when absent. */
export function readHistogram(text: string, name: string): Histogram {
  const buckets = [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, "gm"))]
    .map((m) => ({ le: m[1] === "+Inf" ? Infinity : Number(m[1]), count: Number(m[2]) }));
  const one = (suffix: string) => {
    const m = new RegExp(`^${name}_${suffix} (\\S+)$`, "m").exec(text);
    if (!m) throw new Error(`/metrics has no ${name}_${suffix}`);
    return Number(m[1]);
  };
  if (!buckets.length) throw new Error(`/metrics has no ${name}_bucket`);
  return { buckets, sum: one("sum"), count: one("count") };
}

/** The observations of `after` that `before` (a scrape of the same histogram) did not have. */
export function since(before: Histogram, after: Histogram): Histogram {
  return {
    buckets: after.buckets.map((b, i) => ({ le: b.le, count: b.count - before.buckets[i].count })),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/** How many observations were at most `le` (a bucket bound of `h`). */
export function atMost(h: Histogram, le: number): number {
  const b = h.buckets.find((x) => x.le === le);
  if (!b) throw new Error(`no bucket le=${le}`);
  return b.count;
}

/** The smallest bucket bound under which a share `q` (0-1] of the observations fell. */
export function bucketQuantile(h: Histogram, q: number): number {
  if (h.count <= 0) return NaN;
  for (const b of h.buckets) if (b.count >= q * h.count) return b.le;
  return Infinity;
}

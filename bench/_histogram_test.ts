import assert from "node:assert/strict";
import { atMost, bucketQuantile, readHistogram, since } from "./_histogram.ts";

const scrape = (counts: number[], sum: number) =>
  [
    "# HELP t_seconds a test",
    "# TYPE t_seconds histogram",
    `t_seconds_bucket{le="0.5"} ${counts[0]}`,
    `t_seconds_bucket{le="1"} ${counts[1]}`,
    `t_seconds_bucket{le="3"} ${counts[2]}`,
    `t_seconds_bucket{le="+Inf"} ${counts[3]}`,
    `t_seconds_sum ${sum}`,
    `t_seconds_count ${counts[3]}`,
    `t_seconds_other_bucket{le="0.5"} 99`,
  ].join("\n");

Deno.test("readHistogram() reads the buckets, sum and count of one histogram", () => {
  const h = readHistogram(scrape([1, 2, 4, 5], 7.5), "t_seconds");
  assert.deepEqual(h.buckets.map((b) => [b.le, b.count]), [[0.5, 1], [1, 2], [3, 4], [
    Infinity,
    5,
  ]]);
  assert.equal(h.sum, 7.5);
  assert.equal(h.count, 5);
  assert.throws(() => readHistogram("x 1", "t_seconds"), /no t_seconds_bucket/);
});

Deno.test("since() keeps the observations made between two scrapes; bucketQuantile() bounds them", () => {
  const d = since(
    readHistogram(scrape([10, 10, 10, 10], 2), "t_seconds"),
    readHistogram(scrape([10, 50, 59, 60], 60), "t_seconds"),
  );
  assert.equal(d.count, 50);
  assert.equal(d.sum, 58);
  assert.equal(atMost(d, 1), 40);
  assert.equal(bucketQuantile(d, 0.5), 1);
  assert.equal(bucketQuantile(d, 0.8), 1);
  assert.equal(bucketQuantile(d, 0.81), 3);
  assert.equal(bucketQuantile(d, 0.99), Infinity);
  assert.ok(Number.isNaN(bucketQuantile(since(d, d), 0.5)));
});

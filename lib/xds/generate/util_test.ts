import assert from "node:assert/strict";
import {
  msToDuration,
  parseClusterName,
  parseDurationMs,
  resolveShortName,
  serviceDomains,
} from "./util.ts";

Deno.test("serviceDomains() adds the short forms shared with the proxy's domain", () => {
  assert.deepEqual(
    serviceDomains(
      "reviews.default.svc.cluster.local",
      9080,
      "default.svc.cluster.local",
      "10.0.0.5",
    ),
    [
      "reviews.default.svc.cluster.local",
      "reviews.default.svc.cluster.local:9080",
      "reviews",
      "reviews:9080",
      "reviews.default",
      "reviews.default:9080",
      "reviews.default.svc",
      "reviews.default.svc:9080",
      "10.0.0.5",
      "10.0.0.5:9080",
    ],
  );
});

Deno.test("serviceDomains() keeps the namespace when the proxy is in another namespace", () => {
  assert.deepEqual(
    serviceDomains("ratings.prod.svc.cluster.local", 80, "default.svc.cluster.local", "0.0.0.0"),
    [
      "ratings.prod.svc.cluster.local",
      "ratings.prod.svc.cluster.local:80",
      "ratings.prod",
      "ratings.prod:80",
      "ratings.prod.svc",
      "ratings.prod.svc:80",
    ],
  );
});

Deno.test("serviceDomains() adds no short form when nothing but the TLD is shared", () => {
  assert.deepEqual(serviceDomains("api.example.com", 443, "default.svc.cluster.local", "0.0.0.0"), [
    "api.example.com",
    "api.example.com:443",
  ]);
  assert.deepEqual(serviceDomains("foo.com", 80, "bar.com", "0.0.0.0"), ["foo.com", "foo.com:80"]);
});

Deno.test("parseDurationMs() reads Go and proto durations and rejects bad units", () => {
  assert.equal(parseDurationMs("1m30s"), 90_000);
  assert.equal(parseDurationMs("1.5s"), 1500);
  assert.equal(parseDurationMs("250ms"), 250);
  assert.throws(() => parseDurationMs("5x"), /Cannot parse duration "5x"/);
  assert.deepEqual(msToDuration(1500), { seconds: 1, nanos: 500_000_000 });
});

Deno.test("parseClusterName() parses outbound and inbound names and rejects others", () => {
  assert.deepEqual(parseClusterName("outbound|80|v1|a.b"), {
    direction: "outbound",
    port: 80,
    subset: "v1",
    host: "a.b",
  });
  assert.equal(parseClusterName("BlackHoleCluster"), undefined);
  assert.equal(parseClusterName("outbound|x||a"), undefined);
});

Deno.test("resolveShortName() expands names without dots only", () => {
  assert.equal(
    resolveShortName("world", "default", "cluster.local"),
    "world.default.svc.cluster.local",
  );
  assert.equal(resolveShortName("world.prod", "default", "cluster.local"), "world.prod");
  assert.equal(resolveShortName("*", "default", "cluster.local"), "*");
});

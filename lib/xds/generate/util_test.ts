import assert from "node:assert/strict";
import {
  cmp,
  durationOf,
  endpointAddress,
  findPort,
  hostNamespace,
  isHttp2Protocol,
  isHttpProtocol,
  labelsMatch,
  msToDuration,
  parseClusterName,
  parseDurationMs,
  resolveShortName,
  serviceDomains,
  stringMatcher,
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

Deno.test("parseDurationMs() units, numbers, zero and errors", () => {
  assert.equal(parseDurationMs("1h2m3s4ms"), 3_723_004);
  assert.equal(parseDurationMs("1500us"), 1.5);
  assert.equal(parseDurationMs("1500µs"), 1.5);
  assert.equal(parseDurationMs("2000000ns"), 2);
  assert.equal(parseDurationMs("0"), 0);
  assert.equal(parseDurationMs(2), 2000, "a number is seconds");
  assert.equal(parseDurationMs(0), 0);
  for (const bad of [-1, Infinity, NaN, "", undefined, null, {}]) {
    assert.throws(() => parseDurationMs(bad), /^Error: Cannot parse duration/, String(bad));
  }
  assert.throws(() => parseDurationMs("1s5"), /Cannot parse duration "1s5": missing unit/);
  assert.throws(() => parseDurationMs("s"), /at "s"/);
  assert.throws(() => parseDurationMs("-1s"), /Cannot parse duration "-1s": must not be negative/);
  assert.equal(parseDurationMs("1.s"), 1000, "as Go reads it");
});

Deno.test("durationOf() and msToDuration(): absent is undefined, whole seconds have no nanos", () => {
  assert.equal(durationOf(undefined), undefined);
  assert.equal(durationOf(null), undefined);
  assert.equal(durationOf(""), undefined);
  assert.deepEqual(durationOf("0s"), { seconds: 0 });
  assert.deepEqual(durationOf("2.25s"), { seconds: 2, nanos: 250_000_000 });
  assert.deepEqual(msToDuration(999), { seconds: 0, nanos: 999_000_000 });
  assert.deepEqual(msToDuration(3000), { seconds: 3 });
  assert.deepEqual(msToDuration(0.001), { seconds: 0, nanos: 1000 });
});

Deno.test("parseClusterName() refuses wrong directions, counts, ports and empty hosts", () => {
  assert.deepEqual(parseClusterName("inbound|9000||h"), {
    direction: "inbound",
    port: 9000,
    subset: "",
    host: "h",
  });
  for (
    const bad of [
      "sideways|80||h",
      "outbound|80|h",
      "outbound|80|||h",
      "outbound|0||h",
      "outbound|65536||h",
      "outbound|1.5||h",
      "outbound|80||",
      "outbound|80|v1|h|x",
    ]
  ) assert.equal(parseClusterName(bad), undefined, bad);
  assert.equal(parseClusterName("outbound|65535||h")?.port, 65535);
  assert.equal(parseClusterName("outbound|1||h")?.port, 1);
});

Deno.test("resolveShortName() keeps a short name without a namespace", () => {
  assert.equal(resolveShortName("world", "", "cluster.local"), "world");
});

Deno.test("serviceDomains(): a /32 VIP is an address; other CIDRs and 0.0.0.0 are not; empty domain", () => {
  assert.deepEqual(serviceDomains("db.internal", 3306, "", "10.2.3.4/32"), [
    "db.internal",
    "db.internal:3306",
    "10.2.3.4",
    "10.2.3.4:3306",
  ]);
  assert.deepEqual(serviceDomains("db.internal", 3306, "", "10.2.0.0/16"), [
    "db.internal",
    "db.internal:3306",
  ]);
  assert.deepEqual(serviceDomains("db.internal", 3306, "", ""), [
    "db.internal",
    "db.internal:3306",
  ]);
  // the whole host shared with the proxy's domain: only the labels before it count
  assert.deepEqual(serviceDomains("svc.cluster.local", 80, "svc.cluster.local", "0.0.0.0"), [
    "svc.cluster.local",
    "svc.cluster.local:80",
    "svc",
    "svc:80",
  ]);
});

Deno.test("stringMatcher() exact, prefix, regex (empty: exact empty), suffix; nothing else", () => {
  assert.deepEqual(stringMatcher({ exact: "a", prefix: "b" }), { exact: "a" });
  assert.deepEqual(stringMatcher({ prefix: "b", regex: "c" }), { prefix: "b" });
  assert.deepEqual(stringMatcher({ regex: "c.*", suffix: "d" }), { safe_regex: { regex: "c.*" } });
  assert.deepEqual(stringMatcher({ regex: "" }), { exact: "" });
  assert.deepEqual(stringMatcher({ suffix: "d" }), { suffix: "d" });
  assert.deepEqual(stringMatcher({ exact: "" }), { exact: "" });
  assert.equal(stringMatcher({ exact: 1 }), undefined);
  assert.equal(stringMatcher({}), undefined);
  assert.equal(stringMatcher("a"), undefined);
  assert.equal(stringMatcher(null), undefined);
});

Deno.test("labelsMatch(), findPort(), endpointAddress(), hostNamespace(), cmp()", () => {
  assert.equal(labelsMatch(undefined, {}), true);
  assert.equal(labelsMatch({}, { a: "1" }), true);
  assert.equal(labelsMatch({ a: "1", b: "2" }, { a: "1", b: "2", c: "3" }), true);
  assert.equal(labelsMatch({ a: "1", b: "2" }, { a: "1", b: "3" }), false);
  const ports = [
    { name: "http", port: 80, protocol: "HTTP" as const },
    { name: "grpc", port: 7070, protocol: "GRPC" as const },
  ];
  assert.equal(findPort(ports, { number: 7070 })?.name, "grpc");
  assert.equal(findPort(ports, { number: 7070, name: "http" })?.name, "grpc");
  assert.equal(findPort(ports, { name: "http" })?.port, 80);
  assert.equal(findPort(ports, { number: 81 }), undefined);
  assert.equal(findPort(ports, { number: "80" }), undefined);
  assert.equal(findPort(ports, null), undefined);
  assert.equal(findPort(ports, 80), undefined);
  assert.deepEqual(endpointAddress("10.0.0.1", 80), {
    socket_address: { address: "10.0.0.1", port_value: 80 },
  });
  assert.deepEqual(endpointAddress("unix:///run/a.sock", 80), { pipe: { path: "/run/a.sock" } });
  assert.deepEqual(endpointAddress("unixy.example", 80), {
    socket_address: { address: "unixy.example", port_value: 80 },
  });
  assert.equal(hostNamespace("a.prod.svc.cluster.local"), "prod");
  assert.equal(hostNamespace("a"), "");
  assert.deepEqual(["b", "a", "c", "a"].sort(cmp), ["a", "a", "b", "c"]);
  assert.equal(cmp("a", "a"), 0);
  assert.equal(cmp("b", "a"), 1);
  assert.equal(cmp("a", "b"), -1);
});

Deno.test("isHttpProtocol() and isHttp2Protocol()", () => {
  for (const p of ["HTTP", "HTTP2", "GRPC"] as const) assert.equal(isHttpProtocol(p), true, p);
  for (const p of ["TCP", "HTTPS", "TLS", "UDP", "MONGO"] as const) {
    assert.equal(isHttpProtocol(p), false, p);
  }
  assert.equal(isHttp2Protocol("HTTP2"), true);
  assert.equal(isHttp2Protocol("GRPC"), true);
  assert.equal(isHttp2Protocol("HTTP"), false);
});

import assert from "node:assert/strict";
import {
  checkHost,
  checkHostPort,
  checkIpOrCidr,
  formatDuration,
  isIp,
  parseDurationMs,
  pluralize,
} from "./values.ts";

Deno.test("parseDurationMs() accepts Go-style and proto-JSON durations", () => {
  assert.equal(parseDurationMs("5s"), 5000);
  assert.equal(parseDurationMs("0.5s"), 500);
  assert.equal(parseDurationMs("300ms"), 300);
  assert.equal(parseDurationMs("1m30s"), 90000);
  assert.equal(parseDurationMs("2160h0m0s"), 2160 * 3600 * 1000);
  assert.equal(parseDurationMs("1.5h"), 5400000);
  assert.equal(parseDurationMs("0"), 0);
});

Deno.test("parseDurationMs() rejects other units, bare numbers and negatives", () => {
  for (const bad of ["5", "5d", "1us", "-1s", "s", "", "1 s", "1m-3s", "1e3s"]) {
    assert.equal(parseDurationMs(bad), undefined, bad);
  }
});

Deno.test("formatDuration() prints like Go's time.Duration", () => {
  assert.equal(formatDuration(0), "0s");
  assert.equal(formatDuration(300), "300ms");
  assert.equal(formatDuration(1500), "1.5s");
  assert.equal(formatDuration(60000), "1m0s");
  assert.equal(formatDuration(2160 * 3600 * 1000), "2160h0m0s");
});

Deno.test("checkHost() accepts FQDNs, short names, IPs and leading wildcards", () => {
  for (
    const ok of ["reviews", "reviews.default.svc.cluster.local", "*.example.com", "*", "10.1.2.3"]
  ) {
    assert.equal(checkHost(ok), undefined, ok);
  }
  assert.match(checkHost("*.example.com", false)!, /wildcards are not allowed/);
  assert.match(checkHost("a..b")!, /label ""/);
  assert.match(checkHost("UPPER.com")!, /label "UPPER"/);
  assert.match(checkHost("x".repeat(64))!, /at most 63/);
});

Deno.test("checkIpOrCidr() and isIp() accept IPv4 and IPv6 with optional prefix length", () => {
  assert.ok(isIp("::1") && isIp("2001:db8::8a2e:370:7334") && isIp("192.168.0.1"));
  assert.ok(!isIp("256.1.1.1") && !isIp("1.2.3") && !isIp("host"));
  assert.equal(checkIpOrCidr("10.0.0.0/8"), undefined);
  assert.equal(checkIpOrCidr("2001:db8::/32"), undefined);
  assert.match(checkIpOrCidr("10.0.0.0/33")!, /IP address or CIDR/);
});

Deno.test("checkHostPort() requires host:port with a valid port", () => {
  assert.equal(checkHostPort("mesh-discovery:15007"), undefined);
  assert.equal(checkHostPort("[::1]:80"), undefined);
  assert.match(checkHostPort("mesh-discovery")!, /must be <host>:<port>/);
  assert.match(checkHostPort("a:70000")!, /between 1 and 65535/);
});

Deno.test("pluralize() follows the CRD pluralisation rule", () => {
  assert.deepEqual(
    ["rule", "prometheus", "listentry", "quota", "stdio", "gateway", "policy"].map(pluralize),
    ["rules", "prometheuses", "listentries", "quotas", "stdios", "gateways", "policies"],
  );
});

import assert from "node:assert/strict";
import { isIp, parseNodeId, proxyLabels } from "./node.ts";

Deno.test("parseNodeId() splits type, ip, id and domain when the id is well formed", () => {
  const p = parseNodeId("sidecar~10.1.1.0~v0.default~default.svc.cluster.local", { a: "b" });
  assert.deepEqual(p, {
    type: "sidecar",
    ip: "10.1.1.0",
    id: "v0.default",
    domain: "default.svc.cluster.local",
    metadata: { a: "b" },
  });
});

Deno.test("parseNodeId() reports missing parts when there are not four parts", () => {
  assert.throws(
    () => parseNodeId("sidecar~10.1.1.0~v0.default"),
    { message: 'missing parts in the service node "sidecar~10.1.1.0~v0.default"' },
  );
  assert.throws(() => parseNodeId("a~b~c~d~e"), {
    message: 'missing parts in the service node "a~b~c~d~e"',
  });
});

Deno.test("parseNodeId() rejects an unknown node type", () => {
  assert.throws(() => parseNodeId("gateway~1.1.1.1~x~y"), {
    message:
      'invalid node type (valid types: ingress, sidecar, router in the service node "gateway~1.1.1.1~x~y")',
  });
});

Deno.test("parseNodeId() checks the IP only for sidecars", () => {
  assert.throws(() => parseNodeId("sidecar~not-an-ip~x~y"), {
    message: 'invalid IP address "not-an-ip" in the service node "sidecar~not-an-ip~x~y"',
  });
  assert.equal(parseNodeId("router~not-an-ip~x~y").ip, "not-an-ip");
  assert.equal(parseNodeId("ingress~~x~").id, "x");
  assert.equal(parseNodeId("sidecar~fd00::1~x~y").ip, "fd00::1");
});

Deno.test("isIp() accepts IPv4 and IPv6 and rejects other text", () => {
  assert.equal(isIp("10.0.0.1"), true);
  assert.equal(isIp("::1"), true);
  assert.equal(isIp("256.0.0.1"), false);
  assert.equal(isIp("01.0.0.1"), false);
  assert.equal(isIp("example.com"), false);
});

Deno.test("proxyLabels() reads metadata.labels, else the string metadata entries", () => {
  const p = parseNodeId("router~1.1.1.1~x~y", { labels: { mesh: "ingressgateway", n: 1 } });
  assert.deepEqual(proxyLabels(p), { mesh: "ingressgateway" });
  const q = parseNodeId("router~1.1.1.1~x~y", { app: "a", INTERCEPTION_MODE: "TPROXY" });
  assert.deepEqual(proxyLabels(q), { app: "a" });
});

import assert from "node:assert/strict";
import {
  clientOf,
  headerMatcherForm,
  isIp,
  isProxylessGrpc,
  parseNodeId,
  proxyFromNode,
  proxyLabels,
  ringHashCrashes,
} from "./node.ts";

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

Deno.test("clientOf() tells Envoy and the gRPC libraries apart, with their versions", () => {
  const id = "sidecar~10.1.1.0~v0.default~default.svc.cluster.local";
  assert.deepEqual(
    clientOf({
      id,
      user_agent_name: "envoy",
      user_agent_build_version: { version: { major_number: 1, minor_number: 27, patch: 2 } },
    }),
    { kind: "envoy", name: "envoy", version: [1, 27, 2] },
  );
  assert.deepEqual(
    clientOf({ id, build_version: "abc123/1.12.2/Clean/RELEASE/BoringSSL" }),
    { kind: "envoy", name: "envoy", version: [1, 12, 2] },
  );
  assert.deepEqual(
    clientOf({
      id,
      user_agent_name: "gRPC C-core linux Python",
      user_agent_version: "C-core 29.0.0 Python 1.51.1",
    }),
    { kind: "grpc-core", name: "gRPC C-core linux Python", version: [1, 51, 1] },
  );
  assert.deepEqual(
    clientOf({ id, user_agent_name: "gRPC Node Pure JS", user_agent_version: "1.14.1" }),
    { kind: "grpc-js", name: "gRPC Node Pure JS", version: [1, 14, 1] },
  );
  assert.equal(
    clientOf({ id, user_agent_name: "gRPC Go", user_agent_version: "1.60.0" })?.kind,
    "grpc-go",
  );
  assert.equal(
    clientOf({ id, user_agent_name: "gRPC Java", user_agent_version: "1.59.0" })?.kind,
    "grpc-java",
  );
  assert.deepEqual(clientOf({ id, user_agent_name: "my-proxy" }), {
    kind: "other",
    name: "my-proxy",
  });
  assert.equal(clientOf({ id }), undefined);
});

Deno.test("headerMatcherForm() gives string_match to Envoy 1.20+ only, the older fields to every other client", () => {
  const envoy = (minor: number) => ({
    kind: "envoy" as const,
    name: "envoy",
    version: [1, minor, 0] as [number, number, number],
  });
  assert.equal(headerMatcherForm(envoy(20)), "string_match");
  assert.equal(headerMatcherForm(envoy(31)), "string_match");
  assert.equal(headerMatcherForm(envoy(19)), "legacy");
  assert.equal(headerMatcherForm({ kind: "envoy", name: "envoy" }), "legacy");
  assert.equal(
    headerMatcherForm({ kind: "grpc-core", name: "gRPC C-core", version: [1, 51, 1] }),
    "legacy",
  );
  assert.equal(
    headerMatcherForm({ kind: "grpc-js", name: "gRPC Node Pure JS", version: [1, 14, 1] }),
    "legacy",
  );
  assert.equal(headerMatcherForm(undefined), "legacy");
});

Deno.test("proxyFromNode() parses the id and records the client", () => {
  const p = proxyFromNode({
    id: "sidecar~10.1.1.0~v0.default~default.svc.cluster.local",
    metadata: { app: "a" },
    user_agent_name: "gRPC Go",
    user_agent_version: "1.60.1",
  });
  assert.equal(p.id, "v0.default");
  assert.deepEqual(p.metadata, { app: "a" });
  assert.deepEqual(p.client, { kind: "grpc-go", name: "gRPC Go", version: [1, 60, 1] });
  assert.equal(proxyFromNode({ id: "router~1.1.1.1~gw.ns~ns.svc" }).client, undefined);
  assert.throws(() => proxyFromNode({ id: "bad" }), { message: /missing parts/ });
});

Deno.test("clientOf() reads the gRPC release of C-core from the wrapper, else from the core version", () => {
  const id = "sidecar~10.1.1.0~v0.default~default.svc.cluster.local";
  const core = (v: string) =>
    clientOf({ id, user_agent_name: "gRPC C-core linux", user_agent_version: v })?.version;
  assert.deepEqual(core("C-core 29.0.0 Python 1.51.1"), [1, 51, 1]);
  assert.deepEqual(core("C-core 33.0.0 PHP 1.56.0dev"), [1, 56, 0]);
  assert.deepEqual(core("C-core 29.0.0"), [1, 51, 0]); // C++: no wrapper
  assert.deepEqual(core("C-core 31.0.1"), [1, 53, 1]);
});

Deno.test("ringHashCrashes() is true for C-core 1.50-1.52 only", () => {
  const core = (minor: number) => ({
    kind: "grpc-core" as const,
    name: "gRPC C-core linux Python",
    version: [1, minor, 1] as [number, number, number],
  });
  assert.equal(ringHashCrashes(core(49)), false);
  assert.equal(ringHashCrashes(core(50)), true);
  assert.equal(ringHashCrashes(core(51)), true);
  assert.equal(ringHashCrashes(core(52)), true);
  assert.equal(ringHashCrashes(core(53)), false);
  assert.equal(ringHashCrashes({ kind: "grpc-core", name: "gRPC C-core" }), false);
  assert.equal(
    ringHashCrashes({ kind: "grpc-js", name: "gRPC Node Pure JS", version: [1, 51, 0] }),
    false,
  );
  assert.equal(ringHashCrashes(undefined), false);
});

Deno.test("isProxylessGrpc() is true only for GENERATOR grpc in the node metadata", () => {
  assert.equal(isProxylessGrpc({ GENERATOR: "grpc", NAMESPACE: "default" }), true);
  assert.equal(isProxylessGrpc({ GENERATOR: "envoy" }), false);
  assert.equal(isProxylessGrpc({}), false);
  assert.equal(isProxylessGrpc(null), false);
  assert.equal(isProxylessGrpc(undefined), false);
});

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as path from "node:path";
import { xdsIncludeDirs, xdsProtoRoot } from "../protos.ts";
import { ResourceCache } from "./cache.ts";
import {
  decodeDeltaDiscoveryRequest,
  decodeDiscoveryRequest,
  encodedAny,
  encodeDeltaDiscoveryResponse,
  encodeDiscoveryResponse,
  sameBytes,
} from "./wire.ts";

// deno-lint-ignore no-explicit-any
type AnyObj = any;

const loader = await import("../../deps/proto_loader.ts");
const root = xdsProtoRoot();
const pkg = loader.loadSync(
  ["envoy/service/discovery/v3/ads.proto", "envoy/config/cluster/v3/cluster.proto"].map((f) =>
    path.join(root, "envoy-api", f)
  ),
  {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: false,
    arrays: true,
    oneofs: true,
    includeDirs: xdsIncludeDirs(),
  },
) as AnyObj;
const svc = pkg["envoy.service.discovery.v3.AggregatedDiscoveryService"];
const T = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
const cache = new ResourceCache();
for (const name of ["c1", "outbound|80||a.default.svc.cluster.local"]) {
  cache.set(T, name, pkg["envoy.config.cluster.v3.Cluster"].serialize({ name, type: "EDS" }));
}
const resources = [...cache.select(T, null)].map(([name, entry]) => ({ name, entry }));

Deno.test("encodeDiscoveryResponse() gives the same bytes as protobufjs", () => {
  const r = {
    version_info: "v/1",
    type_url: T,
    nonce: "n-1",
    resources,
    control_plane: { identifier: "m" },
  };
  const ours = encodeDiscoveryResponse(r);
  const theirs = svc.StreamAggregatedResources.responseSerialize({
    ...r,
    resources: resources.map((x) => ({ type_url: T, value: Buffer.from(x.entry.bytes) })),
  });
  assert.equal(Buffer.compare(ours, theirs), 0);
  assert.equal(encodedAny(T, resources[0].entry), encodedAny(T, resources[0].entry), "Any cached");
});

Deno.test("encodeDeltaDiscoveryResponse() gives the same bytes as protobufjs", () => {
  const r = {
    system_version_info: "v/2",
    type_url: T,
    nonce: "n-2",
    resources,
    removed_resources: ["gone", "also-gone"],
  };
  const ours = encodeDeltaDiscoveryResponse(r);
  const theirs = svc.DeltaAggregatedResources.responseSerialize({
    ...r,
    resources: resources.map((x) => ({
      name: x.name,
      version: x.entry.version,
      resource: { type_url: T, value: Buffer.from(x.entry.bytes) },
    })),
  });
  assert.equal(Buffer.compare(ours, theirs), 0);
  const back = svc.DeltaAggregatedResources.responseDeserialize(ours);
  assert.deepEqual(back.removed_resources, ["gone", "also-gone"]);
  assert.equal(back.resources[1].name, "outbound|80||a.default.svc.cluster.local");
});

const EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
const edsNames = Array.from(
  { length: 50 },
  (_, i) => `outbound|8080||svc-${i}.ns.svc.cluster.local`,
);

/** Plain fields of a decoded request (drops proto-loader's absent fields and our raw bytes). */
function plain(r: AnyObj): AnyObj {
  const out: AnyObj = {};
  for (const k of ["version_info", "type_url", "response_nonce"]) {
    if (r[k] !== undefined && r[k] !== "") out[k] = r[k];
  }
  const names = r.resource_names ?? [];
  if (names.length) out.resource_names = [...names];
  return out;
}

Deno.test("decodeDiscoveryRequest() agrees with proto-loader on ACKs and subscriptions", () => {
  const requests: AnyObj[] = [
    { type_url: T }, // initial wildcard (without node: a later re-request)
    { type_url: EDS, resource_names: edsNames }, // new subscription
    {
      version_info: "2024-01-01T00:00:00.000Z/3",
      type_url: EDS,
      resource_names: edsNames,
      response_nonce: "k1-2a",
    },
    {
      version_info: "v",
      type_url: T,
      response_nonce: "n",
      resource_names: ["ünïcode-名前", "x".repeat(300)],
    },
    // unknown fields (resource_locators = 7) are skipped
    { type_url: EDS, resource_names: ["a"], resource_locators: [{ name: "xdstp://x/y" }] },
  ];
  for (const req of requests) {
    const bytes = svc.StreamAggregatedResources.requestSerialize(req);
    const ours = decodeDiscoveryRequest(bytes);
    assert.ok(ours, JSON.stringify(req));
    assert.deepEqual(plain(ours), plain(svc.StreamAggregatedResources.requestDeserialize(bytes)));
  }
});

Deno.test("decodeDiscoveryRequest() gives equal raw names exactly for equal name lists", () => {
  const enc = (names: string[], nonce: string) =>
    decodeDiscoveryRequest(
      svc.StreamAggregatedResources.requestSerialize({
        version_info: nonce,
        type_url: EDS,
        resource_names: names,
        response_nonce: nonce,
      }),
    )!;
  const a = enc(edsNames, "n-1"), b = enc(edsNames, "n-2");
  assert.ok(a.resource_names_raw && b.resource_names_raw);
  assert.ok(sameBytes(a.resource_names_raw, b.resource_names_raw));
  const c = enc([...edsNames.slice(1), "outbound|8080||other"], "n-3");
  assert.ok(!sameBytes(a.resource_names_raw, c.resource_names_raw!));
  assert.equal(enc([], "n-4").resource_names_raw, undefined);
  assert.deepEqual(enc([], "n-4").resource_names, []);
});

Deno.test("decodeDiscoveryRequest() returns null for first requests, NACKs and bad bytes", () => {
  const ser = (r: AnyObj) => svc.StreamAggregatedResources.requestSerialize(r);
  assert.equal(decodeDiscoveryRequest(ser({ node: { id: "a~b~c~d" }, type_url: T })), null);
  assert.equal(
    decodeDiscoveryRequest(ser({ type_url: T, error_detail: { code: 3, message: "bad" } })),
    null,
  );
  const good = ser({ type_url: T, resource_names: ["abc"] });
  assert.equal(decodeDiscoveryRequest(good.subarray(0, good.length - 1)), null); // truncated
});

Deno.test("decodeDeltaDiscoveryRequest() agrees with proto-loader", () => {
  const requests: AnyObj[] = [
    { type_url: EDS, resource_names_subscribe: edsNames, response_nonce: "n-1" },
    { type_url: EDS, resource_names_unsubscribe: ["a", "b"], resource_names_subscribe: ["*"] },
    { type_url: T, initial_resource_versions: { c1: "v1", "outbound|80||x": "0123" } },
  ];
  for (const req of requests) {
    const bytes = svc.DeltaAggregatedResources.requestSerialize(req);
    const ours = decodeDeltaDiscoveryRequest(bytes);
    const theirs = svc.DeltaAggregatedResources.requestDeserialize(bytes);
    assert.ok(ours);
    for (const k of ["resource_names_subscribe", "resource_names_unsubscribe"]) {
      assert.deepEqual(ours[k as "resource_names_subscribe"] ?? [], theirs[k] ?? [], k);
    }
    assert.deepEqual(ours.initial_resource_versions ?? {}, { ...theirs.initial_resource_versions });
    assert.equal(ours.type_url, theirs.type_url);
    assert.equal(ours.response_nonce ?? "", theirs.response_nonce ?? "");
  }
  const ser = (r: AnyObj) => svc.DeltaAggregatedResources.requestSerialize(r);
  assert.equal(decodeDeltaDiscoveryRequest(ser({ node: { id: "x" }, type_url: T })), null);
  assert.equal(decodeDeltaDiscoveryRequest(ser({ type_url: T, error_detail: { code: 1 } })), null);
});

Deno.test("decodeDiscoveryRequest() decodes names interleaved with other fields in order", () => {
  const t = new TextEncoder().encode(EDS);
  const bytes = Uint8Array.from([0x1a, 1, 0x61, 0x22, t.length, ...t, 0x1a, 1, 0x62]);
  const r = decodeDiscoveryRequest(bytes)!;
  assert.deepEqual(r.resource_names, ["a", "b"]);
  assert.equal(r.resource_names_raw, undefined);
  assert.equal(r.type_url, EDS);
});

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as path from "node:path";
import { xdsProtoRoot } from "../protos.ts";
import { ResourceCache } from "./cache.ts";
import { encodedAny, encodeDeltaDiscoveryResponse, encodeDiscoveryResponse } from "./wire.ts";

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
    includeDirs: ["envoy-api", "xds", "googleapis", "protoc-gen-validate"].map((d) =>
      path.join(root, d)
    ),
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

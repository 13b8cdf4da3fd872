import assert from "node:assert/strict";
import { DESCRIPTORS_FILE, generateDescriptors } from "./gen_descriptors.ts";
import { loadXdsProtos, xdsDescriptors } from "./protos.ts";

Deno.test("xds_descriptors.json is what the pinned @grpc/grpc-js-xds gives (else: deno task gen:protos)", async () => {
  const committed = await Deno.readTextFile(DESCRIPTORS_FILE);
  assert.ok(
    committed === generateDescriptors(),
    `${DESCRIPTORS_FILE} is out of date: run deno task gen:protos`,
  );
});

Deno.test("the imported descriptors hold every message mesh encodes and the ADS service", async () => {
  const json = JSON.stringify(await xdsDescriptors());
  for (const name of ["Listener", "RouteConfiguration", "Cluster", "ClusterLoadAssignment"]) {
    assert.match(json, new RegExp(`"${name}":\\{`));
  }
  const defs = await loadXdsProtos();
  assert.ok(defs["envoy.service.discovery.v3.AggregatedDiscoveryService"]);
});

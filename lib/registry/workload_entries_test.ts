import assert from "node:assert/strict";
import type { ConfigObject, Service } from "../model/types.ts";
import { convertService } from "./orchestrator_convert.ts";
import { workloadEntryInstances } from "./workload_entries.ts";

const reviews: Service = convertService({
  metadata: { name: "reviews", namespace: "bookinfo" },
  spec: {
    clusterIP: "10.96.0.9",
    selector: { app: "reviews" },
    ports: [
      { name: "http", port: 9080, targetPort: 8080 },
      { name: "grpc", port: 7070, targetPort: "grpc-port" },
    ],
  },
}, "cluster.local");

const we = (name: string, ns: string, spec: Record<string, unknown>): ConfigObject => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "WorkloadEntry",
  metadata: { name, namespace: ns },
  spec,
});

Deno.test("workloadEntryInstances() makes the entries a Service's selector selects its instances", () => {
  const out = workloadEntryInstances([reviews], [
    we("vm1", "bookinfo", {
      address: "10.9.0.1",
      labels: { app: "reviews", version: "v4" },
      ports: { grpc: 17070 },
      serviceAccount: "reviews-vm",
      locality: "eu/zone-1/rack-2",
    }),
    we("other-ns", "prod", { address: "10.9.0.2", labels: { app: "reviews" } }),
    we("other-app", "bookinfo", { address: "10.9.0.3", labels: { app: "ratings" } }),
    we("no-address", "bookinfo", { network: "n1", labels: { app: "reviews" } }),
  ]);
  assert.deepEqual(
    out.map((i) => [i.servicePort.name, i.address, i.port, i.locality, i.serviceAccount]),
    [
      ["http", "10.9.0.1", 8080, "eu/zone-1", "spiffe://cluster.local/ns/bookinfo/sa/reviews-vm"],
      ["grpc", "10.9.0.1", 17070, "eu/zone-1", "spiffe://cluster.local/ns/bookinfo/sa/reviews-vm"],
    ],
  );
  assert.equal(out[0].labels.version, "v4");
});

Deno.test("workloadEntryInstances() leaves Services without a selector and other registries alone", () => {
  const plain = convertService({
    metadata: { name: "db", namespace: "bookinfo" },
    spec: { clusterIP: "10.96.0.8", ports: [{ name: "tcp", port: 5432 }] },
  }, "cluster.local");
  const entries = [we("vm1", "bookinfo", { address: "10.9.0.1", labels: { app: "reviews" } })];
  assert.deepEqual(workloadEntryInstances([plain], entries), []);
  assert.deepEqual(workloadEntryInstances([{ ...reviews, registry: "Mock" }], entries), []);
  assert.deepEqual(workloadEntryInstances([reviews], []), []);
});

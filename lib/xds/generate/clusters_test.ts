import assert from "node:assert/strict";
import { formatIssues, normalizeObject } from "../../model/mod.ts";
import { pgvProblems } from "../pgv.ts";
import { ENVOY_1_27, GRPC_CORE_1_51, helloV1, withClient } from "../testdata/scenarios.ts";
import { model } from "../testdata/model.ts";
import { buildClusters, MAX_RING_SIZE } from "./clusters.ts";

const ringDr = (minimumRingSize: number) => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "DestinationRule",
  metadata: { name: "world", namespace: "default" },
  spec: {
    host: "world",
    trafficPolicy: { loadBalancer: { consistentHash: { httpHeader: "x-user", minimumRingSize } } },
  },
});

Deno.test("buildClusters() clamps minimumRingSize to Envoy's 8388608 when a config bypassed the schema", () => {
  const ctx = model({ configs: { destinationRules: [ringDr(50_000_000)] } });
  const c = buildClusters(ctx, helloV1()).find((c) =>
    c.name === "outbound|80||world.default.svc.cluster.local"
  )!;
  assert.equal(c.lb_policy, "RING_HASH");
  assert.deepEqual(c.ring_hash_lb_config, { minimum_ring_size: { value: MAX_RING_SIZE } });
  assert.deepEqual(pgvProblems("envoy.config.cluster.v3.Cluster", c), []);
});

Deno.test("DestinationRule schema rejects minimumRingSize above 8388608", () => {
  const { issues } = normalizeObject(ringDr(8_388_609), "dr.yaml");
  assert.match(
    formatIssues(issues),
    /spec\.trafficPolicy\.loadBalancer\.consistentHash\.minimumRingSize: must be between 0 and 8388608, got 8388609/,
  );
  assert.deepEqual(normalizeObject(ringDr(8_388_608), "dr.yaml").issues, []);
});

Deno.test("buildClusters() gives round robin instead of ring hash to C-core 1.50-1.52, which crash on it", () => {
  const ctx = model({ configs: { destinationRules: [ringDr(1024)] } });
  const world = (p: ReturnType<typeof helloV1>) =>
    buildClusters(ctx, p).find((c) => c.name === "outbound|80||world.default.svc.cluster.local")!;
  const core151 = withClient(helloV1(), GRPC_CORE_1_51);
  assert.equal(world(core151).lb_policy, undefined); // ROUND_ROBIN, the default
  assert.equal(world(core151).ring_hash_lb_config, undefined);
  const core153 = withClient(helloV1(), { ...GRPC_CORE_1_51, version: [1, 53, 0] });
  assert.equal(world(core153).lb_policy, "RING_HASH");
  assert.equal(world(withClient(helloV1(), ENVOY_1_27)).lb_policy, "RING_HASH");
});

Deno.test("buildClusters() checks the service account of a VM registered by meshctl register (ServiceEntry annotation)", () => {
  const vm = {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "ServiceEntry",
    metadata: {
      name: "vm-web",
      namespace: "default",
      annotations: { "alpha.mesh.io/orchestrator-serviceaccounts": "vm-sa" },
    },
    spec: {
      hosts: ["vm-web.default.svc.cluster.local"],
      ports: [{ number: 80, protocol: "HTTP", name: "http" }],
      location: "MESH_INTERNAL",
      resolution: "STATIC",
      endpoints: [{ address: "10.0.0.5", ports: { http: 80 } }],
    },
  };
  const ctx = model({ mesh: { authPolicy: "MUTUAL_TLS" }, serviceEntries: [vm] });
  const c = buildClusters(ctx, helloV1()).find((c) =>
    c.name === "outbound|80||vm-web.default.svc.cluster.local"
  )!;
  const sans = JSON.stringify(
    c.transport_socket.typed_config.common_tls_context.combined_validation_context
      ?.default_validation_context ??
      c.transport_socket.typed_config.common_tls_context.validation_context,
  );
  assert.match(sans, /spiffe:\/\/cluster\.local\/ns\/default\/sa\/vm-sa/);
});

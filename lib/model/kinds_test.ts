import assert from "node:assert/strict";
import {
  isOrchestratorKind,
  legacyNotServedReason,
  unservedFields,
  unsupportedKindReason,
  withServingStatus,
} from "./kinds.ts";

Deno.test("unsupportedKindReason() names kinds mesh does not serve, the Gateway API's as such", () => {
  assert.equal(
    unsupportedKindReason("telemetry.istio.io/v1", "Telemetry"),
    "kind Telemetry (telemetry.istio.io/v1) is not supported by mesh",
  );
  assert.match(
    unsupportedKindReason("gateway.networking.k8s.io/v1", "Gateway")!,
    /^Gateway API kind Gateway \(gateway\.networking\.k8s\.io\/v1\) is not supported by mesh/,
  );
  assert.equal(unsupportedKindReason("networking.istio.io/v1", "Gateway"), undefined);
  assert.equal(
    unsupportedKindReason("networking.mesh.io/v1alpha3", "EnvoyFilter")?.includes("EnvoyFilter"),
    true,
  );
});

Deno.test("isOrchestratorKind() holds for workload kinds, not for Ingress nor mesh kinds", () => {
  assert.equal(isOrchestratorKind("v1", "Service"), true);
  assert.equal(isOrchestratorKind("apps/v1", "Deployment"), true);
  assert.equal(isOrchestratorKind("rbac.authorization.k8s.io/v1", "Role"), true);
  assert.equal(isOrchestratorKind("networking.k8s.io/v1", "Ingress"), false);
  assert.equal(isOrchestratorKind("networking.istio.io/v1", "VirtualService"), false);
  assert.equal(isOrchestratorKind("gateway.networking.k8s.io/v1", "HTTPRoute"), false);
});

Deno.test("unservedFields() and withServingStatus() say what is stored but not served", () => {
  assert.deepEqual(
    unservedFields({
      kind: "ServiceEntry",
      spec: { endpoints: [{ address: "a" }, { address: "b", network: "n1" }] },
    }),
    ["spec.endpoints[].network: accepted, not yet served: all endpoints are taken as reachable"],
  );
  assert.deepEqual(
    unservedFields({ kind: "Gateway", spec: { servers: [{ hosts: ["a.com"] }] } }),
    [],
  );
  assert.deepEqual(unservedFields({ kind: "VirtualService", spec: { exportTo: [] } }), []);
  const legacy = withServingStatus({ kind: "RouteRule", spec: {} });
  assert.deepEqual(legacy, {
    kind: "RouteRule",
    spec: {},
    status: { served: false, message: legacyNotServedReason("RouteRule") },
  });
  const vs = { kind: "VirtualService", spec: { hosts: ["a"] } };
  assert.equal(withServingStatus(vs), vs);
});

Deno.test("unsupportedKindReason() leaves Sidecar, WorkloadEntry and WorkloadGroup to their schemas", () => {
  assert.equal(unsupportedKindReason("networking.istio.io/v1", "Sidecar"), undefined);
  assert.equal(unsupportedKindReason("networking.istio.io/v1beta1", "WorkloadEntry"), undefined);
  assert.equal(unsupportedKindReason("networking.istio.io/v1", "WorkloadGroup"), undefined);
});

Deno.test("legacyNotServedReason() says WorkloadGroup and RbacConfig are stored, not served", () => {
  assert.match(legacyNotServedReason("WorkloadGroup")!, /stored as a template but not served/);
  assert.match(legacyNotServedReason("RbacConfig")!, /stored but not served/);
  assert.match(legacyNotServedReason("ClusterRbacConfig")!, /stored but not served/);
  assert.equal(legacyNotServedReason("Sidecar"), undefined);
});

Deno.test("unservedFields() finds a DestinationRule field in subsets and port-level settings too", () => {
  assert.deepEqual(
    unservedFields({
      kind: "DestinationRule",
      spec: {
        host: "a",
        subsets: [{
          name: "v1",
          trafficPolicy: { tls: { mode: "SIMPLE", insecureSkipVerify: true } },
        }],
      },
    }),
    [
      "spec.subsets[].trafficPolicy.tls.insecureSkipVerify: accepted, not yet served: the server certificate is verified as configured",
    ],
  );
});

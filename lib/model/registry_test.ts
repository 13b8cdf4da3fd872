import assert from "node:assert/strict";
import {
  allSchemas,
  hyphenatedTypeError,
  meshctlSchemas,
  policySchemas,
  resolveMeshctlType,
  schemaByKind,
  schemaByType,
  securitySchemas,
  typeListText,
  workloadSchemas,
} from "./mod.ts";

Deno.test("meshctlSchemas lists the 14 types with kind, group, version, plural and internal type", () => {
  const rows = meshctlSchemas.map((s) =>
    `${s.type} ${s.plural} ${s.internalType} ${s.kind} ${s.group}/${s.version}${
      s.legacy ? " legacy" : ""
    }`
  );
  assert.deepEqual(rows, [
    "routerule routerules route-rule RouteRule config.mesh.io/v1alpha2 legacy",
    "virtualservice virtualservices virtual-service VirtualService networking.mesh.io/v1alpha3",
    "gateway gateways gateway Gateway networking.mesh.io/v1alpha3",
    "egressrule egressrules egress-rule EgressRule config.mesh.io/v1alpha2 legacy",
    "serviceentry serviceentries service-entry ServiceEntry networking.mesh.io/v1alpha3",
    "destinationpolicy destinationpolicies destination-policy DestinationPolicy config.mesh.io/v1alpha2 legacy",
    "destinationrule destinationrules destination-rule DestinationRule networking.mesh.io/v1alpha3",
    "httpapispec httpapispecs http-api-spec HTTPAPISpec config.mesh.io/v1alpha2",
    "httpapispecbinding httpapispecbindings http-api-spec-binding HTTPAPISpecBinding config.mesh.io/v1alpha2",
    "quotaspec quotaspecs quota-spec QuotaSpec config.mesh.io/v1alpha2",
    "quotaspecbinding quotaspecbindings quota-spec-binding QuotaSpecBinding config.mesh.io/v1alpha2",
    "policy policies policy Policy authentication.mesh.io/v1alpha1",
    "servicerole serviceroles service-role ServiceRole config.mesh.io/v1alpha2",
    "servicerolebinding servicerolebindings service-role-binding ServiceRoleBinding config.mesh.io/v1alpha2",
  ]);
  assert.ok(meshctlSchemas.every((s) => s.meshctl));
});

Deno.test("policySchemas holds rule, attributemanifest, adapter, template, handlers and instances with meshctl=false", () => {
  const names = policySchemas.map((s) => s.type);
  assert.deepEqual(names.slice(0, 4), ["rule", "attributemanifest", "adapter", "template"]);
  for (
    const k of [
      "denier",
      "listchecker",
      "memquota",
      "prometheus",
      "stdio",
      "statsd",
      "metric",
      "logentry",
      "quota",
    ]
  ) {
    assert.ok(names.includes(k), k);
  }
  assert.ok(
    policySchemas.every((s) => !s.meshctl && s.group === "config.mesh.io" && s.kind === s.type),
  );
  assert.equal(schemaByType("prometheus")?.plural, "prometheuses");
  assert.equal(schemaByType("listentry")?.plural, "listentries");
  assert.equal(
    allSchemas.length,
    meshctlSchemas.length + securitySchemas.length + workloadSchemas.length +
      policySchemas.length,
  );
  assert.equal(new Set(allSchemas.map((s) => s.plural)).size, allSchemas.length);
});

Deno.test("schemaByKind() reads Sidecar, WorkloadEntry, WorkloadGroup in every networking version and RbacConfig as 0.8 and 1.x wrote it", () => {
  for (const v of ["v1alpha3", "v1beta1", "v1"]) {
    for (const k of ["Sidecar", "WorkloadEntry", "WorkloadGroup"]) {
      const s = schemaByKind(`networking.istio.io/${v}`, k);
      assert.equal(s?.kind, k, `${k} ${v}`);
      assert.equal(s?.group, "networking.mesh.io");
      assert.equal(s?.version, "v1alpha3");
    }
  }
  for (const av of ["config.istio.io/v1alpha2", "rbac.istio.io/v1alpha1"]) {
    assert.equal(schemaByKind(av, "RbacConfig")?.type, "rbacconfig", av);
    assert.equal(schemaByKind(av, "ClusterRbacConfig")?.type, "clusterrbacconfig", av);
  }
  assert.equal(schemaByType("we")?.kind, "WorkloadEntry");
  assert.equal(schemaByType("sidecars")?.kind, "Sidecar");
  assert.ok(workloadSchemas.every((s) => s.meshctl));
});

Deno.test("schemaByType() accepts the kubectl short names vs, dr, gw and se", () => {
  assert.equal(schemaByType("vs")?.kind, "VirtualService");
  assert.equal(schemaByType("DR")?.kind, "DestinationRule");
  assert.equal(schemaByType("gw")?.kind, "Gateway");
  assert.equal(schemaByType("se")?.kind, "ServiceEntry");
});

Deno.test("schemaByType() accepts singular or plural names in any case", () => {
  assert.equal(schemaByType("VirtualServices")?.kind, "VirtualService");
  assert.equal(schemaByType("virtualservice")?.kind, "VirtualService");
  assert.equal(schemaByType("POLICIES")?.kind, "Policy");
  assert.equal(schemaByType("serviceentries")?.kind, "ServiceEntry");
  assert.equal(schemaByType("rule")?.kind, "rule");
  assert.equal(schemaByType("virtual-service"), undefined);
  assert.equal(schemaByType("nope"), undefined);
});

Deno.test("schemaByKind() accepts our groups and the reference groups", () => {
  assert.equal(
    schemaByKind("networking.istio.io/v1alpha3", "VirtualService")?.type,
    "virtualservice",
  );
  assert.equal(
    schemaByKind("networking.mesh.io/v1alpha3", "VirtualService")?.type,
    "virtualservice",
  );
  assert.equal(schemaByKind("authentication.istio.io/v1alpha1", "Policy")?.type, "policy");
  assert.equal(schemaByKind("config.istio.io/v1alpha2", "HTTPAPISpec")?.type, "httpapispec");
  assert.equal(schemaByKind("config.istio.io/v1alpha2", "denier")?.type, "denier");
  assert.equal(schemaByKind("networking.istio.io/v1alpha2", "VirtualService"), undefined);
  assert.equal(schemaByKind("config.mesh.io/v1alpha2", "VirtualService"), undefined);
  assert.equal(schemaByKind("v1", "Pod"), undefined);
});

Deno.test("typeListText() lists the 14 singular names in descriptor order", () => {
  assert.equal(
    typeListText(),
    "routerule, virtualservice, gateway, egressrule, serviceentry, destinationpolicy, destinationrule, " +
      "httpapispec, httpapispecbinding, quotaspec, quotaspecbinding, policy, servicerole, servicerolebinding",
  );
});

Deno.test("hyphenatedTypeError() names the non-hyphenated form for hyphenated singular and plural names", () => {
  assert.equal(
    hyphenatedTypeError("route-rule"),
    '"route-rule" not recognized. Please use non-hyphenated resource name "routerule"',
  );
  assert.equal(
    hyphenatedTypeError("virtual-services"),
    '"virtual-services" not recognized. Please use non-hyphenated resource name "virtualservices"',
  );
  assert.equal(hyphenatedTypeError("service-entries")?.includes('"serviceentries"'), true);
  assert.equal(hyphenatedTypeError("routerule"), undefined);
  assert.equal(hyphenatedTypeError("foo-bar"), undefined);
});

Deno.test("resolveMeshctlType() returns the schema or the reference error text", () => {
  assert.deepEqual(resolveMeshctlType("Gateways"), { schema: schemaByType("gateway") });
  assert.deepEqual(resolveMeshctlType("destination-rule"), {
    error:
      '"destination-rule" not recognized. Please use non-hyphenated resource name "destinationrule"',
  });
  assert.deepEqual(resolveMeshctlType("rule"), {
    error: `configuration type rule not found, the types are ${typeListText()}`,
  });
});

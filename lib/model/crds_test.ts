// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { crdManifests, crdsYaml } from "./crds.ts";
import { allSchemas } from "./registry.ts";

Deno.test("crds/crds.yaml is current (regenerate with `deno run -A lib/model/gen_crds.ts`)", async () => {
  const onDisk = await Deno.readTextFile(new URL("./crds/crds.yaml", import.meta.url));
  assert.ok(
    onDisk === crdsYaml(),
    "lib/model/crds/crds.yaml is stale: run `deno run -A lib/model/gen_crds.ts`",
  );
});

Deno.test("crdManifests() gives one namespaced v1 CRD per type with names and categories", () => {
  const crds = crdManifests() as any[];
  assert.equal(crds.length, allSchemas.length);
  const vs = crds.find((c) => c.metadata.name === "virtualservices.networking.mesh.io");
  assert.deepEqual(vs.spec.names, {
    plural: "virtualservices",
    singular: "virtualservice",
    kind: "VirtualService",
    listKind: "VirtualServiceList",
    shortNames: ["vs"],
    categories: ["mesh-io", "networking-mesh-io"],
  });
  assert.equal(vs.apiVersion, "apiextensions.k8s.io/v1");
  assert.equal(vs.spec.scope, "Namespaced");
  assert.deepEqual(
    vs.spec.versions.map((v: any) => [v.name, v.served, v.storage]),
    [["v1alpha3", true, true], ["v1beta1", true, false], ["v1", true, false]],
    "v1beta1 and v1 served with the one schema, stored as v1alpha3",
  );
  const spec = vs.spec.versions[0].schema.openAPIV3Schema.properties.spec;
  // hosts are not required: a VirtualService without hosts is a delegate (checked by the schema)
  assert.deepEqual(spec.required, undefined);
  const route = spec.properties.http.items.properties.route.items.properties;
  assert.deepEqual(route.weight, { type: "integer", format: "int32", minimum: 0, maximum: 100 });
  const match = spec.properties.http.items.properties.match.items.properties;
  assert.deepEqual(match.uri.oneOf, [{ required: ["exact"] }, { required: ["prefix"] }, {
    required: ["regex"],
  }]);
  assert.deepEqual(match.headers.additionalProperties.properties.exact, { type: "string" });
  const rule = crds.find((c) => c.metadata.name === "rules.config.mesh.io");
  assert.deepEqual(rule.spec.names.categories, ["mesh-io", "config-mesh-io", "policy-mesh-io"]);
  assert.deepEqual(rule.metadata.labels, { app: "mesh", mesh: "core", package: "mesh.io.mixer" });
  const denier = crds.find((c) => c.metadata.name === "deniers.config.mesh.io");
  assert.deepEqual(denier.spec.versions[0].schema.openAPIV3Schema.properties.spec, {
    type: "object",
    "x-kubernetes-preserve-unknown-fields": true,
  });
});

Deno.test("crdManifests() schemas are structural: every node has a type or preserves unknown fields", () => {
  const problems: string[] = [];
  const visit = (node: any, path: string) => {
    if (
      !node["x-kubernetes-preserve-unknown-fields"] && !node["x-kubernetes-int-or-string"] &&
      !node.type
    ) {
      problems.push(path);
    }
    for (const [k, v] of Object.entries(node.properties ?? {})) visit(v, `${path}.${k}`);
    if (node.items) visit(node.items, `${path}[]`);
    if (typeof node.additionalProperties === "object") {
      visit(node.additionalProperties, `${path}{}`);
    }
  };
  for (const c of crdManifests() as any[]) {
    visit(c.spec.versions[0].schema.openAPIV3Schema, c.metadata.name);
  }
  assert.deepEqual(problems, []);
});

Deno.test("crdManifests() lets a message member of a oneOf be null (peers: - mtls:) as the API server validates after pruning nulls", () => {
  const crds = crdManifests() as any[];
  const policy = crds.find((c) => c.metadata.name === "policies.authentication.mesh.io");
  const peer = policy.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.peers
    .items;
  assert.deepEqual(peer.oneOf, [{ required: ["mtls"] }, { required: ["jwt"] }]);
  assert.equal(peer.properties.mtls.nullable, true);
  assert.equal(peer.properties.jwt.nullable, true);
  // every other oneOf: each member that is a message keeps a null too
  const problems: string[] = [];
  const visit = (node: any, path: string) => {
    for (const alt of node.oneOf ?? []) {
      for (const f of alt.required) {
        const p = node.properties[f];
        if (p.type === "object" && p.nullable !== true) problems.push(`${path}.${f}`);
      }
    }
    for (const [k, v] of Object.entries(node.properties ?? {})) visit(v, `${path}.${k}`);
    if (node.items) visit(node.items, `${path}[]`);
    if (typeof node.additionalProperties === "object") visit(node.additionalProperties, path);
  };
  for (const c of crds) visit(c.spec.versions[0].schema.openAPIV3Schema, c.metadata.name);
  assert.deepEqual(problems, []);
});

Deno.test("crdManifests() uses the reference system's irregular plurals (cloudwatches, prometheuses)", () => {
  const names = new Set((crdManifests() as any[]).map((c) => c.metadata.name));
  for (
    const n of [
      "cloudwatches.config.mesh.io",
      "prometheuses.config.mesh.io",
      "circonuses.config.mesh.io",
      "solarwindses.config.mesh.io",
      "kuberneteses.config.mesh.io",
      "listentries.config.mesh.io",
      "logentries.config.mesh.io",
      "policies.authentication.mesh.io",
      "serviceentries.networking.mesh.io",
    ]
  ) assert.ok(names.has(n), n);
});

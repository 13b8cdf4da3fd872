// Proto JSON spellings the reference system's parser (jsonpb) accepts: snake_case field names,
// integers as strings, enum values as numbers.
import assert from "node:assert/strict";
import { parse } from "../deps/yaml.ts";
import { type Schema, snakeCase } from "./dsl.ts";
import { formatIssues, meshctlSchemas, normalizeObject, schemaByType } from "./mod.ts";

const TESTDATA = new URL("./testdata/", import.meta.url);

function fixture(type: string): Record<string, unknown> {
  return parse(Deno.readTextFileSync(new URL(`${type}.yaml`, TESTDATA)));
}

/** Rewrites every field name the schema knows to its snake_case spelling (map keys untouched). */
function toSnake(s: Schema, v: unknown): unknown {
  if (v === null || v === undefined || typeof v !== "object") return v;
  if (s.type === "array" && Array.isArray(v)) return v.map((x) => toSnake(s.items, x));
  if (s.type === "map") {
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, toSnake(s.values, x)]),
    );
  }
  if (s.type === "object") {
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>).map(([k, x]) => {
        const f = s.fields[k];
        return f ? [snakeCase(k), toSnake(f, x)] : [k, x];
      }),
    );
  }
  return v;
}

Deno.test("normalizeObject() accepts the snake_case name of every field of every fixture and stores camelCase", () => {
  let renamed = 0;
  for (const schema of meshctlSchemas) {
    const raw = fixture(schema.type);
    const snake = { ...raw, spec: toSnake(schema.specSchema, raw.spec) };
    if (JSON.stringify(snake) !== JSON.stringify(raw)) renamed++;
    const want = normalizeObject(raw, "camel");
    const got = normalizeObject(snake, "snake");
    assert.deepEqual(got.issues, [], schema.type);
    assert.deepEqual(got.object, want.object, schema.type);
  }
  assert.ok(renamed >= 8, `only ${renamed} fixtures had camelCase fields`);
});

Deno.test("normalizeObject() reads the published snake_case HTTPAPISpec and HTTPAPISpecBinding samples", () => {
  const spec = normalizeObject({
    apiVersion: "config.istio.io/v1alpha2",
    kind: "HTTPAPISpec",
    metadata: { name: "petstore", namespace: "default" },
    spec: {
      attributes: { attributes: { "api.service": { string_value: "petstore.example.com" } } },
      patterns: [{
        attributes: { attributes: { "api.operation": { string_value: "getPet" } } },
        http_method: "GET",
        uri_template: "/pets/{id}",
      }],
      api_keys: [{ query: "api_key" }],
    },
  }, "doc");
  assert.deepEqual(spec.issues, []);
  assert.deepEqual(spec.object!.spec, {
    attributes: { attributes: { "api.service": { stringValue: "petstore.example.com" } } },
    patterns: [{
      attributes: { attributes: { "api.operation": { stringValue: "getPet" } } },
      httpMethod: "GET",
      uriTemplate: "/pets/{id}",
    }],
    apiKeys: [{ query: "api_key" }],
  });
  const binding = normalizeObject({
    apiVersion: "config.istio.io/v1alpha2",
    kind: "HTTPAPISpecBinding",
    metadata: { name: "petstore-binding", namespace: "default" },
    spec: { services: [{ name: "petstore" }], api_specs: [{ name: "petstore" }] },
  }, "doc");
  assert.deepEqual(binding.issues, []);
  assert.deepEqual(binding.object!.spec, {
    services: [{ name: "petstore" }],
    apiSpecs: [{ name: "petstore" }],
  });
  const quota = normalizeObject({
    apiVersion: "config.istio.io/v1alpha2",
    kind: "QuotaSpecBinding",
    metadata: { name: "q", namespace: "default" },
    spec: { services: [{ name: "petstore" }], quota_specs: [{ name: "request-count" }] },
  }, "doc");
  assert.deepEqual(quota.object!.spec.quotaSpecs, [{ name: "request-count" }]);
});

Deno.test("normalizeObject() reports a field given both as camelCase and snake_case, naming both", () => {
  const r = normalizeObject({
    apiVersion: "config.mesh.io/v1alpha2",
    kind: "HTTPAPISpecBinding",
    metadata: { name: "b", namespace: "default" },
    spec: { services: [{ name: "a" }], apiSpecs: [{ name: "x" }], api_specs: [{ name: "y" }] },
  }, "doc");
  assert.deepEqual(formatIssues(r.issues).split("\n"), [
    'HTTPAPISpecBinding/default/b: spec.apiSpecs: given twice, as "apiSpecs" and "api_specs": use one spelling',
  ]);
});

Deno.test("normalizeObject() reads quoted integers and numeric enum values as jsonpb does", () => {
  const raw = fixture("serviceentry");
  const spec = raw.spec as Record<string, unknown>;
  spec.location = 1;
  spec.resolution = 2;
  (spec.ports as Record<string, unknown>[])[0].number = "443";
  const r = normalizeObject(raw, "doc");
  assert.deepEqual(r.issues, []);
  assert.equal(r.object!.spec.location, "MESH_INTERNAL");
  assert.equal(r.object!.spec.resolution, "DNS");
  assert.equal((r.object!.spec.ports as { number: unknown }[])[0].number, 443);

  const dr = normalizeObject({
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "DestinationRule",
    metadata: { name: "d", namespace: "default" },
    spec: { host: "a", traffic_policy: { load_balancer: { simple: 1 }, tls: { mode: 3 } } },
  }, "doc");
  assert.deepEqual(dr.issues, []);
  assert.deepEqual(dr.object!.spec.trafficPolicy, {
    loadBalancer: { simple: "LEAST_CONN" },
    tls: { mode: "ISTIO_MUTUAL" },
  });
});

Deno.test("normalizeObject() still refuses non-numeric strings and out-of-range enum numbers", () => {
  const raw = fixture("serviceentry");
  const spec = raw.spec as Record<string, unknown>;
  spec.resolution = 7;
  (spec.ports as Record<string, unknown>[])[0].number = "eighty";
  const r = normalizeObject(raw, "doc");
  assert.deepEqual(formatIssues(r.issues).split("\n"), [
    'ServiceEntry/default/external-svc-https: spec.ports[0].number: must be an integer, got string "eighty"',
    "ServiceEntry/default/external-svc-https: spec.resolution: must be one of NONE, STATIC, DNS (or their numbers 0 to 2), got number 7",
  ]);
});

Deno.test("attributemanifest valueType numbers start at 1 (0 is VALUE_TYPE_UNSPECIFIED)", () => {
  const s = schemaByType("attributemanifest")!;
  const r = normalizeObject({
    apiVersion: "config.mesh.io/v1alpha2",
    kind: "attributemanifest",
    metadata: { name: "m", namespace: "default" },
    spec: { attributes: { "source.ip": { value_type: 6 } } },
  }, "doc");
  assert.equal(s.type, "attributemanifest");
  assert.deepEqual(r.issues, []);
  assert.deepEqual(r.object!.spec, { attributes: { "source.ip": { valueType: "IP_ADDRESS" } } });
});

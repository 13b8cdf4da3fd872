import assert from "node:assert/strict";
import { resolveMeshctlType, schemaByKind, schemaByType, typeListText } from "./mod.ts";

const validate = (kind: string, spec: unknown) =>
  schemaByKind("security.istio.io/v1", kind)!.validate(spec).map((i) => `${i.path}: ${i.reason}`);

Deno.test("schemaByKind() accepts the security kinds under security.istio.io and security.mesh.io v1beta1 and v1", () => {
  for (const kind of ["PeerAuthentication", "AuthorizationPolicy", "RequestAuthentication"]) {
    for (const g of ["security.istio.io", "security.mesh.io"]) {
      for (const v of ["v1beta1", "v1"]) {
        const s = schemaByKind(`${g}/${v}`, kind);
        assert.equal(s?.kind, kind, `${g}/${v} ${kind}`);
        assert.equal(s?.group, "security.mesh.io");
        assert.equal(s?.version, "v1beta1");
      }
    }
    assert.equal(schemaByKind("security.istio.io/v1alpha1", kind), undefined);
  }
});

Deno.test("resolveMeshctlType() finds the security kinds by name, plural and short name, without adding them to the 14 types", () => {
  for (
    const n of [
      "peerauthentication",
      "PeerAuthentications",
      "pa",
      "authorizationpolicies",
      "ap",
      "ra",
    ]
  ) {
    assert.ok("schema" in resolveMeshctlType(n), n);
  }
  assert.equal(schemaByType("authorizationpolicy")?.plural, "authorizationpolicies");
  assert.ok(!typeListText().includes("peerauthentication"));
});

Deno.test("PeerAuthentication validation accepts every mode and port-level mTLS with a selector", () => {
  assert.deepEqual(validate("PeerAuthentication", {}), []);
  for (const mode of ["UNSET", "DISABLE", "PERMISSIVE", "STRICT"]) {
    assert.deepEqual(validate("PeerAuthentication", { mtls: { mode } }), [], mode);
  }
  assert.deepEqual(
    validate("PeerAuthentication", {
      selector: { matchLabels: { app: "a" } },
      mtls: { mode: "STRICT" },
      portLevelMtls: { "8080": { mode: "DISABLE" } },
    }),
    [],
  );
});

Deno.test("PeerAuthentication validation names the field of a bad mode, a bad port and port-level mTLS without a selector", () => {
  const bad = validate("PeerAuthentication", {
    mtls: { mode: "MUTUAL" },
    portLevelMtls: { "http": { mode: "STRICT" }, "0": {} },
  });
  assert.ok(bad.some((m) => m.startsWith("spec.mtls.mode:")), bad.join("\n"));
  assert.ok(bad.some((m) => m.includes('invalid port "http"')), bad.join("\n"));
  assert.ok(bad.some((m) => m.includes('invalid port "0"')), bad.join("\n"));
  assert.deepEqual(
    validate("PeerAuthentication", { portLevelMtls: { "80": { mode: "STRICT" } } }),
    ["spec.portLevelMtls: needs a workload selector (selector.matchLabels)"],
  );
});

Deno.test("AuthorizationPolicy validation accepts from/to/when rules of every action", () => {
  for (const action of ["ALLOW", "DENY", "AUDIT"]) {
    assert.deepEqual(
      validate("AuthorizationPolicy", {
        selector: { matchLabels: { app: "a" } },
        action,
        rules: [{
          from: [{
            source: {
              principals: ["cluster.local/ns/default/sa/a"],
              notPrincipals: ["*"],
              namespaces: ["default"],
              ipBlocks: ["10.0.0.0/8", "192.168.1.1"],
              requestPrincipals: ["iss/sub"],
            },
          }],
          to: [{
            operation: { paths: ["/a*"], methods: ["GET"], ports: ["8080"], hosts: ["a.com"] },
          }],
          when: [
            { key: "request.headers[x-a]", values: ["b"] },
            { key: "source.principal", notValues: ["x"] },
            { key: "request.auth.claims[groups]", values: ["g"] },
            { key: "destination.port", values: ["80"] },
          ],
        }],
      }),
      [],
      action,
    );
  }
  assert.deepEqual(validate("AuthorizationPolicy", {}), []);
});

Deno.test("AuthorizationPolicy validation names the field of a bad action, CIDR, port and condition key, and refuses CUSTOM", () => {
  const bad = validate("AuthorizationPolicy", {
    rules: [{
      from: [{ source: { ipBlocks: ["10.0.0.0/99"] } }],
      to: [{ operation: { ports: ["http"] } }],
      when: [{ key: "request.body", values: ["x"] }, { key: "source.ip" }],
    }],
  });
  const has = (prefix: string) =>
    assert.ok(bad.some((m) => m.startsWith(prefix)), `${prefix}\n${bad.join("\n")}`);
  assert.deepEqual(validate("AuthorizationPolicy", { action: "CUSTOM", provider: { name: "x" } }), [
    "spec.action: CUSTOM (an external authorizer) is not supported by mesh: use ALLOW, DENY or AUDIT",
  ]);
  assert.deepEqual(validate("AuthorizationPolicy", { action: "SOMETIMES" }), [
    'spec.action: must be one of ALLOW, DENY, AUDIT, CUSTOM, got "SOMETIMES"',
  ]);
  has("spec.rules[0].from[0].source.ipBlocks[0]:");
  has('spec.rules[0].to[0].operation.ports[0]: invalid port "http"');
  has('spec.rules[0].when[0].key: unknown condition key "request.body"');
  has("spec.rules[0].when[1]: a condition needs values or notValues");
});

Deno.test("RequestAuthentication validation accepts jwtRules and names a missing issuer, a bad jwksUri, bad jwks and both key sources", () => {
  assert.deepEqual(
    validate("RequestAuthentication", {
      selector: { matchLabels: { app: "a" } },
      jwtRules: [{
        issuer: "https://i.example.com",
        audiences: ["a"],
        jwksUri: "https://i.example.com/jwks",
        fromHeaders: [{ name: "x-jwt", prefix: "Bearer " }],
        forwardOriginalToken: true,
      }, { issuer: "b", jwks: '{"keys":[]}' }],
    }),
    [],
  );
  const bad = validate("RequestAuthentication", {
    jwtRules: [
      { audiences: ["a"] },
      { issuer: "x", jwksUri: "file:///etc/keys" },
      { issuer: "x", jwks: "nope" },
      { issuer: "x", jwks: '{"keys":[]}', jwksUri: "https://a/b" },
    ],
  });
  const has = (prefix: string) =>
    assert.ok(bad.some((m) => m.startsWith(prefix)), `${prefix}\n${bad.join("\n")}`);
  has("spec.jwtRules[0].issuer: is required");
  has('spec.jwtRules[1].jwksUri: invalid URI "file:///etc/keys"');
  has("spec.jwtRules[2].jwks: must be a JSON Web Key Set");
  has("spec.jwtRules[3]");
});

Deno.test("schemaByKind() accepts ServiceRole and ServiceRoleBinding as rbac.istio.io/v1alpha1 (Istio 1.0–1.3), stored as config.mesh.io/v1alpha2", () => {
  for (const kind of ["ServiceRole", "ServiceRoleBinding"]) {
    for (const av of ["rbac.istio.io/v1alpha1", "rbac.mesh.io/v1alpha1"]) {
      const s = schemaByKind(av, kind);
      assert.equal(s?.kind, kind);
      assert.equal(`${s?.group}/${s?.version}`, "config.mesh.io/v1alpha2");
    }
  }
  assert.equal(schemaByKind("rbac.istio.io/v1alpha1", "Policy"), undefined);
  assert.equal(schemaByKind("rbac.istio.io/v1alpha2", "ServiceRole"), undefined);
});

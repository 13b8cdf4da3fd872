import assert from "node:assert/strict";
import type { ConfigObject } from "../model/types.ts";
import { decideAuthz } from "./authz_policy.ts";
import type { RbacRequest } from "./mod.ts";

const obj = (kind: string, name: string, spec: Record<string, unknown>, ns = "default") =>
  ({
    apiVersion: "security.mesh.io/v1beta1",
    kind,
    metadata: { name, namespace: ns },
    spec,
  }) as ConfigObject;

const WORLD = "cluster.local/ns/default/sa/world";

const policies = [
  obj("AuthorizationPolicy", "hello-allow", {
    selector: { matchLabels: { app: "hello" } },
    rules: [
      {
        from: [{ source: { principals: [WORLD] } }],
        to: [{ operation: { methods: ["GET"], paths: ["/api/*"] } }],
        when: [{ key: "request.headers[X-Tenant]", values: ["acme"] }],
      },
      {
        from: [{ source: { ipBlocks: ["10.0.0.0/8"] } }],
        to: [{ operation: { paths: ["/healthz"] } }],
      },
      {
        from: [{ source: { requestPrincipals: ["https://issuer.example.com/*"] } }],
        when: [{ key: "request.auth.claims[groups]", values: ["admins"] }],
      },
    ],
  }),
  obj("AuthorizationPolicy", "deny-outsiders-admin", {
    action: "DENY",
    rules: [{
      from: [{ source: { notNamespaces: ["default"] } }],
      to: [{ operation: { paths: ["/admin*"] } }],
    }],
  }, "mesh-system"),
  obj("AuthorizationPolicy", "v2-only", {
    selector: { matchLabels: { app: "ratings", version: "v2" } },
    rules: [],
  }),
];

function req(
  method: string,
  service: string,
  path: string,
  user = "",
  subject: Record<string, string> = {},
  action: Record<string, string> = {},
): RbacRequest {
  return {
    subject: { user, groups: "", properties: subject },
    action: { namespace: "default", service, method, path, properties: action },
  };
}

const decision = (r: RbacRequest) => decideAuthz(policies, [], [], r);

Deno.test("decideAuthz() allows a request matching every part of an ALLOW rule and denies it when one part differs", () => {
  const tenant = { "request.headers[x-tenant]": "acme" };
  assert.deepEqual(decision(req("GET", "hello", "/api/a", WORLD, {}, tenant)), {
    allowed: true,
    reason: "allowed by default/hello-allow rule 0",
  });
  assert.equal(decision(req("POST", "hello", "/api/a", WORLD, {}, tenant)).allowed, false);
  assert.equal(decision(req("GET", "hello", "/other", WORLD, {}, tenant)).allowed, false);
  assert.equal(decision(req("GET", "hello", "/api/a", WORLD)).allowed, false);
  assert.equal(
    decision(req("GET", "hello", "/api/a", "cluster.local/ns/default/sa/x", {}, tenant)).allowed,
    false,
  );
});

Deno.test("decideAuthz() reads ipBlocks, request principals and claims from subject properties", () => {
  assert.equal(
    decision(req("GET", "hello", "/healthz", "", { "source.ip": "10.1.2.3" })).allowed,
    true,
  );
  assert.equal(
    decision(req("GET", "hello", "/healthz", "", { "source.ip": "11.1.2.3" })).allowed,
    false,
  );
  const jwt = {
    "request.auth.principal": "https://issuer.example.com/alice",
    "request.auth.claims[groups]": "admins",
  };
  assert.equal(decision(req("DELETE", "hello", "/x", "", jwt)).allowed, true);
  assert.equal(
    decision(req("DELETE", "hello", "/x", "", { ...jwt, "request.auth.claims[groups]": "users" }))
      .allowed,
    false,
  );
});

Deno.test("decideAuthz() denies a DENY match first, applies root-namespace policies everywhere and allows when no ALLOW policy applies", () => {
  const outsider = req("GET", "echo", "/admin/x", "cluster.local/ns/other/sa/a");
  assert.deepEqual(decision(outsider), {
    allowed: false,
    reason: "denied by mesh-system/deny-outsiders-admin rule 0",
  });
  assert.deepEqual(decision(req("GET", "echo", "/admin/x", WORLD)), {
    allowed: true,
    reason: "no ALLOW policy applies",
  });
});

Deno.test("decideAuthz() selects workloads by destination.labels (app defaults to the service name) and denies everything under an ALLOW policy without rules", () => {
  assert.equal(decision(req("GET", "ratings", "/", WORLD)).allowed, true);
  assert.deepEqual(
    decision(req("GET", "ratings", "/", WORLD, {}, { "destination.labels[version]": "v2" })),
    { allowed: false, reason: "no ALLOW policy or role matches" },
  );
});

Deno.test("decideAuthz() keeps ServiceRole decisions when no AuthorizationPolicy applies and merges them into ALLOW when one does", () => {
  const role = {
    apiVersion: "config.mesh.io/v1alpha2",
    kind: "ServiceRole",
    metadata: { name: "viewer", namespace: "default" },
    spec: { rules: [{ services: ["hello"], methods: ["GET"] }] },
  } as ConfigObject;
  const binding = {
    apiVersion: "config.mesh.io/v1alpha2",
    kind: "ServiceRoleBinding",
    metadata: { name: "bob-views", namespace: "default" },
    spec: { subjects: [{ user: "bob" }], roleRef: { kind: "ServiceRole", name: "viewer" } },
  } as ConfigObject;
  // no policy applies to echo: the 0.8 semantics (no role matches → deny)
  assert.equal(decideAuthz([], [role], [binding], req("GET", "echo", "/", "bob")).allowed, false);
  // hello has an ALLOW policy and a role: either allows
  assert.deepEqual(decideAuthz(policies, [role], [binding], req("GET", "hello", "/", "bob")), {
    allowed: true,
    reason: "viewer/bob-views",
  });
  assert.equal(
    decideAuthz(policies, [role], [binding], req("GET", "hello", "/", "eve")).allowed,
    false,
  );
});

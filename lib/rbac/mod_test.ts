import assert from "node:assert/strict";
import type { ConfigObject } from "../model/types.ts";
import { decide, parseProperties, type RbacRequest, stringMatch } from "./mod.ts";

const obj = (kind: string, name: string, spec: Record<string, unknown>, ns = "default") =>
  ({
    apiVersion: "config.mesh.io/v1alpha2",
    kind,
    metadata: { name, namespace: ns },
    spec,
  }) as ConfigObject;

const roles = [
  obj("ServiceRole", "viewer", {
    rules: [{ services: ["products.*"], methods: ["GET", "HEAD"] }],
  }),
  obj("ServiceRole", "admin", {
    rules: [{ services: ["*"], paths: ["/admin*"], methods: ["*"] }],
  }),
  obj("ServiceRole", "v2-only", {
    rules: [{
      services: ["ratings"],
      methods: ["GET"],
      constraints: [{ key: "version", values: ["v2", "v3*"] }],
    }],
  }),
  obj("ServiceRole", "other-ns", { rules: [{ services: ["*"], methods: ["*"] }] }, "prod"),
];
const bindings = [
  obj("ServiceRoleBinding", "all-view", {
    subjects: [{ user: "*" }],
    roleRef: { kind: "ServiceRole", name: "viewer" },
  }),
  obj("ServiceRoleBinding", "admins", {
    subjects: [{ group: "ops" }, { properties: { "source.namespace": "ops-tools" } }],
    roleRef: { kind: "ServiceRole", name: "admin" },
  }),
  obj("ServiceRoleBinding", "raters", {
    subjects: [{ user: "alice" }],
    roleRef: { kind: "ServiceRole", name: "v2-only" },
  }),
  obj("ServiceRoleBinding", "everyone-prod", {
    subjects: [{ user: "*" }],
    roleRef: { kind: "ServiceRole", name: "other-ns" },
  }, "prod"),
];

function req(
  method: string,
  service: string,
  path: string,
  sub: Partial<RbacRequest["subject"]> = {},
  actionProps: Record<string, string> = {},
  namespace = "default",
): RbacRequest {
  return {
    subject: { user: "", groups: "", properties: {}, ...sub },
    action: { namespace, service, method, path, properties: actionProps },
  };
}

Deno.test("decide() answers a table of cases as the rbac adapter does", () => {
  const cases: [string, RbacRequest, boolean][] = [
    ["viewer GET", req("GET", "products.default.svc", "/x", { user: "bob" }), true],
    ["viewer POST", req("POST", "products.default.svc", "/x", { user: "bob" }), false],
    ["wrong service", req("GET", "reviews", "/x", { user: "bob" }), false],
    ["admin group", req("DELETE", "reviews", "/admin/users", { groups: "ops" }), true],
    ["admin wrong path", req("DELETE", "reviews", "/users", { groups: "ops" }), false],
    ["admin wrong group", req("DELETE", "reviews", "/admin", { groups: "dev" }), false],
    [
      "admin by properties",
      req("PUT", "x", "/admin", { properties: { "source.namespace": "ops-tools" } }),
      true,
    ],
    ["constraint ok", req("GET", "ratings", "/", { user: "alice" }, { version: "v2" }), true],
    ["constraint prefix", req("GET", "ratings", "/", { user: "alice" }, { version: "v3.1" }), true],
    ["constraint bad", req("GET", "ratings", "/", { user: "alice" }, { version: "v1" }), false],
    ["constraint absent", req("GET", "ratings", "/", { user: "alice" }), false],
    [
      "constraint other user",
      req("GET", "ratings", "/", { user: "eve" }, { version: "v2" }),
      false,
    ],
    ["other namespace", req("GET", "any", "/", { user: "x" }, {}, "prod"), true],
    ["missing method", req("", "products", "/", { user: "bob" }), false],
    ["missing path", req("GET", "products", "", { user: "bob" }), false],
  ];
  for (const [name, r, want] of cases) {
    assert.equal(decide(roles, bindings, r).allowed, want, name);
  }
  assert.equal(
    decide(roles, bindings, req("GET", "products.x", "/", { user: "b" })).reason,
    "viewer/all-view",
  );
  assert.equal(decide(roles, bindings, req("", "p", "/")).reason, "missing action method");
});

Deno.test("decide() ignores bindings whose roleRef kind is not ServiceRole", () => {
  const b = [obj("ServiceRoleBinding", "x", {
    subjects: [{ user: "*" }],
    roleRef: { kind: "ClusterRole", name: "viewer" },
  })];
  assert.equal(decide(roles, b, req("GET", "products.x", "/", { user: "a" })).allowed, false);
});

Deno.test("stringMatch() and parseProperties() follow the flag and pattern forms", () => {
  assert.ok(stringMatch("*", "x") && stringMatch("a*", "ab") && stringMatch("*b", "ab"));
  assert.ok(!stringMatch("a", "ab"));
  assert.deepEqual(parseProperties(["a=1,b=2", "c=x=y"], "property"), { a: "1", b: "2", c: "x=y" });
  assert.throws(
    () => parseProperties(["novalue"], "subject property"),
    /Invalid subject property "novalue"/,
  );
});

/**
 * ServiceRole/ServiceRoleBinding → the RBAC filter of an inbound HTTP listener: which roles apply
 * to a service, the permissions (paths, methods, constraints) and principals (users, groups,
 * properties) Envoy checks.
 */

import assert from "node:assert/strict";
import type { ConfigObject } from "../../model/types.ts";
import { configObject, model, SERVICES } from "../testdata/model.ts";
import { principalName, rbacConfig, serviceNameMatches } from "./rbac.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const HELLO = SERVICES[0];

const obj = (kind: string, name: string, spec: unknown, namespace = "default") =>
  configObject("rbac.mesh.io/v1alpha1", kind, name, spec, namespace);

const role = (name: string, rules: unknown[], namespace = "default") =>
  obj("ServiceRole", name, { rules }, namespace);
const binding = (
  name: string,
  roleName: string,
  subjects: unknown[],
  namespace = "default",
  kind: string | undefined = "ServiceRole",
) => obj("ServiceRoleBinding", name, { subjects, roleRef: { kind, name: roleName } }, namespace);

const ANYONE = [{ user: "*" }];

/** The RBAC policies for hello given roles and bindings. */
function policies(roles: ConfigObject[], bindings: ConfigObject[], svc = HELLO): Any {
  const cfg = rbacConfig(
    model({ configs: { serviceRoles: roles, serviceRoleBindings: bindings } }),
    svc,
  );
  return cfg?.rules.policies;
}

/** The permissions of a single role for hello, bound to anyone. */
function permissions(rules: unknown[]): Any[] {
  return policies([role("r", rules)], [binding("b", "r", ANYONE)]).r.permissions;
}

/** The principals of a single role allowing anything for hello, bound to `subjects`. */
function principals(subjects: unknown[]): Any[] {
  return policies([role("r", [{ services: ["*"] }])], [binding("b", "r", subjects)]).r.principals;
}

Deno.test("rbacConfig() is an ALLOW filter with one policy per role naming the service", () => {
  const cfg = rbacConfig(
    model({
      configs: {
        serviceRoles: [role("r", [{ services: ["hello"] }])],
        serviceRoleBindings: [binding("b", "r", ANYONE)],
      },
    }),
    HELLO,
  )!;
  assert.deepEqual(cfg, {
    "@type": "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC",
    rules: {
      action: "ALLOW",
      policies: { r: { permissions: [{ any: true }], principals: [{ any: true }] } },
    },
  });
});

Deno.test("rbacConfig(): roles of the service's namespace that name it; none: no filter", () => {
  assert.equal(policies([], []), undefined);
  assert.equal(
    policies([role("r", [{ services: ["world"] }])], [binding("b", "r", ANYONE)]),
    undefined,
  );
  assert.equal(
    policies([role("r", [{ services: ["hello"] }], "prod")], [binding("b", "r", ANYONE, "prod")]),
    undefined,
    "a role of another namespace",
  );
  assert.equal(
    policies([role("r", [{ services: "hello" }, null, { services: [3] }])], []),
    undefined,
  );
  // the namespace is the host's when the service has none
  const bare = { ...HELLO, namespace: "" };
  assert.deepEqual(
    Object.keys(
      policies([role("r", [{ services: ["hello"] }])], [binding("b", "r", ANYONE)], bare),
    ),
    ["r"],
  );
  // only the rules naming the service become permissions
  assert.deepEqual(
    permissions([{ services: ["world"], methods: ["PUT"] }, {
      services: ["hel*"],
      methods: ["GET"],
    }]),
    [{ header: { name: ":method", string_match: { exact: "GET" } } }],
  );
});

Deno.test("rbacConfig(): a role that names the service but has no binding denies everyone", () => {
  const p = policies([
    role("a-bound", [{ services: ["hello"] }]),
    role("z-unbound", [{ services: ["hello"] }]),
  ], [
    binding("b", "a-bound", ANYONE),
    binding("other-ns", "z-unbound", ANYONE, "prod"),
    binding("other-role", "nope", ANYONE),
    binding("cluster-role", "z-unbound", ANYONE, "default", "ServiceRoleX"),
    binding("no-subjects", "z-unbound", [null, "user"]),
  ]);
  assert.deepEqual(Object.keys(p), ["a-bound"]);
  const denyAll = policies([role("r", [{ services: ["hello"] }])], []);
  assert.deepEqual(denyAll, {}, "the filter is there with no policy: every request is refused");
  const noKind = policies([role("r", [{ services: ["hello"] }])], [
    binding("b", "r", ANYONE, "default", undefined),
  ]);
  assert.deepEqual(Object.keys(noKind), ["r"], "roleRef without a kind is a ServiceRole");
});

Deno.test("rbacConfig(): policies sorted by role name; principals of every binding of the role", () => {
  const p = policies([
    role("zeta", [{ services: ["*"] }]),
    role("alpha", [{ services: ["*"] }]),
  ], [
    binding("b1", "zeta", [{ user: "u1" }]),
    binding("b2", "alpha", ANYONE),
    binding("b3", "zeta", [{ user: "u2" }]),
  ]);
  assert.deepEqual(Object.keys(p), ["alpha", "zeta"]);
  assert.deepEqual(p.zeta.principals.map((x: Any) => x.authenticated.principal_name.exact), [
    "spiffe://u1",
    "spiffe://u2",
  ]);
});

Deno.test("rbacConfig() permissions: paths and methods (* is any), matched by exact, prefix or suffix", () => {
  assert.deepEqual(permissions([{ services: ["*"], paths: ["*"], methods: ["GET", "*"] }]), [{
    any: true,
  }]);
  assert.deepEqual(
    permissions([{ services: ["*"], paths: ["/a", "/b/*", "*.png"], methods: [] }]),
    [{
      or_rules: {
        rules: [
          { url_path: { path: { exact: "/a" } } },
          { url_path: { path: { prefix: "/b/" } } },
          { url_path: { path: { suffix: ".png" } } },
        ],
      },
    }],
  );
  assert.deepEqual(
    permissions([{ services: ["*"], paths: ["/a", 5], methods: ["GET", "POST", 1] }]),
    [{
      and_rules: {
        rules: [
          { url_path: { path: { exact: "/a" } } },
          {
            or_rules: {
              rules: [
                { header: { name: ":method", string_match: { exact: "GET" } } },
                { header: { name: ":method", string_match: { exact: "POST" } } },
              ],
            },
          },
        ],
      },
    }],
  );
  assert.deepEqual(permissions([{ services: ["*"], paths: "/a", methods: "GET" }]), [{
    any: true,
  }]);
});

Deno.test("rbacConfig() permissions: destination.port and request header constraints; others never match", () => {
  assert.deepEqual(
    permissions([{
      services: ["*"],
      constraints: [
        { key: "destination.port", values: ["80", "8080"] },
        { key: "request.headers[X-Version]", values: ["v1*"] },
        { key: "request.headers[x-any]", values: ["*"] },
        { key: "destination.labels[app]", values: ["x"] },
        { key: "destination.port", values: [] },
        { key: "destination.port" },
        null,
      ],
    }]),
    [{
      and_rules: {
        rules: [
          { or_rules: { rules: [{ destination_port: 80 }, { destination_port: 8080 }] } },
          { header: { name: "x-version", string_match: { prefix: "v1" } } },
          { header: { name: "x-any", string_match: { safe_regex: { regex: ".+" } } } },
          { not_rule: { any: true } },
        ],
      },
    }],
  );
  assert.deepEqual(permissions([{ services: ["*"], constraints: [{ values: ["x"] }] }]), [{
    not_rule: { any: true },
  }]);
});

Deno.test("rbacConfig() principals: users as SPIFFE URIs, groups, and each property", () => {
  assert.deepEqual(principals([{ user: "cluster.local/ns/a/sa/b", group: "*" }]), [{
    and_ids: {
      ids: [
        { authenticated: { principal_name: { exact: "spiffe://cluster.local/ns/a/sa/b" } } },
        { any: true },
      ],
    },
  }]);
  assert.deepEqual(principals([{ group: "admins" }]), [{ not_id: { any: true } }]);
  assert.deepEqual(principals([{}, { user: 5, group: 6, properties: { "source.ip": 7 } }]), [
    { any: true },
    { any: true },
  ]);
  assert.deepEqual(
    principals([{
      properties: {
        "source.namespace": "mesh.system",
        "source.ip": "10.0.0.0/8",
        "request.headers[X-User]": "*@example.com",
        "source.labels[app]": "x",
      },
    }]),
    [{
      and_ids: {
        ids: [
          {
            authenticated: { principal_name: { safe_regex: { regex: ".*/ns/mesh\\.system/.*" } } },
          },
          { direct_remote_ip: { address_prefix: "10.0.0.0", prefix_len: { value: 8 } } },
          { header: { name: "x-user", string_match: { suffix: "@example.com" } } },
          { not_id: { any: true } },
        ],
      },
    }],
  );
  assert.deepEqual(
    principals([{ properties: { "source.ip": "10.1.2.3" } }, {
      properties: { "source.ip": "fd00::1" },
    }]),
    [
      { direct_remote_ip: { address_prefix: "10.1.2.3", prefix_len: { value: 32 } } },
      { direct_remote_ip: { address_prefix: "fd00::1", prefix_len: { value: 128 } } },
    ],
  );
  assert.deepEqual(
    principals([{ properties: { "source.user": "*" } }, {
      properties: { "source.principal": "td/ns/x/*" },
    }]),
    [
      { any: true },
      { authenticated: { principal_name: { prefix: "spiffe://td/ns/x/" } } },
    ],
  );
});

Deno.test("serviceNameMatches() refuses other names, prefixes and suffixes", () => {
  const h = "hello.default.svc.cluster.local";
  assert.equal(serviceNameMatches("hello.default", h), false);
  assert.equal(serviceNameMatches("wor*", h), false);
  assert.equal(serviceNameMatches("*.example.com", h), false);
  assert.equal(serviceNameMatches("hello*", h), true);
  assert.equal(serviceNameMatches("*local", h), true);
});

Deno.test("serviceNameMatches(): a wildcard only at the ends; no pattern without one matches a suffix", () => {
  const h = "hello.default.svc.cluster.local";
  assert.equal(serviceNameMatches("", h), false);
  assert.equal(serviceNameMatches("hx*", h), false);
  assert.equal(serviceNameMatches("cluster.local", h), false);
  assert.equal(serviceNameMatches("ello.default.svc.cluster.local", h), false);
});

Deno.test("rbacConfig(): malformed roles, bindings and values are skipped; a rule must name the service", () => {
  const p = policies([
    role("m", [{ services: ["hello", "world"], methods: ["GET"] }]),
    role("z", [{ services: ["hello"] }]),
    role("a", [{
      services: ["*"],
      constraints: [{ key: "request.headers[x-v]", values: ["v1", 5] }],
    }]),
    obj("ServiceRole", "null-spec", null),
  ], [
    binding("bm", "m", ANYONE),
    binding("bz", "z", ANYONE),
    binding("ba", "a", ANYONE),
    obj("ServiceRoleBinding", "no-ref", { subjects: ANYONE }),
  ]);
  assert.deepEqual(Object.keys(p), ["a", "m", "z"]);
  assert.deepEqual(p.a.permissions, [{ header: { name: "x-v", string_match: { exact: "v1" } } }]);
  assert.deepEqual(
    permissions([{
      services: ["*"],
      constraints: [{ key: "x.request.headers[a]", values: ["1"] }, {
        key: "request.headers[a].x",
        values: ["1"],
      }],
    }]),
    [{ and_rules: { rules: [{ not_rule: { any: true } }, { not_rule: { any: true } }] } }],
  );
  assert.deepEqual(
    principals([{ properties: { "x.request.headers[a]": "1" } }, {
      properties: { "request.headers[a].x": "1" },
    }]),
    [{ not_id: { any: true } }, { not_id: { any: true } }],
  );
  // a service outside any namespace: roles and bindings without a namespace
  const bare = { ...HELLO, hostname: "hello", namespace: "" };
  const noNs = (o: ConfigObject) => ({ ...o, metadata: { name: o.metadata.name } });
  assert.deepEqual(
    Object.keys(
      policies(
        [noNs(role("r", [{ services: ["hello"] }]))],
        [noNs(binding("b", "r", ANYONE))],
        bare,
      ),
    ),
    ["r"],
  );
});

Deno.test("principalName() adds spiffe:// unless the value starts with a scheme", () => {
  assert.equal(principalName("td/ns/a/sa/b-http://x"), "spiffe://td/ns/a/sa/b-http://x");
  assert.equal(principalName("https://issuer/x"), "https://issuer/x");
  assert.equal(principalName("*"), "*");
});

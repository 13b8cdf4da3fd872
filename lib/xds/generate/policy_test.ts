import assert from "node:assert/strict";
import type { ConfigObject } from "../../model/types.ts";
import {
  authnPolicy as policy,
  ECHO_INGRESS,
  model,
  RBAC_ROLE,
  SERVICES,
} from "../testdata/model.ts";
import { ingressesToConfigs } from "./ingress.ts";
import { principalName, rbacConfig, serviceNameMatches } from "./rbac.ts";
import { mtlsModeOf } from "./security.ts";

const HELLO = SERVICES[0];
const HTTP = HELLO.ports[0];
const TCP = HELLO.ports[2];

Deno.test("mtlsModeOf() prefers a targeted Policy over a namespace-wide one and the mesh default", () => {
  const nsWide = policy("all", { peers: [{ mtls: {} }] });
  const targeted = policy("hello", {
    targets: [{ name: "hello", ports: [{ number: 80 }] }],
    peers: [{ mtls: { allowTls: true } }],
  });
  const ctx = model({ configs: { policies: [nsWide, targeted] } });
  assert.equal(mtlsModeOf(ctx, HELLO, HTTP), "PERMISSIVE");
  assert.equal(mtlsModeOf(ctx, HELLO, TCP), "STRICT");
  assert.equal(mtlsModeOf(model(), HELLO, HTTP), "NONE");
  assert.equal(mtlsModeOf(model({ mesh: { authPolicy: "MUTUAL_TLS" } }), HELLO, HTTP), "STRICT");
});

Deno.test("mtlsModeOf() ignores Policies of other namespaces and mesh-external services", () => {
  const other = policy("all", { peers: [{ mtls: {} }] }, "prod");
  assert.equal(mtlsModeOf(model({ configs: { policies: [other] } }), HELLO, HTTP), "NONE");
  const ctx = model({ mesh: { authPolicy: "MUTUAL_TLS" } });
  assert.equal(mtlsModeOf(ctx, SERVICES[2], SERVICES[2].ports[0]), "NONE");
});

Deno.test("mtlsModeOf() falls back to the auth.mesh.io/<port> service attribute", () => {
  const svc = { ...HELLO, attributes: { "auth.mesh.io/80": "NONE" } };
  assert.equal(mtlsModeOf(model({ mesh: { authPolicy: "MUTUAL_TLS" } }), svc, HTTP), "NONE");
});

Deno.test("ingressesToConfigs() follows ingressControllerMode and the class annotation", () => {
  const unannotated = { ...ECHO_INGRESS, metadata: { name: "plain", namespace: "default" } };
  const strict = model({ configs: { ingresses: [ECHO_INGRESS, unannotated] } });
  const vs = ingressesToConfigs(strict).virtualServices[0].spec as { http: unknown[] };
  assert.equal(vs.http.length, 2, "STRICT: only the annotated ingress (one path + default)");
  const def = model({
    configs: { ingresses: [unannotated] },
    mesh: { ingressControllerMode: "DEFAULT" },
  });
  assert.equal(ingressesToConfigs(def).gateways.length, 1);
  const off = model({
    configs: { ingresses: [ECHO_INGRESS] },
    mesh: { ingressControllerMode: "OFF" },
  });
  assert.deepEqual(ingressesToConfigs(off), { gateways: [], virtualServices: [] });
});

Deno.test("serviceNameMatches() accepts exact, short, wildcard, prefix and suffix names", () => {
  const h = "hello.default.svc.cluster.local";
  assert.equal(serviceNameMatches(h, h), true);
  assert.equal(serviceNameMatches("hello", h), true);
  assert.equal(serviceNameMatches("*", h), true);
  assert.equal(serviceNameMatches("hel*", h), true);
  assert.equal(serviceNameMatches("*.cluster.local", h), true);
  assert.equal(serviceNameMatches("world", h), false);
});

Deno.test("rbacConfig() matches Istio-style users against the SPIFFE URI SAN of the peer", () => {
  const binding: ConfigObject = {
    apiVersion: "rbac.mesh.io/v1alpha1",
    kind: "ServiceRoleBinding",
    metadata: { name: "b", namespace: "default" },
    spec: {
      subjects: [
        { user: "cluster.local/ns/default/sa/world" },
        { user: "spiffe://cluster.local/ns/default/sa/hello" },
        { user: "*" },
        { properties: { "source.principal": "cluster.local/ns/prod/*" } },
        { properties: { "source.user": "*/sa/batch" } },
      ],
      roleRef: { kind: "ServiceRole", name: "hello-viewer" },
    },
  };
  const ctx = model({ configs: { serviceRoles: [RBAC_ROLE], serviceRoleBindings: [binding] } });
  const cfg = rbacConfig(ctx, HELLO)!;
  assert.deepEqual(cfg.rules.policies["hello-viewer"].principals, [
    { authenticated: { principal_name: { exact: "spiffe://cluster.local/ns/default/sa/world" } } },
    { authenticated: { principal_name: { exact: "spiffe://cluster.local/ns/default/sa/hello" } } },
    { any: true },
    { authenticated: { principal_name: { prefix: "spiffe://cluster.local/ns/prod/" } } },
    { authenticated: { principal_name: { suffix: "/sa/batch" } } },
  ]);
  assert.equal(principalName("cluster.local/ns/a/sa/b"), "spiffe://cluster.local/ns/a/sa/b");
  assert.equal(principalName("spiffe://td/ns/a/sa/b"), "spiffe://td/ns/a/sa/b");
});

import assert from "node:assert/strict";
import type { ConfigObject } from "../../model/types.ts";
import { model, SERVICES } from "../testdata/model.ts";
import { AUTHZ_FILTER_NAMES, authzHttpFilters, rulePolicy } from "./authz_policy.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const ap = (name: string, spec: unknown, ns = "default"): ConfigObject => ({
  apiVersion: "security.mesh.io/v1beta1",
  kind: "AuthorizationPolicy",
  metadata: { name, namespace: ns },
  spec: spec as Record<string, unknown>,
});

const hello = SERVICES[0];
const helloV1 = {
  hostname: hello.hostname,
  servicePort: hello.ports[0],
  address: "10.0.1.1",
  port: 8080,
  labels: { app: "hello", version: "v1" },
  locality: "",
  serviceAccount: "",
};
const filters = (objs: ConfigObject[], proxyless = false) =>
  authzHttpFilters(
    model({ configs: { authorizationPolicies: objs } }),
    hello,
    helloV1,
    undefined,
    proxyless,
  );
const names = (fs: Any[]) => fs.map((f) => f.name);

Deno.test("authzHttpFilters() emits nothing without policies, and DENY before ALLOW", () => {
  assert.deepEqual(filters([]), []);
  const fs = filters([ap("a", { rules: [{}] }), ap("d", { action: "DENY", rules: [{}] })]);
  assert.deepEqual(names(fs), [AUTHZ_FILTER_NAMES.DENY, AUTHZ_FILTER_NAMES.ALLOW]);
  assert.equal(fs[0].typed_config.rules.action, "DENY");
});

Deno.test("authzHttpFilters() denies everything under an ALLOW policy without rules, and a DENY policy without rules denies nothing", () => {
  const allowNone = filters([ap("a", {})]);
  assert.deepEqual(names(allowNone), [AUTHZ_FILTER_NAMES.ALLOW]);
  assert.deepEqual(allowNone[0].typed_config.rules.policies, {});
  assert.deepEqual(filters([ap("d", { action: "DENY" })]), []);
});

Deno.test("authzHttpFilters() applies selected and root-namespace policies only, and leaves AUDIT out for proxyless servers", () => {
  assert.deepEqual(filters([ap("w", { selector: { matchLabels: { app: "world" } } })]), []);
  assert.deepEqual(filters([ap("o", {}, "other")]), []);
  assert.equal(filters([ap("m", {}, "mesh-system")]).length, 1);
  const audit = ap("au", { action: "AUDIT", rules: [{}] });
  assert.deepEqual(names(filters([audit])), [AUTHZ_FILTER_NAMES.AUDIT]);
  assert.deepEqual(filters([audit], true), []);
});

Deno.test("rulePolicy() never matches request principals on proxyless servers (no JWT filter)", () => {
  const r = { from: [{ source: { requestPrincipals: ["*"] } }] };
  assert.deepEqual(rulePolicy(r, true).principals, [{ not_id: { any: true } }]);
  assert.ok(JSON.stringify(rulePolicy(r, false).principals).includes("jwt_authn"));
});

Deno.test("authzHttpFilters() writes header matchers in the older fields for old gRPC clients", () => {
  const objs = [ap("h", { rules: [{ to: [{ operation: { methods: ["POST"] } }] }] })];
  const f = authzHttpFilters(
    model({ configs: { authorizationPolicies: objs } }),
    hello,
    helloV1,
    undefined,
    true,
    true,
  );
  const p = f[0].typed_config.rules.policies["ns[default]-policy[h]-rule[0]"];
  assert.deepEqual(p.permissions, [{ header: { name: ":method", exact_match: "POST" } }]);
});

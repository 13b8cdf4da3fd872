import assert from "node:assert/strict";
import type { ConfigObject } from "../model/types.ts";
import { convertConfigs, subsetName } from "./mod.ts";

const rr = (name: string, ns: string, spec: Record<string, unknown>): ConfigObject => ({
  apiVersion: "config.mesh.io/v1alpha2",
  kind: "RouteRule",
  metadata: { name, namespace: ns },
  spec,
});

Deno.test("subsetName() joins sorted labels into a DNS label", () => {
  assert.equal(subsetName({ version: "v1" }), "version-v1");
  assert.equal(subsetName({ version: "v1.2", app: "Web" }), "app-web-version-v1-2");
  assert.equal(subsetName({}), "");
});

Deno.test("convertConfigs() orders routes by precedence and adds the subsets routes use", () => {
  const { configs, warnings } = convertConfigs([
    rr("low", "ns", { destination: { name: "a" }, route: [{ labels: { v: "1" } }] }),
    rr("high", "ns", {
      destination: { name: "a" },
      precedence: 5,
      match: { request: { headers: { method: { exact: "GET" }, "x-user": { exact: "j" } } } },
      route: [{ destination: { name: "b", namespace: "other" }, labels: { v: "2" } }],
    }),
  ]);
  assert.deepEqual(warnings, []);
  assert.deepEqual(configs.map((c) => `${c.kind}/${c.metadata.namespace}/${c.metadata.name}`), [
    "DestinationRule/ns/b.other.svc.cluster.local",
    "DestinationRule/ns/a",
    "VirtualService/ns/a",
  ]);
  const http = (configs[2].spec as { http: { match?: unknown; route: unknown }[] }).http;
  assert.deepEqual(http[0].match, [{
    method: { exact: "GET" },
    headers: { "x-user": { exact: "j" } },
  }]);
  assert.deepEqual(http[0].route, [{
    destination: { host: "b.other.svc.cluster.local", subset: "v-2" },
    weight: 100,
  }]);
  assert.deepEqual(configs[1].spec, { host: "a", subsets: [{ name: "v-1", labels: { v: "1" } }] });
});

Deno.test("convertConfigs() refuses other kinds by name", () => {
  const vs = { ...rr("x", "ns", {}), kind: "VirtualService" };
  assert.throws(() => convertConfigs([vs]), { message: "unsupported kind: VirtualService" });
});

Deno.test("convertConfigs() turns Istio 0.8's partial egress wildcards into ServiceEntry hosts, saying what changes", () => {
  const egress = (name: string, service: string): ConfigObject => ({
    apiVersion: "config.mesh.io/v1alpha2",
    kind: "EgressRule",
    metadata: { name, namespace: "default" },
    spec: { destination: { service }, ports: [{ port: 443, protocol: "https" }] },
  });
  const { configs, warnings } = convertConfigs([
    egress("google", "*google.com"),
    egress("bar", "*-bar.foo.com"),
    egress("plain", "*.example.com"),
  ]);
  assert.deepEqual(configs.map((c) => (c.spec as { hosts: string[] }).hosts), [
    ["google.com", "*.google.com"],
    ["*.foo.com"],
    ["*.example.com"],
  ]);
  assert.deepEqual(warnings, [
    'EgressRule/default/google: host "*google.com" becomes "google.com" and "*.google.com": names that only end in "google.com" (such as "xgoogle.com") are no longer matched',
    'EgressRule/default/bar: host "*-bar.foo.com" becomes "*.foo.com", which matches more names',
  ]);
});

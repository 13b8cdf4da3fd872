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

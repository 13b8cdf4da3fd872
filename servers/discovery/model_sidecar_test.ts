import assert from "node:assert/strict";
import { type ConfigObject, defaultMeshConfig, type Service } from "../../lib/model/mod.ts";
import type { ConfigStore } from "../../lib/store/mod.ts";
import { loadXdsProtos, parseNodeId, TYPE_URLS } from "../../lib/xds/mod.ts";
import { ResourceCache } from "../../lib/xds/server/mod.ts";
import { ConfigSnapshot, DiscoveryModel } from "./model.ts";

await loadXdsProtos();
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

function svc(name: string, ns: string): Service {
  return {
    hostname: `${name}.${ns}.svc.cluster.local`,
    address: "0.0.0.0",
    ports: [{ name: "http", port: 80, protocol: "HTTP" }],
    namespace: ns,
    meshExternal: false,
    resolution: "ClientSideLB",
    serviceAccounts: [],
    registry: "Orchestrator",
  };
}

const SERVICES = [svc("a1", "a"), svc("b1", "b"), svc("c1", "c")];

const sidecar = (name: string, ns: string, spec: Record<string, unknown>): ConfigObject => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "Sidecar",
  metadata: { name, namespace: ns },
  spec,
});

async function discoveryModel(objects: ConfigObject[]) {
  const store = {
    schemas: [{ type: "all" }],
    watch: () => ({ close() {} }),
    list: () => Promise.resolve(objects),
  } as unknown as ConfigStore;
  const configs = new ConfigSnapshot();
  await configs.open(store, () => {});
  return new DiscoveryModel({
    registry: { services: () => SERVICES, instances: () => [] },
    configs,
    meshConfig: defaultMeshConfig(),
    domain: "cluster.local",
    cache: new ResourceCache(),
    logger: quiet,
  });
}

const node = (ns: string, ip: string) =>
  parseNodeId(`sidecar~${ip}~p.${ns}~${ns}.svc.cluster.local`);

const outbound = (m: ReadonlyMap<string, unknown>) =>
  [...m.keys()].filter((k) => k.startsWith("outbound|")).sort();

Deno.test("DiscoveryModel.resourcesFor() gives a Sidecar's proxies only the clusters and routes it allows, one view per scope", async () => {
  const m = await discoveryModel([
    sidecar("default", "mesh-system", { egress: [{ hosts: ["./*"] }] }),
    sidecar("wide", "c", { egress: [{ hosts: ["./*", "a/*"] }] }),
  ]);
  const a1 = m.resourcesFor(node("a", "10.0.0.1"), TYPE_URLS.cluster, null);
  const a2 = m.resourcesFor(node("a", "10.0.0.2"), TYPE_URLS.cluster, null);
  assert.equal(a1, a2, "the proxies of namespace a share one cluster view");
  assert.deepEqual(outbound(a1), ["outbound|80||a1.a.svc.cluster.local"]);
  const c = m.resourcesFor(node("c", "10.0.0.3"), TYPE_URLS.cluster, null);
  assert.deepEqual(outbound(c), [
    "outbound|80||a1.a.svc.cluster.local",
    "outbound|80||c1.c.svc.cluster.local",
  ]);
  const routes = m.resourcesFor(node("a", "10.0.0.1"), TYPE_URLS.route, null);
  assert.deepEqual([...routes.keys()], ["80"]);
  const eds = m.resourcesFor(node("a", "10.0.0.1"), TYPE_URLS.endpoint, null);
  assert.deepEqual([...eds.keys()], ["outbound|80||a1.a.svc.cluster.local"]);
  // REST xDS and the debug pages show the same
  const rest = m.resourceObjects(node("a", "10.0.0.9"), TYPE_URLS.cluster, null).map((x) => x.name)
    .filter((n) => n.startsWith("outbound|"));
  assert.deepEqual(rest, ["outbound|80||a1.a.svc.cluster.local"]);
});

Deno.test("DiscoveryModel.resourcesFor() shares the whole-mesh view when no Sidecar applies", async () => {
  const m = await discoveryModel([sidecar("only-c", "c", { egress: [{ hosts: ["./*"] }] })]);
  const a = m.resourcesFor(node("a", "10.0.0.1"), TYPE_URLS.cluster, null);
  const b = m.resourcesFor(node("b", "10.0.0.2"), TYPE_URLS.cluster, null);
  assert.equal(a, b);
  assert.equal(outbound(a).length, 3);
  const before = m.stats().views;
  m.resourcesFor(node("c", "10.0.0.3"), TYPE_URLS.cluster, null);
  m.resourcesFor(node("c", "10.0.0.4"), TYPE_URLS.cluster, null);
  assert.equal(m.stats().views, before + 1, "one view built for namespace c's two proxies");
});

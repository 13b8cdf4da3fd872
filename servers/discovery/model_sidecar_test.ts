import assert from "node:assert/strict";
import { type ConfigObject, type Service } from "../../lib/model/mod.ts";
import { decodeAny, loadXdsProtos, parseNodeId, TYPE_URLS } from "../../lib/xds/mod.ts";
import { testModel } from "./_test_util.ts";

await loadXdsProtos();

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
  return await testModel({ registry: { services: () => SERVICES, instances: () => [] }, objects });
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

Deno.test("DiscoveryModel.resourcesFor() keeps only the inbound ports a Sidecar's ingress names, forwarding to its defaultEndpoint", async () => {
  const web = svc("web", "a");
  web.ports = [
    { name: "http", port: 80, protocol: "HTTP" },
    { name: "http-admin", port: 81, protocol: "HTTP" },
  ];
  const inst = (sp: Service["ports"][number], port: number) => ({
    hostname: web.hostname,
    servicePort: sp,
    address: "10.0.0.5",
    port,
    labels: { app: "web" },
    locality: "",
    serviceAccount: "",
  });
  const m = await testModel({
    registry: {
      services: () => [web],
      instances: () => [inst(web.ports[0], 8080), inst(web.ports[1], 8081)],
    },
    objects: [
      sidecar("web", "a", {
        workloadSelector: { labels: { app: "web" } },
        ingress: [{
          port: { number: 8080, protocol: "HTTP" },
          defaultEndpoint: "127.0.0.1:9999",
        }],
      }),
    ],
  });
  const proxy = parseNodeId("sidecar~10.0.0.5~web-1.a~a.svc.cluster.local", {
    labels: { app: "web" },
  });
  const cds = m.resourcesFor(proxy, TYPE_URLS.cluster, null);
  assert.deepEqual([...cds.keys()].filter((k) => k.startsWith("inbound|")), [
    "inbound|80||web.a.svc.cluster.local",
  ]);
  const lds = m.resourcesFor(proxy, TYPE_URLS.listener, null);
  assert.ok(lds.has("10.0.0.5_8080"));
  assert.ok(!lds.has("10.0.0.5_8081"), "port 8081 is not among the Sidecar's ingress ports");
  const [cluster] = m.resourceObjects(proxy, TYPE_URLS.cluster, [
    "inbound|80||web.a.svc.cluster.local",
  ]);
  assert.deepEqual(cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address, {
    socket_address: { address: "127.0.0.1", port_value: 9999 },
  });
  // the ADS bytes hold the same endpoint
  const entry = cds.get("inbound|80||web.a.svc.cluster.local")!;
  const decoded = decodeAny({ type_url: TYPE_URLS.cluster, value: entry.bytes }) as {
    load_assignment: {
      endpoints: { lb_endpoints: { endpoint: { address: { socket_address: unknown } } }[] }[];
    };
  };
  const sa = decoded.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address
    .socket_address as { address: string; port_value: number };
  assert.deepEqual([sa.address, sa.port_value], ["127.0.0.1", 9999]);
});

Deno.test("DiscoveryModel.resourcesFor(): a Sidecar's ingress to 0.0.0.0 forwards each replica to its own address", async () => {
  const web = svc("web", "a");
  const inst = (address: string) => ({
    hostname: web.hostname,
    servicePort: web.ports[0],
    address,
    port: 8080,
    labels: { app: "web" },
    locality: "",
    serviceAccount: "",
  });
  const m = await testModel({
    registry: { services: () => [web], instances: () => [inst("10.0.0.5"), inst("10.0.0.6")] },
    objects: [
      sidecar("web", "a", {
        workloadSelector: { labels: { app: "web" } },
        ingress: [{ port: { number: 8080, protocol: "HTTP" }, defaultEndpoint: "0.0.0.0:9999" }],
      }),
    ],
  });
  for (const ip of ["10.0.0.5", "10.0.0.6"]) {
    const proxy = parseNodeId(`sidecar~${ip}~web.a~a.svc.cluster.local`, {
      labels: { app: "web" },
    });
    const entry = m.resourcesFor(proxy, TYPE_URLS.cluster, ["inbound|80||web.a.svc.cluster.local"])
      .get("inbound|80||web.a.svc.cluster.local")!;
    const c = decodeAny({ type_url: TYPE_URLS.cluster, value: entry.bytes }) as {
      load_assignment: {
        endpoints: { lb_endpoints: { endpoint: { address: { socket_address: unknown } } }[] }[];
      };
    };
    const sa = c.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address
      .socket_address as { address: string; port_value: number };
    assert.deepEqual([sa.address, sa.port_value], [ip, 9999]);
  }
});

import assert from "node:assert/strict";
import type { ConfigObject, Service } from "../../model/types.ts";
import {
  DEFAULT_XDS_MESH_CONFIG,
  emptyPushConfigs,
  type Proxy,
  type PushContext,
} from "../types.ts";
import { buildClusters } from "./clusters.ts";
import { buildListeners } from "./listeners.ts";
import {
  dnsNameMatches,
  exportedToNamespace,
  hasIngress,
  ingressInstances,
  scopedContext,
  scopeFor,
  selectSidecar,
  withIngressEndpoints,
} from "./sidecar_scope.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

function svc(name: string, ns: string, ports = [80], registry = "Orchestrator"): Service {
  return {
    hostname: ns ? `${name}.${ns}.svc.cluster.local` : name,
    address: "0.0.0.0",
    ports: ports.map((p) => ({ name: `http-${p}`, port: p, protocol: "HTTP" as const })),
    namespace: ns,
    meshExternal: false,
    resolution: "ClientSideLB",
    serviceAccounts: [],
    registry,
  };
}

function cfg(
  kind: string,
  name: string,
  ns: string,
  spec: Record<string, unknown>,
  created = "",
): ConfigObject {
  return {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind,
    metadata: { name, namespace: ns, ...(created ? { creationTimestamp: created } : {}) },
    spec,
  };
}

const sidecar = (name: string, ns: string, spec: Record<string, unknown>, created = "") =>
  cfg("Sidecar", name, ns, spec, created);

function ctx(sidecars: ConfigObject[], extra: Partial<PushContext["configs"]> = {}): PushContext {
  return {
    services: [
      svc("a1", "a"),
      svc("a2", "a", [80, 9090]),
      svc("b1", "b"),
      svc("sys", "mesh-system"),
      svc("ext.example.com", "", [443], "RegistryA"),
    ],
    instances: [],
    configs: {
      ...emptyPushConfigs(),
      sidecars,
      ...extra,
    },
    meshConfig: DEFAULT_XDS_MESH_CONFIG,
    domain: "cluster.local",
  };
}

function proxy(ns: string, labels: Record<string, string> = {}, ip = "10.9.9.9"): Proxy {
  return {
    type: "sidecar",
    ip,
    id: `p.${ns}`,
    domain: `${ns}.svc.cluster.local`,
    metadata: { labels },
  };
}

const hosts = (c: PushContext) => c.services.map((s) => s.hostname).sort();

Deno.test("selectSidecar() prefers a selecting Sidecar, then the namespace's, then the root default", () => {
  const root = sidecar("root", "mesh-system", {});
  const nsDefault = sidecar("default", "a", {});
  const selecting = sidecar("web", "a", { workloadSelector: { labels: { app: "web" } } });
  const all = [root, nsDefault, selecting];
  assert.equal(selectSidecar(all, "a", { app: "web" }), selecting);
  assert.equal(selectSidecar(all, "a", { app: "db" }), nsDefault);
  assert.equal(selectSidecar(all, "b", { app: "web" }), root);
  assert.equal(selectSidecar([nsDefault], "b", {}), undefined);
});

Deno.test("selectSidecar() takes the oldest when several apply at one level", () => {
  const young = sidecar("young", "a", {}, "2026-01-02T00:00:00Z");
  const old = sidecar("old", "a", {}, "2026-01-01T00:00:00Z");
  assert.equal(selectSidecar([young, old], "a", {}), old);
});

Deno.test("scopeFor() lets through what `./*` and `mesh-system/*` select, in the proxy's namespace", () => {
  const c = ctx([sidecar("s", "a", { egress: [{ hosts: ["./*", "mesh-system/*"] }] })]);
  const s = scopeFor(c, proxy("a"));
  assert.equal(s.sidecar?.metadata.name, "s");
  assert.deepEqual(hosts(s.ctx), [
    "a1.a.svc.cluster.local",
    "a2.a.svc.cluster.local",
    "sys.mesh-system.svc.cluster.local",
  ]);
  // namespace b has no Sidecar and no root default: the whole mesh, the context itself
  const other = scopeFor(c, proxy("b"));
  assert.equal(other.key, "");
  assert.equal(other.ctx, c);
});

Deno.test("scopeFor() resolves `.` of the root default to each proxy's namespace and shares per namespace", () => {
  const c = ctx([sidecar("default", "mesh-system", { egress: [{ hosts: ["./*"] }] })]);
  const a1 = scopeFor(c, proxy("a", {}, "10.0.0.1"));
  const a2 = scopeFor(c, proxy("a", { app: "x" }, "10.0.0.2"));
  const b = scopeFor(c, proxy("b"));
  assert.equal(a1, a2, "one scope object for every proxy of namespace a");
  assert.equal(a1.ctx, a2.ctx, "its context is built once");
  assert.deepEqual(hosts(a1.ctx), ["a1.a.svc.cluster.local", "a2.a.svc.cluster.local"]);
  assert.deepEqual(hosts(b.ctx), ["b1.b.svc.cluster.local"]);
});

Deno.test("scopedContext() sees nothing with `~/*`, and every service with `*/*` or no egress", () => {
  const c = ctx([]);
  const none = scopedContext(c, {
    sidecar: sidecar("s", "a", { egress: [{ hosts: ["~/*"] }] }),
    namespace: "a",
  });
  assert.deepEqual(none.services, []);
  const all = scopedContext(c, {
    sidecar: sidecar("s", "a", { egress: [{ hosts: ["*/*"] }] }),
    namespace: "a",
  });
  assert.equal(all.services.length, c.services.length);
  const noEgress = scopedContext(c, {
    sidecar: sidecar("s", "a", { outboundTrafficPolicy: { mode: "ALLOW_ANY" } }),
    namespace: "a",
  });
  assert.equal(noEgress.services.length, c.services.length);
  assert.equal(noEgress.meshConfig.outboundTrafficPolicy, "ALLOW_ANY");
});

Deno.test("scopedContext() keeps only the egress listener's port of a service it names with a port", () => {
  const sc = sidecar("s", "a", {
    egress: [{
      port: { number: 9090, protocol: "HTTP", name: "h" },
      hosts: ["./a2.a.svc.cluster.local"],
    }],
  });
  const s = scopedContext(ctx([]), { sidecar: sc, namespace: "a" });
  assert.deepEqual(s.services.map((x) => [x.hostname, x.ports.map((p) => p.port)]), [
    ["a2.a.svc.cluster.local", [9090]],
  ]);
});

Deno.test("scopedContext() keeps a VirtualService its egress selects and pulls in its destinations", () => {
  const vs = cfg("VirtualService", "route-a1", "a", {
    hosts: ["a1"],
    http: [{ route: [{ destination: { host: "b1.b.svc.cluster.local" } }] }],
  });
  const otherVs = cfg("VirtualService", "route-b1", "b", { hosts: ["b1"], http: [] });
  const c = ctx([], { virtualServices: [vs, otherVs] });
  const s = scopedContext(c, {
    sidecar: sidecar("s", "a", { egress: [{ hosts: ["./a1.a.svc.cluster.local"] }] }),
    namespace: "a",
  });
  assert.deepEqual(s.configs.virtualServices, [vs]);
  assert.deepEqual(hosts(s), ["a1.a.svc.cluster.local", "b1.b.svc.cluster.local"]);
});

Deno.test("scopeFor() hides a DestinationRule not exported to the proxy's namespace or not selecting it", () => {
  const local = cfg("DestinationRule", "local", "a", { host: "a1", exportTo: ["."] });
  const selective = cfg("DestinationRule", "sel", "b", {
    host: "b1",
    workloadSelector: { matchLabels: { app: "web" } },
  });
  const c = ctx([], { destinationRules: [local, selective] });
  assert.deepEqual(scopeFor(c, proxy("a", { app: "web" })).ctx.configs.destinationRules, [
    local,
    selective,
  ]);
  assert.deepEqual(scopeFor(c, proxy("a", { app: "db" })).ctx.configs.destinationRules, [local]);
  assert.deepEqual(scopeFor(c, proxy("b", { app: "web" })).ctx.configs.destinationRules, [
    selective,
  ]);
});

Deno.test("scopeFor() hides the services of a ServiceEntry exported elsewhere", () => {
  const se = cfg("ServiceEntry", "private", "a", { hosts: ["db.internal"], exportTo: ["."] });
  const c = ctx([], { serviceEntries: [se] });
  c.services.push({
    ...svc("db.internal", "a"),
    hostname: "db.internal",
    registry: "ServiceEntry",
  });
  assert.ok(hosts(scopeFor(c, proxy("a")).ctx).includes("db.internal"));
  assert.ok(!hosts(scopeFor(c, proxy("b")).ctx).includes("db.internal"));
});

Deno.test("a scoped proxy's clusters and listeners name only the services its Sidecar allows", () => {
  const c = ctx([sidecar("s", "a", { egress: [{ hosts: ["./*"] }] })]);
  const s = scopeFor(c, proxy("a"));
  const clusters = buildClusters(s.ctx, proxy("a")).map((x) => x.name);
  assert.ok(clusters.includes("outbound|80||a1.a.svc.cluster.local"));
  assert.ok(!clusters.some((n) => n.includes("b1.b.svc")), clusters.join(" "));
  const listeners = buildListeners(s.ctx, proxy("a")).map((x) => x.name);
  assert.ok(listeners.includes("0.0.0.0_9090"), "a2's port 9090");
  assert.ok(!listeners.includes("0.0.0.0_443"), "the external 443 service is outside the scope");
});

Deno.test("dnsNameMatches() and exportedToNamespace() follow Istio's forms", () => {
  assert.ok(dnsNameMatches("*", "x.y"));
  assert.ok(dnsNameMatches("*.example.com", "api.example.com"));
  assert.ok(dnsNameMatches("*.example.com", "*.example.com"));
  assert.ok(!dnsNameMatches("*.example.com", "example.com"));
  assert.ok(dnsNameMatches("a.b", "a.b"));
  assert.ok(exportedToNamespace(undefined, "a", "b"));
  assert.ok(exportedToNamespace(["*"], "a", "b"));
  assert.ok(exportedToNamespace(["."], "a", "a"));
  assert.ok(!exportedToNamespace(["."], "a", "b"));
  assert.ok(!exportedToNamespace(["~"], "a", "a"));
  assert.ok(exportedToNamespace(["b"], "a", "b"));
});

Deno.test("ingressInstances() and withIngressEndpoints() follow a Sidecar's ingress ports and defaultEndpoints", () => {
  const own = [
    { hostname: "w.a.svc.cluster.local", port: 8080, servicePort: { port: 80 } },
    { hostname: "w.a.svc.cluster.local", port: 9090, servicePort: { port: 90 } },
    { hostname: "w.a.svc.cluster.local", port: 7070, servicePort: { port: 70 } },
  ];
  const sc = sidecar("w", "a", {
    ingress: [
      { port: { number: 8080 }, defaultEndpoint: "unix:///var/run/app.sock" },
      { port: { number: 9090 }, defaultEndpoint: "0.0.0.0:9191" },
    ],
  });
  assert.deepEqual(ingressInstances(own, sc).map((i) => i.port), [8080, 9090]);
  assert.deepEqual(ingressInstances(own, undefined).length, 3);
  const cluster = (port: number) => ({
    name: `inbound|${port}||w.a.svc.cluster.local`,
    load_assignment: { endpoints: [] },
  });
  const out = withIngressEndpoints([cluster(80), cluster(90), cluster(70)], own, sc, "10.1.1.1");
  const addr = (c: Record<string, Any>) =>
    c.load_assignment.endpoints[0]?.lb_endpoints[0].endpoint.address;
  assert.deepEqual(addr(out[0]), { pipe: { path: "/var/run/app.sock" } });
  assert.deepEqual(addr(out[1]), { socket_address: { address: "10.1.1.1", port_value: 9191 } });
  assert.deepEqual(out[2].load_assignment.endpoints, [], "a port without defaultEndpoint is kept");
  assert.equal(hasIngress(sc), true);
  assert.equal(hasIngress(sidecar("x", "a", {})), false);
});

Deno.test("scopedContext() keeps only the visible services' instances (indexing costs what the proxy sees)", () => {
  const c = ctx([]);
  const inst = (host: string) => ({
    hostname: host,
    servicePort: { name: "http-80", port: 80, protocol: "HTTP" as const },
    address: "10.0.0.1",
    port: 80,
    labels: {},
    locality: "",
    serviceAccount: "",
  });
  c.instances = [inst("a1.a.svc.cluster.local"), inst("b1.b.svc.cluster.local")];
  const s = scopedContext(c, {
    sidecar: sidecar("s", "a", { egress: [{ hosts: ["./*"] }] }),
    namespace: "a",
  });
  assert.deepEqual(s.instances.map((i) => i.hostname), ["a1.a.svc.cluster.local"]);
  const all = scopedContext(c, { namespace: "a" });
  assert.equal(all.instances, c.instances, "nothing hidden: the same array");
});

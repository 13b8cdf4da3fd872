import assert from "node:assert/strict";
import type { Service } from "../../model/types.ts";
import { parseNodeId } from "../node.ts";
import { DB_ENTRIES, model, WORLD_DR } from "../testdata/model.ts";
import { buildClusters } from "./clusters.ts";
import { buildEndpoints, isKnownCluster, loadAssignment, localityOf } from "./endpoints.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

Deno.test("localityOf() splits region/zone and always returns an object", () => {
  assert.deepEqual(localityOf("us-east/zone-a"), { region: "us-east", zone: "zone-a" });
  assert.deepEqual(localityOf("zone-a"), { zone: "zone-a" });
  assert.deepEqual(localityOf(""), {});
});

Deno.test("buildEndpoints() groups by locality with non-zero weights and applies subsets", () => {
  const ctx = model({ configs: { destinationRules: [WORLD_DR] } });
  const [all, v2, none] = buildEndpoints(ctx, [
    "outbound|80||world.default.svc.cluster.local",
    "outbound|80|v2|world.default.svc.cluster.local",
    "outbound|80|v9|world.default.svc.cluster.local",
  ]);
  assert.equal(all.endpoints.length, 2);
  for (const g of all.endpoints) {
    assert.ok(g.locality);
    assert.equal(g.load_balancing_weight.value, g.lb_endpoints.length);
  }
  assert.deepEqual(v2.endpoints, [{
    locality: { region: "us-east", zone: "zone-b" },
    lb_endpoints: [{
      endpoint: { address: { socket_address: { address: "10.0.2.2", port_value: 8080 } } },
    }],
    load_balancing_weight: { value: 1 },
  }]);
  assert.equal(none, undefined, "subset v9 is not defined: no assignment");
});

Deno.test("buildEndpoints() leaves out unknown clusters and keeps an empty assignment for known ones", () => {
  const ctx = model({ configs: { destinationRules: [WORLD_DR] }, serviceEntries: DB_ENTRIES });
  const out = buildEndpoints(ctx, [
    "outbound|3306||mysql.internal", // known, no endpoints
    "outbound|81||world.default.svc.cluster.local", // no such port
    "outbound|80||nope.default.svc.cluster.local", // no such service
    "outbound|80|v9|world.default.svc.cluster.local", // no such subset
    "BlackHoleCluster",
    "anything",
    "inbound|80||hello.default.svc.cluster.local",
  ]);
  assert.deepEqual(out, [
    { cluster_name: "outbound|3306||mysql.internal", endpoints: [] },
    { cluster_name: "inbound|80||hello.default.svc.cluster.local", endpoints: [] },
  ]);
  assert.equal(isKnownCluster(ctx, "outbound|80|v1|world.default.svc.cluster.local"), true);
});

Deno.test("buildEndpoints() turns unix:// endpoints into Envoy pipes without a port", () => {
  const ctx = model({ serviceEntries: DB_ENTRIES });
  const [cla] = buildEndpoints(ctx, ["outbound|9091||agent.internal"]);
  assert.deepEqual(cla.endpoints[0].lb_endpoints, [{
    endpoint: { address: { pipe: { path: "/var/run/agent.sock" } } },
  }]);
});

Deno.test("buildClusters() gives a DNS service of unix sockets a STATIC load assignment of pipes", () => {
  const base = model();
  const svc: Service = {
    hostname: "sock.example",
    address: "0.0.0.0",
    ports: [{ name: "tcp", port: 7000, protocol: "TCP" }],
    namespace: "default",
    meshExternal: false,
    resolution: "DNSLB",
    serviceAccounts: [],
    registry: "ServiceEntry",
  };
  const ctx = {
    ...base,
    services: [...base.services, svc],
    instances: [...base.instances, {
      hostname: svc.hostname,
      servicePort: svc.ports[0],
      address: "unix:///run/sock",
      port: 7000,
      labels: {},
      locality: "",
      serviceAccount: "",
    }],
  };
  const proxy = parseNodeId("sidecar~10.9.9.9~c.default~default.svc.cluster.local");
  const c = buildClusters(ctx, proxy).find((x) => x.name === "outbound|7000||sock.example")!;
  assert.equal(c.type, "STATIC");
  assert.equal(c.dns_lookup_family, undefined);
  assert.deepEqual(c.load_assignment.endpoints[0].lb_endpoints, [{
    endpoint: { address: { pipe: { path: "/run/sock" } } },
  }]);
});

Deno.test("localityOf() drops an empty region or zone instead of keeping the slash", () => {
  assert.deepEqual(localityOf("/zone-a"), { zone: "zone-a" });
  assert.deepEqual(localityOf("us-east/"), { region: "us-east" });
});

/** world:80 with extra instances (labels and locality given), plus a UDP service. */
function worldWith(extra: { address: string; labels: Record<string, string>; locality: string }[]) {
  const base = model();
  const world = base.services[1];
  const udp: Service = {
    hostname: "dns.default.svc.cluster.local",
    address: "10.3.0.1",
    ports: [{ name: "udp-dns", port: 53, protocol: "UDP" }, {
      name: "tcp-dns",
      port: 5353,
      protocol: "TCP",
    }],
    namespace: "default",
    meshExternal: false,
    resolution: "ClientSideLB",
    serviceAccounts: [],
    registry: "Mock",
  };
  return {
    ...base,
    services: [...base.services, udp],
    instances: [
      ...extra.map((e) => ({
        hostname: world.hostname,
        servicePort: world.ports[0],
        address: e.address,
        port: 8080,
        labels: e.labels,
        locality: e.locality,
        serviceAccount: "",
      })),
      ...base.instances,
    ],
  };
}

const addresses = (cla: Any) =>
  cla.endpoints.map((g: Any) => [
    g.locality.zone ?? "",
    g.lb_endpoints.map((e: Any) => e.endpoint.address.socket_address.address),
    g.load_balancing_weight.value,
  ]);

Deno.test("loadAssignment() puts every endpoint of a locality in one group, localities sorted", () => {
  // listed before the model's own instances: zone-c first, a second one in zone-a
  const ctx = worldWith([
    { address: "10.0.9.1", labels: { version: "v1" }, locality: "us-east/zone-c" },
    { address: "10.0.9.2", labels: { version: "v1" }, locality: "us-east/zone-a" },
  ]);
  assert.deepEqual(addresses(loadAssignment(ctx, "outbound|80||world.default.svc.cluster.local")), [
    ["zone-a", ["10.0.9.2", "10.0.2.1"], 2],
    ["zone-b", ["10.0.2.2"], 1],
    ["zone-c", ["10.0.9.1"], 1],
  ]);
});

Deno.test("loadAssignment() of a subset needs all its labels; a subset without labels has all endpoints", () => {
  const dr = {
    ...WORLD_DR,
    spec: {
      host: "world",
      subsets: [
        { name: "v1-canary", labels: { version: "v1", track: "canary" } },
        { name: "all" },
      ],
    },
  };
  const ctx = {
    ...worldWith([
      { address: "10.0.9.1", labels: { version: "v1", track: "canary" }, locality: "" },
    ]),
    configs: { ...model().configs, destinationRules: [dr] },
  };
  const at = (subset: string) =>
    addresses(loadAssignment(ctx, `outbound|80|${subset}|world.default.svc.cluster.local`));
  assert.deepEqual(at("v1-canary"), [["", ["10.0.9.1"], 1]]);
  assert.deepEqual(at("all"), [
    ["", ["10.0.9.1"], 1],
    ["zone-a", ["10.0.2.1"], 1],
    ["zone-b", ["10.0.2.2"], 1],
  ]);
  // a subset the DestinationRule does not define, or a host without one: no endpoints (no throw)
  assert.deepEqual(at("v2"), []);
  assert.deepEqual(
    loadAssignment(ctx, "outbound|80|v1|hello.default.svc.cluster.local").endpoints,
    [],
  );
});

Deno.test("isKnownCluster() refuses UDP ports, inbound subsets and subsets without a DestinationRule", () => {
  const ctx = { ...worldWith([]), configs: { ...model().configs, destinationRules: [WORLD_DR] } };
  assert.equal(isKnownCluster(ctx, "outbound|53||dns.default.svc.cluster.local"), false);
  assert.equal(isKnownCluster(ctx, "outbound|5353||dns.default.svc.cluster.local"), true);
  assert.equal(isKnownCluster(ctx, "inbound|80||world.default.svc.cluster.local"), true);
  assert.equal(isKnownCluster(ctx, "inbound|80|v1|world.default.svc.cluster.local"), false);
  assert.equal(isKnownCluster(ctx, "outbound|80|v1|world.default.svc.cluster.local"), true);
  assert.equal(isKnownCluster(ctx, "outbound|80|v1|hello.default.svc.cluster.local"), false);
});

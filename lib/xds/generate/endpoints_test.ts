import assert from "node:assert/strict";
import type { Service } from "../../model/types.ts";
import { parseNodeId } from "../node.ts";
import { DB_ENTRIES, model, WORLD_DR } from "../testdata/model.ts";
import { buildClusters } from "./clusters.ts";
import { buildEndpoints, isKnownCluster, localityOf } from "./endpoints.ts";

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

import assert from "node:assert/strict";
import { model, WORLD_DR } from "../testdata/model.ts";
import { buildEndpoints, localityOf } from "./endpoints.ts";

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
  assert.deepEqual(none, {
    cluster_name: "outbound|80|v9|world.default.svc.cluster.local",
    endpoints: [],
  });
});

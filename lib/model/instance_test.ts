import assert from "node:assert/strict";
import { instanceSignature, SIGNED_FIELDS } from "./instance.ts";
import type { ServiceInstance } from "./types.ts";

Deno.test("instanceSignature() tells an instance from one that differs in any field but its key's", () => {
  const base: ServiceInstance = {
    hostname: "db.default.svc.cluster.local",
    servicePort: { name: "tcp", port: 5432, protocol: "TCP" },
    address: "10.0.0.1",
    port: 5432,
    labels: { app: "db" },
    locality: "r/z",
    serviceAccount: "spiffe://cluster.local/ns/default/sa/db",
    weight: 2,
  };
  const other: { [K in keyof typeof SIGNED_FIELDS]: ServiceInstance[K] } = {
    address: "10.0.0.2",
    port: 5433,
    labels: { app: "db", version: "v2" },
    locality: "r/y",
    serviceAccount: "",
    weight: 3,
  };
  for (const f of Object.keys(SIGNED_FIELDS) as (keyof typeof SIGNED_FIELDS)[]) {
    assert.notEqual(instanceSignature({ ...base, [f]: other[f] }), instanceSignature(base), f);
  }
  assert.notEqual(instanceSignature({ ...base, weight: undefined }), instanceSignature(base));
  assert.equal(
    instanceSignature({ ...base, hostname: "x", labels: { app: "db" } }),
    instanceSignature(base),
    "the key's fields and the objects' identity do not count",
  );
});

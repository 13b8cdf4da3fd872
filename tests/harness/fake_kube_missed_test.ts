import assert from "node:assert/strict";
import { startFakeKube } from "./fake_kube.ts";
import { waitUntil } from "./procs.ts";

const configMap = (name: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
});

Deno.test("missEvents keeps the next changes of a resource from open watches, not from lists", async () => {
  await using kube = await startFakeKube();
  const rv = kube.resourceVersion;
  const res = await fetch(
    `${kube.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rv}&timeoutSeconds=1`,
    { headers: kube.authHeaders },
  );
  await waitUntil(() => kube.watchCount === 1, 5000, "the watch to open");
  kube.missEvents("configmaps", 2);
  kube.upsert(configMap("a"));
  kube.upsert({ ...configMap("s"), kind: "Secret" }); // another resource: not counted
  kube.upsert(configMap("b"));
  kube.upsert(configMap("c"));
  const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((e) => [e.type, e.object.metadata.name]), [["ADDED", "c"]]);
  // the store has them all
  for (const n of ["a", "b", "c"]) assert.ok(kube.get("configmaps", "default", n), n);
  assert.throws(() => kube.missEvents("configmaps", 0), /"n" must be a positive integer, got 0/);
  assert.throws(() => kube.missEvents("nothings"), /unknown resource "nothings"/);
});

import assert from "node:assert/strict";
import { startFakeKube } from "./fake_kube.ts";

const PATH = "/apis/coordination.k8s.io/v1/namespaces/mesh-system/leases";

Deno.test("fake kube: Leases are created once, read back and updated only at the current resourceVersion", async () => {
  await using kube = await startFakeKube();
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${kube.url}${path}`, {
      method,
      headers: { ...kube.authHeaders, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  const lease = {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: "l", namespace: "mesh-system" },
    spec: { holderIdentity: "a", leaseDurationSeconds: 15 },
  };
  const created = await call("POST", PATH, lease);
  assert.equal(created.status, 201);
  const again = await call("POST", PATH, lease);
  assert.equal(again.status, 409);
  assert.equal(again.body.reason, "AlreadyExists");
  const got = await call("GET", `${PATH}/l`);
  assert.equal(got.status, 200);
  assert.equal(got.body.spec.holderIdentity, "a");
  const rv = got.body.metadata.resourceVersion;
  const ok = await call("PUT", `${PATH}/l`, {
    ...got.body,
    spec: { ...got.body.spec, holderIdentity: "b" },
  });
  assert.equal(ok.status, 200);
  assert.notEqual(ok.body.metadata.resourceVersion, rv);
  const stale = await call("PUT", `${PATH}/l`, {
    ...got.body,
    spec: { ...got.body.spec, holderIdentity: "c" },
  });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.reason, "Conflict");
  assert.deepEqual(kube.get("leases.coordination.k8s.io", "mesh-system", "l")?.spec, {
    ...got.body.spec,
    holderIdentity: "b",
  });
});

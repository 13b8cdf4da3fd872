import assert from "node:assert/strict";
import { type JsonObject, startFakeKube } from "./fake_kube.ts";

const CRD: JsonObject = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.example.mesh.io" },
  spec: {
    group: "example.mesh.io",
    scope: "Namespaced",
    names: { plural: "widgets", singular: "widget", kind: "Widget" },
    versions: [{
      name: "v1",
      served: true,
      storage: true,
      schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
    }],
  },
};
const WIDGETS = "/apis/example.mesh.io/v1/namespaces/default/widgets";

Deno.test("fake kube: a PUT without resourceVersion is refused (422) for custom resources and CRDs, allowed for built-in types", async () => {
  await using kube = await startFakeKube({ objects: [CRD] });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${kube.url}${path}`, {
      method,
      headers: { ...kube.authHeaders, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  const made = await call("POST", WIDGETS, { metadata: { name: "w" }, spec: { size: 1 } });
  assert.equal(made.status, 201);

  const bare = await call("PUT", `${WIDGETS}/w`, { metadata: { name: "w" }, spec: { size: 2 } });
  assert.equal(bare.status, 422);
  assert.equal(bare.body.reason, "Invalid");
  assert.equal(
    bare.body.message,
    'widgets.example.mesh.io "w" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
  );
  assert.deepEqual(bare.body.details.causes, [{
    reason: "FieldValueInvalid",
    message: "Invalid value: 0x0: must be specified for an update",
    field: "metadata.resourceVersion",
  }]);
  // Nothing changed, and the conditional form works.
  const got = await call("GET", `${WIDGETS}/w`);
  assert.equal(got.body.spec.size, 1);
  const ok = await call("PUT", `${WIDGETS}/w`, { ...got.body, spec: { size: 3 } });
  assert.equal(ok.status, 200);
  assert.equal(ok.body.spec.size, 3);
  // A missing object is 404 before the precondition.
  const missing = await call("PUT", `${WIDGETS}/nope`, { metadata: { name: "nope" } });
  assert.equal(missing.status, 404);

  // The CRD itself: refused the same way.
  const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.mesh.io";
  const crd = await call("GET", crdPath);
  const { resourceVersion: _rv, ...crdMeta } = crd.body.metadata;
  const crdBare = await call("PUT", crdPath, { ...crd.body, metadata: crdMeta });
  assert.equal(crdBare.status, 422);

  // A ConfigMap (AllowUnconditionalUpdate): an unconditional update is applied.
  const cms = "/api/v1/namespaces/default/configmaps";
  assert.equal(
    (await call("POST", cms, { metadata: { name: "c" }, data: { a: "1" } })).status,
    201,
  );
  const cm = await call("PUT", `${cms}/c`, { metadata: { name: "c" }, data: { a: "2" } });
  assert.equal(cm.status, 200);
  assert.equal(cm.body.data.a, "2");
});

import assert from "node:assert/strict";
import { allSchemas, meshctlSchemas } from "../model/mod.ts";
import { createMemoryStore } from "./memory.ts";
import { ConflictError, ValidationError } from "./types.ts";
import {
  checkUnversionedAndMissing,
  eventLines,
  fixture,
  fixtures,
  recordEvents,
  withLabel,
} from "./_testutil.ts";

Deno.test("createMemoryStore() round-trips every kind", async () => {
  const store = createMemoryStore();
  for (const obj of await fixtures()) {
    const schema = allSchemas.find((s) => s.kind === obj.kind)!;
    const created = await store.create(obj);
    assert.ok(created.metadata.resourceVersion, `${obj.kind} has a resourceVersion`);
    const got = await store.get(schema.type, obj.metadata.name, "default");
    assert.deepEqual(got, created);
    assert.deepEqual(got!.spec, obj.spec, `${obj.kind} spec round-trips`);
    assert.deepEqual(await store.list(schema.type), [created]);
    assert.deepEqual(await store.list(schema.type, "other"), []);
  }
  await store.close();
});

Deno.test("createMemoryStore() watch delivers ADDED, MODIFIED, DELETED in order", async () => {
  const store = createMemoryStore(meshctlSchemas);
  const rec = recordEvents(store);
  const vs = await fixture("VirtualService");
  const dr = await fixture("DestinationRule");
  const a = await store.create(vs);
  await store.create(dr);
  await store.update(withLabel(a, "x", "1"));
  await store.delete("virtualservice", vs.metadata.name, "default");
  assert.deepEqual(eventLines(rec.events), [
    "ADDED VirtualService/default/reviews",
    "ADDED DestinationRule/default/reviews",
    "MODIFIED VirtualService/default/reviews",
    "DELETED VirtualService/default/reviews",
  ]);
  assert.equal(rec.events[2].object.metadata.labels?.x, "1");
  rec.close();
  await store.close();
});

Deno.test("createMemoryStore() rejects duplicates, stale versions and missing objects", async () => {
  const store = createMemoryStore();
  const vs = await fixture("VirtualService");
  const v1 = await store.create(vs);
  await assert.rejects(store.create(vs), ConflictError);
  const v2 = await store.update(withLabel(v1, "a", "b"));
  assert.notEqual(v2.metadata.resourceVersion, v1.metadata.resourceVersion);
  await assert.rejects(store.update(withLabel(v1, "a", "c")), (e: Error) => {
    assert.ok(e instanceof ConflictError);
    assert.match(e.message, /resourceVersion "\d+" is stale/);
    return true;
  });
  await checkUnversionedAndMissing(store, vs, v2);
  await assert.rejects(store.list("nosuchtype"), /Unknown config type "nosuchtype"/);
  await store.close();
});

Deno.test("createMemoryStore() validates on the way in and normalises the group", async () => {
  const store = createMemoryStore();
  const vs = await fixture("VirtualService");
  const bad = structuredClone(vs);
  bad.spec = { hosts: ["reviews"], http: [{ route: [{ destination: {} }] }] };
  await assert.rejects(store.create(bad), (e: Error) => {
    assert.ok(e instanceof ValidationError);
    assert.ok(e.issues.length >= 1);
    assert.match(
      e.message,
      /VirtualService\/default\/reviews: spec\.http\[0\]\.route\[0\]\.destination\.host/,
    );
    return true;
  });
  const istio = structuredClone(vs);
  istio.apiVersion = "networking.istio.io/v1alpha3";
  delete istio.metadata.namespace;
  const stored = await store.create(istio);
  assert.equal(stored.apiVersion, "networking.mesh.io/v1alpha3");
  assert.equal(stored.metadata.namespace, "default");
  // copies: mutating a result does not change the store
  stored.spec.hosts = ["changed"];
  assert.deepEqual((await store.get("virtualservice", "reviews", "default"))!.spec.hosts, [
    "reviews",
  ]);
  await store.close();
});

Deno.test("createMemoryStore() lists by namespace, hands out copies, refuses writes once closed", async () => {
  const store = createMemoryStore();
  const vs = await fixture("VirtualService");
  await store.create(vs);
  await store.create({ ...vs, metadata: { ...vs.metadata, namespace: "team" } });
  assert.deepEqual(
    (await store.list("virtualservice", "team")).map((o) => o.metadata.namespace),
    ["team"],
  );
  assert.equal((await store.list("virtualservice")).length, 2);
  // what get and list return are copies
  const got = (await store.get("virtualservice", vs.metadata.name, "team"))!;
  got.metadata.labels = { changed: "yes" };
  (await store.list("virtualservice"))[0].metadata.labels = { changed: "yes" };
  for (const o of await store.list("virtualservice")) assert.equal(o.metadata.labels, undefined);
  await store.close();
  const closed = /^Error: Config store is closed$/;
  await assert.rejects(store.create({ ...vs, metadata: { ...vs.metadata, name: "new" } }), closed);
  await assert.rejects(store.update(got), closed);
  await assert.rejects(store.delete("virtualservice", vs.metadata.name, "team"), closed);
  // reads still answer from what was there
  assert.equal((await store.list("virtualservice")).length, 2);
});

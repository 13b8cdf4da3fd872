import assert from "node:assert/strict";
import { allSchemas } from "../model/mod.ts";
import type { RestConfig } from "../kube/rest.ts";
import { readKubeSnapshot } from "./kube_snapshot.ts";

const schemas = allSchemas.filter((s) => ["VirtualService", "DestinationRule"].includes(s.kind));
const VS = "/apis/networking.mesh.io/v1alpha3";

const vs = (name: string, namespace?: string, hosts: string[] = [name]) => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "VirtualService",
  metadata: {
    name,
    ...(namespace ? { namespace } : {}),
    resourceVersion: "7",
    uid: "u-1",
    labels: { app: name },
    annotations: { note: "n" },
    creationTimestamp: "2026-01-02T03:04:05Z",
    generation: 3,
    managedFields: [{ manager: "kubectl" }], // not kept
  },
  spec: { hosts, http: [{ route: [{ destination: { host: hosts[0] ?? name } }] }] },
});

/** A RestConfig answering GETs from `routes` (path without query → pages, or a status). */
function fakeRest(
  answer: (path: string, query: URLSearchParams) => { status: number; body: string },
) {
  const asked: string[] = [];
  let closed = false;
  const rest: RestConfig = {
    server: "https://api.test:6443",
    namespace: "ctx-ns",
    get(path) {
      asked.push(path);
      const [p, q] = path.split("?");
      return Promise.resolve(answer(p, new URLSearchParams(q)));
    },
    close() {
      closed = true;
    },
  };
  return { rest, asked, closed: () => closed };
}

const ok = (items: unknown[], cont = "") => ({
  status: 200,
  body: JSON.stringify({ items, metadata: cont ? { continue: cont } : {} }),
});

Deno.test("readKubeSnapshot() lists every type page by page and serves get/list from it", async () => {
  const { rest, asked, closed } = fakeRest((path, q) => {
    if (path === `${VS}/virtualservices`) {
      // two pages: the second asked with the first one's continue token
      return q.get("continue") === "p2"
        ? ok([vs("a", "team"), vs("c")])
        : ok([vs("b", "default"), vs("a", "default")], "p2");
    }
    return { status: 200, body: "{}" }; // no items, no metadata: an empty list
  });
  const store = await readKubeSnapshot({ rest, schemas });
  assert.deepEqual(asked.sort(), [
    `${VS}/destinationrules?limit=500`,
    `${VS}/virtualservices?limit=500`,
    `${VS}/virtualservices?limit=500&continue=p2`,
  ]);
  // all namespaces; an object without a namespace gets the context's
  assert.equal(store.namespace, "");
  assert.equal(store.defaultNamespace, "ctx-ns");
  const all = await store.list("virtualservice");
  assert.deepEqual(all.map((o) => `${o.metadata.namespace}/${o.metadata.name}`), [
    "ctx-ns/c",
    "default/a",
    "default/b",
    "team/a",
  ]);
  assert.equal(all[0].metadata.resourceVersion, "7");
  assert.deepEqual((await store.list("virtualservice", "default")).map((o) => o.metadata.name), [
    "a",
    "b",
  ]);
  assert.deepEqual(await store.list("destinationrule"), []);
  assert.equal((await store.get("virtualservice", "b", "default"))?.metadata.name, "b");
  const got = await store.get("virtualservice", "a", "team");
  // the metadata a user sees: these fields, nothing else of the API's
  assert.deepEqual(got?.metadata, {
    name: "a",
    namespace: "team",
    resourceVersion: "7",
    uid: "u-1",
    labels: { app: "a" },
    annotations: { note: "n" },
    creationTimestamp: "2026-01-02T03:04:05Z",
    generation: 3,
  });
  assert.equal(await store.get("virtualservice", "a", "elsewhere"), undefined);
  // what callers get are copies: changing them changes nothing in the snapshot
  got!.metadata.name = "changed";
  all[0].metadata.name = "changed";
  assert.equal((await store.get("virtualservice", "a", "team"))?.metadata.name, "a");
  assert.equal((await store.list("virtualservice"))[0].metadata.name, "c");
  await assert.rejects(store.get("nosuchkind", "a", "team"), /nosuchkind/);
  await assert.rejects(store.list("nosuchkind"), /nosuchkind/);
  assert.deepEqual(store.errors(), []);
  // read-only
  for (
    const write of [
      store.create(vs("x")),
      store.update(vs("x")),
      store.delete("virtualservice", "a", "team"),
    ]
  ) {
    await assert.rejects(write, /This view of the config store is read-only/);
  }
  assert.throws(() => store.watch(() => {}), /cannot be watched/);
  await store.resync();
  assert.equal(closed(), false);
  await store.close();
  assert.equal(closed(), true);
});

Deno.test("readKubeSnapshot() restricted to a namespace lists only there and defaults to it", async () => {
  const { rest, asked } = fakeRest(() => ok([vs("a")]));
  const store = await readKubeSnapshot({ rest, schemas, namespace: "team a" });
  assert.deepEqual(asked.sort(), [
    `${VS}/namespaces/team%20a/destinationrules?limit=500`,
    `${VS}/namespaces/team%20a/virtualservices?limit=500`,
  ]);
  assert.equal(store.namespace, "team a");
  assert.equal(store.defaultNamespace, "team a");
  assert.equal((await store.get("virtualservice", "a", "team a"))?.metadata.name, "a");
  // an explicit default namespace wins
  const other = await readKubeSnapshot({
    rest: fakeRest(() => ok([vs("a")])).rest,
    schemas,
    namespace: "team",
    defaultNamespace: "dflt",
  });
  assert.equal(other.defaultNamespace, "dflt");
  assert.equal((await other.list("virtualservice"))[0].metadata.namespace, "dflt");
});

Deno.test("readKubeSnapshot() reports a type without its CRD and invalid objects, keeps the rest", async () => {
  const { rest } = fakeRest((path) =>
    path.endsWith("/destinationrules")
      ? { status: 404, body: "404 page not found" }
      : ok([vs("good", "default"), vs("bad", "default", ["*"]), "not an object"])
  );
  const store = await readKubeSnapshot({ rest, schemas });
  assert.deepEqual(await store.list("destinationrule"), []);
  assert.deepEqual((await store.list("virtualservice")).map((o) => o.metadata.name), ["good"]);
  const errors = store.errors();
  assert.equal(errors.length, 2);
  assert.deepEqual(errors.find((e) => e.type === "destinationrule"), {
    type: "destinationrule",
    message:
      "cannot list destinationrules.networking.mesh.io/v1alpha3 from https://api.test:6443: " +
      "not found (is the custom resource definition installed?)",
  });
  const bad = errors.find((e) => e.type === "virtualservice")!;
  assert.equal(bad.object, "VirtualService/default/bad");
  assert.match(bad.message, /hosts/);
  // errors() hands out copies
  errors[0].message = "changed";
  assert.notEqual(store.errors()[0].message, "changed");
});

Deno.test("readKubeSnapshot() fails naming the collection and the reason", async () => {
  const open = (answer: Parameters<typeof fakeRest>[0]) =>
    readKubeSnapshot({ rest: fakeRest(answer).rest, schemas: schemas.slice(0, 1) });
  const what = `Cannot open the orchestrator config store: cannot list ${schemas[0].plural}` +
    `.networking.mesh.io/v1alpha3 from https://api.test:6443: `;
  const escaped = what.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  await assert.rejects(
    open(() => ({
      status: 403,
      body: JSON.stringify({ kind: "Status", message: "forbidden: user x", reason: "Forbidden" }),
    })),
    new RegExp(`^Error: ${escaped}forbidden: user x \\(HTTP 403\\)$`),
  );
  await assert.rejects(
    open(() => ({ status: 200, body: "<html>" })),
    new RegExp(`^Error: ${escaped}the answer is not JSON$`),
  );
  await assert.rejects(
    open(() => {
      throw new Error("connection refused");
    }),
    new RegExp(`^Error: ${escaped}connection refused$`),
  );
});

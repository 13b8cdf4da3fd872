import assert from "node:assert/strict";
import { type JsonObject, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { allSchemas, crdManifests, ingressSchema } from "../model/mod.ts";
import type { ConfigObject } from "../model/types.ts";
import { createKubeStore, type KubeStore, type KubeStoreOptions } from "./kube.ts";
import { openStoreFromURL } from "./mod.ts";
import { ConflictError, NotFoundError, ValidationError } from "./types.ts";
import {
  checkUnversionedAndMissing,
  eventLines,
  fixture,
  fixtures,
  recordEvents,
  recordingLogger,
  until,
  withLabel,
} from "./_testutil.ts";

type Fake = Awaited<ReturnType<typeof startFakeKube>>;

async function withKube(
  fn: (store: KubeStore, kube: Fake) => Promise<void>,
  opts: Omit<KubeStoreOptions, "kubeconfigPath"> = {},
  objects: JsonObject[] = [],
) {
  const kube = await startFakeKube({
    objects: [...(crdManifests() as JsonObject[]), ...objects],
    namespaces: ["default", "team", "mesh-system"],
  });
  try {
    const store = await createKubeStore({
      kubeconfigPath: kube.kubeconfigPath,
      resyncMs: 0,
      ...opts,
    });
    try {
      await fn(store, kube);
    } finally {
      await store.close();
    }
  } finally {
    await kube.close();
  }
}

const vsRaw = (name: string, ns: string, host = name): JsonObject => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "VirtualService",
  metadata: { name, namespace: ns },
  spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
});

Deno.test("createKubeStore() round-trips every kind through the API server", async () => {
  await withKube(async (store, kube) => {
    for (const obj of await fixtures()) {
      const schema = allSchemas.find((s) => s.kind === obj.kind)!;
      const created = await store.create(obj);
      assert.ok(created.metadata.resourceVersion, `${obj.kind} has a resourceVersion`);
      assert.deepEqual(created.spec, obj.spec, `${obj.kind} spec`);
      // served from the watch cache right after the write
      assert.deepEqual(await store.get(schema.type, obj.metadata.name, "default"), created);
      assert.equal((await store.list(schema.type)).length, 1);
      const stored = kube.get(`${schema.plural}.${schema.group}`, "default", obj.metadata.name);
      assert.deepEqual(stored?.spec, obj.spec, `${obj.kind} stored by the API server`);
    }
    // a second store lists what is there
    const again = await createKubeStore({ kubeconfigPath: kube.kubeconfigPath, resyncMs: 0 });
    try {
      for (const s of allSchemas) assert.equal((await again.list(s.type)).length, 1, s.type);
    } finally {
      await again.close();
    }
  });
});

Deno.test("createKubeStore() maps conflicts, missing objects and API validation errors", async () => {
  await withKube(async (store, kube) => {
    const vs = await fixture("VirtualService");
    const v1 = await store.create(vs);
    await assert.rejects(store.create(vs), ConflictError);
    const v2 = await store.update(withLabel(v1, "a", "b"));
    assert.notEqual(v2.metadata.resourceVersion, v1.metadata.resourceVersion);
    assert.equal(
      (await store.get("virtualservice", "reviews", "default"))?.metadata.labels?.a,
      "b",
    );
    await assert.rejects(store.update(withLabel(v1, "a", "c")), ConflictError);
    await checkUnversionedAndMissing(store, vs, v2);
    const bad = structuredClone(vs);
    bad.spec = { hosts: [] };
    await assert.rejects(store.create(bad), ValidationError);
    kube.failNext({ method: "POST", code: 422, reason: "Invalid", message: "spec.hosts: Invalid" });
    const other = structuredClone(vs);
    other.metadata.name = "other";
    await assert.rejects(store.create(other), (e: Error) => {
      assert.ok(e instanceof ValidationError);
      assert.match(e.message, /spec\.hosts: Invalid/);
      return true;
    });
    await store.delete("virtualservice", "reviews", "default");
    assert.equal(await store.get("virtualservice", "reviews", "default"), undefined);
  });
});

Deno.test("createKubeStore() watch delivers changes made by others, in order", async () => {
  await withKube(async (store, kube) => {
    const rec = recordEvents(store);
    kube.upsert(vsRaw("a", "default"));
    kube.upsert(vsRaw("b", "team"));
    kube.upsert(vsRaw("a", "default", "a2"));
    // same content again: no event
    kube.upsert(vsRaw("a", "default", "a2"));
    kube.remove("virtualservices.networking.mesh.io", "team", "b");
    await until(() => rec.events.length >= 4, 3000, "4 events");
    assert.deepEqual(eventLines(rec.events), [
      "ADDED VirtualService/default/a",
      "ADDED VirtualService/team/b",
      "MODIFIED VirtualService/default/a",
      "DELETED VirtualService/team/b",
    ]);
    assert.deepEqual(rec.events[2].object.spec.hosts, ["a2"]);
    assert.deepEqual((await store.list("virtualservice")).map((o) => o.metadata.name), ["a"]);
    rec.close();
  });
});

Deno.test("createKubeStore() relists after 410 Gone and repairs missed changes", async () => {
  await withKube(async (store, kube) => {
    const rec = recordEvents(store);
    // the next watch reconnect of virtual services fails, leaving a gap
    kube.failNext({ method: "GET", path: /\/virtualservices$/, code: 500 });
    await until(
      () => kube.requests.some((r) => r.path.endsWith("/virtualservices") && r.status === 500),
      5000,
      "the watch reconnect to fail",
    );
    kube.upsert(vsRaw("missed", "default"));
    kube.expireHistory();
    await until(async () => !!(await store.get("virtualservice", "missed", "default")), 5000);
    // after the failure: a watch from the old version (answered 410), a relist, a new watch
    const sequence = () => {
      const vs = kube.requests.filter((r) => r.path.endsWith("/virtualservices"));
      return vs.slice(vs.findIndex((r) => r.status === 500) + 1)
        .map((r) => (r.search.includes("watch") ? "watch" : "list"));
    };
    await until(() => sequence().length >= 3, 3000, "the watch to resume");
    assert.deepEqual(sequence().slice(0, 3), ["watch", "list", "watch"]);
    assert.deepEqual(eventLines(rec.events), ["ADDED VirtualService/default/missed"]);
    rec.close();
  }, { watchTimeoutSeconds: 1 });
});

Deno.test("createKubeStore() periodic resync repairs the cache", async () => {
  await withKube(
    async (store, kube) => {
      const before = kube.requests.filter((r) => r.path.endsWith("/virtualservices")).length;
      await store.resync();
      const lists = kube.requests.filter((r) =>
        r.path.endsWith("/virtualservices") && !r.search.includes("watch")
      );
      assert.ok(lists.length >= 2, "relisted");
      assert.ok(kube.requests.filter((r) => r.path.endsWith("/virtualservices")).length > before);
      assert.deepEqual((await store.list("virtualservice")).map((o) => o.metadata.name), ["pre"]);
    },
    {},
    [vsRaw("pre", "default")],
  );
});

Deno.test("createKubeStore() restricted to a namespace sees and writes only that namespace", async () => {
  await withKube(
    async (store, kube) => {
      assert.deepEqual(
        (await store.list("virtualservice")).map((o) =>
          `${o.metadata.namespace}/${o.metadata.name}`
        ),
        ["team/t"],
      );
      assert.equal(await store.get("virtualservice", "d", "default"), undefined);
      const vs = await fixture("VirtualService");
      await assert.rejects(store.create(vs), /Namespace "default" is outside this config store/);
      delete vs.metadata.namespace;
      const created = await store.create(vs);
      assert.equal(created.metadata.namespace, "team");
      kube.upsert(vsRaw("late", "default"));
      kube.upsert(vsRaw("late", "team"));
      await until(async () => !!(await store.get("virtualservice", "late", "team")), 3000);
      assert.deepEqual(
        (await store.list("virtualservice")).map((o) => o.metadata.name),
        ["late", "reviews", "t"],
      );
      assert.ok(
        kube.requests.every((r) =>
          !r.path.includes("virtualservices") || r.path.includes("/namespaces/team/")
        ),
      );
    },
    { namespace: "team" },
    [vsRaw("d", "default"), vsRaw("t", "team")],
  );
});

Deno.test("createKubeStore() reports a type whose definition is not installed as empty", async () => {
  const kube = await startFakeKube({
    objects: crdManifests().filter((c) =>
      (c as { spec: { names: { kind: string } } }).spec.names.kind !== "Gateway"
    ) as JsonObject[],
  });
  try {
    const store = await createKubeStore({ kubeconfigPath: kube.kubeconfigPath, resyncMs: 0 });
    try {
      assert.deepEqual(await store.list("gateway"), []);
      assert.equal(store.errors().length, 1);
      assert.match(
        store.errors()[0].message,
        /cannot list gateways\.networking\.mesh\.io.*not found/,
      );
    } finally {
      await store.close();
    }
  } finally {
    await kube.close();
  }
});

Deno.test("createKubeStore() lists a type again on resync once its definition is installed", async () => {
  const isGateway = (c: unknown) =>
    (c as { spec: { names: { kind: string } } }).spec.names.kind === "Gateway";
  const kube = await startFakeKube({
    objects: crdManifests().filter((c) => !isGateway(c)) as JsonObject[],
  });
  try {
    const store = await createKubeStore({ kubeconfigPath: kube.kubeconfigPath, resyncMs: 0 });
    try {
      const rec = recordEvents(store);
      assert.equal(store.errors().length, 1);
      // a missing type is not watched
      assert.ok(kube.requests.every((r) => !r.path.endsWith("/gateways") || r.status === 404));
      kube.upsert(crdManifests().find(isGateway) as JsonObject);
      const gw = await fixture("Gateway");
      kube.upsert(gw as unknown as JsonObject);
      await store.resync();
      assert.deepEqual(store.errors(), []);
      assert.deepEqual((await store.list("gateway")).map((o) => o.metadata.name), [
        gw.metadata.name,
      ]);
      // and is watched from then on
      kube.remove("gateways.networking.mesh.io", "default", gw.metadata.name);
      await until(async () => (await store.list("gateway")).length === 0, 3000, "the delete");
      assert.deepEqual(eventLines(rec.events), [
        `ADDED Gateway/default/${gw.metadata.name}`,
        `DELETED Gateway/default/${gw.metadata.name}`,
      ]);
      rec.close();
    } finally {
      await store.close();
    }
  } finally {
    await kube.close();
  }
});

Deno.test("createKubeStore() rejects naming the type and server when a type cannot be listed", async () => {
  await using kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  kube.failNext({ method: "GET", path: /\/virtualservices$/, code: 403, message: "forbidden" });
  await assert.rejects(
    createKubeStore({ kubeconfigPath: kube.kubeconfigPath, resyncMs: 0 }),
    (e: Error) => {
      assert.equal(
        e.message,
        `Cannot open the orchestrator config store: cannot list ` +
          `virtualservices.networking.mesh.io/v1alpha3 from ${kube.url}: forbidden (HTTP 403)`,
      );
      return true;
    },
  );
  await until(() => kube.watchCount === 0, 3000, "every watch to close");
});

Deno.test("openStoreFromURL() opens orch://, fs:// and mem:// stores and rejects others", async () => {
  const kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  const dir = await Deno.makeTempDir();
  try {
    const orch = await openStoreFromURL(`orch://${kube.kubeconfigPath}`, { resyncMs: 0 });
    await orch.create(await fixture("VirtualService"));
    assert.equal((await orch.list("virtualservice")).length, 1);
    await orch.close();
    const fs = await openStoreFromURL(`fs://${dir}`);
    assert.deepEqual(await fs.list("virtualservice"), []);
    await fs.close();
    const mem = await openStoreFromURL("mem://");
    assert.deepEqual(await mem.list("gateway"), []);
    await mem.close();
    await assert.rejects(
      openStoreFromURL("ftp://x"),
      /config store URL "ftp:\/\/x".*unsupported scheme/,
    );
    await assert.rejects(openStoreFromURL("/etc/mesh"), /Invalid config store URL "\/etc\/mesh"/);
    await assert.rejects(openStoreFromURL("fs://"), /fs:\/\/ needs a directory/);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await kube.close();
  }
});

Deno.test("createKubeStore() keeps the last valid version of an object made invalid in the orchestrator", async () => {
  await withKube(
    async (store, kube) => {
      const rec = recordEvents(store);
      const invalid = vsRaw("a", "default");
      invalid.spec = { hosts: ["a"] }; // no http or tcp routes: refused by our validation
      kube.upsert(invalid);
      kube.upsert(vsRaw("b", "default"));
      await until(async () => !!(await store.get("virtualservice", "b", "default")), 3000);
      assert.deepEqual((await store.get("virtualservice", "a", "default"))?.spec.hosts, ["a"]);
      assert.deepEqual(store.errors().map((e) => e.object), ["VirtualService/default/a"]);
      assert.match(store.errors()[0].message, /a virtual service must set http, tls or tcp routes/);
      // the name is in `object`, not repeated in the message
      assert.equal(
        store.errors()[0].message,
        "spec: a virtual service must set http, tls or tcp routes",
      );
      kube.upsert(vsRaw("a", "default", "fixed"));
      await until(() => store.errors().length === 0, 3000, "the error to clear");
      assert.deepEqual(eventLines(rec.events), [
        "ADDED VirtualService/default/b",
        "MODIFIED VirtualService/default/a",
      ]);
      rec.close();
    },
    {},
    [vsRaw("a", "default")],
  );
});

Deno.test("createKubeStore() refuses a negative or non-finite resyncMs", async () => {
  const kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  try {
    for (const resyncMs of [-1, NaN, Infinity]) {
      await assert.rejects(
        createKubeStore({ kubeconfigPath: kube.kubeconfigPath, resyncMs }),
        new RegExp(`^Error: Invalid orchestrator store resyncMs ${resyncMs}: must be >= 0$`),
      );
    }
  } finally {
    await kube.close();
  }
});

/** A logger recording `level message` lines. */
Deno.test("createKubeStore() serves the labels and annotations of an object and writes those given", async () => {
  const pre = vsRaw("pre", "default");
  pre.metadata = {
    name: "pre",
    namespace: "default",
    labels: { app: "reviews" },
    annotations: { "mesh.io/note": "kept" },
  };
  await withKube(
    async (store, kube) => {
      const got = await store.get("virtualservice", "pre", "default");
      assert.deepEqual(got?.metadata.labels, { app: "reviews" });
      assert.deepEqual(got?.metadata.annotations, { "mesh.io/note": "kept" });
      assert.equal(got?.metadata.namespace, "default");
      assert.equal(
        got?.metadata.resourceVersion,
        kube.get("virtualservices.networking.mesh.io", "default", "pre")?.metadata
          .resourceVersion,
      );
      const vs = await fixture("VirtualService");
      vs.metadata.labels = { tier: "web" };
      vs.metadata.annotations = { owner: "team-a" };
      await store.create(vs);
      const stored = kube.get("virtualservices.networking.mesh.io", "default", vs.metadata.name);
      assert.deepEqual(stored?.metadata.labels, { tier: "web" });
      assert.deepEqual(stored?.metadata.annotations, { owner: "team-a" });
      assert.equal(stored?.apiVersion, "networking.mesh.io/v1alpha3");
      assert.equal(stored?.kind, "VirtualService");
    },
    {},
    [pre],
  );
});

Deno.test("createKubeStore() list filters by namespace, sorts, and hands out copies", async () => {
  await withKube(
    async (store) => {
      const names = async (ns?: string) =>
        (await store.list("virtualservice", ns)).map((o) =>
          `${o.metadata.namespace}/${o.metadata.name}`
        );
      assert.deepEqual(await names(), ["default/a", "default/b", "team/c"]);
      assert.deepEqual(await names("team"), ["team/c"]);
      assert.deepEqual(await names("default"), ["default/a", "default/b"]);
      const got = (await store.get("virtualservice", "a", "default"))!;
      got.spec.hosts = ["changed"];
      (await store.list("virtualservice"))[0].spec.hosts = ["changed"];
      assert.deepEqual((await store.get("virtualservice", "a", "default"))?.spec.hosts, ["a"]);
      await assert.rejects(store.list("nosuchtype"), /nosuchtype/);
    },
    {},
    [vsRaw("b", "default"), vsRaw("c", "team"), vsRaw("a", "default")],
  );
});

Deno.test("createKubeStore() errors name the object and the operation", async () => {
  await withKube(async (store, kube) => {
    const vs = await fixture("VirtualService");
    await store.create(vs);
    await assert.rejects(store.create(vs), (e: Error) => {
      assert.ok(e instanceof ConflictError);
      assert.match(e.message, /^create VirtualService\/default\/reviews: /);
      return true;
    });
    const missing = structuredClone(vs);
    missing.metadata.name = "nope";
    await assert.rejects(
      store.update(missing),
      /^NotFoundError: update VirtualService\/default\/nope: /,
    );
    await assert.rejects(store.delete("virtualservice", "nope", "default"), (e: Error) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.message, 'VirtualService "nope" not found in namespace "default"');
      return true;
    });
    kube.failNext({ method: "DELETE", code: 500, message: "etcd down" });
    await assert.rejects(
      store.delete("virtualservice", "reviews", "default"),
      (e: Error) => {
        assert.ok(!(e instanceof NotFoundError));
        assert.equal(e.message, "delete VirtualService/default/reviews: etcd down (HTTP 500)");
        return true;
      },
    );
    kube.failNext({ method: "PUT", code: 500, message: "etcd down" });
    const cur = (await store.get("virtualservice", "reviews", "default"))!;
    await assert.rejects(
      store.update(withLabel(cur, "a", "b")),
      /^Error: update VirtualService\/default\/reviews: etcd down \(HTTP 500\)$/,
    );
    assert.ok(await store.get("virtualservice", "reviews", "default"), "still there");
  });
});

Deno.test("createKubeStore() logs an invalid object once, naming it, and forgets it when deleted", async () => {
  const { lines, log } = recordingLogger();
  const invalid = vsRaw("bad", "default");
  invalid.spec = { hosts: ["bad"] };
  await withKube(
    async (store, kube) => {
      assert.deepEqual(lines, [
        "error Invalid virtualservices object in the orchestrator (ignored): " +
        "VirtualService/default/bad: spec: a virtual service must set http, tls or tcp routes",
      ]);
      // seen again (relist, a change of another field): not logged again
      await store.resync();
      const again = structuredClone(invalid);
      again.metadata = { name: "bad", namespace: "default", labels: { x: "y" } };
      kube.upsert(again);
      kube.upsert(vsRaw("ok", "default"));
      await until(async () => !!(await store.get("virtualservice", "ok", "default")), 3000);
      assert.equal(lines.length, 1);
      assert.deepEqual(store.errors().map((e) => e.object), ["VirtualService/default/bad"]);
      kube.remove("virtualservices.networking.mesh.io", "default", "bad");
      await until(() => store.errors().length === 0, 3000, "the error to clear");
      assert.equal(await store.get("virtualservice", "bad", "default"), undefined);
    },
    { log },
    [invalid],
  );
});

Deno.test("createKubeStore() logs a type that cannot be listed once, and its recovery clears errors()", async () => {
  const isGateway = (c: unknown) =>
    (c as { spec: { names: { kind: string } } }).spec.names.kind === "Gateway";
  await using kube = await startFakeKube({
    objects: crdManifests().filter((c) => !isGateway(c)) as JsonObject[],
  });
  const { lines, log } = recordingLogger();
  const store = await createKubeStore({ kubeconfigPath: kube.kubeconfigPath, resyncMs: 0, log });
  try {
    await store.resync();
    await store.resync();
    assert.deepEqual(lines, [
      `warn Orchestrator config store: cannot list gateways.networking.mesh.io/v1alpha3 from ${kube.url}: not found (is the custom resource definition installed?)`,
    ]);
    assert.deepEqual(store.errors().map((e) => [e.type, e.object]), [["gateway", undefined]]);
  } finally {
    await store.close();
  }
});

Deno.test("createKubeStore() refuses writes once closed", async () => {
  await withKube(async (store) => {
    const vs = await fixture("VirtualService");
    await store.close();
    await store.close();
    await assert.rejects(store.create(vs), /^Error: Config store is closed$/);
    await assert.rejects(store.update(vs), /^Error: Config store is closed$/);
    await assert.rejects(
      store.delete("virtualservice", "reviews", "default"),
      /^Error: Config store is closed$/,
    );
    await store.resync();
  });
});

Deno.test("createKubeStore() writes objects without a namespace to the default namespace", async () => {
  await withKube(
    async (store, kube) => {
      assert.equal(store.defaultNamespace, "team");
      assert.equal(store.namespace, "");
      const vs = await fixture("VirtualService");
      delete vs.metadata.namespace;
      const created = await store.create(vs);
      assert.equal(created.metadata.namespace, "team");
      assert.ok(kube.get("virtualservices.networking.mesh.io", "team", vs.metadata.name));
    },
    { defaultNamespace: "team" },
  );
});

Deno.test("createKubeStore() relists without events for unchanged objects, and a deleted invalid object emits none", async () => {
  const invalid = vsRaw("bad", "default");
  invalid.spec = { hosts: ["bad"] };
  await withKube(
    async (store, kube) => {
      const rec = recordEvents(store);
      await store.resync();
      await store.resync();
      kube.remove("virtualservices.networking.mesh.io", "default", "bad");
      await until(() => store.errors().length === 0, 3000, "the error to clear");
      kube.upsert(vsRaw("late", "default"));
      await until(() => rec.events.length > 0, 3000, "the ADDED event");
      assert.deepEqual(eventLines(rec.events), ["ADDED VirtualService/default/late"]);
      assert.deepEqual((await store.list("virtualservice")).map((o) => o.metadata.name), [
        "late",
        "pre",
      ]);
      rec.close();
    },
    { log: false },
    [vsRaw("pre", "default"), invalid],
  );
});

/** "resolved" when `p` settles within `ms`, else "waiting" (`p` is left to run). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<"resolved" | "waiting"> {
  let timer: number | undefined;
  const waiting = new Promise<"waiting">((r) => timer = setTimeout(() => r("waiting"), ms));
  const settled = p.then(() => "resolved" as const, () => "resolved" as const);
  try {
    return await Promise.race([settled, waiting]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves once the store's virtual-service watch is open: a change made from now on reaches the
 * store through it (a watch opened later would replay it from the history, past the gate).
 */
async function vsWatchOpen(store: KubeStore, kube: Fake) {
  kube.upsert(vsRaw("probe", "mesh-system"));
  await until(
    async () => !!(await store.get("virtualservice", "probe", "mesh-system")),
    5000,
    "the watch to open",
  );
}

Deno.test("createKubeStore() writes return only once the watch shows them: a get after a write sees it", async () => {
  await withKube(
    async (store, kube) => {
      await vsWatchOpen(store, kube);
      const order: string[] = [];
      const h = store.watch((e) => {
        if (e.object.metadata.name === "a") order.push(`${e.type} a`);
      });
      const gate = kube.watchGate;
      /** Runs a write with its watch event held: it must wait for the event, then return. */
      let others = 0;
      const slowWatch = async <T>(what: string, write: () => Promise<T>): Promise<T> => {
        gate.hold({ name: "a" });
        const p = write().then((r) => (order.push(`${what} returned`), r));
        await until(() => gate.held === 1, 5000, `the watch event of the ${what}`);
        // the API server has answered; the store's cache does not show the write yet, and the
        // change of another object that it does show is not the one the write waits for
        const other = `other${++others}`;
        kube.upsert(vsRaw(other, "mesh-system"));
        await until(async () => !!(await store.get("virtualservice", other, "mesh-system")));
        assert.equal(await settlesWithin(p, 300), "waiting", `the ${what} waits for its event`);
        gate.release();
        return await p;
      };
      const a = await slowWatch(
        "create",
        () => store.create(vsRaw("a", "default") as unknown as ConfigObject),
      );
      assert.deepEqual(await store.get("virtualservice", "a", "default"), a);
      const a2 = await slowWatch("update", () => store.update(withLabel(a, "v", "2")));
      assert.notEqual(a2.metadata.resourceVersion, a.metadata.resourceVersion);
      assert.deepEqual(await store.get("virtualservice", "a", "default"), a2);
      await slowWatch("delete", () => store.delete("virtualservice", "a", "default"));
      assert.equal(await store.get("virtualservice", "a", "default"), undefined);
      assert.deepEqual(order, [
        "ADDED a",
        "create returned",
        "MODIFIED a",
        "update returned",
        "DELETED a",
        "delete returned",
      ]);
      h.close();
    },
    // the default writeWaitMs (2 s): far longer than the 300 ms looked at
    {},
  );
});

Deno.test("createKubeStore() close() ends a write waiting for its watch event", async () => {
  await withKube(
    async (store, kube) => {
      await vsWatchOpen(store, kube);
      kube.watchGate.hold();
      const p = store.create(vsRaw("a", "default") as unknown as ConfigObject);
      await until(() => kube.watchGate.held === 1, 5000, "the watch event of the create");
      await store.close();
      // returns what the API server answered, without waiting out writeWaitMs
      assert.equal((await p).metadata.name, "a");
      kube.watchGate.release();
    },
    { writeWaitMs: 600_000 },
  );
});

Deno.test("createKubeStore() a relist repairs changes the watch missed: a delete, an edit, an invalid object's delete", async () => {
  const invalid = vsRaw("bad", "default");
  invalid.spec = { hosts: ["bad"] };
  await withKube(
    async (store, kube) => {
      await vsWatchOpen(store, kube);
      const rec = recordEvents(store);
      const gate = kube.watchGate;
      const vss = "virtualservices.networking.mesh.io";
      gate.drop({ name: "gone" });
      gate.drop({ name: "edited" });
      gate.drop({ name: "bad" });
      kube.remove(vss, "default", "gone");
      kube.upsert(vsRaw("edited", "default", "edited2"));
      kube.remove(vss, "default", "bad");
      // a later change arrives: the watch went on past the three it missed
      kube.upsert(vsRaw("later", "default"));
      await until(async () => !!(await store.get("virtualservice", "later", "default")), 5000);
      assert.equal(gate.dropped, 3);
      assert.ok(await store.get("virtualservice", "gone", "default"), "missed: still cached");
      assert.deepEqual(store.errors().map((e) => e.object), ["VirtualService/default/bad"]);
      await store.resync();
      assert.equal(await store.get("virtualservice", "gone", "default"), undefined);
      assert.deepEqual(
        (await store.get("virtualservice", "edited", "default"))?.spec.hosts,
        ["edited2"],
      );
      assert.deepEqual(store.errors(), []);
      assert.deepEqual(
        (await store.list("virtualservice", "default")).map((o) => o.metadata.name),
        ["edited", "kept", "later"],
      );
      assert.deepEqual(eventLines(rec.events), [
        "ADDED VirtualService/default/later",
        "MODIFIED VirtualService/default/edited",
        "DELETED VirtualService/default/gone",
      ]);
      rec.close();
    },
    { log: false },
    [vsRaw("gone", "default"), vsRaw("edited", "default"), vsRaw("kept", "default"), invalid],
  );
});

Deno.test("createKubeStore() writes an Ingress given in extensions/v1beta1 as networking.k8s.io/v1", async () => {
  await withKube(
    async (store, kube) => {
      await store.create({
        apiVersion: "extensions/v1beta1",
        kind: "Ingress",
        metadata: { name: "echo", namespace: "default" },
        spec: {
          rules: [{
            host: "echo.example.com",
            http: { paths: [{ path: "/echo", backend: { serviceName: "echo", servicePort: 80 } }] },
          }],
        },
      });
      const stored = kube.get("ingresses.networking.k8s.io", "default", "echo");
      assert.equal(stored?.apiVersion, "networking.k8s.io/v1");
      assert.deepEqual(stored?.spec, {
        rules: [{
          host: "echo.example.com",
          http: {
            paths: [{
              path: "/echo",
              pathType: "ImplementationSpecific",
              backend: { service: { name: "echo", port: { number: 80 } } },
            }],
          },
        }],
      });
    },
    { schemas: [ingressSchema] },
  );
});

Deno.test("createKubeStore() rejects naming the server when it cannot be reached", async () => {
  const kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  const kubeconfig = await Deno.makeTempFile({ prefix: "mesh-kubeconfig-" });
  try {
    await kube.writeKubeconfig(kubeconfig);
    await kube.close();
    const { lines, log } = recordingLogger();
    await assert.rejects(
      createKubeStore({ kubeconfigPath: kubeconfig, resyncMs: 0, log }),
      (e: Error) => {
        assert.match(e.message, /^Cannot open the orchestrator config store: cannot list /);
        assert.ok(e.message.includes(kube.url), e.message);
        return true;
      },
    );
    assert.ok(lines.length > 0 && lines.every((l) => l.startsWith("warn ")), lines.join("\n"));
  } finally {
    await Deno.remove(kubeconfig);
  }
});

Deno.test("createKubeStore() update without a resourceVersion reads the current one before writing; writes return once seen", async () => {
  await withKube(async (store, kube) => {
    const created = await store.create(vsRaw("a", "default") as unknown as ConfigObject);
    const noVersion = withLabel(created, "k", "v");
    delete noVersion.metadata.resourceVersion;
    kube.requests.length = 0;
    const updated = await store.update(noVersion);
    assert.equal(updated.metadata.labels?.k, "v");
    // an API server refuses an update of a custom resource without one (the fake takes it)
    const path = "/apis/networking.mesh.io/v1alpha3/namespaces/default/virtualservices/a";
    assert.deepEqual(
      kube.requests.filter((r) => r.path === path).map((r) => `${r.method} ${r.status}`),
      ["GET 200", "PUT 200"],
    );
    // each write returned as soon as its watch event came (a wait for anything else would be
    // the 600 s writeWaitMs)
    await store.delete("virtualservice", "a", "default");
    assert.equal(await store.get("virtualservice", "a", "default"), undefined);
  }, { writeWaitMs: 600_000 });
});

Deno.test("createKubeStore() an object left out as invalid can be fixed by an update; a failed read of it is an error", async () => {
  const invalid = vsRaw("bad", "default");
  invalid.spec = { hosts: ["bad"] };
  await withKube(
    async (store, kube) => {
      await vsWatchOpen(store, kube);
      assert.equal(await store.get("virtualservice", "bad", "default"), undefined);
      const fixed = vsRaw("bad", "default") as unknown as ConfigObject;
      kube.failNext({ method: "GET", path: /\/virtualservices\/bad$/, code: 500 });
      await assert.rejects(
        store.update(structuredClone(fixed)),
        /^Error: update VirtualService\/default\/bad: .*HTTP 500/,
      );
      // its event held: the update waits for an object the cache does not hold yet
      kube.watchGate.hold({ name: "bad" });
      const p = store.update(structuredClone(fixed));
      await until(() => kube.watchGate.held === 1, 5000, "the update's event");
      kube.watchGate.release();
      const updated = await p;
      assert.deepEqual(updated.spec, fixed.spec);
      assert.deepEqual((await store.get("virtualservice", "bad", "default"))?.spec, fixed.spec);
      assert.deepEqual(store.errors(), []);
    },
    { log: false, writeWaitMs: 600_000 },
    [invalid],
  );
});

import assert from "node:assert/strict";
import type { ConfigObject, ServiceInstance } from "../../lib/model/mod.ts";
import type { StoreEvent } from "../../lib/store/mod.ts";
import { type Proxy, TYPE_URLS } from "../../lib/xds/mod.ts";
import type { PushEvent, XdsServer } from "../../lib/xds/server/mod.ts";
import { defaultMeshConfig } from "../../lib/model/mod.ts";
import { ResourceCache } from "../../lib/xds/server/mod.ts";
import { ConfigSnapshot, DiscoveryModel } from "./model.ts";
import { quiet } from "./_test_util.ts";
import { ENDPOINT_BATCH_MS, PushRouter } from "./pushes.ts";

const vs = (name: string): ConfigObject => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "VirtualService",
  metadata: { name, namespace: "default" },
  spec: { hosts: [name] },
});

/** An instance of `host`:80 at `address` (port 8080). */
const inst = (host: string, address: string): ServiceInstance => ({
  hostname: host,
  servicePort: { name: "http", port: 80, protocol: "HTTP" },
  address,
  port: 8080,
  labels: {},
  locality: "",
  serviceAccount: "",
});

const gw = (name: string): ConfigObject => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "Gateway",
  metadata: { name, namespace: "default" },
  spec: {},
});

Deno.test("PushRouter.configChanged() invalidates at once and makes one push event of a task's changes", async () => {
  const pushes: PushEvent[] = [];
  let invalidated = 0;
  const router = new PushRouter({
    registry: { services: () => [], instances: () => [] },
    model: { invalidate: () => invalidated++ } as unknown as DiscoveryModel,
    server: { push: (ev: PushEvent) => pushes.push(ev) } as unknown as XdsServer<Proxy>,
    restCache: null,
  });
  for (let i = 0; i < 5000; i++) router.configChanged(); // a file's 5000 watch events in a row
  assert.equal(invalidated, 5000, "a request later in the task sees the new configuration");
  assert.deepEqual(pushes, [], "the push event waits for the end of the task");
  await Promise.resolve();
  assert.deepEqual(pushes, [{ kind: "config" }]);
  router.configChanged();
  await Promise.resolve();
  assert.equal(pushes.length, 2, "a change in a later task is pushed again");
  router.close();
});

Deno.test("ConfigSnapshot.all() and byKind() follow every change and hand out copies", async () => {
  let handler: (ev: StoreEvent) => void = () => {};
  const configs = new ConfigSnapshot();
  await configs.open(
    {
      schemas: [{ type: "virtual-service" }, { type: "gateway" }],
      watch: (h: (ev: StoreEvent) => void) => (handler = h, { close() {} }),
      list: (type: string) => Promise.resolve(type === "gateway" ? [gw("g")] : [vs("b")]),
    } as unknown as Parameters<ConfigSnapshot["open"]>[0],
    () => {},
  );
  const names = (os: ConfigObject[]) => os.map((o) => `${o.kind}/${o.metadata.name}`);
  assert.deepEqual(names(configs.all()), ["Gateway/g", "VirtualService/b"]);
  handler({ type: "ADDED", object: vs("a") });
  assert.deepEqual(names(configs.byKind("VirtualService")), [
    "VirtualService/a",
    "VirtualService/b",
  ]);
  handler({ type: "DELETED", object: vs("b") });
  handler({ type: "DELETED", object: gw("g") });
  assert.deepEqual(names(configs.all()), ["VirtualService/a"]);
  assert.deepEqual(configs.byKind("Gateway"), []);
  configs.byKind("VirtualService").pop();
  configs.all().pop();
  assert.deepEqual(names(configs.all()), ["VirtualService/a"], "callers get copies");
  configs.close();
});

/** A DiscoveryModel over a snapshot whose store events the test sends with `emit`. */
async function changingModel(onChange: () => void) {
  let handler: (ev: StoreEvent) => void = () => {};
  const configs = new ConfigSnapshot();
  await configs.open(
    {
      schemas: [{ type: "virtual-service" }],
      watch: (h: (ev: StoreEvent) => void) => (handler = h, { close() {} }),
      list: () => Promise.resolve([vs("first")]),
    } as unknown as Parameters<ConfigSnapshot["open"]>[0],
    onChange,
  );
  const model = new DiscoveryModel({
    registry: { services: () => [], instances: () => [] },
    configs,
    meshConfig: defaultMeshConfig(),
    domain: "cluster.local",
    cache: new ResourceCache(),
    logger: quiet,
  });
  return { model, emit: (ev: StoreEvent) => handler(ev) };
}

Deno.test("PushRouter with prepareSliceMs serves the old context whole while the new one is built in slices, then pushes it", async () => {
  const late: { router?: PushRouter } = {};
  const { model, emit } = await changingModel(() => late.router!.configChanged());
  const pushes: { event: PushEvent; virtualServices: number }[] = [];
  const router = late.router = new PushRouter({
    registry: { services: () => [], instances: () => [] },
    model,
    server: {
      push: (event: PushEvent) =>
        pushes.push({ event, virtualServices: model.context().configs.virtualServices.length }),
    } as unknown as XdsServer<Proxy>,
    restCache: null,
    prepareSliceMs: 0, // pause at every step
  });
  const before = model.context();
  const generation = model.generation;
  for (let i = 0; i < 600; i++) emit({ type: "ADDED", object: vs(`vs-${i}`) });
  assert.equal(model.stale, true);
  // timers in a chain: each sees what a request arriving then would read
  const readDuringPreparation: boolean[] = [];
  const tick = () => {
    if (pushes.length) return;
    readDuringPreparation.push(model.context() === before);
    setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  const deadline = Date.now() + 10_000;
  while (!pushes.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(pushes, [{ event: { kind: "config" }, virtualServices: 601 }]);
  assert.ok(
    readDuringPreparation.length >= 3,
    `the preparation let ${readDuringPreparation.length} timer(s) run before the push`,
  );
  assert.ok(readDuringPreparation.every(Boolean), "every read before the push saw the old context");
  assert.equal(before.configs.virtualServices.length, 1, "the old context is left whole");
  assert.equal(model.generation, generation + 1, "one rebuild for the 600 changes");
  assert.equal(model.stale, false);
  router.close();
});

Deno.test("DiscoveryModel.prepare() keeps a newer context a read built after invalidate() meanwhile", async () => {
  const { model, emit } = await changingModel(() => {});
  model.context();
  emit({ type: "ADDED", object: vs("second") });
  model.invalidateLater();
  let newer: ReturnType<DiscoveryModel["context"]> | undefined;
  const done = await model.prepare(() => {
    if (!newer) {
      emit({ type: "ADDED", object: vs("third") });
      model.invalidate();
      newer = model.context();
    }
    return Promise.resolve();
  });
  assert.equal(done, false);
  assert.equal(model.context(), newer, "the read's context (with the later change) stays");
  assert.equal(model.context().configs.virtualServices.length, 3);
  assert.equal(model.stale, false);
});

Deno.test("PushRouter.storeChanged() leaves WorkloadEntries and endpoint edits of ServiceEntries to the registry, and counts each trigger once", async () => {
  const pushes: PushEvent[] = [];
  const triggers: string[] = [];
  let invalidated = 0;
  const router = new PushRouter({
    registry: { services: () => [], instances: () => [] },
    model: {
      invalidate: () => invalidated++,
      updateEndpoints: () => true,
      context: () => ({ services: [] }),
    } as unknown as DiscoveryModel,
    server: {
      push: (ev: PushEvent) => pushes.push(ev),
      watchedNames: () => new Set<string>(),
      hasProxy: () => false,
    } as unknown as XdsServer<Proxy>,
    restCache: null,
    metrics: { trigger: (t) => triggers.push(t) },
  });
  const se = (address: string, exportTo?: string[]): ConfigObject => ({
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "ServiceEntry",
    metadata: { name: "db", namespace: "default" },
    spec: { hosts: ["db.internal"], endpoints: [{ address }], ...(exportTo ? { exportTo } : {}) },
  });
  const we: ConfigObject = { ...se("x"), kind: "WorkloadEntry", spec: { address: "10.0.0.9" } };
  const mod = (object: ConfigObject): StoreEvent => ({ type: "MODIFIED", object });
  router.storeChanged(mod(se("10.0.0.2")), se("10.0.0.1"));
  router.storeChanged({ type: "ADDED", object: we }, undefined);
  router.storeChanged({ type: "DELETED", object: we }, we);
  await Promise.resolve();
  assert.deepEqual([invalidated, pushes, triggers], [0, [], []], "the registry reports those");
  router.storeChanged(mod(se("10.0.0.2", ["."])), se("10.0.0.2"));
  router.storeChanged({ type: "ADDED", object: vs("a") }, undefined);
  router.storeChanged({ type: "DELETED", object: se("10.0.0.2") }, se("10.0.0.2"));
  await Promise.resolve();
  assert.equal(invalidated, 3);
  assert.deepEqual(pushes, [{ kind: "config" }]);
  assert.deepEqual(triggers, ["config", "config", "config"]);
  router.registryChanged("services");
  await Promise.resolve();
  assert.deepEqual(triggers.slice(3), ["service"], "a services event is not also a config trigger");
  assert.equal(invalidated, 4);
  router.registryChanged("endpoints");
  assert.deepEqual(triggers.slice(4), ["endpoint"]);
  assert.equal(invalidated, 4, "an endpoints event rebuilds no configuration");
  router.close();
});

Deno.test("PushRouter compares only the instances of the hostnames an endpoints event names, and every instance when one names none", async () => {
  let instances = [inst("a", "10.0.0.1"), inst("b", "10.0.0.2")];
  const updated: string[][] = [];
  const pushes: PushEvent[] = [];
  const router = new PushRouter({
    registry: { services: () => [], instances: () => instances },
    model: {
      updateEndpoints: (changed: Set<string>) => (updated.push([...changed].sort()), true),
      context: () => ({ services: [] }),
      invalidate() {},
    } as unknown as DiscoveryModel,
    server: {
      push: (ev: PushEvent) => pushes.push(ev),
      watchedNames: () => new Set(["outbound|80||a", "outbound|80||b", "outbound|80||c"]),
      hasProxy: (address: string) => address === "10.0.0.3", // a proxy runs a's new instance
    } as unknown as XdsServer<Proxy>,
    restCache: null,
  });
  // a's and b's instances both move, but the event names a only: b is not compared
  instances = [inst("a", "10.0.0.3"), inst("b", "10.0.0.4")];
  router.registryChanged("endpoints", new Set(["a"]));
  assert.deepEqual(updated, [["a|80"]]);
  assert.deepEqual(pushes.shift(), { kind: "eds", clusters: ["outbound|80||a"] });
  assert.deepEqual(pushes.shift()?.kind, "config", "a proxy's own instance came");
  // a's last instance leaves (the proxy's: its listeners change) and c's first comes, in two
  // events held back together: one update naming both keys
  instances = [inst("b", "10.0.0.4"), inst("c", "10.0.0.5")];
  router.registryChanged("endpoints", new Set(["a"]));
  router.registryChanged("endpoints", new Set(["c"]));
  assert.equal(updated.length, 1, "held back (under ENDPOINT_BATCH_MS since the last)");
  await new Promise((r) => setTimeout(r, ENDPOINT_BATCH_MS + 20));
  assert.deepEqual(updated[1], ["a|80", "c|80"]);
  assert.deepEqual(pushes, [
    { kind: "eds", clusters: ["outbound|80||a", "outbound|80||c"] },
    { kind: "config", types: [TYPE_URLS.cluster, TYPE_URLS.listener] },
  ]);
  pushes.length = 0;
  // an event that names no host compares every instance: b's earlier move is found now
  await new Promise((r) => setTimeout(r, ENDPOINT_BATCH_MS + 20));
  router.registryChanged("endpoints");
  assert.deepEqual(updated[2], ["b|80"]);
  assert.deepEqual(pushes, [{ kind: "eds", clusters: ["outbound|80||b"] }]);
  // held back together, an event that names no host and one that does: every instance compared
  instances = [inst("b", "10.0.0.6"), inst("c", "10.0.0.7")];
  router.registryChanged("endpoints");
  router.registryChanged("endpoints", new Set(["c"]));
  await new Promise((r) => setTimeout(r, ENDPOINT_BATCH_MS + 20));
  assert.deepEqual(updated[3], ["b|80", "c|80"]);
  // a services event compares every instance too: b's move is not found again later
  instances = [inst("b", "10.0.0.8"), inst("c", "10.0.0.7")];
  router.registryChanged("services");
  await new Promise((r) => setTimeout(r, ENDPOINT_BATCH_MS + 20));
  router.registryChanged("endpoints");
  assert.deepEqual(updated[4], [], "nothing left to find");
  router.close();
});

Deno.test("PushRouter looks up the instances of an event's hosts through the registry's instancesOf when it has one", () => {
  let all = [inst("a", "10.0.0.1"), inst("b", "10.0.0.2")];
  const looked: string[][] = [];
  const updated: string[][] = [];
  const router = new PushRouter({
    registry: {
      services: () => [],
      instances: () => all,
      instancesOf: (hosts) => (looked.push([...hosts]), all.filter((i) => hosts.has(i.hostname))),
    },
    model: {
      updateEndpoints: (changed: Set<string>) => (updated.push([...changed]), true),
      context: () => ({ services: [] }),
    } as unknown as DiscoveryModel,
    server: {
      push() {},
      watchedNames: () => new Set<string>(),
      hasProxy: () => false,
    } as unknown as XdsServer<Proxy>,
    restCache: null,
  });
  all = [inst("a", "10.0.0.3"), inst("b", "10.0.0.2")];
  router.registryChanged("endpoints", new Set(["a"]));
  assert.deepEqual(looked, [["a"]]);
  assert.deepEqual(updated, [["a|80"]]);
  router.close();
});

/**
 * A model whose context preparations the test ends by hand (`finish()`): like the real one, a
 * change made while one runs leaves it stale, so the router prepares again.
 */
function preparedByHand() {
  let changes = 0, builtAt = 0;
  const running: { resolve: () => void; reject: () => void; at: number }[] = [];
  let calls = 0, atOnce = 0, most = 0;
  const model = {
    invalidate: () => builtAt = ++changes,
    invalidateLater: () => void changes++,
    get stale() {
      return builtAt !== changes;
    },
    prepare: () => {
      calls++;
      most = Math.max(most, ++atOnce);
      return new Promise<boolean>((resolve, reject) =>
        running.push({
          at: changes,
          resolve: () => {
            atOnce--;
            builtAt = Math.max(builtAt, running.shift()!.at);
            resolve(true);
          },
          reject: () => {
            atOnce--;
            running.shift();
            reject(new Error("the build failed"));
          },
        })
      );
    },
  } as unknown as DiscoveryModel;
  return {
    model,
    /** Ends the oldest preparation. */
    finish: () => running[0].resolve(),
    /** Fails the oldest preparation. */
    fail: () => running[0].reject(),
    get calls() {
      return calls;
    },
    /** The most preparations that ran at once. */
    get most() {
      return most;
    },
  };
}

/** Lets timers and microtasks run until `pred` holds (fails after 5 s). */
async function until(pred: () => boolean, what: string) {
  const deadline = Date.now() + 5000;
  while (!pred()) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

/**
 * A PushRouter over fakes that record what it does: its `pushes`, the keys of each endpoint
 * update (`updates`) and the rebuilds (`invalidated`); `instances` is what the registry holds.
 * `model` adds to (or replaces parts of) the fake model, e.g. {@link preparedByHand}'s.
 */
function recordingRouter(o: {
  instances?: ServiceInstance[];
  /** EDS names the proxies watch. */
  watched?: string[];
  /** Addresses where a connected proxy runs. */
  proxies?: string[];
  services?: { hostname: string; resolution: string }[];
  model?: DiscoveryModel;
  prepareSliceMs?: number;
}) {
  const rec = {
    instances: o.instances ?? [],
    pushes: [] as PushEvent[],
    updates: [] as string[][],
    invalidated: 0,
  };
  const defaults: Record<string, unknown> = {
    invalidate: () => rec.invalidated++,
    updateEndpoints: (changed: Set<string>) => (rec.updates.push([...changed]), true),
    context: () => ({ services: o.services ?? [] }),
  };
  // the given model's own methods win (preparedByHand's invalidate keeps its staleness)
  const model = (o.model ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(defaults)) if (!(k in model)) model[k] = v;
  const router = new PushRouter({
    registry: { services: () => [], instances: () => rec.instances },
    model: model as unknown as DiscoveryModel,
    server: {
      push: (ev: PushEvent) => rec.pushes.push(ev),
      watchedNames: () => new Set(o.watched ?? []),
      hasProxy: (address: string) => (o.proxies ?? []).includes(address),
    } as unknown as XdsServer<Proxy>,
    restCache: null,
    prepareSliceMs: o.prepareSliceMs,
  });
  return { router, rec };
}

Deno.test("PushRouter runs one context preparation at a time, prepares again for a change made meanwhile, and pushes each", async () => {
  const m = preparedByHand();
  const { router, rec: { pushes } } = recordingRouter({ model: m.model, prepareSliceMs: 0 });
  router.configChanged();
  await until(() => m.calls === 1, "the first preparation");
  router.configChanged(); // while it runs
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(m.calls, 1, "no second preparation while one runs");
  m.finish();
  await until(() => m.calls === 2, "the preparation of the change made meanwhile");
  assert.deepEqual(pushes, [{ kind: "config" }], "the first context pushed");
  m.finish();
  await until(() => pushes.length === 2, "the second push");
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(m.calls, 2, "nothing left to prepare");
  router.configChanged(); // once the preparations are over, a change prepares again
  await until(() => m.calls === 3, "a later change's preparation");
  m.finish();
  await until(() => pushes.length === 3, "its push");
  assert.equal(m.most, 1, "never two at once");
  router.close();
});

Deno.test("PushRouter.close() stops a context preparation, scheduled or running, and endpoint events held back", async () => {
  const m = preparedByHand();
  const { router, rec } = recordingRouter({
    instances: [inst("a", "10.0.0.1")],
    watched: ["outbound|80||a"],
    model: m.model,
    prepareSliceMs: 0,
  });
  // running: its context is not pushed once closed
  router.configChanged();
  await until(() => m.calls === 1, "the preparation");
  // held back: an endpoints event within ENDPOINT_BATCH_MS of the last one
  rec.instances = [inst("a", "10.0.0.2")];
  router.registryChanged("endpoints", new Set(["a"]));
  rec.instances = [inst("a", "10.0.0.3")];
  router.registryChanged("endpoints", new Set(["a"]));
  assert.equal(rec.updates.length, 1);
  rec.pushes.length = 0;
  router.close();
  m.finish();
  await new Promise((r) => setTimeout(r, ENDPOINT_BATCH_MS + 30));
  assert.deepEqual([rec.pushes, rec.updates.length], [[], 1], "nothing after close()");

  // scheduled: close() in the same task as the change's microtask
  const m2 = preparedByHand();
  const other = recordingRouter({ model: m2.model, prepareSliceMs: 0 });
  other.router.configChanged();
  await Promise.resolve(); // the push event's microtask schedules the preparation
  other.router.close();
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(
    [m2.calls, other.rec.pushes],
    [0, []],
    "a preparation scheduled before close() never runs",
  );
});

Deno.test("PushRouter: a services event handles the endpoint events held back, which are not handled again", async () => {
  const { router, rec } = recordingRouter({
    instances: [inst("a", "10.0.0.1")],
    watched: ["outbound|80||a"],
  });
  rec.instances = [inst("a", "10.0.0.2")];
  router.registryChanged("endpoints", new Set(["a"]));
  rec.instances = [inst("a", "10.0.0.3")];
  router.registryChanged("endpoints", new Set(["a"])); // held back
  router.registryChanged("services");
  assert.equal(rec.invalidated, 1, "the services event recomputes everything");
  await new Promise((r) => setTimeout(r, ENDPOINT_BATCH_MS + 30));
  assert.equal(rec.updates.length, 1, "the held-back event is not handled on its own afterwards");
  // and an endpoints event right after a services event is handled at once
  rec.instances = [inst("a", "10.0.0.4")];
  router.registryChanged("services");
  router.registryChanged("endpoints", new Set(["a"]));
  assert.equal(rec.updates.length, 2, "handled at once: a services event holds back nothing");
  router.close();
});

Deno.test("PushRouter pushes clusters and listeners besides EDS when a DNS service's endpoints change, and EDS alone for another", () => {
  /** A router (whose first endpoints event is handled at once) over these instances. */
  const routerOver = () =>
    recordingRouter({
      instances: [inst("dns.example", "10.0.0.1"), inst("static", "10.0.0.2")],
      watched: ["outbound|80||dns.example", "outbound|80||static"],
      services: [
        { hostname: "dns.example", resolution: "DNSLB" },
        { hostname: "static", resolution: "ClientSideLB" },
      ],
    });
  const one = routerOver();
  one.rec.instances = [inst("dns.example", "10.0.0.1"), inst("static", "10.0.0.3")];
  one.router.registryChanged("endpoints");
  one.router.close();
  assert.deepEqual(one.rec.pushes, [{ kind: "eds", clusters: ["outbound|80||static"] }]);
  // a DNS service's cluster carries its endpoints in CDS (STRICT_DNS), and listeners follow it
  const other = routerOver();
  other.rec.instances = [inst("dns.example", "10.0.0.9"), inst("static", "10.0.0.3")];
  other.router.registryChanged("endpoints");
  other.router.close();
  assert.deepEqual(other.rec.pushes, [
    { kind: "eds", clusters: ["outbound|80||dns.example", "outbound|80||static"] },
    { kind: "config", types: [TYPE_URLS.cluster, TYPE_URLS.listener] },
  ]);
});

Deno.test("PushRouter finds a proxy's own instance that left among several instances of its service", () => {
  // the proxy runs the first of a's two instances
  const { router, rec } = recordingRouter({
    instances: [inst("a", "10.0.0.1"), inst("a", "10.0.0.2")],
    watched: ["outbound|80||a"],
    proxies: ["10.0.0.1"],
  });
  rec.instances = [inst("a", "10.0.0.2")];
  router.registryChanged("endpoints", new Set(["a"]));
  assert.deepEqual(rec.pushes, [
    { kind: "eds", clusters: ["outbound|80||a"] },
    { kind: "config", types: [TYPE_URLS.cluster, TYPE_URLS.listener] },
  ], "its listeners change: it no longer serves a");
  router.close();
});

Deno.test("PushRouter: a context preparation that fails leaves the next read to build it, and the change is still pushed", async () => {
  const m = preparedByHand();
  let invalidated = 0;
  const { router, rec } = recordingRouter({
    model: Object.assign(m.model, { invalidate: () => invalidated++ }),
    prepareSliceMs: 0,
  });
  router.configChanged();
  await until(() => m.calls === 1, "the preparation");
  m.fail();
  await until(() => rec.pushes.length === 1, "the push");
  assert.deepEqual([rec.pushes, invalidated], [[{ kind: "config" }], 1]);
  router.close();
});

Deno.test("PushRouter.synced() rebuilds everything, pushes a full push, and compares later endpoint events with the instances then", () => {
  const { router, rec } = recordingRouter({
    instances: [inst("a", "10.0.0.1")],
    watched: ["outbound|80||a"],
  });
  rec.instances = [inst("a", "10.0.0.2")]; // what the registries held once synced
  router.synced();
  assert.deepEqual([rec.pushes.splice(0), rec.invalidated], [[{ kind: "full" }], 1]);
  router.registryChanged("endpoints", new Set(["a"]));
  assert.deepEqual(rec.updates, [[]], "nothing changed since the sync");
  assert.deepEqual(rec.pushes, [], "and nothing is pushed");
  router.close();
});

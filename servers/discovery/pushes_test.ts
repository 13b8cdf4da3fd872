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

import assert from "node:assert/strict";
import type { ConfigObject } from "../../lib/model/mod.ts";
import type { StoreEvent } from "../../lib/store/mod.ts";
import type { Proxy } from "../../lib/xds/mod.ts";
import type { PushEvent, XdsServer } from "../../lib/xds/server/mod.ts";
import { ConfigSnapshot, type DiscoveryModel } from "./model.ts";
import { PushRouter } from "./pushes.ts";

const vs = (name: string): ConfigObject => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "VirtualService",
  metadata: { name, namespace: "default" },
  spec: { hosts: [name] },
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

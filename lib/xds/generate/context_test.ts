/**
 * The indexes of a push context: which config wins when several name the same host (oldest
 * first, then namespace/name), which VirtualServices sidecars see, and which Gateways apply to
 * ingress proxies.
 */

import assert from "node:assert/strict";
import type { ConfigObject, Service, ServiceInstance } from "../../model/types.ts";
import { parseNodeId } from "../node.ts";
import {
  ECHO_INGRESS,
  model,
  PUBLIC_GW,
  PUBLIC_VS,
  SERVICES,
  WORLD_VS,
} from "../testdata/model.ts";
import { configOrder, deriveIndex, indexOf, prepareIndex, type PushIndex } from "./context.ts";
import type { PushContext } from "../types.ts";
import { selectedGateways } from "./gateway.ts";
import { buildRoutes } from "./routes.ts";

const WORLD = "world.default.svc.cluster.local";

function cfg(
  kind: string,
  name: string,
  spec: Record<string, unknown>,
  namespace?: string,
  creationTimestamp?: string,
): ConfigObject {
  return {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind,
    metadata: {
      name,
      ...(namespace === undefined ? {} : { namespace }),
      ...(creationTimestamp === undefined ? {} : { creationTimestamp }),
    },
    spec,
  };
}

Deno.test("configOrder() sorts oldest first, then by namespace, then by name; no timestamp first", () => {
  const objs = [
    cfg("X", "b", {}, "ns1", "2026-01-02T00:00:00Z"),
    cfg("X", "a", {}, "ns2", "2026-01-01T00:00:00Z"),
    cfg("X", "b", {}, "ns2", "2026-01-01T00:00:00Z"),
    cfg("X", "z", {}, "ns1", "2026-01-01T00:00:00Z"),
    cfg("X", "c", {}, undefined, "2026-01-01T00:00:00Z"),
    cfg("X", "y", {}, "ns9"),
  ];
  const names = (l: ConfigObject[]) =>
    l.map((o) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`);
  assert.deepEqual(names([...objs].sort(configOrder)), [
    "ns9/y",
    "/c",
    "ns1/z",
    "ns2/a",
    "ns2/b",
    "ns1/b",
  ]);
  assert.equal(configOrder(objs[1], objs[1]), 0);
});

Deno.test("indexOf(): the oldest DestinationRule of a host wins; one without a host is ignored", () => {
  const newer = cfg("DestinationRule", "new", { host: "world" }, "default", "2026-01-02T00:00:00Z");
  const older = cfg("DestinationRule", "old", { host: "world" }, "default", "2026-01-01T00:00:00Z");
  const hostless = cfg("DestinationRule", "none", {}, "default");
  const idx = indexOf(model({ configs: { destinationRules: [hostless, newer, older] } }));
  assert.equal(idx.destinationRuleByHost.get(WORLD)?.metadata.name, "old");
  assert.deepEqual([...idx.destinationRuleByHost.keys()], [WORLD]);
  // without a namespace a short host is not expanded
  const bare = indexOf(
    model({ configs: { destinationRules: [cfg("DestinationRule", "w", { host: "world" })] } }),
  );
  assert.deepEqual([...bare.destinationRuleByHost.keys()], ["world"]);
});

Deno.test("indexOf(): the first service of a hostname wins", () => {
  const dup: Service = { ...SERVICES[1], address: "10.9.0.1", registry: "Consul" };
  const base = model();
  const idx = indexOf({ ...base, services: [...base.services, dup] });
  assert.equal(idx.serviceByHost.get(WORLD)?.address, "10.2.0.1");
  assert.deepEqual(idx.servicesByPort.get(80)?.map((s) => s.hostname), [
    "hello.default.svc.cluster.local",
    WORLD,
  ]);
});

Deno.test("indexOf(): VirtualServices oldest first, all of a host kept, gateway-only ones not for sidecars", () => {
  const a = cfg(
    "VirtualService",
    "a",
    { hosts: ["world", 7], http: [] },
    "default",
    "2026-01-02T00:00:00Z",
  );
  const b = cfg(
    "VirtualService",
    "b",
    { hosts: ["world"], http: [] },
    "default",
    "2026-01-01T00:00:00Z",
  );
  const gwOnly = { ...PUBLIC_VS, spec: { ...PUBLIC_VS.spec, hosts: ["world"] } };
  const bare = cfg("VirtualService", "bare", { hosts: ["world"], gateways: ["gw", 3] });
  const idx = indexOf(model({ configs: { virtualServices: [a, b, gwOnly, bare] } }));
  assert.deepEqual(idx.virtualServices.map((v) => v.config.metadata.name), [
    "bare",
    "hello-public",
    "b",
    "a",
  ]);
  assert.deepEqual(idx.virtualServices[0].hosts, ["world"], "no namespace: short host kept");
  assert.deepEqual(idx.virtualServices[0].gateways, ["gw"]);
  assert.deepEqual(idx.virtualServices[3].hosts, [WORLD]);
  assert.deepEqual(idx.meshVsByHost.get(WORLD)?.map((v) => v.config.metadata.name), ["b", "a"]);
  // a sidecar's route to world is not changed by a VirtualService bound only to a Gateway
  const sidecar = parseNodeId("sidecar~10.0.1.1~hello-v1.default~default.svc.cluster.local");
  const onlyGw = model({
    configs: {
      virtualServices: [{ ...WORLD_VS, spec: { ...WORLD_VS.spec, gateways: ["public-gw"] } }],
    },
  });
  const [rc] = buildRoutes(onlyGw, sidecar, ["80"]);
  const vh = rc.virtual_hosts.find((v: { name: string }) => v.name === `${WORLD}:80`);
  assert.deepEqual(vh.routes, [{
    match: { prefix: "/" },
    route: { cluster: `outbound|80||${WORLD}`, timeout: { seconds: 0 } },
  }]);
});

Deno.test("indexOf(): Gateways oldest first, named <name>.<namespace>; ingress proxies get only Ingress ones", () => {
  const old = cfg("Gateway", "old", { selector: { app: "x" } }, "prod", "2026-01-01T00:00:00Z");
  const bare = cfg("Gateway", "bare", { selector: { app: "x" } });
  const ctx = model({ configs: { gateways: [PUBLIC_GW, old, bare], ingresses: [ECHO_INGRESS] } });
  const idx = indexOf(ctx);
  assert.deepEqual(idx.gateways.map((g) => [g.fqdn, g.fromIngress]), [
    ["bare", false],
    ["public-gw.default.svc.cluster.local", false],
    ["old.prod.svc.cluster.local", false],
    ["mesh-autogenerated-k8s-ingress.mesh-system.svc.cluster.local", true],
  ]);
  const ingress = parseNodeId("ingress~10.0.9.8~ingress.mesh-system~mesh-system.svc.cluster.local");
  assert.deepEqual(selectedGateways(ctx, ingress).map((g) => g.fqdn), [
    "mesh-autogenerated-k8s-ingress.mesh-system.svc.cluster.local",
  ]);
  assert.equal(indexOf(ctx), idx, "built once per context");
});

Deno.test("prepareIndex() pauses between batches and leaves the index indexOf() returns", async () => {
  const many = Array.from(
    { length: 1000 },
    (_, i) => cfg("VirtualService", `vs-${i}`, { hosts: [`svc-${i}`] }, "default"),
  );
  const base = model();
  const ctx = { ...base, configs: { ...base.configs, virtualServices: many } };
  const order: string[] = [];
  await prepareIndex(ctx, () => {
    order.push("pause");
    return Promise.resolve();
  });
  assert.ok(order.length >= 1000 / 256, `paused ${order.length} times`);
  const index = indexOf(ctx);
  assert.equal(indexOf(ctx), index, "built once, cached for the context");
  const fresh = indexOf({ ...ctx });
  assert.deepEqual(index, fresh, "the same index as one built without pauses");
  assert.equal(index.virtualServices.length, 1000);
});

Deno.test("prepareIndex() stops and caches nothing when the context is no longer wanted", async () => {
  const base = model();
  const ctx = { ...base };
  let pauses = 0;
  await prepareIndex(ctx, () => (pauses++, Promise.resolve()), () => false);
  assert.equal(pauses, 1, "stopped at the first pause");
  let rebuilt = 0;
  await prepareIndex(ctx, () => (rebuilt++, Promise.resolve()));
  assert.ok(rebuilt > 1, "nothing was cached: the next preparation builds it all");
});

Deno.test("deriveIndex() indexes a context with other instances for some keys as indexOf() would, from the old index", () => {
  const prev = model();
  const old = indexOf(prev);
  const key = (i: ServiceInstance) => `${i.hostname}|${i.servicePort.port}`;
  const w80 = prev.instances.find((i) => i.hostname === WORLD && i.servicePort.port === 80)!;
  // world:80 gets a new endpoint and loses its others; a key that had none gets one
  const instances = [
    ...prev.instances.filter((i) => key(i) !== key(w80)),
    { ...w80, address: "10.0.9.9" },
    { ...w80, servicePort: { ...w80.servicePort, port: 8081 }, address: "10.0.9.8" },
  ];
  const next = { ...prev, instances };
  const changed = new Set([key(w80), `${WORLD}|8081`]);
  deriveIndex(prev, next, changed, instances.filter((i) => changed.has(key(i))));
  const derived = indexOf(next);
  const fresh = indexOf({ ...next });
  const sorted = (m: Map<string, ServiceInstance[]>) => [...m].sort(([a], [b]) => a < b ? -1 : 1);
  assert.deepEqual(sorted(derived.instancesByHostPort), sorted(fresh.instancesByHostPort));
  const byIp = (idx: PushIndex, ctx: PushContext) =>
    [...new Set([...prev.instances, ...ctx.instances].map((i) => i.address))].sort().map((ip) => [
      ip,
      idx.instancesByIp.get(ip) ?? [],
    ]);
  assert.deepEqual(byIp(derived, next), byIp(fresh, next));
  assert.deepEqual(derived.instancesByIp.get("10.0.9.9"), [{ ...w80, address: "10.0.9.9" }]);
  const untouched = prev.instances.find((i) => !changed.has(key(i)) && i.address !== w80.address)!;
  assert.equal(
    derived.instancesByIp.get(untouched.address),
    old.instancesByIp.get(untouched.address),
    "an address no change touched is answered from the old index",
  );
  // derived from a derived index: w80's old address gets an instance back (touched earlier)
  const again = [...instances, { ...w80, servicePort: { ...w80.servicePort, port: 8082 } }];
  const next2 = { ...prev, instances: again };
  const changed2 = new Set([`${WORLD}|8082`]);
  deriveIndex(next, next2, changed2, again.filter((i) => changed2.has(key(i))));
  assert.deepEqual(byIp(indexOf(next2), next2), byIp(indexOf({ ...next2 }), next2));
  // the same two changes with no read in between: the touched addresses add up
  const p0 = { ...prev }, p1 = { ...next }, p2 = { ...next2 };
  indexOf(p0);
  deriveIndex(p0, p1, changed, instances.filter((i) => changed.has(key(i))));
  deriveIndex(p1, p2, changed2, again.filter((i) => changed2.has(key(i))));
  assert.deepEqual(byIp(indexOf(p2), p2), byIp(indexOf({ ...next2 }), p2));
  // a changed key whose other instances are the same (new objects): their addresses stay
  // answered from the old index
  const grown = [
    ...prev.instances.map((i) => key(i) === key(w80) ? { ...i, labels: { ...i.labels } } : i),
    { ...w80, address: "10.0.9.7" },
  ];
  const p3 = { ...prev, instances: grown };
  deriveIndex(prev, p3, new Set([key(w80)]), grown.filter((i) => key(i) === key(w80)));
  assert.equal(indexOf(p3).instancesByIp.get(w80.address), old.instancesByIp.get(w80.address));
  assert.deepEqual(byIp(indexOf(p3), p3), byIp(indexOf({ ...p3 }), p3));
  assert.equal(derived.services, old.services, "what does not depend on instances is shared");
  assert.equal(derived.virtualServices, old.virtualServices);
  assert.deepEqual(
    old.instancesByHostPort.get(key(w80))?.map((i) => i.address),
    prev.instances.filter((i) => key(i) === key(w80)).map((i) => i.address),
    "the old index is left as it was",
  );
  // nothing to derive from: the first use builds the index
  const other = { ...prev, instances };
  deriveIndex({ ...prev }, other, changed, []);
  assert.deepEqual(sorted(indexOf(other).instancesByHostPort), sorted(fresh.instancesByHostPort));
});

Deno.test("deriveIndex() past 4096 touched addresses indexes the new context whole at its first read, and later ones derive from that", () => {
  const prev = model();
  indexOf(prev);
  const key = (i: ServiceInstance) => `${i.hostname}|${i.servicePort.port}`;
  const w80 = prev.instances.find((i) => i.hostname === WORLD && i.servicePort.port === 80)!;
  const many = Array.from({ length: 5000 }, (_, n) => ({
    ...w80,
    address: `10.${100 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`,
  }));
  const step = (from: PushContext, instances: ServiceInstance[], changed: Set<string>) => {
    const next = { ...from, instances };
    deriveIndex(from, next, changed, instances.filter((i) => changed.has(key(i))));
    return next;
  };
  const sameAsFresh = (ctx: PushContext, ips: string[]) => {
    const fresh = indexOf({ ...ctx });
    for (const ip of ips) {
      assert.deepEqual(indexOf(ctx).instancesByIp.get(ip), fresh.instancesByIp.get(ip), ip);
    }
  };
  const i1 = [...prev.instances.filter((i) => key(i) !== key(w80)), ...many];
  const c1 = step(prev, i1, new Set([key(w80)]));
  // derived again before any read: nothing carried over, the answers still whole
  const moved = { ...many[0], address: "10.99.0.1" };
  const i2 = [...i1.filter((i) => i !== many[0]), moved];
  const c2 = step(c1, i2, new Set([key(w80)]));
  const ips = [w80.address, many[0].address, many[4999].address, "10.99.0.1", "10.1.0.1"];
  sameAsFresh(c2, ips);
  // after that read, a derivation roots at c2's whole index
  const i3 = i2.filter((i) => i !== moved);
  const c3 = step(c2, i3, new Set([key(w80)]));
  sameAsFresh(c3, ips);
  assert.equal(
    indexOf(c3).instancesByIp.get(many[1].address),
    indexOf(c2).instancesByIp.get(many[1].address),
    "an address untouched since c2 answered from c2's index",
  );
});

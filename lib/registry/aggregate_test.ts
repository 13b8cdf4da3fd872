import assert from "node:assert/strict";
import { aggregateRegistries, parseRegistries } from "./aggregate.ts";
import { createMockRegistry } from "./mock.ts";
import type { RegistryChangeHandler, ServiceInstance, ServiceRegistry } from "../model/types.ts";

Deno.test("parseRegistries() rejects unknown names and skips duplicates with a warning", () => {
  assert.throws(
    () => parseRegistries(["Kubernetes"]),
    /^Error: Service registry Kubernetes is not supported\. Supported: Orchestrator, RegistryA, RegistryB, PlatformC, Mock, ServiceEntry$/,
  );
  const r = parseRegistries(["Mock", "RegistryA", "Mock"]);
  assert.deepEqual(r.names, ["Mock", "RegistryA"]);
  assert.equal(r.warnings.length, 1);
  assert.match(r.warnings[0], /Mock registry specified multiple times/);
});

Deno.test("createMockRegistry() serves hello and world with two versions on loopback", async () => {
  const reg = aggregateRegistries([createMockRegistry("cluster.local")]);
  await reg.start();
  const hosts = reg.services().map((s) => s.hostname);
  assert.deepEqual(hosts, ["hello.default.svc.cluster.local", "world.default.svc.cluster.local"]);
  const grpc = reg.instances().filter((i) =>
    i.hostname === hosts[0] && i.servicePort.name === "grpc"
  );
  assert.deepEqual(grpc.map((i) => [i.address, i.port, i.labels.version]), [
    ["127.0.1.1", 17070, "v1"],
    ["127.0.1.2", 17070, "v2"],
  ]);
  await reg.stop();
});

Deno.test("aggregateRegistries() takes a service from the first registry and merges instances", async () => {
  const a = createMockRegistry("cluster.local");
  const b = createMockRegistry("cluster.local");
  const agg = aggregateRegistries([a, b]);
  await agg.start();
  assert.equal(agg.services().length, 2);
  assert.equal(agg.instances().length, a.instances().length + b.instances().length);
  await agg.stop();
});

Deno.test("aggregateRegistries() starts and stops every member and passes on each member's changes", async () => {
  const calls: string[] = [];
  const handlers: RegistryChangeHandler[] = [];
  const member = (name: string): ServiceRegistry => ({
    name,
    services: () => [],
    instances: () => [],
    onChange: (h) => void handlers.push(h),
    start: () => Promise.resolve(void calls.push(`start ${name}`)),
    stop: () => Promise.resolve(void calls.push(`stop ${name}`)),
  });
  const agg = aggregateRegistries([member("a"), member("b")]);
  assert.equal(agg.name, "Aggregate");
  const seen: string[] = [];
  agg.onChange((k, hosts) => seen.push(`1 ${k}${hosts ? ` ${[...hosts]}` : ""}`));
  agg.onChange((k) => seen.push(`2 ${k}`));
  await agg.start();
  assert.deepEqual(calls, ["start a", "start b"]);
  handlers[0]("endpoints", new Set(["x.ns"])); // a
  handlers[1]("services"); // b
  assert.deepEqual(seen, ["1 endpoints x.ns", "2 endpoints", "1 services", "2 services"]);
  await agg.stop();
  assert.deepEqual(calls, ["start a", "start b", "stop a", "stop b"]);
});

Deno.test("aggregateRegistries() hands out the same instance list until a member hands out another", () => {
  const a = [{ hostname: "a" }] as unknown as ServiceInstance[];
  let b = [{ hostname: "b" }] as unknown as ServiceInstance[];
  const member = (list: () => ServiceInstance[]): ServiceRegistry => ({
    name: "m",
    services: () => [],
    instances: list,
    onChange() {},
    start: () => Promise.resolve(),
    stop: () => Promise.resolve(),
  });
  const agg = aggregateRegistries([member(() => a), member(() => b)]);
  const first = agg.instances();
  assert.deepEqual(first.map((i) => i.hostname), ["a", "b"]);
  assert.equal(agg.instances(), first, "not copied again");
  b = [...b, { hostname: "c" } as unknown as ServiceInstance];
  assert.deepEqual(agg.instances().map((i) => i.hostname), ["a", "b", "c"]);
  const one = aggregateRegistries([member(() => a)]);
  assert.equal(one.instances(), a, "one member's list as it is");
  // the instances of some hosts: a member's own lookup, else its instances filtered
  const looked: string[][] = [];
  const withLookup: ServiceRegistry = {
    ...member(() => assert.fail("not listed")),
    instancesOf: (hosts) => (looked.push([...hosts]), b.filter((i) => hosts.has(i.hostname))),
  };
  const z = [...a, { hostname: "z" }] as unknown as ServiceInstance[];
  const both = aggregateRegistries([member(() => z), withLookup]);
  assert.deepEqual(both.instancesOf!(new Set(["a", "c"])).map((i) => i.hostname), ["a", "c"]);
  assert.deepEqual(looked, [["a", "c"]]);
});

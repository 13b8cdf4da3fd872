import assert from "node:assert/strict";
import { allSchemas, MAX_DEPTH } from "../model/mod.ts";
import { createFileStore } from "./file.ts";
import { createMemoryStore } from "./memory.ts";
import {
  alreadyExists,
  byNsName,
  canonicalJson,
  contentVersion,
  notFound,
  staleVersion,
  Watchers,
} from "./_common.ts";
import type { ConfigObject } from "../model/types.ts";
import { ConflictError, NotFoundError, ValidationError } from "./types.ts";
import { quietLogger } from "../log/testing.ts";

const vs = (kind: unknown, name: unknown, namespace?: unknown) => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind,
  metadata: { name, namespace },
  spec: {},
});

Deno.test("store validation errors name the object, quoting odd names so they cannot forge log lines", async () => {
  const store = createMemoryStore();
  const message = async (raw: unknown) => {
    const err = await store.create(raw as never).then(() => undefined, (e) => e);
    assert.ok(err instanceof ValidationError);
    assert.equal(err.name, "ValidationError");
    assert.ok(!err.message.includes("\n"), err.message);
    return err.message.split(": ").slice(0, 2).join(": ");
  };
  assert.equal(
    await message(vs("VirtualService", "bad\nname", "ns")),
    'Invalid config: VirtualService/ns/"bad\\nname"',
  );
  assert.equal(
    await message(vs("Virtual Service\n", "ok", "n s")),
    'Invalid config: "Virtual Service\\n"/"n s"/ok',
  );
  assert.match(
    await message(vs("VirtualService", "x".repeat(254), "ns")),
    /^Invalid config: VirtualService\/ns\/"x{80}\.\.\."$/,
  );
  assert.equal(await message(vs("VirtualService", 7)), "Invalid config: VirtualService");
  assert.equal(await message(vs(7, "a", "ns")), "Invalid config: object/ns/a");
  assert.equal(await message("text"), "Invalid config: object");
  // the other store errors carry their own names
  assert.equal(new ConflictError("x").name, "ConflictError");
  assert.equal(new NotFoundError("x").name, "NotFoundError");
});

Deno.test("canonicalJson() sorts keys, drops undefined members and refuses runaway nesting", () => {
  assert.equal(
    canonicalJson({ b: 1, a: [undefined, "x", { d: null, c: true }], u: undefined }),
    '{"a":[null,"x",{"c":true,"d":null}],"b":1}',
  );
  assert.equal(canonicalJson(undefined), "null");
  assert.equal(canonicalJson("s"), '"s"');
  assert.equal(canonicalJson(null), "null");
  let deep: unknown = 1;
  for (let i = 0; i < 1000; i++) deep = { k: deep };
  assert.throws(() => canonicalJson(deep), /^Error: object is nested deeper than \d+$/);
  let arr: unknown = 1;
  for (let i = 0; i < 1000; i++) arr = [arr];
  assert.throws(() => canonicalJson(arr), /nested deeper than/);
});

Deno.test("contentVersion() is a stable 12-hex-digit hash of the content without resourceVersion", () => {
  const o = (rv: string, spec: Record<string, unknown>): ConfigObject => ({
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "VirtualService",
    metadata: { name: "a", namespace: "ns", resourceVersion: rv },
    spec,
  });
  // the same value in every process (a golden value), whatever the resourceVersion or key order
  assert.equal(contentVersion(o("9", { hosts: ["a"], n: [1, null] })), "e9123138084f");
  assert.equal(contentVersion(o("1", { n: [1, null], hosts: ["a"] })), "e9123138084f");
  assert.notEqual(contentVersion(o("9", { hosts: ["b"], n: [1, null] })), "e9123138084f");
});

Deno.test("store error messages name the kind, object and namespace", () => {
  assert.equal(notFound("Gateway", "gw", "ns").message, 'Gateway "gw" not found in namespace "ns"');
  assert.equal(
    alreadyExists("Gateway", "gw", "ns").message,
    'Gateway "gw" already exists in namespace "ns"',
  );
  assert.equal(
    staleVersion("Gateway", "gw", "ns", "1", "2").message,
    'Gateway "gw" in namespace "ns" was modified: resourceVersion "1" is stale (current "2")',
  );
});

Deno.test("byNsName() orders by namespace, then name", () => {
  const o = (namespace: string | undefined, name: string) =>
    ({ metadata: { name, namespace } }) as ConfigObject;
  const sorted = [o("b", "a"), o("a", "b"), o("a", "a"), o(undefined, "z"), o("a", "b")]
    .sort(byNsName)
    .map((x) => `${x.metadata.namespace ?? ""}/${x.metadata.name}`);
  assert.deepEqual(sorted, ["/z", "a/a", "a/b", "a/b", "b/a"]);
  assert.equal(byNsName(o("a", "a"), o("a", "a")), 0);
  assert.equal(byNsName(o("a", "b"), o("a", "a")), 1);
  assert.equal(byNsName(o("b", "a"), o("a", "a")), 1);
});

Deno.test("Watchers deliver a copy to each handler in order, log a failing one and go on", () => {
  const logged: string[] = [];
  const w = new Watchers({
    debug() {},
    info() {},
    warn() {},
    error: (m: string) => void logged.push(m),
  });
  const seen: string[] = [];
  const obj = {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "Gateway",
    metadata: { name: "gw", namespace: "ns" },
    spec: {},
  } as ConfigObject;
  w.add(() => {
    throw new Error("boom");
  });
  const h = w.add((e) => {
    seen.push(`${e.type} ${e.object.metadata.name}`);
    e.object.metadata.name = "changed";
  });
  w.emit("ADDED", obj);
  assert.deepEqual(seen, ["ADDED gw"]);
  assert.equal(obj.metadata.name, "gw");
  assert.deepEqual(logged, ["Config store watch handler failed on ADDED Gateway/ns/gw: boom"]);
  h.close();
  w.emit("DELETED", obj);
  assert.deepEqual(seen, ["ADDED gw"]);
  assert.equal(logged.length, 2);
  w.clear();
  w.emit("DELETED", obj);
  assert.equal(logged.length, 2);
});

/** A Gateway named `name` in namespace `ns`. */
const gateway = (name: string) =>
  ({
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "Gateway",
    metadata: { name, namespace: "ns" },
    spec: {},
  }) as ConfigObject;

Deno.test("Watchers.prepare() copies a batch in slices and delivers it at once; handlers added meanwhile get copies too", async () => {
  const w = new Watchers(quietLogger);
  const obj = gateway;
  const seen: string[] = [];
  const early: ConfigObject[] = [];
  w.add((e) => {
    seen.push(`a ${e.type} ${e.object.metadata.name}`);
    early.push(e.object);
  });
  const gone = w.add((e) => seen.push(`gone ${e.object.metadata.name}`));
  const events = [
    { type: "ADDED" as const, object: obj("x") },
    { type: "DELETED" as const, object: obj("y") },
  ];
  let pauses = 0;
  const deliver = await w.prepare(events, {
    pause: async () => {
      pauses++;
      await new Promise((r) => setTimeout(r, 0));
    },
  });
  assert.equal(pauses, 2, "a pause after each event's copies");
  gone.close();
  w.add((e) => seen.push(`late ${e.type} ${e.object.metadata.name}`));
  assert.deepEqual(seen, [], "nothing is delivered before deliver()");
  events[0].object.metadata.name = "mutated after prepare";
  deliver();
  assert.deepEqual(seen, [
    "a ADDED x",
    "late ADDED mutated after prepare",
    "a DELETED y",
    "late DELETED y",
  ]);
  assert.notEqual(early[0], events[0].object, "each handler gets a copy");
});

Deno.test("Watchers.prepare()'s delivery skips a handler closed meanwhile and gives one added meanwhile none of the batch", async () => {
  const w = new Watchers(quietLogger);
  const obj = gateway;
  const seen: string[] = [];
  let second: { close(): void } | undefined = undefined;
  w.add((e) => {
    seen.push(`first ${e.object.metadata.name}`);
    if (e.object.metadata.name === "x") {
      second!.close();
      w.add((l) => seen.push(`added ${l.object.metadata.name}`));
    }
  });
  second = w.add((e) => seen.push(`second ${e.object.metadata.name}`));
  const deliver = await w.prepare(
    [{ type: "ADDED", object: obj("x") }, { type: "ADDED", object: obj("y") }],
    { pause: () => Promise.resolve() },
  );
  deliver();
  assert.deepEqual(seen, ["first x", "first y"]);
  w.emit("ADDED", obj("z"));
  assert.deepEqual(seen.slice(2), ["first z", "added z"]);
});

Deno.test("Watchers.add() with kinds delivers and copies only events of those kinds", async () => {
  const w = new Watchers(quietLogger);
  const obj = (kind: string, name: string) =>
    ({
      apiVersion: "networking.mesh.io/v1alpha3",
      kind,
      metadata: { name, namespace: "ns" },
      spec: {},
    }) as ConfigObject;
  const all: string[] = [];
  const entries: string[] = [];
  w.add((e) => all.push(`${e.object.kind} ${e.object.metadata.name}`));
  w.add((e) => entries.push(`${e.object.kind} ${e.object.metadata.name}`), ["ServiceEntry"]);
  const real = globalThis.structuredClone;
  let copies = 0;
  globalThis.structuredClone = ((v: unknown) => (copies++, real(v))) as typeof structuredClone;
  try {
    w.emit("ADDED", obj("VirtualService", "vs"));
    w.emit("ADDED", obj("ServiceEntry", "se"));
    assert.equal(copies, 3, "one copy for the VirtualService, two for the ServiceEntry");
    copies = 0;
    const deliver = await w.prepare([
      { type: "ADDED", object: obj("VirtualService", "vs2") },
      { type: "MODIFIED", object: obj("ServiceEntry", "se") },
    ], { pause: () => Promise.resolve() });
    assert.equal(copies, 3, "prepare() copies for the watching handlers only");
    deliver();
    assert.equal(copies, 3, "and delivers without copying again");
  } finally {
    globalThis.structuredClone = real;
  }
  assert.deepEqual(all, [
    "VirtualService vs",
    "ServiceEntry se",
    "VirtualService vs2",
    "ServiceEntry se",
  ]);
  assert.deepEqual(entries, ["ServiceEntry se", "ServiceEntry se"]);
});

Deno.test("store validation errors label input that is no object, or has no metadata", async () => {
  const store = createMemoryStore();
  const message = (raw: unknown) =>
    store.create(raw as never).then(() => "", (e: Error) => `${e.name}: ${e.message}`);
  assert.equal(
    await message(null),
    "ValidationError: Invalid config: object: must be an object, got null",
  );
  assert.equal(
    await message(undefined),
    "ValidationError: Invalid config: object: must be an object, got undefined",
  );
  assert.match(
    await message({ kind: "VirtualService" }),
    /^ValidationError: Invalid config: VirtualService: metadata\.name: is required; /,
  );
  assert.match(
    await message({ kind: "VirtualService", metadata: { namespace: "n s", name: "a b" } }),
    /^ValidationError: Invalid config: VirtualService\/"n s"\/"a b": metadata\.name: /,
  );
});

Deno.test("a store given no logger logs to the default scope", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-common-" });
  const written: string[] = [];
  const stderr = Deno.stderr as { writeSync(p: Uint8Array): number };
  const writeSync = stderr.writeSync;
  try {
    await Deno.writeTextFile(`${dir}/bad.yaml`, "kind: [");
    stderr.writeSync = (p: Uint8Array) => (written.push(new TextDecoder().decode(p)), p.length);
    try {
      const store = await createFileStore({ dir, watch: false });
      await store.close();
      // the memory store's watch handlers too
      const memory = createMemoryStore();
      memory.watch(() => {
        throw new Error("handler broke");
      });
      await memory.create({
        apiVersion: "networking.mesh.io/v1alpha3",
        kind: "DestinationRule",
        metadata: { name: "d", namespace: "default" },
        spec: { host: "d" },
      });
    } finally {
      stderr.writeSync = writeSync;
    }
    assert.equal(written.length, 2, written.join(""));
    assert.match(
      written[0],
      /\terror\tdefault\tConfig file error \(nothing of it applies\): bad\.yaml /,
    );
    assert.match(
      written[1],
      /\terror\tdefault\tConfig store watch handler failed on ADDED DestinationRule\/default\/d: handler broke/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("canonicalJson() takes nesting up to its limit and refuses one level more", () => {
  const nested = (depth: number) => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = [v];
    return v;
  };
  const limit = 4 * MAX_DEPTH;
  assert.equal(
    canonicalJson(nested(limit + 1)),
    `${"[".repeat(limit + 1)}1${"]".repeat(limit + 1)}`,
  );
  assert.throws(() => canonicalJson(nested(limit + 2)), new RegExp(`nested deeper than ${limit}$`));
});

Deno.test("contentVersion() keeps its 12 digits when the hash is small (leading zeros)", () => {
  const o: ConfigObject = {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "VirtualService",
    metadata: { name: "n120", namespace: "default" },
    spec: { hosts: ["n120"] },
  };
  // this content hashes below 16^11: its version has a leading zero
  assert.equal(contentVersion(o), "03deca7b081e");
});

Deno.test("a store refuses a type it does not hold, naming the ones it holds", async () => {
  const store = createMemoryStore(
    allSchemas.filter((s) => s.kind === "VirtualService" || s.kind === "Gateway"),
  );
  await assert.rejects(
    store.list("serviceentry"),
    /^Error: Unknown config type "serviceentry" \(this store holds: (virtualservice, gateway|gateway, virtualservice)\)$/,
  );
});

Deno.test("a store refuses to create a kind it does not hold, naming it", async () => {
  const store = createMemoryStore(allSchemas.filter((s) => s.kind === "VirtualService"));
  await assert.rejects(
    store.create({
      apiVersion: "networking.mesh.io/v1alpha3",
      kind: "Gateway",
      metadata: { name: "g", namespace: "default" },
      spec: {
        selector: { istio: "ingressgateway" },
        servers: [{ port: { number: 80, name: "http", protocol: "HTTP" }, hosts: ["*"] }],
      },
    }),
    (e: Error) =>
      e instanceof ValidationError &&
      e.message === "Invalid config: Gateway/default/g: kind: kind Gateway " +
          "(networking.mesh.io/v1alpha3) is not held by this store",
  );
});

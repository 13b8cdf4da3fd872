import assert from "node:assert/strict";
import { ResourceCache } from "./cache.ts";
import { MemoryStream } from "./memory.ts";
import { XdsServer, type XdsServerOptions } from "./stream.ts";
import {
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
  type ResourceMap,
  XDS_TYPES,
} from "./types.ts";
import { bytes, cacheWith, node, parseTestNode, type TestProxy } from "./_test_util.ts";
import { quietLogger } from "../../log/testing.ts";

const { cluster: CDS, endpoint: EDS } = XDS_TYPES;

function newServer(
  cache: ResourceCache,
  extra: Partial<XdsServerOptions<TestProxy>> = {},
): XdsServer<TestProxy> {
  return new XdsServer<TestProxy>({
    parseNode: parseTestNode,
    resourcesFor: (_p, t, names) => cache.select(t, names),
    debounceAfter: 0,
    logger: quietLogger,
    ...extra,
  });
}

function names(r: { resources: { name: string }[] }): string[] {
  return r.resources.map((x) => x.name).sort();
}

function sotw(server: XdsServer<TestProxy>, peer: string) {
  const s = new MemoryStream<DiscoveryResponse>(peer);
  return { s, h: server.openSotw(s) };
}

Deno.test("push({kind: eds}) reaches exactly the streams subscribed to a changed cluster, as subscriptions change and streams leave", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"], [CDS, "k1", "x"]]);
  const server = newServer(cache);
  const a = sotw(server, "memory:a");
  const b = sotw(server, "memory:b");
  const c = sotw(server, "memory:c");
  const d = sotw(server, "memory:d");
  const e = new MemoryStream<DeltaDiscoveryResponse>("memory:e");
  const he = server.openDelta(e);
  a.h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1"] });
  b.h.receive({ node: node("b"), type_url: EDS, resource_names: ["c2"] });
  c.h.receive({ node: node("c"), type_url: EDS, resource_names: ["c1", "c2"] });
  d.h.receive({ node: node("d"), type_url: CDS });
  he.receive({ node: node("e"), type_url: EDS, resource_names_subscribe: ["c1"] });
  await server.flush();
  const firstB = await b.s.next();
  for (const x of [a.s, c.s, d.s]) await x.next();
  await e.next();
  const pushC1 = async (content: string) => {
    cache.set(EDS, "c1", bytes(content));
    server.push({ kind: "eds", clusters: ["c1"] });
    await server.flush();
  };
  await pushC1("e1b");
  assert.deepEqual(names(await a.s.next()), ["c1"]);
  assert.deepEqual(names(await c.s.next()), ["c1"]);
  assert.deepEqual(names(await e.next()), ["c1"]);
  assert.equal(b.s.unread, 0, "b does not subscribe to c1");
  assert.equal(d.s.unread, 0, "d has no EDS subscription");
  // b subscribes to c1 too (an ACK with new names): it now hears of c1's changes.
  b.h.receive({
    type_url: EDS,
    version_info: firstB.version_info,
    response_nonce: firstB.nonce,
    resource_names: ["c2", "c1"],
  });
  assert.deepEqual(names(await b.s.next()), ["c1"], "the new name is sent at once");
  assert.deepEqual([...server.watchedNames(EDS)].sort(), ["c1", "c2"]);
  a.h.close();
  await pushC1("e1c");
  for (const x of [b.s, c.s]) assert.deepEqual(names(await x.next()), ["c1"]);
  assert.deepEqual(names(await e.next()), ["c1"]);
  assert.equal(a.s.unread, 0, "a left");
  // e unsubscribes: only the SotW streams of c1 remain.
  he.receive({ type_url: EDS, resource_names_unsubscribe: ["c1"] });
  await server.flush();
  while (e.unread) await e.next();
  await pushC1("e1d");
  for (const x of [b.s, c.s]) assert.deepEqual(names(await x.next()), ["c1"]);
  assert.equal(e.unread, 0, "e unsubscribed");
  assert.equal(d.s.unread, 0);
  server.close();
});

Deno.test("a stream waiting for a push slot takes later pushes into one response (bounded queue, coalescing)", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"]]);
  const server = newServer(cache, { maxConcurrentPushes: 1 });
  const a = sotw(server, "memory:a");
  const b = sotw(server, "memory:b");
  a.h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1", "c2"] });
  await a.s.next();
  b.h.receive({ node: node("b"), type_url: EDS, resource_names: ["c1", "c2"] });
  await b.s.next();
  await server.flush();
  a.s.hold(); // a slow client: its send occupies the only slot
  cache.set(EDS, "c1", bytes("e1b"));
  server.push({ kind: "eds", clusters: ["c1"] });
  const flushed = server.flush();
  assert.deepEqual(names(await a.s.next()), ["c1"]);
  cache.set(EDS, "c2", bytes("e2b"));
  server.push({ kind: "eds", clusters: ["c2"] });
  void server.flush();
  cache.set(EDS, "c1", bytes("e1c"));
  server.push({ kind: "eds", clusters: ["c1"] });
  void server.flush();
  await Promise.resolve();
  assert.equal(b.s.unread, 0, "b waits in the queue while a holds the slot");
  a.s.release();
  await flushed;
  await server.flush();
  const rb = await b.s.next();
  assert.deepEqual(names(rb), ["c1", "c2"], "three pushes, one response to the queued stream");
  assert.equal(
    rb.resources.find((r) => r.name === "c1")!.entry.version,
    cache.get(EDS, "c1")!.version,
    "with the latest content",
  );
  assert.equal(b.s.unread, 0);
  // a, which was sending, gets what changed meanwhile in one more response.
  const ra = await a.s.next();
  assert.deepEqual(names(ra), ["c1", "c2"]);
  assert.equal(a.s.unread, 0);
  server.close();
});

Deno.test("new XdsServer() refuses maxConcurrentPushes below 1 and a debounceMaxEds above debounceMax", () => {
  const cache = new ResourceCache();
  assert.throws(() => newServer(cache, { maxConcurrentPushes: 0 }), /Invalid maxConcurrent 0/);
  assert.throws(
    () => newServer(cache, { debounceMax: 500, debounceMaxEds: 800 }),
    /Invalid debounceMaxEds 800/,
  );
});

Deno.test("a scoped EDS push to streams holding the same shared view sends them one shared resource list", async () => {
  // A generator like mesh-discovery's: one map per subscription list and cache state.
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"], [EDS, "c3", "e3"]]);
  const views = new Map<string, ResourceMap>();
  const server = newServer(cache, {
    resourcesFor: (_p, t, ns) => {
      const key = t + (ns ?? ["*"]).map((n) => `${n}=${cache.get(t, n)?.version}`).join(",");
      let v = views.get(key);
      if (!v) views.set(key, v = cache.select(t, ns));
      return v;
    },
  });
  const streams = ["a", "b", "c"].map((n) => sotw(server, `memory:${n}`));
  for (const [i, x] of streams.entries()) {
    x.h.receive({ node: node(`p${i}`), type_url: EDS, resource_names: ["c1", "c2", "c3"] });
    await x.s.next();
  }
  for (const round of ["b", "c"]) {
    cache.set(EDS, "c2", bytes(`e2${round}`));
    server.push({ kind: "eds", clusters: ["c2"] });
    await server.flush();
    const rs = await Promise.all(streams.map((x) => x.s.next()));
    for (const r of rs) assert.deepEqual(names(r), ["c2"]);
    assert.ok(rs.every((r) => r.resources === rs[0].resources), "one list, encoded once");
    assert.ok(rs.every((r) => r.version_info === rs[0].version_info));
  }
  // What each stream holds is the shared view (no per-stream copies), with the new versions.
  for (const c of server.connections()) {
    assert.deepEqual(c.types[EDS].resources, {
      c1: cache.get(EDS, "c1")!.version,
      c2: cache.get(EDS, "c2")!.version,
      c3: cache.get(EDS, "c3")!.version,
    });
  }
  server.close();
});

/** Busy-waits `ms` (a generator that holds the event loop). */
function work(ms: number) {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* busy */ }
}

/**
 * `count` SotW streams of a server whose builds each hold the event loop for 1 ms, at most
 * `maxConcurrentPushes` at once, all answered for CDS; then CDS changes and a push starts.
 */
async function pushingTo(cache: ResourceCache, count: number, maxConcurrentPushes: number) {
  const server = newServer(cache, {
    resourcesFor: (_p, t, n) => (work(1), cache.select(t, n)),
    maxConcurrentPushes,
  });
  const streams = Array.from({ length: count }, (_, i) => sotw(server, `memory:${i}`));
  for (const [i, x] of streams.entries()) x.h.receive({ node: node(`p${i}`), type_url: CDS });
  await server.flush();
  for (const x of streams) await x.s.next();
  cache.set(CDS, "k1", bytes("y"));
  server.push({ kind: "config" });
  return { server, streams };
}

Deno.test("a push held by slow proxies does not hold a new stream's answer; clients' requests have slots of their own", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"]]);
  const server = newServer(cache, { maxConcurrentPushes: 1 });
  const a = sotw(server, "memory:a");
  const b = sotw(server, "memory:b");
  for (const [x, id] of [[a, "a"], [b, "b"]] as const) {
    x.h.receive({ node: node(id), type_url: EDS, resource_names: ["c1"] });
    await x.s.next();
  }
  await server.flush();
  a.s.hold(); // a slow proxy: its push send occupies the only push slot
  cache.set(EDS, "c1", bytes("e1b"));
  server.push({ kind: "eds", clusters: ["c1"] });
  const pushed = server.flush();
  await a.s.next();
  // a new proxy asks while the push slot is held: answered at once, not after the push
  const c = sotw(server, "memory:c");
  c.s.hold(); // and is slow too: its first send holds the one slot kept for requests
  c.h.receive({ node: node("c"), type_url: EDS, resource_names: ["c1", "c2"] });
  assert.deepEqual(names(await c.s.next()), ["c1", "c2"]);
  assert.equal(b.s.unread, 0, "b still waits for the push slot");
  // every slot is held now: a third new proxy waits (requests are bounded too)
  const d = sotw(server, "memory:d");
  d.h.receive({ node: node("d"), type_url: EDS, resource_names: ["c2"] });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(d.s.unread, 0, "no slot is free for d");
  const order: string[] = [];
  const answers = [d.s.next(), b.s.next()].map((p, i) =>
    p.then((r) => (order.push(i ? "b" : "d"), names(r)))
  );
  a.s.release(); // the push slot frees: d, waiting for an answer, goes before b's push
  assert.deepEqual(await Promise.all(answers), [["c2"], ["c1"]]);
  assert.deepEqual(order, ["d", "b"]);
  c.s.release();
  await pushed;
  await server.flush();
  server.close();
});

Deno.test("a request takes its own slot or a free push slot, which pushes then wait for: at most twice maxConcurrentPushes loops", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"]]);
  const server = newServer(cache, { maxConcurrentPushes: 1 });
  const p = sotw(server, "memory:p");
  p.h.receive({ node: node("p"), type_url: EDS, resource_names: ["c1"] });
  await p.s.next();
  await server.flush();
  const settle = () => new Promise((r) => setTimeout(r, 30));
  /** A new stream whose sends stay unanswered (a slow client) asking for c1. */
  const slowRequest = (id: string) => {
    const x = sotw(server, `memory:${id}`);
    x.s.hold();
    x.h.receive({ node: node(id), type_url: EDS, resource_names: ["c1"] });
    return x;
  };
  let version = 0;
  const pushC1 = () => {
    cache.set(EDS, "c1", bytes(`e1-${++version}`));
    server.push({ kind: "eds", clusters: ["c1"] });
    void server.flush();
  };
  const r1 = slowRequest("r1"); // the slot kept for requests
  const r2 = slowRequest("r2"); // the free push slot
  await r1.s.next();
  await r2.s.next();
  pushC1();
  await settle();
  assert.equal(p.s.unread, 0, "the push waits: r2 holds the push slot");
  const r3 = slowRequest("r3");
  await settle();
  assert.equal(r3.s.unread, 0, "every slot is held: r3 waits");
  r1.s.release(); // r3 takes the request slot; the push still waits for r2's
  await r3.s.next();
  await settle();
  assert.equal(p.s.unread, 0, "the request slot is not a push slot");
  r2.s.release();
  await p.s.next(); // the push slot is free again
  await settle();
  const r4 = slowRequest("r4"); // r3 holds the request slot: r4 takes the push slot
  await r4.s.next();
  const r5 = slowRequest("r5");
  await settle();
  assert.equal(r5.s.unread, 0);
  r4.s.release(); // r5 starts from the queue in the push slot (r3 still holds the request slot)
  await r5.s.next();
  pushC1();
  await settle();
  assert.equal(p.s.unread, 0, "r5 holds the push slot");
  r5.s.release();
  await p.s.next();
  r3.s.release();
  await server.flush();
  // a push's stream started from the queue takes a push slot, even when the request slot is free
  const q = sotw(server, "memory:q");
  q.h.receive({ node: node("q"), type_url: EDS, resource_names: ["c1"] });
  await q.s.next();
  await server.flush();
  const r6 = slowRequest("r6");
  const r7 = slowRequest("r7");
  await r6.s.next();
  await r7.s.next();
  p.s.hold();
  pushC1(); // p and q wait in the queue
  r6.s.release();
  r7.s.release(); // p starts, and holds the push slot
  await p.s.next();
  await settle();
  assert.equal(q.s.unread, 0, "q waits for the push slot p holds");
  p.s.release();
  await q.s.next();
  await server.flush();
  server.close();
});

Deno.test("a push to many streams lets a timer, an HTTP request and a new stream's request run before it ends", async () => {
  // a /ready-like endpoint in the same process
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("ready\n"),
  );
  const cache = cacheWith([[CDS, "k1", "x"]]);
  // each build holds the event loop for 1 ms: 300 streams are ~300 ms of work, 15 slices
  const { server, streams } = await pushingTo(cache, 300, 16);
  const order: string[] = [];
  const reached = Promise.all(streams.map((x) => x.s.next(60_000))).then((rs) => {
    order.push("push reached every stream");
    return rs;
  });
  let answered: Promise<unknown> = Promise.resolve();
  setTimeout(() => {
    order.push("timer");
    // a stream opened during the push is answered before the push reaches every stream
    const late = sotw(server, "memory:late");
    late.h.receive({ node: node("late"), type_url: CDS });
    void late.s.next(60_000).then(() => order.push("new stream answered"));
    answered = fetch(`http://127.0.0.1:${http.addr.port}/ready`)
      .then((res) => res.text())
      .then(() => order.push("HTTP answered"));
  }, 0);
  for (const r of await reached) assert.deepEqual(names(r), ["k1"]);
  await answered;
  await server.flush();
  await http.shutdown();
  assert.equal(order[0], "timer");
  assert.deepEqual(
    order.slice(1).sort(),
    ["HTTP answered", "new stream answered", "push reached every stream"],
  );
  assert.equal(order.at(-1), "push reached every stream", order.join(", "));
  server.close();
});

Deno.test("a stream waiting behind a push moves ahead when its client asks for something", async () => {
  const cache = cacheWith([[CDS, "k1", "x"], [EDS, "c1", "e1"]]);
  const { server, streams } = await pushingTo(cache, 60, 2);
  const order: string[] = [];
  const [first, last] = [streams[0], streams.at(-1)!];
  void streams.at(-2)!.s.next(60_000).then(() => order.push("push reached the stream before it"));
  setTimeout(() => {
    // the last stream waits in the FIFO queue behind the push; its client subscribes to EDS
    last.h.receive({ type_url: EDS, resource_names: ["c1"] });
    order.push("request");
  }, 0);
  const responses = [await last.s.next(60_000), await last.s.next(60_000)];
  order.push("last stream answered");
  await server.flush();
  assert.deepEqual(order, ["request", "last stream answered", "push reached the stream before it"]);
  assert.deepEqual(responses.map((r) => r.type_url).sort(), [CDS, EDS].sort());
  assert.ok(first.s.unread >= 1, "the push reached the first stream too");
  server.close();
});

Deno.test("a first request waiting behind its stream's slow send stays owed an answer when a push marks the same type meanwhile", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"]]); // no cluster at all: the CDS answer is empty
  const server = newServer(cache);
  const a = sotw(server, "memory:a");
  a.s.hold(); // a slow client: its EDS answer waits for its socket
  a.h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1"] });
  assert.deepEqual(names(await a.s.next()), ["c1"]);
  // Its first CDS request comes while that send waits, and so does a config push that changes no
  // cluster: the request's answer must not be merged away into "nothing changed".
  a.h.receive({ type_url: CDS });
  server.push({ kind: "config" });
  await new Promise((r) => setTimeout(r, 10));
  a.s.release();
  await server.flush();
  const cds = await a.s.next();
  assert.equal(cds.type_url, CDS);
  assert.deepEqual(cds.resources, [], "the empty list it asked for");
  server.close();
});

import assert from "node:assert/strict";
import { ResourceCache } from "./cache.ts";
import { MemoryStream } from "./memory.ts";
import { XdsCounters } from "./metrics.ts";
import { quietLogger, recordingLogger } from "../../log/testing.ts";
import { READ_HOLD_MAX_MS, READ_HOLD_QUIET_MS } from "./push.ts";
import { XdsServer, type XdsServerOptions } from "./stream.ts";
import {
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
  Status,
  type StreamEnd,
  XDS_TYPES,
} from "./types.ts";
import { bytes, cacheWith, FakeClock, node, parseTestNode, type TestProxy } from "./_test_util.ts";

const { cluster: CDS, endpoint: EDS, listener: LDS, route: RDS } = XDS_TYPES;

function newServer(
  cache: ResourceCache,
  extra: Partial<XdsServerOptions<TestProxy>> = {},
): { server: XdsServer<TestProxy>; metrics: XdsCounters } {
  const metrics = new XdsCounters();
  const server = new XdsServer<TestProxy>({
    parseNode: parseTestNode,
    resourcesFor: (_p, t, names) => cache.select(t, names),
    metrics,
    debounceAfter: 0,
    logger: quietLogger,
    ...extra,
  });
  return { server, metrics };
}

function names(r: { resources: { name: string }[] }): string[] {
  return r.resources.map((x) => x.name).sort();
}

function sotw(server: XdsServer<TestProxy>, peer = "memory:1") {
  const s = new MemoryStream<DiscoveryResponse>(peer);
  return { s, h: server.openSotw(s) };
}

/** A server (see {@link newServer}) over a cache of `entries`, and one SotW stream open to it. */
function sotwWith(
  entries: [string, string, string][],
  extra: Partial<XdsServerOptions<TestProxy>> = {},
) {
  const cache = cacheWith(entries);
  const { server, metrics } = newServer(cache, extra);
  return { cache, server, metrics, ...sotw(server) };
}

Deno.test("openSotw() ends the stream with INVALID_ARGUMENT when the node id is bad", async () => {
  const { server, metrics } = newServer(new ResourceCache());
  const { s, h } = sotw(server);
  h.receive({ node: { id: "x" }, type_url: CDS });
  const end = await s.waitEnded();
  assert.equal(end.code, Status.INVALID_ARGUMENT);
  assert.equal(end.message, 'Invalid node id "x": missing parts in the service node "x"');
  assert.equal(server.connectionCount, 0);
  assert.equal(metrics.connected, 0);
  server.close();
});

Deno.test("openDelta() ends the stream with INVALID_ARGUMENT when the first request has no node", async () => {
  const { server } = newServer(new ResourceCache());
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  server.openDelta(s).receive({ type_url: CDS });
  const end = await s.waitEnded();
  assert.equal(end.code, Status.INVALID_ARGUMENT);
  assert.match(end.message, /node\.id is missing/);
  server.close();
});

Deno.test("SotW wildcard CDS request gets every cluster and an ACK gets no response", async () => {
  const { cache, server, metrics, s, h } = sotwWith([[CDS, "c1", "a"], [CDS, "c2", "b"]]);
  h.receive({ node: node("a"), type_url: CDS });
  const r1 = await s.next();
  assert.deepEqual(names(r1), ["c1", "c2"]);
  assert.equal(r1.type_url, CDS);
  assert.match(r1.version_info, /^[0-9a-f]{16}$/, "a content version");
  assert.equal(r1.resources[0].entry, cache.get(CDS, r1.resources[0].name), "bytes are shared");
  h.receive({ type_url: CDS, version_info: r1.version_info, response_nonce: r1.nonce });
  await server.flush();
  assert.equal(s.unread, 0);
  const [c] = server.connections();
  assert.equal(c.conId, `${node("a").id}-1`);
  assert.equal(c.types[CDS].wildcard, true);
  assert.equal(c.types[CDS].lastAcked?.version, r1.version_info);
  assert.equal(c.types[CDS].lastSent?.nonce, r1.nonce);
  assert.equal(metrics.connected, 1);
  assert.equal(metrics.pushes.cds, 1);
  server.close();
  assert.equal((await s.waitEnded()).code, Status.UNAVAILABLE);
  assert.equal(metrics.connected, 0);
});

Deno.test("SotW NACK keeps the last good version, is recorded and counted, and is not re-sent", async () => {
  const { cache, server, metrics, s, h } = sotwWith([[CDS, "c1", "a"]]);
  h.receive({ node: node("a"), type_url: CDS });
  const r1 = await s.next();
  h.receive({ type_url: CDS, version_info: r1.version_info, response_nonce: r1.nonce });
  cache.set(CDS, "c1", bytes("bad"));
  server.push({ kind: "config", types: [CDS] });
  await server.flush();
  const r2 = await s.next();
  assert.notEqual(r2.version_info, r1.version_info);
  assert.notEqual(r2.nonce, r1.nonce);
  h.receive({
    type_url: CDS,
    version_info: r1.version_info,
    response_nonce: r2.nonce,
    error_detail: { code: 3, message: "cluster c1: bad lb_policy" },
  });
  await server.flush();
  assert.equal(s.unread, 0, "a NACK does not trigger a resend of the same config");
  const t = server.connections()[0].types[CDS];
  assert.equal(t.lastAcked?.version, r1.version_info);
  assert.deepEqual(
    { ...t.lastNack, time: undefined },
    {
      version: r1.version_info,
      nonce: r2.nonce,
      error: "cluster c1: bad lb_policy",
      time: undefined,
    },
  );
  assert.equal(metrics.nacks.cds, 1);
  // A fixed config goes out on the next push.
  cache.set(CDS, "c1", bytes("good"));
  server.push({ kind: "full" });
  await server.flush();
  assert.deepEqual(names(await s.next()), ["c1"]);
  server.close();
});

Deno.test("SotW stale nonce with a changed subscription is answered; with the same names it is ignored", async () => {
  const { cache, server, s, h } = sotwWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"]]);
  h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1"] });
  const r1 = await s.next();
  assert.deepEqual(names(r1), ["c1"]);
  cache.set(EDS, "c1", bytes("e1b"));
  server.push({ kind: "eds", clusters: ["c1"] });
  await server.flush();
  const r2 = await s.next();
  // The client has not seen r2 yet: it ACKs r1 and adds c2 (stale nonce).
  h.receive({
    type_url: EDS,
    version_info: r1.version_info,
    response_nonce: r1.nonce,
    resource_names: ["c1", "c2"],
  });
  const r3 = await s.next();
  assert.deepEqual(names(r3), ["c2"], "EDS sends only what the client lacks");
  // Same names, stale nonce: nothing.
  h.receive({
    type_url: EDS,
    version_info: r1.version_info,
    response_nonce: r2.nonce,
    resource_names: ["c2", "c1"],
  });
  await server.flush();
  assert.equal(s.unread, 0);
  assert.deepEqual(server.connections()[0].types[EDS].subscribed, ["c1", "c2"]);
  server.close();
});

Deno.test("SotW Listener responses list every resource each time; RDS lists requested names", async () => {
  const { cache, server, s, h } = sotwWith([
    [LDS, "l1", "a"],
    [LDS, "l2", "b"],
    [RDS, "r1", "x"],
    [RDS, "r2", "y"],
  ]);
  h.receive({ node: node("a"), type_url: LDS });
  const l1 = await s.next();
  assert.deepEqual(names(l1), ["l1", "l2"]);
  h.receive({ type_url: LDS, version_info: l1.version_info, response_nonce: l1.nonce });
  h.receive({ type_url: RDS, resource_names: ["r1", "missing"] });
  assert.deepEqual(names(await s.next()), ["r1"]);
  cache.set(LDS, "l2", bytes("b2"));
  cache.delete(LDS, "l1");
  cache.set(RDS, "r2", bytes("y2"));
  server.push({ kind: "config" });
  await server.flush();
  const l2 = await s.next();
  assert.equal(l2.type_url, LDS);
  assert.deepEqual(names(l2), ["l2"], "deleted listener is absent from the full list");
  assert.equal(s.unread, 0, "r2 changed but nobody asked for it");
  server.close();
});

Deno.test("push({kind: eds}) reaches only the clients watching that cluster", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"], [CDS, "c1", "x"]]);
  const { server, metrics } = newServer(cache);
  const a = sotw(server, "memory:a");
  const b = sotw(server, "memory:b");
  a.h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1"] });
  b.h.receive({ node: node("b"), type_url: EDS, resource_names: ["c2"] });
  b.h.receive({ type_url: CDS });
  await a.s.next();
  await b.s.next();
  await b.s.next();
  cache.set(EDS, "c1", bytes("e1b"));
  cache.set(EDS, "c2", bytes("e2b")); // changed but not announced: must not be sent
  server.push({ kind: "eds", clusters: ["c1"] });
  await server.flush();
  const r = await a.s.next();
  assert.deepEqual(names(r), ["c1"]);
  assert.equal(r.resources[0].entry.version, cache.get(EDS, "c1")!.version);
  assert.equal(b.s.unread, 0);
  assert.equal(metrics.convergenceTimes.count, 1);
  server.close();
});

Deno.test("a push after a quiet spell holds the reads of every stream it reaches until it was sent to all; a stream sent anything but endpoints is let go at once", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"], [CDS, "c1", "x"]]);
  const { server } = newServer(cache);
  const a = sotw(server, "memory:a"), b = sotw(server, "memory:b"), c = sotw(server, "memory:c");
  a.h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1"] });
  b.h.receive({ node: node("b"), type_url: EDS, resource_names: ["c1"] });
  c.h.receive({ node: node("c"), type_url: EDS, resource_names: ["c2"] });
  a.h.receive({ type_url: CDS });
  for (const x of [a, a, b, c]) await x.s.next();
  b.s.hold(); // a slow client: the push is not done until b's send completes

  cache.set(EDS, "c1", bytes("e1b"));
  server.push({ kind: "eds", clusters: ["c1"] });
  await a.s.next();
  assert.equal(a.s.readHolds, 1, "a was sent the push, and waits for the slow b");
  assert.equal(b.s.readHolds, 1);
  assert.equal(c.s.readHolds, 0, "not in the push");
  b.s.release();
  await server.flush();
  await b.s.next();
  assert.deepEqual([a, b, c].map((x) => x.s.readHolds), [0, 0, 0], "released once sent to all");

  // a full push that sends only endpoints holds every stream it reaches, sent or not
  const quietSpell = () => new Promise((r) => setTimeout(r, READ_HOLD_QUIET_MS + 50));
  await quietSpell();
  b.s.hold();
  cache.set(EDS, "c1", bytes("e1f"));
  server.push({ kind: "full" });
  assert.equal((await a.s.next()).type_url, EDS); // sent to a, in flight to the slow b
  assert.deepEqual([a, b, c].map((x) => x.s.readHolds), [1, 1, 1], "a full push of endpoints");
  b.s.release();
  await server.flush();
  for (const x of [a, b, c]) while (x.s.unread) await x.s.next();
  assert.deepEqual([a, b, c].map((x) => x.s.readHolds), [0, 0, 0]);

  // a response of another type (it may make the client ask for more at once) lets its stream go
  // before it is sent; the others stay held
  await quietSpell();
  b.s.hold();
  cache.set(CDS, "c1", bytes("y"));
  cache.set(EDS, "c1", bytes("e1c"));
  server.push({ kind: "config", types: [CDS] });
  server.push({ kind: "eds", clusters: ["c1"] }); // merged into one push
  assert.equal((await a.s.next()).type_url, CDS);
  assert.deepEqual([a, b, c].map((x) => x.s.readHolds), [0, 1, 0], "a was sent clusters");
  b.s.release();
  await server.flush();
  while (a.s.unread) await a.s.next();
  while (b.s.unread) await b.s.next();
  assert.deepEqual([a, b, c].map((x) => x.s.readHolds), [0, 0, 0]);

  // an endpoints push right after another (sustained churn) holds nothing either
  b.s.hold();
  cache.set(EDS, "c1", bytes("e1d"));
  server.push({ kind: "eds", clusters: ["c1"] });
  await a.s.next();
  assert.deepEqual([a, b].map((x) => x.s.readHolds), [0, 0], "no quiet spell before it");
  b.s.release();
  await server.flush();
  await b.s.next();

  // after a quiet spell it holds again, and a push that does not end holds for
  // READ_HOLD_MAX_MS at most
  await quietSpell();
  b.s.hold();
  cache.set(EDS, "c1", bytes("e1e"));
  server.push({ kind: "eds", clusters: ["c1"] });
  await a.s.next();
  assert.equal(a.s.readHolds, 1);
  cache.set(EDS, "c2", bytes("e2b"));
  server.push({ kind: "eds", clusters: ["c2"] }); // while the push to a and b is in flight
  await c.s.next();
  assert.equal(c.s.readHolds, 0, "another push in flight: no quiet spell");
  await new Promise((r) => setTimeout(r, READ_HOLD_MAX_MS + 100));
  assert.deepEqual([a, b].map((x) => x.s.readHolds), [0, 0], "released although b's send waits");
  b.s.release();
  await server.flush();
  assert.equal(b.s.readHolds, 0);
  server.close();
});

Deno.test("push({kind: config}) sends nothing to clients whose view did not change, and ends once, after the last one", async () => {
  // Each proxy sees its own variant of cluster c1 (composite cache keys).
  const cache = new ResourceCache();
  cache.set(CDS, "c1", bytes("x"), "a|c1");
  cache.set(CDS, "c1", bytes("y"), "b|c1");
  const { server, metrics } = newServer(cache, {
    resourcesFor: (p, t, n) => {
      const prefix = p.id.startsWith("a.") ? "a|" : "b|";
      return cache.select(t, (n ?? ["c1"]).map((x) => prefix + x));
    },
  });
  const a = sotw(server, "memory:a");
  const b = sotw(server, "memory:b");
  a.h.receive({ node: node("a"), type_url: CDS });
  b.h.receive({ node: node("b"), type_url: CDS });
  const ra = await a.s.next();
  await b.s.next();
  assert.deepEqual(names(ra), ["c1"]);
  await server.flush();
  const before = metrics.pushDurations.count;
  cache.set(CDS, "c1", bytes("y2"), "b|c1");
  server.push({ kind: "config", types: [CDS] });
  await server.flush();
  assert.equal(a.s.unread, 0, "proxy a's clusters did not change");
  const rb = await b.s.next();
  assert.deepEqual(names(rb), ["c1"]);
  // a's send loop ends at once (nothing to send): the push still waits for b's, observed once.
  assert.equal(metrics.pushDurations.count, before + 1, "one push, one observation");
  assert.equal(metrics.convergenceTimes.count, before + 1);
  server.close();
});

Deno.test("XdsServer debounces push events into one push", async () => {
  const clock = new FakeClock();
  const { cache, server, metrics, s, h } = sotwWith([[CDS, "c1", "v0"]], {
    clock,
    debounceAfter: 100,
    debounceMax: 1000,
  });
  h.receive({ node: node("a"), type_url: CDS });
  await s.next();
  for (let i = 1; i <= 3; i++) {
    cache.set(CDS, "c1", bytes(`v${i}`));
    server.push({ kind: "config", types: [CDS] });
    clock.advance(50);
  }
  await Promise.resolve();
  assert.equal(s.unread, 0, "still inside the quiet period");
  clock.advance(50);
  await server.flush();
  const r = await s.next();
  assert.equal(r.resources[0].entry.version, cache.get(CDS, "c1")!.version);
  assert.equal(s.unread, 0);
  assert.equal(metrics.pushes.cds, 2);
  assert.equal(metrics.convergenceTimes.count, 1);
  assert.equal(metrics.convergenceTimes.max, 0.2, "first event → sent: 3×50 ms + 50 ms");
  server.close();
  assert.equal(clock.timers, 0);
});

Deno.test("XdsServer keeps only the latest pending push per type for a slow client", async () => {
  const cache = cacheWith([[CDS, "c1", "v0"]]);
  const { server } = newServer(cache);
  const slow = sotw(server, "memory:slow");
  const fast = sotw(server, "memory:fast");
  slow.h.receive({ node: node("slow"), type_url: CDS });
  fast.h.receive({ node: node("fast"), type_url: CDS });
  await slow.s.next();
  await fast.s.next();
  slow.s.hold();
  for (let i = 1; i <= 3; i++) {
    cache.set(CDS, "c1", bytes(`v${i}`));
    server.push({ kind: "full" });
    void server.flush();
    await fast.s.next(); // the fast client gets every push, not blocked by the slow one
  }
  assert.equal(slow.s.unread, 1, "one send in flight");
  slow.s.release();
  await server.flush();
  await slow.s.next();
  const last = await slow.s.next();
  assert.equal(last.resources[0].entry.version, cache.get(CDS, "c1")!.version);
  assert.equal(slow.s.unread, 0, "intermediate versions were skipped");
  server.close();
});

Deno.test("XdsServer ends a stream whose send times out", async () => {
  const { server, metrics, s, h } = sotwWith([[CDS, "c1", "v0"]], { sendTimeout: 30 });
  s.hold();
  h.receive({ node: node("a"), type_url: CDS });
  const end = await s.waitEnded();
  assert.equal(end.code, Status.DEADLINE_EXCEEDED);
  assert.match(end.message, /timed out after 30 ms/);
  assert.equal(metrics.pushErrors.cds_timeout, 1);
  assert.equal(server.connectionCount, 0);
  s.release();
  server.close();
});

Deno.test("delta ADS: wildcard, initial versions, subscribe, unsubscribe and removed resources", async () => {
  const cache = cacheWith([[CDS, "c1", "a"], [CDS, "c2", "b"], [EDS, "c1", "e1"]]);
  const { server } = newServer(cache);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  // Legacy wildcard; the client already has c1 at its current version.
  h.receive({
    node: node("a"),
    type_url: CDS,
    initial_resource_versions: { c1: cache.get(CDS, "c1")!.version, gone: "old" },
  });
  const d1 = await s.next();
  assert.deepEqual(names(d1), ["c2"]);
  assert.deepEqual(d1.removed_resources, ["gone"]);
  assert.match(d1.system_version_info, /^[0-9a-f]{16}$/, "a content version");
  h.receive({ type_url: CDS, response_nonce: d1.nonce });
  cache.delete(CDS, "c2");
  cache.set(CDS, "c1", bytes("a2"));
  server.push({ kind: "config", types: [CDS] });
  await server.flush();
  const d2 = await s.next();
  assert.deepEqual(names(d2), ["c1"]);
  assert.deepEqual(d2.removed_resources, ["c2"]);
  // EDS: explicit names; a missing one is reported in removed_resources.
  h.receive({ type_url: EDS, resource_names_subscribe: ["c1", "nope"] });
  const d3 = await s.next();
  assert.deepEqual(names(d3), ["c1"]);
  assert.deepEqual(d3.removed_resources, ["nope"]);
  h.receive({ type_url: EDS, response_nonce: d3.nonce, resource_names_unsubscribe: ["c1"] });
  cache.set(EDS, "c1", bytes("e1b"));
  server.push({ kind: "eds", clusters: ["c1"] });
  await server.flush();
  assert.equal(s.unread, 0, "unsubscribed names are not pushed");
  const t = server.connections()[0].types;
  assert.equal(t[CDS].wildcard, true);
  assert.deepEqual(t[CDS].resources, { c1: cache.get(CDS, "c1")!.version });
  assert.equal(t[CDS].lastAcked?.version, d1.system_version_info);
  assert.deepEqual(t[EDS].subscribed, ["nope"]);
  assert.equal(server.connections()[0].mode, "delta");
  server.close();
});

Deno.test("delta ADS: subscribing to names ends a legacy wildcard; '*' keeps it", async () => {
  const cache = cacheWith([[LDS, "l1", "a"], [LDS, "l2", "b"]]);
  const { server } = newServer(cache);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({ node: node("a"), type_url: LDS, resource_names_subscribe: ["*", "l1"] });
  assert.deepEqual(names(await s.next()), ["l1", "l2"]);
  h.receive({ type_url: LDS, resource_names_unsubscribe: ["*"] });
  cache.set(LDS, "l2", bytes("b2"));
  server.push({ kind: "full" });
  await server.flush();
  assert.equal(s.unread, 0, "l2 is no longer subscribed");
  assert.deepEqual(server.connections()[0].types[LDS].subscribed, ["l1"]);
  server.close();
});

Deno.test("connections() reports node, peer, subscriptions and NACKs per type", async () => {
  const cache = cacheWith([[CDS, "c1", "a"]]);
  const { server } = newServer(cache);
  const { s, h } = sotw(server, "ipv4:127.0.0.1:4000");
  h.receive({ node: { ...node("p"), metadata: { POD_NAME: "p" } }, type_url: CDS });
  await s.next();
  const [c] = server.connections();
  assert.equal(c.peer, "ipv4:127.0.0.1:4000");
  assert.equal(c.proxy.id, "p.default");
  assert.deepEqual(c.node.metadata, { POD_NAME: "p" });
  assert.match(c.connectedAt, /Z$/);
  assert.deepEqual(Object.keys(c.types), [CDS]);
  h.close();
  assert.equal(server.connectionCount, 0);
  server.close();
});

Deno.test("XdsServer ignores requests for an unknown type URL and warns once per stream and type", async () => {
  const warnings: string[] = [];
  const cache = cacheWith([[CDS, "c1", "a"]]);
  const { server } = newServer(cache, {
    knownTypes: [CDS, EDS, LDS, RDS],
    logger: { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {} },
  });
  const { s, h } = sotw(server);
  h.receive({ node: node("a"), type_url: XDS_TYPES.secret, resource_names: ["default"] });
  h.receive({ type_url: XDS_TYPES.secret, resource_names: ["default", "ROOTCA"] });
  h.receive({ type_url: CDS });
  const cds = await s.next();
  assert.equal(cds.type_url, CDS, "known types are still served");
  await server.flush();
  assert.equal(s.sent.length, 1, "nothing is sent for the unknown type");
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0],
    /unknown type type\.googleapis\.com\/envoy\.extensions\.transport_sockets\.tls\.v3\.Secret/,
  );
  // A second stream warns again (once per stream).
  const other = sotw(server, "memory:2");
  other.h.receive({ node: node("b"), type_url: XDS_TYPES.secret });
  assert.equal(warnings.length, 2);
  assert.deepEqual(server.connections()[0].types[XDS_TYPES.secret], undefined);
  // A request without a type URL is ignored with a warning naming the stream and the protocol.
  h.receive({ resource_names: ["c1"] });
  const d = new MemoryStream<DeltaDiscoveryResponse>("memory:d");
  const dh = server.openDelta(d);
  dh.receive({ node: node("d"), type_url: CDS });
  await d.next();
  dh.receive({ resource_names_subscribe: ["c1"] });
  await server.flush();
  const [a, , dd] = server.connections().map((c) => c.conId);
  assert.deepEqual(warnings.slice(2), [
    `ADS: ${a}: request without type_url ignored`,
    `ADS: ${dd}: delta request without type_url ignored`,
  ]);
  assert.equal(s.sent.length, 1);
  assert.equal(d.unread, 0);
  server.close();
});

/** Encoded `resource_names` fields (3), as `decodeDiscoveryRequest` gives them. */
function rawNames(list: string[]): Uint8Array {
  const out: number[] = [];
  for (const n of list) out.push(0x1a, n.length, ...new TextEncoder().encode(n));
  return Uint8Array.from(out);
}

Deno.test("SotW request repeating the subscribed names' bytes is an ACK without decoding the names", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"], [EDS, "c3", "e3"], [
    EDS,
    "c4",
    "e4",
  ]]);
  const { server } = newServer(cache);
  const a = sotw(server);
  a.h.receive({
    node: node("a"),
    type_url: EDS,
    resource_names: ["c1", "c2"],
    resource_names_raw: rawNames(["c1", "c2"]),
  });
  const r1 = await a.s.next();
  assert.deepEqual(names(r1), ["c1", "c2"]);
  const ack = {
    type_url: EDS,
    version_info: r1.version_info,
    response_nonce: r1.nonce,
    resource_names_raw: rawNames(["c1", "c2"]),
    get resource_names(): string[] {
      throw new Error("names decoded");
    },
  };
  a.h.receive(ack);
  await server.flush();
  assert.equal(a.s.unread, 0);
  assert.equal(server.connections()[0].types[EDS].lastAcked?.nonce, r1.nonce);
  // Other bytes: decoded and compared; a new name is answered.
  a.h.receive({
    type_url: EDS,
    version_info: r1.version_info,
    response_nonce: r1.nonce,
    resource_names: ["c1", "c2", "c3"],
    resource_names_raw: rawNames(["c1", "c2", "c3"]),
  });
  assert.deepEqual(names(await a.s.next()), ["c3"]);
  // Another stream sending the same bytes shares the subscription, again without decoding.
  const b = sotw(server, "memory:b");
  b.h.receive({ node: node("b"), type_url: CDS });
  await b.s.next();
  b.h.receive({
    type_url: EDS,
    resource_names_raw: rawNames(["c1", "c2", "c3"]),
    get resource_names(): string[] {
      throw new Error("names decoded");
    },
  });
  assert.deepEqual(names(await b.s.next()), ["c1", "c2", "c3"]);
  assert.deepEqual(server.connections()[1].types[EDS].subscribed, ["c1", "c2", "c3"]);
  // A stream moving its subscription to those bytes in an ACK gets what it lacks.
  const c = sotw(server, "memory:c");
  c.h.receive({ node: node("c"), type_url: EDS, resource_names: ["c1"] });
  const c1 = await c.s.next();
  assert.deepEqual(names(c1), ["c1"]);
  c.h.receive({
    type_url: EDS,
    version_info: c1.version_info,
    response_nonce: c1.nonce,
    resource_names_raw: rawNames(["c1", "c2", "c3"]),
    get resource_names(): string[] {
      throw new Error("names decoded");
    },
  });
  assert.deepEqual(names(await c.s.next()), ["c2", "c3"]);
  assert.deepEqual(server.connections()[2].types[EDS].subscribed, ["c1", "c2", "c3"]);
  server.close();
});

Deno.test("SotW: CDS names with '*' in the same bytes from two streams are a wildcard for both", async () => {
  const cache = cacheWith([[CDS, "k1", "a"], [CDS, "k2", "b"]]);
  const { server } = newServer(cache);
  for (const list of [["*"], ["*", "k1"]]) {
    const open = [];
    for (const peer of ["memory:a", "memory:b"]) {
      const { s, h } = sotw(server, peer);
      h.receive({
        node: node(peer.slice(7)),
        type_url: CDS,
        resource_names: list,
        resource_names_raw: rawNames(list),
      });
      assert.deepEqual(names(await s.next()), ["k1", "k2"], `${peer} ${list}`);
      open.push(h);
    }
    for (const h of open) h.close();
  }
  server.close();
});

Deno.test("a SotW stream hints its next request's decoder with its subscriptions' encoded names", async () => {
  const list = Array.from({ length: 8 }, (_, i) => `outbound|80||svc-${i}.default`);
  const cache = cacheWith(list.map((n) => [EDS, n, `e-${n}`] as [string, string, string]));
  const { server } = newServer(cache);
  const a = sotw(server);
  assert.deepEqual(a.h.namesHints!(), [], "nothing subscribed yet");
  a.h.receive({ node: node("a"), type_url: CDS });
  await a.s.next();
  a.h.receive({ type_url: EDS, resource_names: list, resource_names_raw: rawNames(list) });
  await a.s.next();
  const hints = a.h.namesHints!().map((h) => [...h!]);
  assert.deepEqual(hints, [[...rawNames(list)]], "the EDS names (CDS is a wildcard)");
  assert.equal(a.h.namesHints!(), a.h.namesHints!(), "the same array while nothing changes");
  // a new subscription replaces its hint
  const fewer = list.slice(2);
  a.h.receive({ type_url: EDS, resource_names: fewer, resource_names_raw: rawNames(fewer) });
  await server.flush();
  assert.deepEqual(a.h.namesHints!().map((h) => [...h!]), [[...rawNames(fewer)]]);
  // names whose bytes the server was not given (decoded by proto-loader): no hint for them
  a.h.receive({ type_url: EDS, resource_names: list.slice(0, 1) });
  await server.flush();
  assert.deepEqual(a.h.namesHints!(), []);
  const d = new MemoryStream<DeltaDiscoveryResponse>("memory:d");
  assert.equal(server.openDelta(d).namesHints, undefined, "delta requests name changes only");
  server.close();
});

Deno.test("push({kind: config}) after EDS pushes sends each client only the assignments it lacks", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"], [EDS, "c3", "e3"]]);
  // A generator that shares one view per query (like mesh-discovery's) until invalidated.
  let memo = new Map<unknown, ReturnType<ResourceCache["select"]>>();
  const { server } = newServer(cache, {
    resourcesFor: (_p, t, n) => {
      let v = memo.get(n);
      if (!v) memo.set(n, v = cache.select(t, n));
      return v;
    },
  });
  const clients = [sotw(server, "memory:a"), sotw(server, "memory:b")];
  for (const [i, c] of clients.entries()) {
    c.h.receive({ node: node(`p${i}`), type_url: EDS, resource_names: ["c1", "c2", "c3"] });
    assert.deepEqual(names(await c.s.next()), ["c1", "c2", "c3"]);
  }
  cache.set(EDS, "c1", bytes("e1b"));
  memo = new Map();
  server.push({ kind: "eds", clusters: ["c1"] });
  await server.flush();
  for (const c of clients) assert.deepEqual(names(await c.s.next()), ["c1"]);
  cache.set(EDS, "c2", bytes("e2b"));
  memo = new Map();
  server.push({ kind: "config" });
  await server.flush();
  for (const c of clients) {
    const r = await c.s.next();
    assert.deepEqual(names(r), ["c2"], "c1 was already sent by the EDS push");
    assert.equal(r.resources[0].entry.version, cache.get(EDS, "c2")!.version);
  }
  memo = new Map();
  server.push({ kind: "config" });
  await server.flush();
  for (const c of clients) assert.equal(c.s.unread, 0);
  server.close();
});

Deno.test("push and convergence times keep sub-millisecond precision with the real clock", async () => {
  const { cache, server, metrics, s, h } = sotwWith([[CDS, "c1", "a"]]);
  h.receive({ node: node("a"), type_url: CDS });
  const r1 = await s.next();
  h.receive({ type_url: CDS, version_info: r1.version_info, response_nonce: r1.nonce });
  for (let i = 0; i < 3; i++) {
    cache.set(CDS, "c1", bytes(`v${i}`));
    server.push({ kind: "config", types: [CDS] });
    await server.flush();
    const r = await s.next();
    h.receive({ type_url: CDS, version_info: r.version_info, response_nonce: r.nonce });
  }
  assert.equal(metrics.pushDurations.count, 3);
  assert.ok(metrics.pushDurations.sum > 0, `push time sum ${metrics.pushDurations.sum}`);
  // whole milliseconds (Date.now) sum to 0 for in-memory pushes, or to a whole number of ms
  const micros = Math.round(metrics.pushDurations.sum * 1e6);
  assert.notEqual(micros % 1000, 0, `sub-millisecond precision: ${micros} µs`);
  assert.ok(metrics.pushDurations.max < 1, "seconds, not milliseconds");
  assert.ok(metrics.convergenceTimes.sum >= metrics.pushDurations.sum);
  assert.match(r1.nonce, /^[0-9a-z]+-/, "nonces stay integral base 36");
  server.close();
  await s.waitEnded();
});

Deno.test("delta clients holding the same view get one shared diff with identical bytes but for nonce and version", async () => {
  const { encodeDeltaDiscoveryResponse } = await import("./wire.ts");
  const cache = cacheWith([
    [CDS, "c1", "a"],
    [CDS, "c2", "b"],
    [CDS, "c3", "c"],
    [EDS, "c1", "e1"],
    [EDS, "c2", "e2"],
    [EDS, "c3", "e3"],
  ]);
  // A generator that shares one view per query (like mesh-discovery's) until invalidated.
  let memo = new Map<unknown, ReturnType<ResourceCache["select"]>>();
  const { server } = newServer(cache, {
    resourcesFor: (_p, t, n) => {
      const k = n ?? t;
      let v = memo.get(k);
      if (!v) memo.set(k, v = cache.select(t, n));
      return v;
    },
  });
  const clients = [0, 1, 2, 3].map((i) => {
    const s = new MemoryStream<DeltaDiscoveryResponse>(`memory:${i}`);
    return { s, h: server.openDelta(s) };
  });
  for (const [i, c] of clients.entries()) {
    c.h.receive({ node: node(`p${i}`), type_url: CDS });
    assert.deepEqual(names(await c.s.next()), ["c1", "c2", "c3"]);
    // Clients 0 and 1 subscribe to the same names (in different orders); 2 and 3 to others.
    const eds = [["c1", "c2", "c3"], ["c3", "c1", "c2"], ["c1", "c2", "c3", "c5"], ["c2"]][i];
    c.h.receive({ type_url: EDS, resource_names_subscribe: eds });
    const r = await c.s.next();
    assert.deepEqual(names(r), eds.filter((n) => n !== "c5").sort());
    assert.deepEqual(r.removed_resources, i === 2 ? ["c5"] : []);
  }
  // Client 2 gets c5 from an EDS-only push (a per-client difference from its shared view).
  cache.set(EDS, "c5", bytes("e5"));
  memo = new Map();
  server.push({ kind: "eds", clusters: ["c5"] });
  await server.flush();
  assert.deepEqual(names(await clients[2].s.next()), ["c5"]);
  for (const i of [0, 1, 3]) assert.equal(clients[i].s.unread, 0);
  // Config change: c4 added, c3 removed, c2 changed (CDS and EDS).
  cache.set(CDS, "c4", bytes("d"));
  cache.delete(CDS, "c3");
  cache.set(CDS, "c2", bytes("b2"));
  cache.delete(EDS, "c3");
  cache.delete(EDS, "c5");
  cache.set(EDS, "c2", bytes("e2b"));
  memo = new Map();
  server.push({ kind: "config" });
  await server.flush();
  const cds = await Promise.all(clients.map((c) => c.s.next()));
  const eds = await Promise.all(clients.map((c) => c.s.next()));
  for (const r of cds) {
    assert.equal(r.type_url, CDS);
    assert.deepEqual(names(r), ["c2", "c4"]);
    assert.deepEqual(r.removed_resources, ["c3"]);
    assert.equal(r.resources, cds[0].resources, "one shared list, not one per client");
  }
  const norm = (r: DeltaDiscoveryResponse) =>
    encodeDeltaDiscoveryResponse({ ...r, nonce: "n", system_version_info: "v" });
  const first = norm(cds[0]);
  assert.deepEqual(first, norm({ ...cds[0], resources: [...cds[0].resources] }), "shared encoding");
  for (const r of cds.slice(1)) assert.deepEqual(norm(r), first);
  assert.equal(new Set(cds.map((r) => r.nonce)).size, clients.length);
  // EDS: clients 0 and 1 hold the same view and get the same diff; 2 and 3 their own.
  for (const r of eds) assert.equal(r.type_url, EDS);
  assert.deepEqual(names(eds[0]), ["c2"]);
  assert.deepEqual(eds[0].removed_resources, ["c3"]);
  assert.equal(eds[1].resources, eds[0].resources);
  assert.deepEqual(norm(eds[1]), norm(eds[0]));
  assert.deepEqual(names(eds[2]), ["c2"]);
  assert.deepEqual(eds[2].removed_resources, ["c3", "c5"], "c5 was sent by the EDS push");
  assert.deepEqual(names(eds[3]), ["c2"]);
  assert.deepEqual(eds[3].removed_resources, []);
  const held = server.connections().map((c) => c.types[EDS].resources);
  const v = (n: string) => cache.get(EDS, n)!.version;
  assert.deepEqual(held, [
    { c1: v("c1"), c2: v("c2") },
    { c1: v("c1"), c2: v("c2") },
    { c1: v("c1"), c2: v("c2") },
    { c2: v("c2") },
  ]);
  // Nothing changed: nothing is sent.
  memo = new Map();
  server.push({ kind: "config" });
  await server.flush();
  for (const c of clients) assert.equal(c.s.unread, 0);
  // Streams adding the same name to the same subscription end up sharing the same state.
  cache.set(EDS, "c6", bytes("e6"));
  memo = new Map();
  for (const name of ["c6", "c7"]) {
    const got = [];
    for (const c of clients.slice(0, 2)) {
      c.h.receive({ type_url: EDS, resource_names_subscribe: [name] });
      got.push(await c.s.next());
    }
    for (const r of got) {
      assert.deepEqual(names(r), name === "c6" ? ["c6"] : []);
      assert.deepEqual(r.removed_resources, name === "c6" ? [] : ["c7"], "c7 does not exist");
    }
  }
  const subs = server.connections().map((c) => c.types[EDS].subscribed);
  assert.deepEqual(subs[0], ["c1", "c2", "c3", "c6", "c7"]);
  assert.deepEqual(subs[1], subs[0]);
  server.close();
});

Deno.test("delta ADS: initial versions of explicit names are honoured and later pushes send only changes", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"]]);
  const { server } = newServer(cache);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({
    node: node("a"),
    type_url: EDS,
    resource_names_subscribe: ["c1", "c2"],
    initial_resource_versions: { c1: cache.get(EDS, "c1")!.version, c9: "old" },
  });
  const d1 = await s.next();
  assert.deepEqual(names(d1), ["c2"], "c1 is current; c9 is not subscribed");
  assert.deepEqual(d1.removed_resources, []);
  cache.set(EDS, "c1", bytes("e1b"));
  cache.delete(EDS, "c2");
  server.push({ kind: "config" });
  await server.flush();
  const d2 = await s.next();
  assert.deepEqual(names(d2), ["c1"]);
  assert.deepEqual(d2.removed_resources, ["c2"]);
  assert.deepEqual(server.connections()[0].types[EDS].resources, {
    c1: cache.get(EDS, "c1")!.version,
  });
  server.push({ kind: "config" });
  await server.flush();
  assert.equal(s.unread, 0);
  server.close();
});

// ---- ACK/NACK bookkeeping ---------------------------------------------------------------------
// /debug/syncz, the NACK metrics and "keep the last good config" rest on these fields.

/** The bookkeeping of one type without the timestamps. */
function acks(server: XdsServer<TestProxy>, typeUrl: string) {
  const t = server.connections()[0].types[typeUrl];
  const strip = <T extends { time: string }>(x: T | undefined) => {
    if (!x) return undefined;
    const { time: _, ...rest } = x;
    return rest;
  };
  return { acked: strip(t.lastAcked), nack: strip(t.lastNack) };
}

Deno.test("SotW NACK leaves the last acked version and nonce unchanged", async () => {
  const { cache, server, s, h } = sotwWith([[CDS, "c1", "a"]]);
  h.receive({ node: node("a"), type_url: CDS });
  const r1 = await s.next();
  h.receive({ type_url: CDS, version_info: r1.version_info, response_nonce: r1.nonce });
  cache.set(CDS, "c1", bytes("bad"));
  server.push({ kind: "config", types: [CDS] });
  await server.flush();
  const r2 = await s.next();
  // Envoy NACKs with the version it still runs (r1) and the nonce of the rejected response (r2);
  // a client that reports the rejected version must not make it look acked either.
  for (const version_info of [r1.version_info, r2.version_info]) {
    h.receive({
      type_url: CDS,
      version_info,
      response_nonce: r2.nonce,
      error_detail: { code: 3, message: "bad" },
    });
    await server.flush();
    assert.deepEqual(acks(server, CDS), {
      acked: { version: r1.version_info, nonce: r1.nonce },
      nack: { version: version_info, nonce: r2.nonce, error: "bad" },
    });
  }
  server.close();
});

Deno.test("SotW stale nonces change neither the acked nor the NACKed state nor the NACK count, and are logged at debug", async () => {
  const log = recordingLogger();
  const { cache, server, metrics, s, h } = sotwWith([[CDS, "c1", "a"]], { logger: log });
  const stale = () => log.lines.filter((l) => l.includes("stale nonce"));
  h.receive({ node: node("a"), type_url: CDS });
  const r1 = await s.next();
  cache.set(CDS, "c1", bytes("b"));
  server.push({ kind: "config", types: [CDS] });
  await server.flush();
  const r2 = await s.next();
  // The client answers r1 after r2 went out: a stale ACK, then a stale NACK.
  h.receive({ type_url: CDS, version_info: r1.version_info, response_nonce: r1.nonce });
  h.receive({
    type_url: CDS,
    version_info: "",
    response_nonce: r1.nonce,
    error_detail: { code: 3, message: "stale" },
  });
  await server.flush();
  assert.deepEqual(acks(server, CDS), { acked: undefined, nack: undefined });
  assert.equal(metrics.nacks.cds, undefined);
  const conId = server.connections()[0].conId;
  assert.deepEqual(stale(), [
    `debug ADS: ${conId}: stale nonce for cds {"nonce":"${r1.nonce}"}`,
    `debug ADS: ${conId}: stale nonce for cds {"nonce":"${r1.nonce}"}`,
  ]);
  // An unknown nonce is stale too.
  h.receive({ type_url: CDS, version_info: r2.version_info, response_nonce: "nope" });
  await server.flush();
  assert.deepEqual(acks(server, CDS), { acked: undefined, nack: undefined });
  // The current nonce is an ACK; stale ones after it still change nothing.
  h.receive({ type_url: CDS, version_info: r2.version_info, response_nonce: r2.nonce });
  h.receive({
    type_url: CDS,
    version_info: r1.version_info,
    response_nonce: r1.nonce,
    error_detail: { code: 3, message: "stale" },
  });
  await server.flush();
  assert.deepEqual(acks(server, CDS), {
    acked: { version: r2.version_info, nonce: r2.nonce },
    nack: undefined,
  });
  assert.equal(metrics.nacks.cds, undefined);
  assert.equal(s.unread, 0);
  // The current nonce is not logged as stale; the first request (no nonce) neither.
  assert.equal(stale().length, 4);
  assert.equal(stale()[2], `debug ADS: ${conId}: stale nonce for cds {"nonce":"nope"}`);
  server.close();
});

Deno.test("delta NACK is recorded and counted as a NACK, leaves the last ACK, and stale nonces change nothing", async () => {
  const cache = cacheWith([[CDS, "c1", "a"]]);
  const { server, metrics } = newServer(cache);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({ node: node("a"), type_url: CDS });
  const d1 = await s.next();
  h.receive({ type_url: CDS, response_nonce: d1.nonce });
  await server.flush();
  const ackD1 = { version: d1.system_version_info, nonce: d1.nonce };
  assert.deepEqual(acks(server, CDS), { acked: ackD1, nack: undefined });
  cache.set(CDS, "c1", bytes("bad"));
  server.push({ kind: "config", types: [CDS] });
  await server.flush();
  const d2 = await s.next();
  assert.notEqual(d2.system_version_info, d1.system_version_info);
  // Stale: the nonce of d1 again, as an ACK and as a NACK.
  h.receive({ type_url: CDS, response_nonce: d1.nonce });
  h.receive({ type_url: CDS, response_nonce: d1.nonce, error_detail: { code: 3, message: "x" } });
  await server.flush();
  assert.deepEqual(acks(server, CDS), { acked: ackD1, nack: undefined });
  assert.equal(metrics.nacks.cds, undefined);
  // The NACK of d2.
  h.receive({
    type_url: CDS,
    response_nonce: d2.nonce,
    error_detail: { code: 3, message: "cluster c1: bad" },
  });
  await server.flush();
  assert.deepEqual(acks(server, CDS), {
    acked: ackD1,
    nack: { version: d2.system_version_info, nonce: d2.nonce, error: "cluster c1: bad" },
  });
  assert.equal(metrics.nacks.cds, 1);
  assert.equal(s.unread, 0, "a NACK does not trigger a resend");
  server.close();
});

// ---- what the server believes the client holds (found by mutation testing) ---------------------

Deno.test("SotW request with an empty nonce on an open stream re-initializes it: everything is sent again", async () => {
  const { server, s, h } = sotwWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"]]);
  // As the wire decoder gives them: the names and their encoded bytes.
  const list = { resource_names: ["c1", "c2"], resource_names_raw: rawNames(["c1", "c2"]) };
  h.receive({ node: node("a"), type_url: EDS, ...list });
  const r1 = await s.next();
  h.receive({ type_url: EDS, ...list, version_info: r1.version_info, response_nonce: r1.nonce });
  await server.flush();
  assert.equal(s.unread, 0);
  // The client lost its state (e.g. its subscription restarted) and asks again from scratch: the
  // same names in the same bytes, even with the version it held, are answered in full.
  h.receive({ type_url: EDS, ...list });
  await server.flush();
  assert.deepEqual(names(await s.next()), ["c1", "c2"]);
  h.receive({ type_url: EDS, ...list, version_info: r1.version_info });
  await server.flush();
  assert.deepEqual(names(await s.next()), ["c1", "c2"]);
  server.close();
});

/** ACKs of EDS responses on `h`, each naming the names subscribed from then on. */
function edsAck(h: { receive(req: Record<string, unknown>): void }) {
  return (r: DiscoveryResponse, resource_names: string[]) =>
    h.receive({
      type_url: EDS,
      resource_names,
      version_info: r.version_info,
      response_nonce: r.nonce,
    });
}

Deno.test("SotW names dropped from a subscription are forgotten: subscribing again sends them again", async () => {
  const { server, s, h } = sotwWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"]]);
  const ack = edsAck(h);
  h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1", "c2"] });
  const r1 = await s.next();
  ack(r1, ["c1"]); // ACK, and drop c2
  await server.flush();
  assert.deepEqual(Object.keys(server.connections()[0].types[EDS].resources), ["c1"]);
  ack(r1, ["c1", "c2"]);
  await server.flush();
  assert.deepEqual(names(await s.next()), ["c2"], "c2 is sent again, and only c2");
  server.close();
});

Deno.test("SotW: after dropping names, a push sends only what changed of the rest; subscribing again sends only the dropped names that exist, with the version every stream holding the same set gets", async () => {
  const { cache, server, s, h } = sotwWith([
    [EDS, "c1", "e1"],
    [EDS, "c2", "e2"],
    [EDS, "c3", "e3"],
    [EDS, "c4", "e4"],
  ]);
  const all = ["c1", "c2", "c3", "c4"];
  const ack = edsAck(h);
  h.receive({ node: node("a"), type_url: EDS, resource_names: all });
  const r1 = await s.next();
  ack(r1, ["c1", "c3"]); // drops c2 and c4
  await server.flush();
  assert.equal(s.unread, 0, "dropping names sends nothing");
  // A push naming c1 (changed), c2 (changed, dropped) and c3 (unchanged); c4 goes away.
  cache.set(EDS, "c1", bytes("e1b"));
  cache.set(EDS, "c2", bytes("e2b"));
  cache.delete(EDS, "c4");
  server.push({ kind: "eds", clusters: ["c1", "c2", "c3"] });
  await server.flush();
  const r2 = await s.next();
  assert.deepEqual(names(r2), ["c1"], "c2 is no longer subscribed, c3 did not change");
  ack(r2, all);
  const r3 = await s.next();
  assert.deepEqual(names(r3), ["c2"], "c1's new version is held already, c3 never changed");
  // The version says what the client holds: the same as a new stream holding the same set.
  const b = sotw(server, "memory:b");
  b.h.receive({ node: node("b"), type_url: EDS, resource_names: all });
  const fresh = await b.s.next();
  assert.deepEqual(names(fresh), ["c1", "c2", "c3"]);
  assert.equal(r3.version_info, fresh.version_info);
  assert.notEqual(r2.version_info, fresh.version_info);
  server.close();
});

Deno.test("delta re-subscribing to a held name sends it again", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"]]);
  const { server } = newServer(cache);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({ node: node("a"), type_url: EDS, resource_names_subscribe: ["c1"] });
  const d1 = await s.next();
  assert.deepEqual(names(d1), ["c1"]);
  h.receive({ type_url: EDS, response_nonce: d1.nonce });
  await server.flush();
  assert.equal(s.unread, 0);
  h.receive({ type_url: EDS, resource_names_subscribe: ["c1"] });
  await server.flush();
  assert.deepEqual(names(await s.next()), ["c1"]);
  server.close();
});

Deno.test("a NACK without a message is recorded with its code, and a server without metrics hooks takes it", async () => {
  const cache = cacheWith([[CDS, "c1", "a"]]);
  const server = new XdsServer<TestProxy>({
    parseNode: parseTestNode,
    resourcesFor: (_p, t, names) => cache.select(t, names),
    debounceAfter: 0,
    logger: quietLogger,
  });
  const { s, h } = sotw(server);
  h.receive({ node: node("a"), type_url: CDS });
  const r1 = await s.next();
  // The NACK of a first response carries no version (the client holds nothing yet).
  h.receive({ type_url: CDS, response_nonce: r1.nonce, error_detail: { code: 3 } });
  await server.flush();
  assert.deepEqual(acks(server, CDS).nack, { version: "", nonce: r1.nonce, error: "code 3" });
  h.receive({ type_url: CDS, response_nonce: r1.nonce, error_detail: {} });
  await server.flush();
  assert.equal(acks(server, CDS).nack?.error, "code unknown");
  server.close();
});

Deno.test("an EDS request without names subscribes to nothing (only CDS and LDS have wildcards), SotW and delta", async () => {
  const { server, s, h } = sotwWith([[EDS, "c1", "e1"], [CDS, "c1", "a"]]);
  h.receive({ node: node("a"), type_url: EDS });
  const d = new MemoryStream<DeltaDiscoveryResponse>();
  server.openDelta(d).receive({ node: node("b"), type_url: EDS });
  await server.flush();
  while (s.unread) assert.deepEqual(names(await s.next()), [], "SotW sends no assignment");
  while (d.unread) assert.deepEqual(names(await d.next()), [], "delta sends no assignment");
  for (const c of server.connections()) assert.equal(c.types[EDS].wildcard, false, c.mode);
  server.close();
});

Deno.test("delta: a legacy wildcard (no names in the first request) ends when names are subscribed", async () => {
  const cache = cacheWith([[LDS, "l1", "a"], [LDS, "l2", "b"]]);
  const { server } = newServer(cache);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({ node: node("a"), type_url: LDS });
  const d1 = await s.next();
  assert.deepEqual(names(d1), ["l1", "l2"]);
  assert.equal(server.connections()[0].types[LDS].wildcard, true);
  h.receive({ type_url: LDS, response_nonce: d1.nonce, resource_names_subscribe: ["l1"] });
  await server.flush();
  assert.equal(server.connections()[0].types[LDS].wildcard, false);
  cache.set(LDS, "l2", bytes("b2"));
  server.push({ kind: "full" });
  await server.flush();
  while (s.unread) assert.ok(!names(await s.next()).includes("l2"), "l2 is no longer subscribed");
  server.close();
});

Deno.test("delta requests for an unknown type URL are ignored; known types are still served", async () => {
  const cache = cacheWith([[CDS, "c1", "a"]]);
  const { server } = newServer(cache, { knownTypes: [CDS, EDS, LDS, RDS] });
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({ node: node("a"), type_url: XDS_TYPES.secret, resource_names_subscribe: ["x"] });
  h.receive({ type_url: XDS_TYPES.secret, resource_names_subscribe: ["y"] });
  h.receive({ type_url: CDS });
  assert.deepEqual(names(await s.next()), ["c1"]);
  await server.flush();
  assert.equal(s.sent.length, 1, "nothing is sent for the unknown type");
  assert.deepEqual(Object.keys(server.connections()[0].types), [CDS]);
  server.close();
});

/** A stream whose sends fail (a transport that broke). */
class FailingStream<R> extends MemoryStream<R> {
  sends = 0;
  override send(_r: R): Promise<void> {
    this.sends++;
    return Promise.reject(new Error("connection reset by peer"));
  }
}

Deno.test("XdsServer ends a stream whose send fails with UNAVAILABLE and counts a send error, not a timeout", async () => {
  const cache = cacheWith([[CDS, "c1", "v0"], [LDS, "l1", "v0"]]);
  const { server, metrics } = newServer(cache);
  const s = new FailingStream<DiscoveryResponse>();
  const h = server.openSotw(s);
  h.receive({ node: node("a"), type_url: CDS });
  h.receive({ node: node("a"), type_url: LDS });
  const end = await s.waitEnded();
  assert.deepEqual(end, {
    code: Status.UNAVAILABLE,
    message: "Send failed: connection reset by peer",
  });
  assert.equal(s.sends, 1, "nothing more is sent on a failed stream");
  assert.deepEqual(metrics.pushErrors, { cds_senderr: 1 });
  assert.equal(server.connectionCount, 0);
  server.close();
});

Deno.test("controlPlaneId is sent as control_plane.identifier in SotW and delta responses, and only when set", async () => {
  for (const id of ["mesh-discovery-7", undefined]) {
    const cache = cacheWith([[CDS, "c1", "v0"]]);
    const { server } = newServer(cache, id ? { controlPlaneId: id } : {});
    const { s, h } = sotw(server);
    h.receive({ node: node("a"), type_url: CDS });
    const r = await s.next();
    assert.deepEqual(r.control_plane, id ? { identifier: id } : undefined);
    const d = new MemoryStream<DeltaDiscoveryResponse>("memory:2");
    server.openDelta(d).receive({ node: node("b"), type_url: CDS });
    const dr = await d.next();
    assert.deepEqual(names(dr), ["c1"]);
    assert.deepEqual(dr.control_plane, id ? { identifier: id } : undefined);
    server.close();
  }
});

/** How the server ended `s` so far (read afresh: the server ends streams from timers). */
function endOf(s: MemoryStream<unknown>): StreamEnd | undefined {
  return s.ended;
}

/** Lets pending promise callbacks and zero-delay timers run. */
function settle(): Promise<void> {
  return new Promise((r) => setTimeout(r, 0));
}

Deno.test("a send slower than the sweep but within the send timeout keeps the stream; stuck sends end at the first sweep past their deadline", async () => {
  const clock = new FakeClock();
  const cache = cacheWith([[CDS, "c1", "v0"]]);
  // A send timeout of 1 s: sends in flight are checked every 100 ms.
  const { server, metrics } = newServer(cache, { sendTimeout: 1000, clock });
  const idle = sotw(server, "memory:idle");
  idle.h.receive({ node: node("idle"), type_url: CDS });
  await idle.s.next();
  const a = sotw(server, "memory:a");
  a.s.hold();
  a.h.receive({ node: node("a"), type_url: CDS });
  await a.s.next(); // in flight from now on
  clock.advance(999);
  assert.equal(a.s.ended, undefined, "a send within its timeout is not cut short");
  a.s.release();
  await settle();
  assert.equal(metrics.pushes.cds, 2);
  clock.advance(5000);
  assert.equal(a.s.ended, undefined, "a completed send has no deadline left");
  assert.equal(idle.s.ended, undefined, "a stream with no send in flight is never timed out");
  assert.equal(clock.timers, 0, "no sweep runs while no send is in flight");

  // Two stuck sends, the second started 50 ms after the first (between two sweeps).
  a.s.hold();
  cache.set(CDS, "c1", bytes("v1"));
  server.push({ kind: "full" });
  void server.flush();
  await a.s.next();
  await idle.s.next();
  clock.advance(50);
  const b = sotw(server, "memory:b");
  b.s.hold();
  b.h.receive({ node: node("b"), type_url: CDS });
  await b.s.next(); // b's first response, 50 ms after a's push
  clock.advance(949);
  assert.equal(a.s.ended, undefined, "1 ms before its deadline");
  clock.advance(1);
  const conA = `${node("a").id}-2`;
  assert.deepEqual(endOf(a.s), {
    code: Status.DEADLINE_EXCEEDED,
    message: `Sending cds to ${conA} timed out after 1000 ms`,
  });
  assert.equal(b.s.ended, undefined, "b's deadline is 50 ms later");
  clock.advance(99);
  assert.equal(b.s.ended, undefined, "the sweep after b's deadline runs 100 ms after a's");
  clock.advance(1);
  assert.equal(endOf(b.s)?.code, Status.DEADLINE_EXCEEDED);
  assert.deepEqual(metrics.pushErrors, { cds_timeout: 2 });
  assert.equal(idle.s.ended, undefined);
  assert.deepEqual(server.connections().map((c) => c.peer), ["memory:idle"]);
  a.s.release();
  b.s.release();
  server.close();
});

/** A stream whose held sends are settled by the test: resolved or rejected, at any time. */
class LateStream<R> extends MemoryStream<R> {
  #pending: { resolve: () => void; reject: (e: Error) => void }[] = [];
  override send(r: R): Promise<void> {
    void super.send(r);
    return new Promise((resolve, reject) => this.#pending.push({ resolve, reject }));
  }
  settleAll(error?: Error): void {
    for (const p of this.#pending.splice(0)) error ? p.reject(error) : p.resolve();
  }
}

Deno.test("a send that completes or fails after its timeout ended the stream counts only as a timeout", async () => {
  for (const late of ["completes", "fails"]) {
    const clock = new FakeClock();
    const cache = cacheWith([[CDS, "c1", "v0"], [LDS, "l1", "v0"]]);
    const { server, metrics } = newServer(cache, { sendTimeout: 100, clock });
    const s = new LateStream<DiscoveryResponse>();
    const h = server.openSotw(s);
    h.receive({ node: node("a"), type_url: CDS });
    h.receive({ type_url: LDS });
    await s.next();
    clock.advance(100);
    assert.equal(s.ended?.code, Status.DEADLINE_EXCEEDED, late);
    s.settleAll(late === "fails" ? new Error("connection reset") : undefined);
    await settle();
    await settle();
    assert.deepEqual(metrics.pushes, {}, `${late}: a send past its deadline is no push`);
    assert.deepEqual(metrics.pushErrors, { cds_timeout: 1 }, late);
    assert.equal(s.sent.length, 1, `${late}: nothing more is sent (LDS was queued)`);
    server.close();
  }
});

Deno.test("delta: a subscribed name that does not exist is reported removed once, and not twice when also held", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"]]);
  const { server } = newServer(cache);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({
    node: node("a"),
    type_url: EDS,
    initial_resource_versions: { gone: "old" },
    resource_names_subscribe: ["c1", "gone", "nope"],
  });
  const d1 = await s.next();
  assert.deepEqual(names(d1), ["c1"]);
  assert.deepEqual(d1.removed_resources, ["gone", "nope"]);
  h.receive({ type_url: EDS, response_nonce: d1.nonce });
  cache.set(EDS, "c1", bytes("e2"));
  server.push({ kind: "eds", clusters: ["c1"] });
  await server.flush();
  const d2 = await s.next();
  assert.deepEqual(names(d2), ["c1"]);
  assert.deepEqual(d2.removed_resources, [], "missing names are reported once");
  // Created later, a subscribed name is sent.
  cache.set(EDS, "nope", bytes("n1"));
  server.push({ kind: "eds", clusters: ["nope"] });
  await server.flush();
  const d3 = await s.next();
  assert.deepEqual(names(d3), ["nope"]);
  assert.deepEqual(d3.removed_resources, []);
  server.close();
});

Deno.test("delta: after a failed build, a scoped EDS push sends its cluster and reports no other new name as removed", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"]]);
  let fail = true;
  const { server, metrics } = newServer(cache, {
    resourcesFor: (_p, t, n) => {
      if (fail && t === EDS) throw new Error("generator broke");
      return cache.select(t, n);
    },
  });
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({ node: node("a"), type_url: EDS, resource_names_subscribe: ["c1", "c2", "nope"] });
  await server.flush();
  assert.equal(s.unread, 0);
  assert.deepEqual(metrics.buildErrors, { eds_builderr: 1 });
  fail = false;
  cache.set(EDS, "c1", bytes("e1b"));
  server.push({ kind: "eds", clusters: ["c1"] });
  await server.flush();
  const d1 = await s.next();
  assert.deepEqual(names(d1), ["c1"]);
  assert.deepEqual(d1.removed_resources, [], "c2 exists: it was only outside this push");
  server.push({ kind: "config", types: [EDS] });
  await server.flush();
  const d2 = await s.next();
  assert.deepEqual(names(d2), ["c2"]);
  assert.deepEqual(d2.removed_resources, ["nope"], "reported by the next full response");
  server.close();
});

Deno.test("watchedNames(), forEachHeld() and proxies() report what the streams subscribe to and hold", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"], [CDS, "k1", "a"]]);
  const { server } = newServer(cache);
  assert.deepEqual([...server.watchedNames(EDS)], []);
  const a = sotw(server, "memory:a");
  a.h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1", "c3"] });
  await a.s.next();
  const b = new MemoryStream<DeltaDiscoveryResponse>("memory:b");
  const hb = server.openDelta(b);
  hb.receive({
    node: node("b"),
    type_url: EDS,
    resource_names_subscribe: ["c2"],
    initial_resource_versions: { c2: cache.get(EDS, "c2")!.version },
  });
  hb.receive({ type_url: CDS });
  await b.next();
  await server.flush();
  assert.deepEqual([...server.watchedNames(EDS)].sort(), ["c1", "c2", "c3"]);
  assert.deepEqual([...server.watchedNames(CDS)], ["k1"], "a wildcard holds what it was sent");
  assert.deepEqual([...server.watchedNames(RDS)], []);
  const held: string[] = [];
  server.forEachHeld((t, n, v) => held.push(`${t === EDS ? "eds" : "cds"} ${n} ${v}`));
  assert.deepEqual([...new Set(held)].sort(), [
    `cds k1 ${cache.get(CDS, "k1")!.version}`,
    `eds c1 ${cache.get(EDS, "c1")!.version}`,
    `eds c2 ${cache.get(EDS, "c2")!.version}`,
  ]);
  assert.deepEqual(server.proxies().map((p) => p.id).sort(), ["a.default", "b.default"]);
  // Unsubscribed names are no longer watched nor held.
  hb.receive({ type_url: EDS, resource_names_unsubscribe: ["c2"] });
  await server.flush();
  assert.deepEqual([...server.watchedNames(EDS)].sort(), ["c1", "c3"]);
  a.h.close();
  assert.deepEqual([...server.watchedNames(EDS)], []);
  assert.deepEqual(server.proxies().map((p) => p.id), ["b.default"]);
  server.close();
});

Deno.test("connections() lists streams sorted by conId with the node, peer identities and per-type state", async () => {
  const cache = cacheWith([[CDS, "c1", "a"], [CDS, "c2", "b"]]);
  const clock = new FakeClock();
  const { server } = newServer(cache, { clock });
  const streams = ["z", "a", "m"].map((n) => {
    const s = new MemoryStream<DiscoveryResponse>(`memory:${n}`, [
      `spiffe://cluster.local/ns/default/sa/${n}`,
    ]);
    server.openSotw(s).receive({ node: node(n), type_url: CDS, resource_names: ["c2", "c1"] });
    return s;
  });
  for (const s of streams) await s.next();
  const cs = server.connections();
  assert.deepEqual(cs.map((c) => c.nodeId), ["a", "m", "z"].map((n) => node(n).id));
  const [a] = cs;
  assert.equal(a.peer, "memory:a");
  assert.deepEqual(a.peerIdentities, ["spiffe://cluster.local/ns/default/sa/a"]);
  assert.equal(a.connectedAt, new Date(clock.t).toISOString());
  assert.equal(a.mode, "sotw");
  assert.deepEqual(a.proxy, parseTestNode(node("a")));
  const t = a.types[CDS];
  assert.deepEqual(t.subscribed, ["c1", "c2"]);
  assert.equal(t.wildcard, false);
  assert.deepEqual(Object.keys(t.resources), ["c1", "c2"], "sorted by name");
  assert.deepEqual(
    { ...t.lastSent, nonce: undefined, version: undefined },
    { resources: 2, time: new Date(clock.t).toISOString(), nonce: undefined, version: undefined },
  );
  assert.equal(t.lastAcked, undefined);
  assert.equal(t.lastNack, undefined);
  assert.ok(!("lastAcked" in t) && !("lastNack" in t), "absent, not undefined, in /debug JSON");
  server.close();
});

Deno.test("SotW: '*' among names is a wildcard, not a subscribed name; dropping it narrows to the names", async () => {
  const { server, s, h } = sotwWith([[CDS, "c1", "a"], [CDS, "c2", "b"]]);
  h.receive({ node: node("a"), type_url: CDS, resource_names: ["*", "c1"] });
  const r1 = await s.next();
  assert.deepEqual(names(r1), ["c1", "c2"]);
  const t1 = server.connections()[0].types[CDS];
  assert.equal(t1.wildcard, true);
  assert.deepEqual(t1.subscribed, ["c1"]);
  h.receive({ type_url: CDS, response_nonce: r1.nonce, resource_names: ["c1"] });
  const r2 = await s.next();
  assert.deepEqual(names(r2), ["c1"], "CDS responses list every subscribed resource");
  assert.equal(server.connections()[0].types[CDS].wildcard, false);
  assert.deepEqual(Object.keys(server.connections()[0].types[CDS].resources), ["c1"]);
  // '*' on a type without wildcards (EDS) subscribes to nothing more than the names.
  h.receive({ type_url: EDS, resource_names: ["*"] });
  await server.flush();
  const e = server.connections()[0].types[EDS];
  assert.equal(e.wildcard, false);
  assert.deepEqual(e.subscribed, []);
  server.close();
});

Deno.test("new XdsServer() requires parseNode and resourcesFor and a positive finite sendTimeout", () => {
  const ok = { parseNode: parseTestNode, resourcesFor: () => new Map() };
  assert.throws(
    () => new XdsServer({ ...ok, parseNode: undefined as unknown as typeof parseTestNode }),
    /XdsServer: parseNode is required/,
  );
  assert.throws(
    () => new XdsServer({ ...ok, resourcesFor: undefined as unknown as () => Map<never, never> }),
    /XdsServer: resourcesFor is required/,
  );
  for (const bad of [0, -1, NaN, Infinity]) {
    assert.throws(
      () => new XdsServer({ ...ok, sendTimeout: bad }),
      new RegExp(`Invalid sendTimeout ${bad}: must be a number > 0`),
    );
  }
  new XdsServer({ ...ok, sendTimeout: 1 }).close();
});

Deno.test("a closed XdsServer ends new streams with UNAVAILABLE and ignores pushes", async () => {
  const { server, metrics, s, h } = sotwWith([[CDS, "c1", "a"]]);
  h.receive({ node: node("a"), type_url: CDS });
  await s.next();
  server.close();
  assert.deepEqual(await s.waitEnded(), {
    code: Status.UNAVAILABLE,
    message: "Server is shutting down",
  });
  assert.equal(metrics.connected, 0);
  const late = sotw(server, "memory:late");
  late.h.receive({ node: node("b"), type_url: CDS });
  assert.equal((await late.s.waitEnded()).code, Status.UNAVAILABLE);
  late.h.receive({ node: node("b"), type_url: CDS }); // after the end: ignored
  server.push({ kind: "full" });
  await server.flush();
  assert.equal(late.s.sent.length, 0);
  assert.equal(server.connectionCount, 0);
  server.close(); // twice is fine
});

Deno.test("an ended stream ignores later requests; a request that throws ends its stream with INVALID_ARGUMENT", async () => {
  const { server, metrics, s, h } = sotwWith([[CDS, "c1", "a"]]);
  h.receive({ node: node("a"), type_url: CDS });
  await s.next();
  h.receive({
    type_url: RDS,
    get resource_names(): string[] {
      throw new Error("bad names");
    },
  });
  assert.deepEqual(await s.waitEnded(), { code: Status.INVALID_ARGUMENT, message: "bad names" });
  assert.equal(server.connectionCount, 0);
  assert.equal(metrics.connected, 0);
  h.receive({ type_url: EDS, resource_names: ["x"] });
  await server.flush();
  assert.equal(s.sent.length, 1, "nothing is answered after the end");
  // close() by the transport forgets the stream too.
  const b = sotw(server, "memory:b");
  b.h.receive({ node: node("b"), type_url: CDS });
  await b.s.next();
  assert.equal(metrics.connected, 1);
  b.h.close();
  assert.equal(server.connectionCount, 0);
  assert.equal(metrics.connected, 0);
  b.h.receive({ type_url: CDS });
  assert.equal(server.connectionCount, 0, "a closed handle opens nothing");
  server.close();
});

Deno.test("a first CDS/LDS request is answered even when there is nothing to send (the proxy waits for it), SotW and delta", async () => {
  const cache = new ResourceCache();
  const { server } = newServer(cache);
  const { s, h } = sotw(server);
  h.receive({ node: node("a"), type_url: CDS });
  const r = await s.next();
  assert.deepEqual([r.type_url, r.resources.length], [CDS, 0]);
  h.receive({ type_url: CDS, response_nonce: r.nonce });
  server.push({ kind: "full" });
  await server.flush();
  assert.equal(s.unread, 0, "a push with nothing new sends nothing");
  const d = new MemoryStream<DeltaDiscoveryResponse>("memory:d");
  const hd = server.openDelta(d);
  hd.receive({ node: node("b"), type_url: LDS });
  const dr = await d.next();
  assert.deepEqual([dr.type_url, dr.resources.length, dr.removed_resources.length], [LDS, 0, 0]);
  hd.receive({ type_url: LDS, response_nonce: dr.nonce });
  server.push({ kind: "full" });
  await server.flush();
  assert.equal(d.unread, 0, "delta: a push with nothing new sends nothing");
  // An explicit delta subscription to names that do not exist yet: they are reported removed.
  hd.receive({ type_url: EDS, resource_names_subscribe: ["c1"] });
  const de = await d.next();
  assert.deepEqual([de.resources.length, de.removed_resources], [0, ["c1"]]);
  server.close();
});

Deno.test("responses go out in Envoy's order: clusters, endpoints, listeners, routes", async () => {
  const { cache, server, s, h } = sotwWith([
    [CDS, "c1", "a"],
    [EDS, "c1", "e"],
    [LDS, "l1", "l"],
    [RDS, "r1", "r"],
  ]);
  s.hold();
  h.receive({ node: node("a"), type_url: CDS });
  await s.next(); // CDS in flight: the next requests wait
  h.receive({ type_url: RDS, resource_names: ["r1"] });
  h.receive({ type_url: LDS });
  h.receive({ type_url: EDS, resource_names: ["c1"] });
  s.release();
  await server.flush();
  const order = () => s.sent.slice(1).map((r) => r.type_url);
  assert.deepEqual(order(), [EDS, LDS, RDS]);
  s.hold();
  for (const [t, n] of [[RDS, "r1"], [LDS, "l1"], [EDS, "c1"], [CDS, "c1"]]) {
    cache.set(t, n, bytes(`${n}-2`));
  }
  server.push({ kind: "full" });
  void server.flush();
  await s.next();
  await s.next();
  await s.next();
  await s.next();
  s.release();
  await server.flush();
  assert.deepEqual(s.sent.slice(4).map((r) => r.type_url), [CDS, EDS, LDS, RDS]);
  server.close();
});

Deno.test("a SotW subscription changed to other names of the same number is answered", async () => {
  const { server, s, h } = sotwWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"]]);
  h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1"] });
  const r1 = await s.next();
  h.receive({ type_url: EDS, response_nonce: r1.nonce, resource_names: ["c2"] });
  assert.deepEqual(names(await s.next()), ["c2"]);
  assert.deepEqual(server.connections()[0].types[EDS].subscribed, ["c2"]);
  server.close();
});

Deno.test("a generator returning names outside the subscription: the client gets only what it subscribed to", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"], [EDS, "c3", "e3"]]);
  const { server } = newServer(cache, { resourcesFor: (_p, t) => cache.select(t, null) });
  const { s, h } = sotw(server);
  h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1", "c2"] });
  assert.deepEqual(names(await s.next()), ["c1", "c2"]);
  const d = new MemoryStream<DeltaDiscoveryResponse>("memory:d");
  const hd = server.openDelta(d);
  hd.receive({ node: node("b"), type_url: EDS, resource_names_subscribe: ["c3"] });
  assert.deepEqual(names(await d.next()), ["c3"]);
  // A scoped EDS push of c1 and c3 reaches each client for its own name only.
  cache.set(EDS, "c1", bytes("e1b"));
  cache.set(EDS, "c3", bytes("e3b"));
  server.push({ kind: "eds", clusters: ["c1", "c3"] });
  await server.flush();
  assert.deepEqual(names(await s.next()), ["c1"]);
  assert.deepEqual(names(await d.next()), ["c3"]);
  server.close();
});

Deno.test("one push to several clients is timed once; merged dirty marks keep the wider one", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"]]);
  const { server, metrics } = newServer(cache);
  const a = sotw(server, "memory:a");
  const b = sotw(server, "memory:b");
  a.h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1", "c2"] });
  b.h.receive({ node: node("b"), type_url: EDS, resource_names: ["c1", "c2"] });
  await a.s.next();
  await b.s.next();
  const before = metrics.pushDurations.count;
  cache.set(EDS, "c1", bytes("x"));
  server.push({ kind: "eds", clusters: ["c1"] });
  await server.flush();
  assert.equal(metrics.pushDurations.count, before + 1, "one push, one observation");
  assert.equal(metrics.convergenceTimes.count, before + 1);
  await a.s.next();
  await b.s.next();
  // While a's send is held, a config push (every name) then an EDS push (one name) are merged.
  a.s.hold();
  cache.set(EDS, "c1", bytes("y"));
  server.push({ kind: "eds", clusters: ["c1"] });
  void server.flush();
  await a.s.next();
  cache.set(EDS, "c1", bytes("z"));
  cache.set(EDS, "c2", bytes("z2"));
  server.push({ kind: "config", types: [EDS] });
  void server.flush();
  server.push({ kind: "eds", clusters: ["c1"] });
  void server.flush();
  a.s.release();
  await server.flush();
  assert.deepEqual(names(await a.s.next()), ["c1", "c2"]);
  server.close();
});

Deno.test("push({kind: eds}) without a clusters array is refused", () => {
  const { server } = newServer(new ResourceCache());
  assert.throws(
    () => server.push({ kind: "eds" } as unknown as { kind: "eds"; clusters: string[] }),
    /^Error: push\(\): eds event needs a clusters array$/,
  );
  server.close();
});

Deno.test("a server without metrics hooks survives build errors, send errors and send timeouts; the hooks get 'error' and 'timeout'", async () => {
  for (const withHooks of [false, true]) {
    const reasons: string[] = [];
    const clock = new FakeClock();
    const cache = cacheWith([[CDS, "c1", "a"], [EDS, "c1", "e"]]);
    const server = new XdsServer<TestProxy>({
      parseNode: parseTestNode,
      resourcesFor: (_p, t, n) => {
        if (t === EDS) throw new Error("generator broke");
        return cache.select(t, n);
      },
      debounceAfter: 0,
      sendTimeout: 100,
      clock,
      logger: quietLogger,
      ...(withHooks ? { metrics: { sendError: (_t, reason) => reasons.push(reason) } } : {}),
    });
    const ok = sotw(server, "memory:ok");
    ok.h.receive({ node: node("ok"), type_url: EDS, resource_names: ["c1"] });
    ok.h.receive({ type_url: CDS });
    assert.deepEqual(names(await ok.s.next()), ["c1"], "CDS served after the EDS build failed");
    const failing = new FailingStream<DiscoveryResponse>("memory:failing");
    server.openSotw(failing).receive({ node: node("f"), type_url: CDS });
    assert.equal((await failing.waitEnded()).code, Status.UNAVAILABLE);
    const slow = sotw(server, "memory:slow");
    slow.s.hold();
    slow.h.receive({ node: node("s"), type_url: CDS });
    await slow.s.next();
    clock.advance(100);
    assert.equal(slow.s.ended?.code, Status.DEADLINE_EXCEEDED);
    assert.deepEqual(reasons, withHooks ? ["error", "timeout"] : []);
    slow.s.release();
    server.close();
  }
});

Deno.test("the first request's node.id must be a non-empty string", async () => {
  const { server } = newServer(new ResourceCache());
  for (const id of [5, ""]) {
    const { s, h } = sotw(server);
    h.receive({ node: { id: id as string }, type_url: CDS });
    assert.deepEqual(await s.waitEnded(), {
      code: Status.INVALID_ARGUMENT,
      message: "Invalid first request: node.id is missing (the first request must carry node)",
    });
  }
  server.close();
  const late = sotw(server);
  late.h.receive({ node: node("a"), type_url: CDS });
  assert.deepEqual(await late.s.waitEnded(), {
    code: Status.UNAVAILABLE,
    message: "Server is shutting down",
  });
});

Deno.test("delta: an explicit '*' survives later names; '*' alone later adds everything; a later empty request is no wildcard", async () => {
  const cache = cacheWith([[LDS, "l1", "a"], [LDS, "l2", "b"], [CDS, "c1", "x"], [CDS, "c2", "y"]]);
  const { server } = newServer(cache);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({ node: node("a"), type_url: LDS, resource_names_subscribe: ["*"] });
  const d1 = await s.next();
  assert.deepEqual(names(d1), ["l1", "l2"]);
  h.receive({ type_url: LDS, response_nonce: d1.nonce, resource_names_subscribe: ["l1"] });
  await server.flush();
  assert.equal(server.connections()[0].types[LDS].wildcard, true, "the explicit '*' stays");
  while (s.unread) await s.next();
  // Explicit names first, then '*' alone: everything else is sent.
  h.receive({ type_url: CDS, resource_names_subscribe: ["c1"] });
  const c1 = await s.next();
  assert.deepEqual(names(c1), ["c1"]);
  // An ACK without names is not a (legacy) wildcard after the first request.
  h.receive({ type_url: CDS, response_nonce: c1.nonce, initial_resource_versions: { zz: "1" } });
  cache.set(CDS, "c2", bytes("y2"));
  server.push({ kind: "full" });
  await server.flush();
  assert.equal(s.unread, 0, "c2 is not subscribed");
  assert.equal(server.connections()[0].types[CDS].wildcard, false);
  h.receive({ type_url: CDS, resource_names_subscribe: ["*"] });
  const all = await s.next();
  assert.deepEqual(names(all), ["c2"]);
  server.close();
});

Deno.test("delta: naming a resource that a wildcard subscription already sent sends nothing again", async () => {
  const cache = cacheWith([[CDS, "c1", "x"], [CDS, "c2", "y"]]);
  const { server } = newServer(cache);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({ node: node("a"), type_url: CDS, resource_names_subscribe: ["*"] });
  const d1 = await s.next();
  assert.deepEqual(names(d1), ["c1", "c2"]);
  h.receive({ type_url: CDS, response_nonce: d1.nonce, resource_names_subscribe: ["c1"] });
  await server.flush();
  assert.equal(s.unread, 0, "c1 is held already");
  // Naming it a second time, explicitly subscribed now, is a re-subscription: sent again.
  h.receive({ type_url: CDS, resource_names_subscribe: ["c1"] });
  assert.deepEqual(names(await s.next()), ["c1"]);
  server.close();
});

Deno.test("delta: removed names are sorted, from diffs, from initial versions and from missing subscriptions", async () => {
  const cache = new ResourceCache();
  for (const n of ["z", "m", "a"]) cache.set(CDS, n, bytes(n));
  const { server } = newServer(cache);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  h.receive({
    node: node("a"),
    type_url: CDS,
    initial_resource_versions: { zz: "1", aa: "1" },
  });
  const d1 = await s.next();
  assert.deepEqual(d1.removed_resources, ["aa", "zz"]);
  h.receive({ type_url: CDS, response_nonce: d1.nonce });
  cache.delete(CDS, "z");
  cache.delete(CDS, "a");
  server.push({ kind: "full" });
  await server.flush();
  assert.deepEqual((await s.next()).removed_resources, ["a", "z"]);
  h.receive({ type_url: EDS, resource_names_subscribe: ["zz", "aa"] });
  assert.deepEqual((await s.next()).removed_resources, ["aa", "zz"]);
  // A missing name subscribed next to '*' on a wildcard type is reported too.
  h.receive({ type_url: LDS, resource_names_subscribe: ["*", "nope"] });
  assert.deepEqual((await s.next()).removed_resources, ["nope"]);
  server.close();
});

Deno.test("connections() sorts held names; forEachHeld() reports versions only; a transport without identities has none", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"]]);
  const { server } = newServer(cache);
  const sent: DiscoveryResponse[] = [];
  const h = server.openSotw({
    peer: "bare",
    send: (r) => (sent.push(r), Promise.resolve()),
    end() {},
  });
  h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1", "c2"] });
  await server.flush();
  // Scoped pushes of c2, then c1: the client's own versions differ from the shared view.
  for (const n of ["c2", "c1"]) {
    cache.set(EDS, n, bytes(`${n}-new`));
    server.push({ kind: "eds", clusters: [n] });
    await server.flush();
  }
  const [c] = server.connections();
  assert.deepEqual(c.peerIdentities, []);
  assert.deepEqual(Object.entries(c.types[EDS].resources), [
    ["c1", cache.get(EDS, "c1")!.version],
    ["c2", cache.get(EDS, "c2")!.version],
  ]);
  const held: [string, string][] = [];
  server.forEachHeld((_t, n, v) => held.push([n, v]));
  for (const [, v] of held) assert.equal(typeof v, "string");
  assert.ok(held.some(([n, v]) => n === "c1" && v === cache.get(EDS, "c1")!.version));
  // Delta: an unsubscribed name of the shared view is hidden, never reported with a null version.
  const d = new MemoryStream<DeltaDiscoveryResponse>("memory:d");
  const hd = server.openDelta(d);
  hd.receive({ node: node("b"), type_url: EDS, resource_names_subscribe: ["c1", "c2"] });
  await d.next();
  hd.receive({ type_url: EDS, resource_names_unsubscribe: ["c2"] });
  await server.flush();
  server.forEachHeld((_t, n, v) => assert.equal(typeof v, "string", n));
  server.close();
});

Deno.test("SotW: a removed cluster is a new CDS response; an ACK repeating the same EDS names gets none", async () => {
  const { cache, server, s, h } = sotwWith([[CDS, "c1", "a"], [CDS, "c2", "b"], [EDS, "c1", "e"]]);
  h.receive({ node: node("a"), type_url: CDS });
  const r1 = await s.next();
  h.receive({ type_url: CDS, response_nonce: r1.nonce });
  h.receive({ type_url: EDS, resource_names: ["c1"] });
  const e1 = await s.next();
  h.receive({ type_url: EDS, response_nonce: e1.nonce, resource_names: ["c1"] });
  await server.flush();
  assert.equal(s.unread, 0, "the ACK is not answered");
  // The same for explicit CDS names (a type whose responses list every subscribed resource).
  const c = sotw(server, "memory:c");
  c.h.receive({ node: node("c"), type_url: CDS, resource_names: ["c1"] });
  const cr = await c.s.next();
  c.h.receive({ type_url: CDS, response_nonce: cr.nonce, resource_names: ["c1"] });
  await server.flush();
  assert.equal(c.s.unread, 0, "the CDS ACK is not answered");
  cache.delete(CDS, "c2");
  server.push({ kind: "config", types: [CDS] });
  await server.flush();
  assert.deepEqual(names(await s.next()), ["c1"], "only a removal: still a response");
  server.close();
});

Deno.test("a generator answering with promises: SotW and delta streams get the same responses, a rejection is a build error, and a stream closed while it answers gets nothing", async () => {
  const cache = cacheWith([[EDS, "c1", "e1"], [EDS, "c2", "e2"], [CDS, "k1", "a"]]);
  let fail = false;
  /** Resolves the answers held back (while `hold`), in order. */
  const held: (() => void)[] = [];
  let hold = false;
  const { server, metrics } = newServer(cache, {
    resourcesFor: (_p, t, n) =>
      new Promise((resolve, reject) => {
        const answer = () =>
          fail && t === EDS ? reject(new Error("generator broke")) : resolve(cache.select(t, n));
        if (hold) held.push(answer);
        else setTimeout(answer, 1);
      }),
  });
  const a = sotw(server, "memory:a");
  const d = new MemoryStream<DeltaDiscoveryResponse>("memory:d");
  const dh = server.openDelta(d);
  a.h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1", "c2"] });
  dh.receive({ node: node("d"), type_url: EDS, resource_names_subscribe: ["c2"] });
  assert.deepEqual(names(await a.s.next()), ["c1", "c2"]);
  assert.deepEqual(names(await d.next()), ["c2"]);
  cache.set(EDS, "c2", bytes("e2b"));
  server.push({ kind: "eds", clusters: ["c2"] });
  await server.flush();
  assert.deepEqual(names(await a.s.next()), ["c2"]);
  assert.deepEqual(names(await d.next()), ["c2"]);
  // A rejected answer: counted, logged, nothing sent.
  fail = true;
  cache.set(EDS, "c1", bytes("e1b"));
  server.push({ kind: "eds", clusters: ["c1"] });
  await server.flush();
  assert.equal(a.s.unread, 0);
  assert.deepEqual(metrics.buildErrors, { eds_builderr: 1 });
  // The stream goes away while the generator answers: nothing is sent to it.
  fail = false;
  hold = true;
  cache.set(EDS, "c1", bytes("e1c"));
  server.push({ kind: "eds", clusters: ["c1"] });
  const flushed = server.flush();
  while (held.length === 0) await new Promise((r) => setTimeout(r, 1));
  a.h.close();
  for (const answer of held.splice(0)) answer();
  await flushed;
  assert.equal(a.s.unread, 0, "closed: no response");
  assert.equal(d.unread, 0, "delta: c1 is not subscribed");
  server.close();
});

Deno.test("a generator answering with promises: a name dropped while it answers is not sent, nor counted as held, SotW and delta", async () => {
  const cache = cacheWith([
    [EDS, "c1", "e1"],
    [EDS, "c2", "e2"],
    [EDS, "c3", "e3"],
    [CDS, "k1", "a"],
    [CDS, "k2", "b"],
  ]);
  const held: (() => void)[] = [];
  let hold = false;
  const { server, metrics } = newServer(cache, {
    resourcesFor: (_p, t, n) =>
      new Promise((resolve) => {
        const answer = () => resolve(cache.select(t, n));
        if (hold) held.push(answer);
        else setTimeout(answer, 1);
      }),
  });
  /** Runs `change`, then `meanwhile` while the generator's answers to the push are held back. */
  const race = async (change: () => void, meanwhile: () => void, answers: number) => {
    hold = true;
    change();
    const flushed = server.flush();
    while (held.length < answers) await new Promise((r) => setTimeout(r, 1));
    meanwhile();
    hold = false;
    for (const answer of held.splice(0)) answer();
    await flushed;
    await server.flush();
  };
  const drain = async <T, U>(s: MemoryStream<T>, show: (r: T) => U) => {
    const out: U[] = [];
    while (s.unread) out.push(show(await s.next()));
    return out;
  };
  const a = sotw(server, "memory:a");
  const d = new MemoryStream<DeltaDiscoveryResponse>("memory:d");
  const dh = server.openDelta(d);
  a.h.receive({ node: node("a"), type_url: EDS, resource_names: ["c1", "c2", "c3"] });
  dh.receive({ node: node("d"), type_url: EDS, resource_names_subscribe: ["c1", "c2", "c3"] });
  const r1 = await a.s.next();
  const d1 = await d.next();
  assert.deepEqual([names(r1), names(d1)], [["c1", "c2", "c3"], ["c1", "c2", "c3"]]);
  // Two names change; while the generator answers the push, the clients drop one of them.
  await race(() => {
    cache.set(EDS, "c1", bytes("e1b"));
    cache.set(EDS, "c2", bytes("e2b"));
    server.push({ kind: "eds", clusters: ["c1", "c2"] });
  }, () => {
    a.h.receive({
      type_url: EDS,
      resource_names: ["c1", "c3"],
      version_info: r1.version_info,
      response_nonce: r1.nonce,
    });
    dh.receive({ type_url: EDS, response_nonce: d1.nonce, resource_names_unsubscribe: ["c2"] });
  }, 2);
  const delta = (r: DeltaDiscoveryResponse) => [names(r), r.removed_resources];
  const sent = await drain(a.s, (r) => r);
  assert.deepEqual(sent.map(names), [["c1"]], "SotW: c2 is no longer subscribed");
  assert.deepEqual(await drain(d, delta), [[["c1"], []]], "delta: c2 is no longer subscribed");
  assert.deepEqual(server.connections().map((c) => Object.keys(c.types[EDS].resources).sort()), [
    ["c1", "c3"],
    ["c1", "c3"],
  ]);
  // Subscribing to it again (in an ACK) sends it.
  a.h.receive({
    type_url: EDS,
    resource_names: ["c1", "c2", "c3"],
    version_info: sent[0].version_info,
    response_nonce: sent[0].nonce,
  });
  dh.receive({ type_url: EDS, resource_names_subscribe: ["c2"] });
  await server.flush();
  assert.deepEqual(await drain(a.s, names), [["c2"]]);
  assert.deepEqual(await drain(d, delta), [[["c2"], []]]);
  // A delta wildcard narrowed to one cluster while the generator answers a change of the other.
  dh.receive({ type_url: CDS });
  const k = await d.next();
  assert.deepEqual(names(k), ["k1", "k2"]);
  await race(() => {
    cache.set(CDS, "k2", bytes("b2"));
    server.push({ kind: "config", types: [CDS] });
  }, () => {
    dh.receive({
      type_url: CDS,
      response_nonce: k.nonce,
      resource_names_unsubscribe: ["*"],
      resource_names_subscribe: ["k1"],
    });
  }, 1);
  assert.deepEqual(await drain(d, delta), [], "delta: k2 is no longer subscribed");
  assert.deepEqual(Object.keys(server.connections()[1].types[CDS].resources), ["k1"]);
  // The same when only the wildcard goes: '*' and k1, then k1 alone (the same names).
  const e = new MemoryStream<DeltaDiscoveryResponse>("memory:e");
  const eh = server.openDelta(e);
  eh.receive({ node: node("e"), type_url: CDS, resource_names_subscribe: ["*", "k1"] });
  const ek = await e.next();
  assert.deepEqual(names(ek), ["k1", "k2"]);
  await race(() => {
    cache.set(CDS, "k2", bytes("b3"));
    server.push({ kind: "config", types: [CDS] });
  }, () => {
    eh.receive({ type_url: CDS, response_nonce: ek.nonce, resource_names_unsubscribe: ["*"] });
  }, 1);
  assert.deepEqual(await drain(e, delta), [], "delta: the wildcard is gone, k1 did not change");
  assert.deepEqual(Object.keys(server.connections()[2].types[CDS].resources), ["k1"]);
  assert.deepEqual(metrics.buildErrors, {}, "a dropped answer is no build error");
  server.close();
});

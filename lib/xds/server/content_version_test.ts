import assert from "node:assert/strict";
import type { ResourceCache } from "./cache.ts";
import { heldVersion, viewVersion } from "./content_version.ts";
import { Held } from "./held.ts";
import { MemoryStream } from "./memory.ts";
import { XdsServer } from "./stream.ts";
import {
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
  type ResourceEntry,
  XDS_TYPES,
} from "./types.ts";
import { bytes, cacheWith, node, parseTestNode, type TestProxy } from "./_test_util.ts";
import { quietLogger as quiet } from "../../log/testing.ts";

const { cluster: CDS, endpoint: EDS } = XDS_TYPES;

/** An independent server (as another replica would be) over its own cache with `entries`. */
function replica(entries: [string, string, string][]) {
  const cache: ResourceCache = cacheWith(entries);
  const server = new XdsServer<TestProxy>({
    parseNode: parseTestNode,
    resourcesFor: (_p, t, names) => cache.select(t, names),
    debounceAfter: 0,
    logger: quiet,
  });
  return { cache, server };
}

const CONFIG: [string, string, string][] = [
  [CDS, "c1", "a"],
  [CDS, "c2", "b"],
  [EDS, "c1", "e1"],
  [EDS, "c2", "e2"],
];

function entry(version: string): ResourceEntry {
  return { version, bytes: new Uint8Array() };
}

Deno.test("viewVersion() depends on names and versions, not on insertion order", () => {
  const a = new Map([["x", entry("1")], ["y", entry("2")]]);
  const b = new Map([["y", entry("2")], ["x", entry("1")]]);
  assert.equal(viewVersion(a), viewVersion(b));
  assert.match(viewVersion(a), /^[0-9a-f]{16}$/);
  assert.notEqual(viewVersion(a), viewVersion(new Map([["x", entry("1")], ["y", entry("3")]])));
  assert.notEqual(viewVersion(a), viewVersion(new Map([["x", entry("1")], ["z", entry("2")]])));
  assert.notEqual(viewVersion(a), viewVersion(new Map([["x", entry("1")]])));
});

Deno.test("viewVersion() is a fixed function of names and versions (replicas of another release agree), always 16 hex digits", () => {
  // Pinned: a change of the hash would make replicas of two releases disagree during an upgrade,
  // and every proxy moving between them would be sent again what it holds.
  assert.equal(
    viewVersion(new Map([["outbound|80||a.default.svc.cluster.local", entry("3f2a9c1d")]])),
    "c51a09ed83713ed5",
  );
  assert.equal(viewVersion(new Map([["x", entry("1")], ["y", entry("2")]])), "248ff7edb8495d62");
  // Halves under 0x10000000 are zero-padded (about one name in seven here).
  for (let i = 0; i < 500; i++) {
    assert.match(viewVersion(new Map([[`n${i}`, entry("v")]])), /^[0-9a-f]{16}$/, `n${i}`);
  }
});

Deno.test("heldVersion() of a view with overrides equals viewVersion() of what is held", () => {
  const view = new Map([["x", entry("1")], ["y", entry("2")], ["z", entry("3")]]);
  const held = new Held();
  held.replace(view);
  assert.equal(heldVersion(held), viewVersion(view));
  held.set("y", "9");
  held.delete("z");
  held.set("w", "4");
  const want = new Map([["x", entry("1")], ["y", entry("9")], ["w", entry("4")]]);
  assert.equal(heldVersion(held), viewVersion(want));
});

Deno.test("SotW version_info is the same in two independent servers with the same resources", async () => {
  const versions: string[] = [];
  for (const { server } of [replica(CONFIG), replica(CONFIG)]) {
    const s = new MemoryStream<DiscoveryResponse>();
    server.openSotw(s).receive({ node: node("a"), type_url: CDS });
    versions.push((await s.next()).version_info);
    server.close();
  }
  assert.equal(versions[0], versions[1]);
});

Deno.test("SotW: a new stream whose first wildcard request carries the current version gets no response", async () => {
  const a = replica(CONFIG), b = replica(CONFIG);
  const sa = new MemoryStream<DiscoveryResponse>();
  a.server.openSotw(sa).receive({ node: node("a"), type_url: CDS });
  const r1 = await sa.next();
  // The proxy moves to the other replica and says what it holds.
  const sb = new MemoryStream<DiscoveryResponse>();
  const hb = b.server.openSotw(sb);
  hb.receive({ node: node("a"), type_url: CDS, version_info: r1.version_info });
  await b.server.flush();
  assert.equal(sb.unread, 0, "nothing resent");
  // A later change is pushed as usual.
  b.cache.set(CDS, "c3", bytes("c"));
  b.server.push({ kind: "config", types: [CDS] });
  await b.server.flush();
  const r2 = await sb.next();
  assert.deepEqual(r2.resources.map((r) => r.name).sort(), ["c1", "c2", "c3"]);
  a.server.close();
  b.server.close();
});

Deno.test("SotW: a new stream whose first request carries another version gets the full list", async () => {
  const b = replica(CONFIG);
  const sb = new MemoryStream<DiscoveryResponse>();
  b.server.openSotw(sb).receive({
    node: node("a"),
    type_url: CDS,
    version_info: "0123456789abcdef",
  });
  const r = await sb.next();
  assert.deepEqual(r.resources.map((x) => x.name).sort(), ["c1", "c2"]);
  b.server.close();
});

Deno.test("SotW: only a wildcard first request is trusted with its version; explicit names, a re-initialisation and a first request with a nonce are answered in full", async () => {
  const a = replica(CONFIG), b = replica(CONFIG);
  const first = async (req: Record<string, unknown>) => {
    const s = new MemoryStream<DiscoveryResponse>();
    const h = a.server.openSotw(s);
    h.receive({ node: node("a"), type_url: CDS, ...req });
    return { s, h, r: await s.next() };
  };
  const all = await first({});
  const one = await first({ resource_names: ["c1"] });
  const list = (r: DiscoveryResponse) => r.resources.map((x) => x.name).sort();
  // Explicit CDS names carrying the version of exactly those names: still sent.
  const sb = new MemoryStream<DiscoveryResponse>();
  b.server.openSotw(sb).receive({
    node: node("a"),
    type_url: CDS,
    resource_names: ["c1"],
    version_info: one.r.version_info,
  });
  assert.deepEqual(list(await sb.next()), ["c1"]);
  // A first request answering a nonce the new stream never sent: not a client new to the stream.
  const sn = new MemoryStream<DiscoveryResponse>();
  b.server.openSotw(sn).receive({
    node: node("a"),
    type_url: CDS,
    version_info: all.r.version_info,
    response_nonce: all.r.nonce,
  });
  assert.deepEqual(list(await sn.next()), ["c1", "c2"]);
  // A re-initialisation on an open stream (empty nonce) with the version it holds.
  all.h.receive({ type_url: CDS, version_info: all.r.version_info, response_nonce: all.r.nonce });
  await a.server.flush();
  assert.equal(all.s.unread, 0, "an ACK");
  all.h.receive({ type_url: CDS, version_info: all.r.version_info });
  assert.deepEqual(list(await all.s.next()), ["c1", "c2"]);
  a.server.close();
  b.server.close();
});

Deno.test("delta: a stream moved to another server with its initial_resource_versions gets nothing resent", async () => {
  const a = replica(CONFIG), b = replica(CONFIG);
  const sa = new MemoryStream<DeltaDiscoveryResponse>();
  const ha = a.server.openDelta(sa);
  ha.receive({ node: node("a"), type_url: CDS });
  const cds = await sa.next();
  ha.receive({ type_url: EDS, resource_names_subscribe: ["c1", "c2"] });
  const eds = await sa.next();
  const held = (r: DeltaDiscoveryResponse) =>
    Object.fromEntries(r.resources.map((x) => [x.name, x.entry.version]));
  const sb = new MemoryStream<DeltaDiscoveryResponse>();
  const hb = b.server.openDelta(sb);
  hb.receive({ node: node("a"), type_url: CDS, initial_resource_versions: held(cds) });
  hb.receive({
    type_url: EDS,
    resource_names_subscribe: ["c1", "c2"],
    initial_resource_versions: held(eds),
  });
  await b.server.flush();
  assert.equal(sb.unread, 0, "no resource resent");
  // One changed resource: only it is sent.
  b.cache.set(EDS, "c2", bytes("e2'"));
  b.server.push({ kind: "eds", clusters: ["c2"] });
  await b.server.flush();
  const d = await sb.next();
  assert.deepEqual(d.resources.map((x) => x.name), ["c2"]);
  assert.deepEqual(d.removed_resources, []);
  a.server.close();
  b.server.close();
});

Deno.test("heldVersion() stays equal to viewVersion() of what is held through any sequence of changes", () => {
  let seed = 7;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  const name = () => `n${rand(12)}`;
  const view = () => {
    const m = new Map<string, ResourceEntry>();
    for (let i = 0; i < 8; i++) m.set(name(), entry(String(rand(3))));
    return m;
  };
  const held = new Held();
  for (let step = 0; step < 2000; step++) {
    const op = rand(10);
    if (op < 4) held.set(name(), String(rand(3)));
    else if (op < 7) held.delete(name());
    else if (op === 7) held.retain(new Set([name(), name(), name(), name(), name(), name()]));
    else if (op === 8) held.replace(view());
    else if (rand(10) === 0) held.clear();
    const have = new Map([...held.entries()].map(([n, v]) => [n, entry(v)]));
    assert.equal(heldVersion(held), viewVersion(have), `step ${step}`);
  }
});

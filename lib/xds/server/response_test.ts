/**
 * The SotW and delta response builders from any state a client may hold: whatever a stream holds
 * (a shared view, per-name differences from it, names outside its subscription), a response brings
 * what the client holds to what the generator answers for the names the push covers, sends
 * nothing the client already has or did not subscribe to, and leaves the server's record of the
 * client equal to what the client then holds.
 * @module
 */

import assert from "node:assert/strict";
import { viewVersion } from "./content_version.ts";
import { buildDelta } from "./delta.ts";
import { buildSotw } from "./sotw.ts";
import { Connection, type Dirty, newTypeState, Subscriptions, type XdsContext } from "./state.ts";
import { SharedViews } from "./views.ts";
import {
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
  type ResourceEntry,
  type ResourceMap,
  XDS_TYPES,
} from "./types.ts";
import { quietLogger as quiet } from "../../log/testing.ts";

const { cluster: CDS, endpoint: EDS, listener: LDS } = XDS_TYPES;
const UNIVERSE = ["n0", "n1", "n2", "n3", "n4", "n5", "n6"];

/** A seeded pseudo-random source (the same cases on every run). */
function random(seed: number) {
  // mulberry32: the low bits of a plain linear congruential generator repeat with a short period
  const next = (n: number) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  return {
    int: next,
    chance: (p: number) => next(1000) < p * 1000,
    subset: () => new Set(UNIVERSE.filter(() => next(2) === 0)),
    map: (): ResourceMap =>
      new Map(
        UNIVERSE.filter(() => next(3) > 0).map((n) => [n, entry(String(next(3)))] as const),
      ),
  };
}

const entries = new Map<string, ResourceEntry>();
/** One shared entry per version, as the cache gives them. */
function entry(version: string): ResourceEntry {
  let e = entries.get(version);
  if (!e) entries.set(version, e = { version, bytes: new Uint8Array() });
  return e;
}

/** A context for the response builders alone; the generator answers from `world()`. */
function context(world: () => ResourceMap): XdsContext<null> {
  const unused = () => {
    throw new Error("not used by the response builders");
  };
  return {
    log: quiet,
    metrics: {},
    wildcardTypes: new Set([CDS, LDS]),
    subs: new Subscriptions(),
    views: new SharedViews<null>((_p, _t, names) => {
      const w = world();
      // The shared map itself when the names are exactly its names, as mesh-discovery answers.
      if (names === null || (names.length === w.size && names.every((n) => w.has(n)))) return w;
      return new Map(names.flatMap((n) => (w.has(n) ? [[n, w.get(n)!] as const] : [])));
    }),
    requestState: unused,
    ackOrNack: unused,
    schedule: unused,
    stamp: (_st, _n, version) => ({ version, nonce: "n" }),
  };
}

/**
 * A stream's state of `typeUrl` holding a random view with random per-name differences (names
 * outside an explicit subscription dropped, as every change of subscription does), a push's
 * dirty mark, and what the generator now answers: anything, the view, the view with one name
 * changed, or exactly what the stream holds (so that a response is often not needed).
 */
function randomCase(ctx: XdsContext<null>, r: ReturnType<typeof random>, typeUrl: string) {
  const st = newTypeState(typeUrl);
  st.wildcard = ctx.wildcardTypes.has(typeUrl) && r.chance(0.4);
  st.sub = ctx.subs.intern(r.subset());
  const view = r.map();
  if (r.chance(0.7)) st.held.replace(view);
  for (let i = r.int(3); i > 0; i--) {
    const n = UNIVERSE[r.int(UNIVERSE.length)];
    if (r.chance(0.5)) st.held.set(n, String(r.int(3)));
    else st.held.delete(n);
  }
  if (!st.wildcard) st.held.retain(st.sub.set);
  const d: Dirty = { all: r.chance(0.5), names: r.subset(), force: r.chance(0.2) };
  let world: ResourceMap = view;
  const pick = r.int(4);
  if (pick === 0) world = r.map();
  else if (pick === 1) world = new Map([...view, [UNIVERSE[r.int(7)], entry(String(r.int(3)))]]);
  else if (pick === 2) world = new Map([...st.held.entries()].map(([n, v]) => [n, entry(v)]));
  return { st, d, world };
}

const heldMap = (m: Iterable<[string, string]>) => new Map(m);
const show = (m: Map<string, string>) => JSON.stringify([...m].sort());

/** The names a response must settle: the whole subscription, or the pushed names in it. */
function settled(st: { wildcard: boolean; sub: { set: ReadonlySet<string> } }, d: Dirty) {
  const inSub = (n: string) => st.wildcard || st.sub.set.has(n);
  return UNIVERSE.filter((n) => inSub(n) && (d.all || d.names.has(n)));
}

Deno.test("delta: from any held state a response settles the pushed names, sends only differences, and the server's record equals what the client holds", async () => {
  const r = random(11);
  let world: ResourceMap = new Map();
  const ctx = context(() => world);
  const conn = new Connection<null>("c", { id: "x" }, null, "delta", {} as never, "");
  let responses = 0;
  for (let i = 0; i < 3000; i++) {
    const c = randomCase(ctx, r, r.chance(0.5) ? CDS : EDS);
    const { st, d } = c;
    world = c.world;
    const before = heldMap(st.held.entries());
    const res = await buildDelta(ctx, conn, st, d) as DeltaDiscoveryResponse | null;
    const client = new Map(before);
    for (const x of res?.resources ?? []) client.set(x.name, x.entry.version);
    for (const n of res?.removed_resources ?? []) client.delete(n);
    const at = `case ${i}: held ${show(before)} world ${
      show(heldMap(
        [...world].map(([n, e]) => [n, e.version]),
      ))
    } sub ${[...st.sub.set]} wildcard ${st.wildcard} dirty ${d.all ? "all" : [...d.names]}`;
    for (const n of settled(st, d)) {
      assert.equal(client.get(n), world.get(n)?.version, `${at}: ${n} settled`);
    }
    for (const x of res?.resources ?? []) {
      assert.notEqual(before.get(x.name), x.entry.version, `${at}: ${x.name} sent, held already`);
      assert.ok(st.wildcard || st.sub.set.has(x.name), `${at}: ${x.name} sent, not subscribed`);
    }
    for (const n of res?.removed_resources ?? []) {
      assert.ok(before.has(n) && !world.has(n), `${at}: ${n} removed`);
      assert.ok(st.wildcard || st.sub.set.has(n), `${at}: ${n} removed, not subscribed`);
    }
    if (res) {
      assert.deepEqual(res.removed_resources, [...res.removed_resources].sort(), `${at}: sorted`);
      const sent = [...res.resources.map((x) => x.name), ...res.removed_resources];
      assert.equal(new Set(sent).size, sent.length, `${at}: a name twice`);
      assert.equal(
        res.system_version_info,
        viewVersion(new Map([...client].map(([n, v]) => [n, entry(v)]))),
        `${at}: version of what the client holds`,
      );
      responses++;
    }
    assert.equal(show(heldMap(st.held.entries())), show(client), `${at}: the server's record`);
  }
  assert.ok(responses > 1000 && responses < 2900, `${responses} responses: both outcomes tested`);
});

Deno.test("SotW: from any held state a response settles the pushed names (the full list for clusters), sends only differences, and the server's record matches the client", async () => {
  const r = random(23);
  let world: ResourceMap = new Map();
  const ctx = context(() => world);
  const conn = new Connection<null>("c", { id: "x" }, null, "sotw", {} as never, "");
  let responses = 0;
  for (let i = 0; i < 3000; i++) {
    const full = r.chance(0.5);
    const c = randomCase(ctx, r, full ? CDS : EDS);
    const { st, d } = c;
    world = c.world;
    const before = heldMap(st.held.entries());
    const res = await buildSotw(ctx, conn, st, d) as DiscoveryResponse | null;
    const at = `case ${i}: ${full ? "CDS" : "EDS"} held ${show(before)} world ${
      show(heldMap(
        [...world].map(([n, e]) => [n, e.version]),
      ))
    } sub ${[...st.sub.set]} wildcard ${st.wildcard} dirty ${d.all ? "all" : [...d.names]}`;
    // What the client holds after the response: a cluster list replaces everything it held;
    // endpoints are added or updated (a SotW client forgets them with their cluster).
    const client = full && res ? new Map<string, string>() : new Map(before);
    for (const x of res?.resources ?? []) client.set(x.name, x.entry.version);
    const wanted = full && !st.wildcard && st.sub.set.size === 0 ? [] : settled(st, d);
    for (const n of wanted) {
      const want = world.get(n)?.version;
      if (want !== undefined || full) assert.equal(client.get(n), want, `${at}: ${n} settled`);
    }
    for (const x of res?.resources ?? []) {
      assert.ok(st.wildcard || st.sub.set.has(x.name), `${at}: ${x.name} sent, not subscribed`);
      if (!full) assert.notEqual(before.get(x.name), x.entry.version, `${at}: ${x.name} held`);
    }
    if (res) {
      if (full) assert.equal(res.resources.length, client.size, `${at}: the full list`);
      else assert.ok(res.resources.length > 0, `${at}: an empty endpoints response`);
      responses++;
    } else if (full && d.force && (st.wildcard || st.sub.set.size > 0)) {
      assert.fail(`${at}: a forced cluster response was not sent`);
    }
    // The server's record: what the client holds of the subscribed names that exist (a SotW
    // client keeps the endpoints of a name that is gone; the server need not remember them).
    const record = heldMap(st.held.entries());
    for (const n of UNIVERSE) {
      if ((st.wildcard || st.sub.set.has(n)) && world.has(n)) {
        assert.equal(record.get(n), client.get(n), `${at}: the server's record of ${n}`);
      }
    }
    if (res) {
      const sent = res.resources.map((x) => x.name);
      assert.equal(new Set(sent).size, sent.length, `${at}: a name twice`);
    }
    if (res) {
      assert.equal(
        res.version_info,
        viewVersion(new Map([...record].map(([n, v]) => [n, entry(v)]))),
        `${at}: version of the server's record`,
      );
    }
  }
  assert.ok(responses > 1000 && responses < 2900, `${responses} responses: both outcomes tested`);
});

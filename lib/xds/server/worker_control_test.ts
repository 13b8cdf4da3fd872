import assert from "node:assert/strict";
import { Channel } from "../../workers/mod.ts";
import { MemoryStream } from "./memory.ts";
import { XdsServer } from "./stream.ts";
import {
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
  type ResourceEntry,
  type ResourceMap,
  XDS_TYPES,
} from "./types.ts";
import { WorkerAds, type WorkerPush } from "./worker_ads.ts";
import { WorkerXdsControl } from "./worker_control.ts";

const { cluster: CDS, endpoint: EDS } = XDS_TYPES;
const te = new TextEncoder();
const entry = (v: string): ResourceEntry => ({ version: v, bytes: te.encode(`bytes-${v}`) });

/** A generator with one shared view per type; `set` replaces an EDS entry (a new shared map). */
function generator() {
  const views: Record<string, ResourceMap> = {
    [CDS]: new Map([["c1", entry("c1")], ["c2", entry("c2")]]),
    [EDS]: new Map([["c1", entry("e1")], ["c2", entry("e2")]]),
  };
  let calls = 0;
  return {
    views,
    get calls() {
      return calls;
    },
    resourcesFor(_p: unknown, t: string, names: readonly string[] | null): ResourceMap {
      calls++;
      const all = views[t] ?? new Map();
      if (names === null || names.length === all.size) return all; // the shared view
      return new Map(names.flatMap((n) => all.has(n) ? [[n, all.get(n)!] as const] : []));
    },
    setEds(name: string, version: string) {
      views[EDS] = new Map([...views[EDS], [name, entry(version)]]);
    },
  };
}

/** A control isolate and one worker in this isolate, over a MessageChannel. */
function pair() {
  const gen = generator();
  const { port1, port2 } = new MessageChannel();
  const toControl = new Channel(port1), toWorker = new Channel(port2);
  port1.onmessage = (e) => void toControl.receive(e.data);
  port2.onmessage = (e) => void toWorker.receive(e.data);
  const log = { debug() {}, info() {}, warn() {}, error() {} };
  const parseNode = (n: { id: string }) => ({ id: n.id, ip: n.id.split("~")[1] ?? "" });
  const local = new XdsServer({ parseNode, resourcesFor: gen.resourcesFor, logger: log });
  const control = new WorkerXdsControl({
    local,
    parseNode,
    proxyKey: (p) => p.ip,
    resourcesFor: gen.resourcesFor,
    broadcastPush: (p: WorkerPush) => toWorker.request("push", p),
    broadcastFlush: () => toWorker.request("flush"),
    log,
    debounceAfter: 1,
  });
  control.startWorker(0);
  for (const [m, fn] of Object.entries(control.handlers)) toWorker.on(m, (a) => fn(a, 0));
  const ads = new WorkerAds({
    channel: toControl,
    log,
    proxyKey: (n) => n.id.split("~")[1] ?? "",
    knownTypes: [CDS, EDS],
    transport: () => ({ accepting: true, refused: 0, throttled: 0 }),
  });
  toControl.on("push", (p) => ads.push(p as WorkerPush));
  toControl.on("flush", () => ads.server.flush());
  const close = () => {
    ads.close();
    control.close();
    port1.close();
    port2.close();
  };
  return { gen, control, ads, close };
}

const names = (r: DiscoveryResponse) => r.resources.map((x) => `${x.name}@${x.entry.version}`);

Deno.test("WorkerXdsControl answers a worker's streams from the control isolate's generator, and a push reaches them with the new map", async () => {
  const { gen, control, ads, close } = pair();
  try {
    const streams = [1, 2, 3].map(() => new MemoryStream<DiscoveryResponse>());
    const handles = streams.map((t, i) => {
      const h = ads.server.openSotw(t);
      h.receive({
        node: { id: `sidecar~10.0.0.${i + 1}~a.ns~ns.svc.cluster.local` },
        type_url: CDS,
      });
      return h;
    });
    for (const t of streams) assert.deepEqual(names(await t.next()), ["c1@c1", "c2@c2"]);
    for (const h of handles) h.receive({ type_url: EDS, resource_names: ["c1", "c2"] });
    for (const t of streams) assert.deepEqual(names(await t.next()), ["c1@e1", "c2@e2"]);
    // the three streams share one map per type in the worker: two maps mirrored
    assert.equal(ads.mirrored, 2);
    assert.equal(control.connectionCount, 3);
    assert.ok(control.hasProxy("10.0.0.2"));

    // an endpoints push: the new shared map reaches every stream
    gen.setEds("c2", "e2b");
    control.push({ kind: "eds", clusters: ["c2"] });
    await control.flush();
    for (const t of streams) {
      const r = await t.next();
      assert.equal(r.type_url, EDS);
      assert.deepEqual(names(r), ["c2@e2b"]); // EDS is not a state-of-the-world type: what changed
    }
    // the control isolate learns what the worker's streams watch and hold
    await waitFor(() => control.watchedNames(EDS).has("c2"));
    const held: string[] = [];
    await waitFor(() => {
      held.length = 0;
      control.forEachHeld((t, n, v) => held.push(`${t === EDS ? "eds" : "cds"} ${n}|${v}`));
      return held.includes("eds c2|e2b");
    });
    assert.ok(!held.includes("eds c2|e2"), held.join(","));
    // the mirror view: worker 0 holds the maps it was sent, their entries and bytes
    const [m] = control.mirrorStats();
    assert.equal(m.worker, 0);
    assert.ok(m.maps >= 2 && m.entries >= 4, JSON.stringify(m));
    assert.ok(m.bytes >= "bytes-c1".length * 4, JSON.stringify(m));
    for (const h of handles) h.close();
    await waitFor(() => control.connectionCount === 0);
    assert.ok(!control.hasProxy("10.0.0.2"));
  } finally {
    close();
  }
});

async function waitFor(ok: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("WorkerXdsControl knows a worker stream's ADS flavour and peer from its first request, before any debug refresh", async () => {
  const { control, ads, close } = pair();
  try {
    const sotw = new MemoryStream<DiscoveryResponse>();
    ads.server.openSotw(sotw).receive({
      node: { id: "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local" },
      type_url: CDS,
    });
    const delta = new MemoryStream<DeltaDiscoveryResponse>("10.9.9.9:4242");
    ads.server.openDelta(delta).receive({
      node: { id: "sidecar~10.0.0.2~b.ns~ns.svc.cluster.local" },
      type_url: CDS,
    });
    await waitFor(() => control.connectionCount === 2);
    const byNode = new Map(control.connections().map((c) => [c.nodeId.split("~")[1], c]));
    assert.equal(byNode.get("10.0.0.1")!.mode, "sotw");
    assert.equal(byNode.get("10.0.0.2")!.mode, "delta");
    assert.equal(byNode.get("10.0.0.2")!.peer, `${delta.peer} (worker 0)`);
  } finally {
    close();
  }
});

Deno.test("WorkerXdsControl.forgetWorker() drops a dead worker's streams, watched names and held resources at once", async () => {
  const { control, ads, close } = pair();
  try {
    const t = new MemoryStream<DiscoveryResponse>();
    const h = ads.server.openSotw(t);
    h.receive({
      node: { id: "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local" },
      type_url: CDS,
    });
    await t.next();
    await waitFor(() => control.watchedNames(CDS).size > 0);
    assert.ok(control.hasProxy("10.0.0.1"));
    assert.deepEqual(control.mirrorStats().map((m) => m.worker), [0]);
    control.forgetWorker(0);
    assert.deepEqual(control.mirrorStats(), []);
    assert.equal(control.connectionCount, 0);
    assert.ok(!control.hasProxy("10.0.0.1"));
    assert.equal(control.watchedNames(CDS).size, 0);
    let held = 0;
    control.forEachHeld(() => held++);
    assert.equal(held, 0);
    assert.deepEqual(control.connections(), []);
    h.close();
    await ads.server.flush();
  } finally {
    close();
  }
});

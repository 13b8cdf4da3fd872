import assert from "node:assert/strict";
import { Channel } from "../../workers/mod.ts";
import { MemoryStream } from "./memory.ts";
import { XdsServer } from "./stream.ts";
import {
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
  type ResourceEntry,
  type ResourceMap,
  type ResourcesFor,
  XDS_TYPES,
  type XdsMetrics,
} from "./types.ts";
import { XdsCounters } from "./metrics.ts";
import {
  STATE_MAX_MS,
  STATE_QUIET_MS,
  TRANSPORT_POLL_MS,
  WorkerAds,
  type WorkerConnection,
  type WorkerPush,
  type WorkerState,
} from "./worker_ads.ts";
import { WorkerXdsControl } from "./worker_control.ts";
import { MIRROR_KEEP_EPOCHS } from "./worker_mirror.ts";
import type { Logger } from "../../log/mod.ts";
import { quietLogger, recordingLogger } from "../../log/testing.ts";

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
  let failing = "";
  let before: ((t: string) => void) | undefined;
  return {
    views,
    /** Runs once, at the next question, before it is answered. */
    set beforeAnswer(fn: (t: string) => void) {
      before = fn;
    },
    /** A type whose every question fails. */
    set failing(t: string) {
      failing = t;
    },
    get calls() {
      return calls;
    },
    resourcesFor(_p: unknown, t: string, names: readonly string[] | null): ResourceMap {
      calls++;
      const fn = before;
      before = undefined;
      fn?.(t);
      if (t === failing) throw new Error("no push context for this type");
      const all = views[t] ?? new Map();
      if (names === null || names.length === all.size) return all; // the shared view
      return new Map(names.flatMap((n) => all.has(n) ? [[n, all.get(n)!] as const] : []));
    },
    setEds(name: string, version: string) {
      views[EDS] = new Map([...views[EDS], [name, entry(version)]]);
    },
  };
}

/** A control isolate and one worker in this isolate, over a MessageChannel (`workerLog`: the worker's logger). */
function pair(workerLog: Logger = quietLogger) {
  const gen = generator();
  const { port1, port2 } = new MessageChannel();
  const toControl = new Channel(port1), toWorker = new Channel(port2);
  port1.onmessage = (e) => void toControl.receive(e.data);
  port2.onmessage = (e) => void toWorker.receive(e.data);
  const log = quietLogger;
  const parseNode = (n: { id: string }) => ({ id: n.id, ip: n.id.split("~")[1] ?? "" });
  const local = new XdsServer({ parseNode, resourcesFor: gen.resourcesFor, logger: log });
  const metrics = new XdsCounters();
  const control = new WorkerXdsControl({
    local,
    parseNode,
    proxyKey: (p) => p.ip,
    resourcesFor: gen.resourcesFor,
    broadcastPush: (p: WorkerPush) => toWorker.request("push", p),
    broadcastFlush: () => toWorker.request("flush"),
    broadcastConnections: async () => [await toWorker.request<WorkerConnection[]>("connections")],
    metrics,
    log,
    debounceAfter: 1,
  });
  control.startWorker(0);
  for (const [m, fn] of Object.entries(control.handlers)) toWorker.on(m, (a) => fn(a, 0));
  const ads = new WorkerAds({
    channel: toControl,
    log: workerLog,
    proxyKey: (n) => n.id.split("~")[1] ?? "",
    knownTypes: [CDS, EDS],
    transport: () => ({ accepting: true, refused: 0, throttled: 0, shed: 0 }),
  });
  toControl.on("push", (p) => ads.push(p as WorkerPush));
  toControl.on("flush", () => ads.server.flush());
  toControl.on("connections", () => ads.connections());
  const close = () => {
    ads.close();
    control.close();
    port1.close();
    port2.close();
  };
  return { gen, control, ads, metrics, close };
}

/** A SotW stream of the sidecar at `ip` on the worker, its first request sent (`type`, `names`). */
function sidecarStream(ads: WorkerAds, ip: string, type: string, names: string[]) {
  const t = new MemoryStream<DiscoveryResponse>();
  const h = ads.server.openSotw(t);
  h.receive({
    node: { id: `sidecar~${ip}~a.ns~ns.svc.cluster.local` },
    type_url: type,
    resource_names: names,
  });
  return { t, h };
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

Deno.test("WorkerXdsControl: a config push and a full push reach a worker's streams, and the worker's responses and NACKs reach the control isolate's metrics", async () => {
  const { gen, control, ads, metrics, close } = pair();
  try {
    const t = new MemoryStream<DiscoveryResponse>();
    const h = ads.server.openSotw(t);
    h.receive({ node: { id: "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local" }, type_url: CDS });
    const cds = await t.next();
    h.receive({ type_url: EDS, resource_names: ["c1", "c2"] });
    const eds = await t.next();
    await waitFor(() => metrics.pushes.eds === 1); // the worker's note after its sends
    // the proxy rejects the endpoints, later: told with nothing else going on
    h.receive({
      type_url: EDS,
      resource_names: ["c1", "c2"],
      response_nonce: eds.nonce,
      version_info: "",
      error_detail: { code: 3, message: "bad endpoints" },
    });
    await waitFor(() => metrics.nacks.eds === 1);
    h.receive({ type_url: CDS, response_nonce: cds.nonce, version_info: cds.version_info });
    // a config push of clusters only
    gen.views[CDS] = new Map([["c1", entry("c1b")], ["c2", entry("c2")]]);
    control.push({ kind: "config", types: [CDS] });
    await control.flush();
    assert.deepEqual(names(await t.next()), ["c1@c1b", "c2@c2"]);
    // a full push: every type is recomputed
    gen.views[CDS] = new Map([["c1", entry("c1c")], ["c2", entry("c2")]]);
    gen.setEds("c1", "e1c");
    control.push({ kind: "full" });
    await control.flush();
    const got = [await t.next(), await t.next()].map((r) =>
      `${r.type_url === CDS ? "cds" : "eds"} ${names(r)}`
    );
    assert.deepEqual(got.sort(), ["cds c1@c1c,c2@c2", "eds c1@e1c"]);
    assert.equal(t.unread, 0);
    await waitFor(() => metrics.pushes.cds === 3 && metrics.pushes.eds === 2);
    assert.equal(metrics.connected, 1);
    h.close();
    // a stream whose socket fails, and a type the generator cannot build
    const broken = {
      peer: "10.0.0.2:5000",
      peerIdentities: [],
      send: () => Promise.reject(new Error("connection reset")),
      end() {},
    };
    ads.server.openSotw(broken).receive({
      node: { id: "sidecar~10.0.0.2~b.ns~ns.svc.cluster.local" },
      type_url: CDS,
    });
    gen.failing = EDS;
    const t3 = new MemoryStream<DiscoveryResponse>();
    const h3 = ads.server.openSotw(t3);
    h3.receive({
      node: { id: "sidecar~10.0.0.3~c.ns~ns.svc.cluster.local" },
      type_url: EDS,
      resource_names: ["c1"],
    });
    await waitFor(() =>
      metrics.pushErrors.cds_senderr === 1 && metrics.buildErrors.eds_builderr === 1
    );
    h3.close();
  } finally {
    close();
  }
});

Deno.test("WorkerXdsControl: a name a worker's stream drops while the control isolate answers its push is not sent, and subscribing to it again sends it", async () => {
  const { gen, control, ads, close } = pair();
  try {
    const { t, h } = sidecarStream(ads, "10.0.0.1", EDS, ["c1", "c2"]);
    const r1 = await t.next();
    assert.deepEqual(names(r1), ["c1@e1", "c2@e2"]);
    gen.setEds("c1", "e1b");
    gen.setEds("c2", "e2b");
    // The worker's question for the push is in the control isolate when the proxy drops c2.
    gen.beforeAnswer = () =>
      h.receive({
        type_url: EDS,
        resource_names: ["c1"],
        version_info: r1.version_info,
        response_nonce: r1.nonce,
      });
    control.push({ kind: "eds", clusters: ["c1", "c2"] });
    await control.flush();
    const r2 = await t.next();
    assert.deepEqual(names(r2), ["c1@e1b"]);
    await ads.server.flush();
    assert.equal(t.unread, 0);
    h.receive({
      type_url: EDS,
      resource_names: ["c1", "c2"],
      version_info: r2.version_info,
      response_nonce: r2.nonce,
    });
    assert.deepEqual(names(await t.next()), ["c2@e2b"]);
  } finally {
    close();
  }
});

async function waitFor(ok: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`condition not met in time: ${ok}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("WorkerXdsControl.flush() resolves once the workers' streams sent what they have pending, a new stream's first response included, not only the pushes", async () => {
  const { control, ads, close } = pair();
  try {
    const t = new MemoryStream<DiscoveryResponse>();
    const h = ads.server.openSotw(t);
    h.receive({ node: { id: "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local" }, type_url: CDS });
    // the response waits for the control isolate's answer to the worker's question
    await control.flush();
    assert.equal(t.unread, 1, "flush() resolved before the worker sent the stream's response");
    assert.deepEqual(names(await t.next()), ["c1@c1", "c2@c2"]);
    h.close();
  } finally {
    close();
  }
});

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
    assert.deepEqual(byNode.get("10.0.0.1")!.types, {}, "no per-type state before a refresh");
    // /debug/adsz asks the workers for their streams' per-type state
    await sotw.next();
    await control.refreshConnections();
    const after = new Map(control.connections().map((c) => [c.nodeId.split("~")[1], c]));
    const one = after.get("10.0.0.1")!;
    assert.equal(one.conId, ads.server.connections().find((c) => c.mode === "sotw")!.conId);
    assert.deepEqual(Object.keys(one.types), [CDS]);
    assert.equal(one.types[CDS].lastSent?.resources, 2);
    assert.equal(one.peer, `${sotw.peer} (worker 0)`);
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

/** A control isolate alone, its workers played by the test through their messages. */
function controlAlone(
  opts: { metrics?: XdsMetrics; resourcesFor?: ResourcesFor<{ id: string; ip: string }> } = {},
) {
  const metrics = new XdsCounters();
  const lines: string[] = [];
  const log = {
    debug() {},
    info() {},
    warn: (m: string) => void lines.push(m),
    error: (m: string) => void lines.push(m),
  };
  const parseNode = (n: { id: string }) => {
    if (!n.id.startsWith("sidecar~")) throw new Error("not a sidecar id");
    return { id: n.id, ip: n.id.split("~")[1] };
  };
  const gen = generator();
  const local = new XdsServer({ parseNode, resourcesFor: gen.resourcesFor, logger: log });
  let release!: () => void;
  const pushes: WorkerPush[] = [];
  let clockNow = 1000;
  const control = new WorkerXdsControl({
    local,
    parseNode,
    proxyKey: (p) => p.ip,
    resourcesFor: opts.resourcesFor ?? gen.resourcesFor,
    broadcastPush: (p: WorkerPush) => {
      pushes.push(p);
      return new Promise<void>((r) => release = r);
    },
    broadcastFlush: () => Promise.resolve(),
    metrics: opts.metrics ?? metrics,
    log,
    debounceAfter: 1,
    clock: {
      now: () => clockNow,
      setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms),
      clearTimeout: (t: unknown) => clearTimeout(t as number),
    },
  });
  const connect = (
    w: number,
    sid: number,
    ip: string,
    id = `sidecar~${ip}~a.ns~ns.svc.cluster.local`,
  ) =>
    control.handlers.connect(
      [{ sid, node: { id }, at: "2026-11-30T00:00:00Z", mode: "sotw", peer: `${ip}:5000` }],
      w,
    );
  const state = (w: number, s: Partial<WorkerState>) =>
    control.handlers.state({
      maxSid: 0,
      sids: [],
      watched: {},
      held: [],
      events: {},
      transport: { accepting: true, refused: 0, throttled: 0, shed: 0 },
      ...s,
    }, w);
  return {
    control,
    metrics,
    lines,
    pushes,
    connect,
    state,
    release: () => release(),
    advance: (ms: number) => void (clockNow += ms),
  };
}

Deno.test("WorkerXdsControl: a worker's metric events count once each, its ended streams leave, and its listener counts add up", () => {
  const { control, metrics, lines, connect, state } = controlAlone();
  try {
    control.startWorker(0);
    control.startWorker(1);
    connect(0, 1, "10.0.0.1");
    connect(0, 2, "10.0.0.1"); // a second stream of the same proxy
    connect(1, 1, "10.0.0.2");
    connect(1, 2, "10.0.0.9", "router~bad"); // not parsed: left out, and said
    assert.deepEqual(lines, ["ADS worker: node router~bad: not a sidecar id"]);
    assert.equal(control.connectionCount, 3);
    state(0, {
      maxSid: 2,
      sids: [1, 2],
      events: {
        [`pushed ${CDS}`]: 3,
        [`nack ${EDS}`]: 2,
        [`buildError ${EDS}`]: 1,
        [`sendError:error ${CDS}`]: 1,
        [`sendError:timeout ${EDS}`]: 2,
      },
      transport: { accepting: true, refused: 4, throttled: 1, shed: 3 },
    });
    state(1, { maxSid: 1, sids: [1], events: { [`pushed ${CDS}`]: 1 } });
    state(1, { maxSid: 1, sids: [1], events: { [`fromANewerWorker ${CDS}`]: 1 } }); // ignored
    assert.deepEqual(metrics.pushes, { cds: 4 });
    assert.deepEqual(metrics.nacks, { eds: 2 });
    assert.deepEqual(metrics.buildErrors, { eds_builderr: 1 });
    assert.deepEqual(metrics.pushErrors, { cds_senderr: 1, eds_timeout: 2 });
    assert.equal(metrics.connected, 3);
    assert.deepEqual(control.transport(), { accepting: true, refused: 4, throttled: 1, shed: 3 });
    state(1, {
      maxSid: 1,
      sids: [1],
      transport: { accepting: false, refused: 2, throttled: 5, shed: 1 },
    });
    assert.deepEqual(control.transport(), { accepting: false, refused: 6, throttled: 6, shed: 4 });
    // worker 0's stream 1 ended; a stream it opened after its note (sid 3) is not dropped
    connect(0, 3, "10.0.0.3");
    state(0, { maxSid: 2, sids: [2] });
    assert.equal(control.connectionCount, 3);
    assert.equal(metrics.connected, 3);
    assert.ok(control.hasProxy("10.0.0.1"), "its other stream remains");
    assert.ok(control.hasProxy("10.0.0.3"));
    state(0, { maxSid: 3, sids: [3] });
    assert.ok(!control.hasProxy("10.0.0.1"), "both streams of 10.0.0.1 ended");
    assert.equal(control.connectionCount, 2);
    assert.deepEqual(metrics.pushes, { cds: 4 }, "events are counted once, as they come");
    // the debug listing before any refresh: ids from the connect notes
    assert.deepEqual(
      control.connections().map((c) => [c.conId, c.peer, c.peerIdentities, c.types]),
      [
        [`sidecar~10.0.0.3~a.ns~ns.svc.cluster.local-w0.3`, "10.0.0.3:5000 (worker 0)", [], {}],
        [`sidecar~10.0.0.2~a.ns~ns.svc.cluster.local-w1.1`, "10.0.0.2:5000 (worker 1)", [], {}],
      ],
    );
  } finally {
    control.close();
  }
});

Deno.test("WorkerXdsControl: a push's duration and convergence are recorded once every worker sent it", async () => {
  const { control, metrics, pushes, release, advance } = controlAlone();
  try {
    control.startWorker(0);
    control.push({ kind: "eds", clusters: ["c1"] });
    advance(40); // the first event was 40 ms before the push starts
    await waitFor(() => pushes.length === 1);
    assert.deepEqual(pushes, [{ full: false, types: [], edsClusters: ["c1"] }]);
    advance(250);
    assert.equal(metrics.pushDurations.count, 0, "not while a worker is still sending");
    release();
    await control.flush();
    assert.deepEqual(metrics.pushDurations, { count: 1, sum: 0.25, max: 0.25 });
    assert.deepEqual(metrics.convergenceTimes, { count: 1, sum: 0.29, max: 0.29 });
  } finally {
    control.close();
  }
});

Deno.test("WorkerXdsControl: a worker not heard from yet adds no names, holdings or listener counts; a config push tells the workers its types; nothing is pushed after close()", async () => {
  const { control, pushes, release } = controlAlone();
  control.startWorker(0);
  assert.deepEqual([...control.watchedNames(CDS)], []);
  let held = 0;
  control.forEachHeld(() => held++);
  assert.equal(held, 0);
  assert.deepEqual(control.transport(), { accepting: true, refused: 0, throttled: 0, shed: 0 });
  control.push({ kind: "config", types: [CDS] });
  await waitFor(() => pushes.length === 1);
  assert.deepEqual(pushes, [{ full: false, types: [CDS], edsClusters: [] }]);
  release();
  await control.flush();
  control.close();
  control.push({ kind: "full" });
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(pushes.length, 1);
});

Deno.test("WorkerXdsControl answers a worker's questions it cannot: an unknown stream or names list, a generator that fails or is not synchronous", () => {
  let mode = "ok";
  const view: ResourceMap = new Map([["c1", entry("e1")]]); // the generator's shared map
  const { control, connect } = controlAlone({
    resourcesFor: () => {
      if (mode === "throw") throw new Error("no push context yet");
      if (mode === "async") return Promise.resolve(new Map());
      return view;
    },
  });
  try {
    control.startWorker(0);
    connect(0, 1, "10.0.0.1");
    const ask = (queries: [number, string, number | null][], names: [number, string[]][] = []) =>
      (control.handlers.query({ queries, names, forget: [] }, 0) as { ids: (number | string)[] })
        .ids;
    const [id] = ask([[1, EDS, 7]], [[7, ["c1"]]]);
    assert.equal(typeof id, "number");
    assert.deepEqual(ask([[2, EDS, 7], [1, EDS, 8]]), [
      "stream 2 is not known to the control isolate",
      "names list 8 is not known",
    ]);
    mode = "throw";
    assert.deepEqual(ask([[1, EDS, 7]]), ["no push context yet"]);
    mode = "async";
    assert.deepEqual(ask([[1, EDS, 7]]), ["the generator must answer synchronously"]);
    mode = "ok";
    assert.deepEqual(ask([[1, EDS, 7]]), [id], "the same map, the same id");
    control.handlers.query({ queries: [], names: [], forget: [7] }, 0);
    assert.deepEqual(ask([[1, EDS, 7]]), ["names list 7 is not known"], "forgotten");
  } finally {
    control.close();
  }
});

Deno.test("WorkerXdsControl works with metrics that have none of the hooks", async () => {
  const { control, connect, state, pushes, release } = controlAlone({ metrics: {} });
  control.startWorker(0);
  connect(0, 1, "10.0.0.1");
  state(0, {
    maxSid: 1,
    sids: [],
    events: {
      [`pushed ${CDS}`]: 1,
      [`nack ${CDS}`]: 1,
      [`buildError ${CDS}`]: 1,
      [`sendError:error ${CDS}`]: 1,
      [`sendError:timeout ${CDS}`]: 1,
    },
  });
  assert.equal(control.connectionCount, 0);
  control.push({ kind: "full" });
  await waitFor(() => pushes.length === 1);
  release();
  await control.flush();
  control.forgetWorker(0);
  control.close();
});

Deno.test("WorkerAds: the maps no stream uses any more are forgotten in the worker as in the control isolate, push after push", async () => {
  const { gen, control, ads, close } = pair();
  try {
    const { t, h } = sidecarStream(ads, "10.0.0.1", EDS, ["c1", "c2"]);
    let r = await t.next();
    for (let i = 0; i < 8; i++) {
      h.receive({
        type_url: EDS,
        resource_names: ["c1", "c2"],
        version_info: r.version_info,
        response_nonce: r.nonce,
      });
      gen.setEds("c1", `e1-${i}`); // a new shared map at every push
      control.push({ kind: "eds", clusters: ["c1"] });
      await control.flush();
      r = await t.next();
      assert.deepEqual(names(r), [`c1@e1-${i}`]);
    }
    // nine maps were sent; the worker keeps only those used in the last epochs, as the control
    // isolate counts them (not every map it was ever sent)
    const [m] = control.mirrorStats();
    assert.equal(ads.mirrored, m.maps);
    assert.ok(ads.mirrored <= MIRROR_KEEP_EPOCHS + 1, `${ads.mirrored} maps held`);
    h.close();
  } finally {
    close();
  }
});

Deno.test("WorkerAds: a type the control isolate cannot build sends the worker's stream nothing, and the worker logs why", async () => {
  const log = recordingLogger();
  const { gen, metrics, ads, close } = pair(log);
  try {
    gen.failing = EDS;
    const { t, h } = sidecarStream(ads, "10.0.0.1", EDS, ["c1"]);
    await waitFor(() => metrics.buildErrors.eds_builderr === 1);
    assert.equal(t.unread, 0, "an empty or wrong response was sent");
    const errors = log.lines.filter((l) => l.startsWith("error "));
    assert.equal(errors.length, 1, errors.join("\n"));
    assert.match(
      errors[0],
      /^error ADS: building eds for .* failed: no push context for this type$/,
    );
    h.close();
  } finally {
    close();
  }
});

Deno.test("WorkerAds: a stream that ends leaves the control isolate's count with nothing else going on", async () => {
  const start = performance.now();
  const { control, ads, close } = pair();
  try {
    const t = new MemoryStream<DiscoveryResponse>();
    const h = ads.server.openSotw(t);
    h.receive({ node: { id: "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local" }, type_url: CDS });
    await t.next();
    await waitFor(() => control.connectionCount === 1);
    // past the response's note and the listener's first poll (which sends a note): the end is
    // then the only change, and the next poll (the listener unchanged) sends nothing
    await new Promise((r) => setTimeout(r, TRANSPORT_POLL_MS + 200 - (performance.now() - start)));
    h.close();
    await waitFor(() => control.connectionCount === 0, TRANSPORT_POLL_MS - 300);
    assert.ok(!control.hasProxy("10.0.0.1"));
  } finally {
    close();
  }
});

/** A worker whose channel records its notes (and never answers a request). */
function workerAlone(transport: () => { refused: number }) {
  const notes: { method: string; arg: WorkerState; at: number }[] = [];
  const channel = {
    notify: (method: string, arg: WorkerState) =>
      notes.push({ method, arg, at: performance.now() }),
    request: () => new Promise(() => {}),
  } as unknown as Channel;
  const ads = new WorkerAds({
    channel,
    log: quietLogger,
    proxyKey: () => "",
    knownTypes: [CDS, EDS],
    transport: () => ({ accepting: true, throttled: 0, shed: 0, ...transport() }),
  });
  const states = () => notes.filter((n) => n.method === "state");
  /** A change for the next state note (a push with nothing to send). */
  const change = () => void ads.push({ full: false, types: [], edsClusters: [] });
  return { ads, states, change };
}

Deno.test("WorkerAds: the listener's counts reach the control isolate on their own, within a poll, and only when they change", async () => {
  let refused = 0;
  const { ads, states } = workerAlone(() => ({ refused }));
  try {
    await waitFor(() => states().length === 1, 3 * TRANSPORT_POLL_MS);
    assert.equal(states()[0].arg.transport.refused, 0);
    await new Promise((r) => setTimeout(r, TRANSPORT_POLL_MS + 200));
    assert.equal(states().length, 1, "a note without a change");
    refused = 3; // a refused connection changes no stream
    await waitFor(() => states().length === 2, 3 * TRANSPORT_POLL_MS);
    assert.equal(states()[1].arg.transport.refused, 3);
  } finally {
    ads.close();
  }
});

Deno.test("WorkerAds: the state note comes once quiet after a change, and at least every 500 ms while changes go on", async () => {
  // each change is a new listener count, so that each note differs from the last (the listener's
  // poll then sees only these changes, and sends nothing of its own)
  let refused = 0;
  const { ads, states, change: push } = workerAlone(() => ({ refused }));
  const change = () => {
    refused++;
    push();
  };
  try {
    await waitFor(() => states().length === 1, 3 * TRANSPORT_POLL_MS); // the first poll's
    const t0 = performance.now();
    change();
    await waitFor(() => states().length === 2);
    const after = states()[1].at - t0;
    assert.ok(
      after >= STATE_QUIET_MS - 5 && after < STATE_MAX_MS - 60,
      `the note came ${after.toFixed(0)} ms after one change`,
    );
    // changes for 140 ms: the note comes once they stop, not at the latest
    const burst = performance.now();
    for (let i = 0; i < 8; i++) {
      change();
      await new Promise((r) => setTimeout(r, 20));
    }
    await waitFor(() => states().length === 3);
    const afterBurst = states()[2].at - burst;
    assert.ok(
      afterBurst < STATE_MAX_MS - 60,
      `the note came ${afterBurst.toFixed(0)} ms after a burst began`,
    );
    // a change every 20 ms for 1.8 s: notes during it, not only once it stops
    const start = performance.now();
    while (performance.now() - start < 1800) {
      change();
      await new Promise((r) => setTimeout(r, 20));
    }
    const during = states().filter((n) => n.at >= start && n.at < start + 1800);
    assert.ok(during.length >= 2, `${during.length} notes in 1.8 s of changes`);
    for (let i = 1; i < during.length; i++) {
      const gap = during[i].at - during[i - 1].at;
      assert.ok(gap >= STATE_MAX_MS - 100, `two notes ${gap.toFixed(0)} ms apart`);
    }
  } finally {
    ads.close();
  }
});

Deno.test("WorkerAds: a stream whose first request asks for nothing is known to the control isolate all the same", async () => {
  const { control, ads, close } = pair();
  try {
    // delta endpoints with no names yet: no question for the generator
    const t = new MemoryStream<DeltaDiscoveryResponse>();
    const h = ads.server.openDelta(t);
    h.receive({ node: { id: "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local" }, type_url: EDS });
    await waitFor(() => control.connectionCount === 1, 2000);
    assert.ok(control.hasProxy("10.0.0.1"));
    assert.equal(t.unread, 0);
    h.close();
  } finally {
    close();
  }
});

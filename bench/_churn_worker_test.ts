import assert from "node:assert/strict";
import { XDS_TYPES } from "../lib/xds/server/types.ts";
import { parseTestNode } from "../lib/xds/server/_test_util.ts";
import { resource, sidecarCache, startTestAds } from "./_ads_testing.ts";
import { churnAddress, ChurnTracker } from "./_churn.ts";
import { ChurnShards } from "./_churn_shards.ts";
import { churnWorker, sidecarNodeId } from "./_churn_worker.ts";

Deno.test("a client worker opens its sidecars, counts each posted change at each of them, and reports its figures", async () => {
  const names = ["outbound|8080||svc-0.bench", "outbound|8080||svc-1.bench"];
  const cache = sidecarCache(names, "8080");
  const nodes: string[] = [];
  const ads = await startTestAds(cache, (n) => (nodes.push(n.id), parseTestNode(n)));
  const { server } = ads;
  const got: Record<string, unknown>[] = [];
  const handle = churnWorker((m) => got.push(m as Record<string, unknown>));
  const until = async (what: string, ok: () => boolean) => {
    for (let i = 0; !ok(); i++) {
      if (i > 500) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  try {
    handle({
      open: {
        port: ads.port,
        firstSotw: 4,
        firstDelta: 100_002,
        sotw: 3,
        delta: 1,
        perSession: 2,
        client: "lean",
      },
    });
    await until("ready", () => got.some((m) => m.ready !== undefined));
    assert.equal(got.find((m) => m.ready !== undefined)!.ready, 4);
    // ready means synced: every stream has asked for both clusters' endpoints
    const conns = server.connections();
    assert.deepEqual(conns.map((c) => c.types[XDS_TYPES.endpoint]?.subscribed.length), [
      2,
      2,
      2,
      2,
    ]);
    assert.deepEqual(conns.map((c) => c.mode).sort(), ["delta", "sotw", "sotw", "sotw"]);
    assert.equal(new Set(conns.map((c) => c.peer)).size, 2, "two streams per connection");
    assert.deepEqual(
      nodes.sort(),
      [4, 5, 6, 100_002].map(sidecarNodeId).sort(),
      "the node ids of its share",
    );
    // change 1 of service 1, as the bench posts it, then the push that carries it
    handle({ post: [1, performance.timeOrigin + performance.now()] });
    cache.set(XDS_TYPES.endpoint, names[1], resource(names[1], churnAddress(1)));
    server.push({ kind: "eds", clusters: [names[1]] });
    await until("every sidecar to have the change", () => got.some((m) => m.delivered === 4));
    handle({ end: true });
    const { result } = got.find((m) => m.result) as {
      result: {
        part: { delivered: number; quiet: number[]; first: number[] };
        lagP99: number;
        lagMax: number;
      };
    };
    assert.ok(result.lagMax >= result.lagP99 && result.lagP99 >= 0, JSON.stringify(result));
    await until("the sidecars to close", () => server.connectionCount === 0);
    assert.equal(result.part.delivered, 4);
    // one update each since the change (the initial sync is not counted): no wait between two
    assert.deepEqual(result.part.quiet, [0, 0, 0, 0], "each sidecar's longest wait");
    assert.ok(result.part.first[1] >= 0 && result.part.first[1] < 5000, String(result.part.first));
  } finally {
    await ads.close();
  }
});

Deno.test("a client worker that cannot connect says so", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const got: Record<string, unknown>[] = [];
  churnWorker((m) => got.push(m as Record<string, unknown>))({
    open: {
      port,
      firstSotw: 0,
      firstDelta: 100_000,
      sotw: 1,
      delta: 0,
      perSession: 1,
      client: "lean",
    },
  });
  for (let i = 0; !got.length && i < 500; i++) await new Promise((r) => setTimeout(r, 10));
  assert.match(String(got[0]?.error), /refused|ECONNREFUSED/i);
});

Deno.test("ChurnShards: sidecars spread over worker isolates, each change counted once at each", async () => {
  const names = ["outbound|8080||svc-0.bench", "outbound|8080||svc-1.bench"];
  const cache = sidecarCache(names, "8080");
  const ads = await startTestAds(cache);
  const { server } = ads;
  try {
    const shards = await ChurnShards.open(2, {
      port: ads.port,
      sotw: 3,
      delta: 1,
      perSession: 1,
      client: "lean",
    });
    assert.equal(shards.live, 4);
    assert.deepEqual(
      server.connections().map((c) => c.nodeId).sort(),
      [0, 1, 2, 100_000].map(sidecarNodeId).sort(),
      "the bench's own numbering, split between them",
    );
    const tracker = new ChurnTracker();
    const seq = tracker.post(0, performance.now());
    shards.post(0, performance.timeOrigin + tracker.posted[seq]);
    cache.set(XDS_TYPES.endpoint, names[0], resource(names[0], churnAddress(seq)));
    server.push({ kind: "eds", clusters: [names[0]] });
    for (let i = 0; shards.delivered < 4; i++) {
      if (i > 500) throw new Error(`${shards.delivered} of 4 deliveries`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const results = await shards.end();
    assert.equal(results.length, 2);
    for (const r of results) tracker.absorb(r.part);
    assert.equal(tracker.delivered, 4);
    assert.equal(tracker.longestQuiet().length, 4);
    for (let i = 0; server.connectionCount > 0; i++) {
      if (i > 500) throw new Error("the workers' sidecars stayed connected");
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    await ads.close();
  }
});

import assert from "node:assert/strict";
import { startFakeKube } from "../../tests/harness/fake_kube.ts";
import { quietLogger as quiet, recordingLogger } from "../log/testing.ts";
import {
  LeaderElector,
  type LeaderElectorOptions,
  type Lease,
  type LeaseClient,
  type LeaseSpec,
  microTime,
} from "./leader.ts";
import { kubeLeaseClient } from "./lease_client.ts";
import { apiErrorStatus, loadKubeConfig } from "./mod.ts";

async function setup() {
  const kube = await startFakeKube();
  const client = await kubeLeaseClient(await loadKubeConfig(kube.kubeconfigPath));
  let t = 0;
  const clock = { now: () => t, advance: (ms: number) => void (t += ms) };
  const candidate = (identity: string, extra: Partial<LeaderElectorOptions> = {}) =>
    new LeaderElector({
      client,
      namespace: "mesh-system",
      name: "leader",
      identity,
      leaseDurationMs: 2000,
      now: clock.now,
      log: quiet,
      ...extra,
    });
  const lease = () =>
    kube.get("leases.coordination.k8s.io", "mesh-system", "leader") as unknown as Lease;
  const holder = () => lease()?.spec?.holderIdentity;
  /** Writes the Lease by hand (an operator, another replica): `spec` replaces its spec. */
  const writeSpec = (spec: (old: LeaseSpec) => LeaseSpec) => {
    const l = lease();
    kube.upsert({ ...l, spec: spec(l.spec ?? {}) } as unknown as Record<string, never>);
  };
  /** The client whose reads fail while `broken` is set (the API server unreachable). */
  const flaky: { broken: boolean; client: LeaseClient } = {
    broken: false,
    client: {
      ...client,
      get: (ns, n) =>
        flaky.broken ? Promise.reject(new Error("connection refused")) : client.get(ns, n),
    },
  };
  return { kube, client, clock, candidate, holder, lease, writeSpec, flaky };
}

Deno.test("microTime() writes microseconds", () => {
  assert.equal(microTime(new Date("2026-01-02T03:04:05.678Z")), "2026-01-02T03:04:05.678000Z");
});

Deno.test("LeaderElector: the first candidate creates the Lease; another takes it over only once it was not renewed for its duration", async () => {
  const { kube, clock, candidate, holder } = await setup();
  await using _ = kube;
  const a = candidate("a"), b = candidate("b");
  assert.equal(await a.tryAcquireOrRenew(), true);
  assert.equal(holder(), "a");
  assert.equal(await b.tryAcquireOrRenew(), false, "held and fresh");
  clock.advance(1500);
  assert.equal(await a.tryAcquireOrRenew(), true, "a renews");
  assert.equal(await b.tryAcquireOrRenew(), false, "b saw the record change");
  clock.advance(1500);
  assert.equal(await b.tryAcquireOrRenew(), false, "renewed 1.5 s ago (b's clock)");
  clock.advance(600); // a stopped renewing 2.1 s ago
  assert.equal(await b.tryAcquireOrRenew(), true);
  assert.equal(holder(), "b");
  assert.equal(await a.tryAcquireOrRenew(), false, "a sees b's fresh record");
  const spec = kube.get("leases.coordination.k8s.io", "mesh-system", "leader")?.spec as {
    leaseTransitions: number;
    leaseDurationSeconds: number;
  };
  assert.equal(spec.leaseTransitions, 1);
  assert.equal(spec.leaseDurationSeconds, 2);
});

Deno.test("LeaderElector: of two candidates writing the same Lease version, one gets the conflict", async () => {
  const { kube, clock, candidate, holder } = await setup();
  await using _ = kube;
  const a = candidate("a"), b = candidate("b"), c = candidate("c");
  assert.equal(await a.tryAcquireOrRenew(), true);
  // b and c both see a's record, both wait out the lease, both try to take over at once.
  assert.equal(await b.tryAcquireOrRenew(), false);
  assert.equal(await c.tryAcquireOrRenew(), false);
  clock.advance(2100);
  const won = await Promise.all([b.tryAcquireOrRenew(), c.tryAcquireOrRenew()]);
  assert.deepEqual(won.filter(Boolean).length, 1, `exactly one wins: ${won}`);
  assert.equal(holder(), won[0] ? "b" : "c");
});

Deno.test("LeaderElector: start() leads and calls back; stop() releases the Lease so another takes over at once", async () => {
  const { kube, candidate, holder } = await setup();
  await using _ = kube;
  const events: string[] = [];
  const a = candidate("a", {
    now: undefined,
    retryPeriodMs: 100,
    onStartedLeading: () => events.push("a+"),
    onStoppedLeading: () => events.push("a-"),
  });
  a.start();
  const deadline = Date.now() + 10_000;
  while (!a.isLeader && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(a.isLeader, true);
  await a.stop();
  assert.deepEqual(events, ["a+", "a-"]);
  assert.equal(holder(), "");
  const b = candidate("b", { now: undefined });
  assert.equal(await b.tryAcquireOrRenew(), true, "a released Lease is taken at once");
});

Deno.test("LeaderElector: a leader that cannot renew steps down after the renew deadline, and one that sees another holder at once", async () => {
  const { kube, clock, candidate, flaky } = await setup();
  await using _ = kube;
  const events: string[] = [];
  const log = recordingLogger();
  const a = candidate("a", {
    client: flaky.client,
    log,
    onStartedLeading: () => events.push("a+"),
    onStoppedLeading: () => events.push("a-"),
  });
  clock.advance(10_000); // a clock that did not start at 0
  await a.tick();
  assert.equal(a.isLeader, true);
  flaky.broken = true;
  clock.advance(1332);
  await a.tick();
  assert.equal(a.isLeader, true, "within the renew deadline (2/3 of 2 s: 1333 ms)");
  clock.advance(1);
  await a.tick();
  assert.equal(a.isLeader, false, "1333 ms without renewal");
  assert.deepEqual(events, ["a+", "a-"]);
  assert.deepEqual(log.lines.filter((l) => !l.includes("connection refused")), [
    "info Leader election: a became the leader (Lease mesh-system/leader)",
    "warn Leader election: lost Lease mesh-system/leader",
    "info Leader election: a is no longer the leader (Lease mesh-system/leader)",
  ]);
  // Back: it renews its own Lease (still its holder) and leads again.
  flaky.broken = false;
  await a.tick();
  assert.equal(a.isLeader, true);
  // Another candidate takes the Lease over after it expired: a steps down at its next round.
  const b = candidate("b");
  await b.tick();
  clock.advance(2100);
  await b.tick();
  assert.equal(b.isLeader, true);
  await a.tick();
  assert.equal(a.isLeader, false);
  assert.deepEqual(events, ["a+", "a-", "a+", "a-"]);
});

Deno.test("LeaderElector refuses an empty identity, Lease name or namespace, and a lease under 1 s", () => {
  const client = {
    get: () => Promise.resolve(null),
    create: Promise.reject,
    replace: Promise.reject,
  };
  const opts = { client, namespace: "ns", name: "l", identity: "a" };
  new LeaderElector({ ...opts, leaseDurationMs: 1000 }); // the shortest accepted
  assert.throws(
    () => new LeaderElector({ ...opts, identity: "" }),
    /^Error: LeaderElector: identity is empty$/,
  );
  for (const bad of [{ name: "" }, { namespace: "" }]) {
    assert.throws(
      () => new LeaderElector({ ...opts, ...bad }),
      /^Error: LeaderElector: the Lease name and namespace must not be empty$/,
    );
  }
  for (const leaseDurationMs of [999, NaN]) {
    assert.throws(
      () => new LeaderElector({ ...opts, leaseDurationMs }),
      new RegExp(`^Error: LeaderElector: lease duration ${leaseDurationMs}ms is under 1s$`),
    );
  }
});

Deno.test("LeaderElector: a candidate tries every 1/7.5 of the lease by default, and start() twice or after stop() adds no campaign", async () => {
  const { kube, client, candidate } = await setup();
  await using _ = kube;
  const gets: number[] = [];
  const counting = {
    ...client,
    get: (ns: string, n: string) => (gets.push(performance.now()), client.get(ns, n)),
  };
  // 1.5 s lease: a round every 200 ms
  const a = candidate("a", { client: counting, now: undefined, leaseDurationMs: 1500 });
  a.start();
  a.start();
  assert.equal(gets.length, 1, "one round at once, however often start() is called");
  const deadline = Date.now() + 10_000;
  while (gets.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  await a.stop();
  assert.ok(gets.length >= 3, `three rounds: ${gets.length}`);
  for (let i = 1; i < 3; i++) {
    const gap = gets[i] - gets[i - 1];
    assert.ok(gap >= 190 && gap < 1400, `round ${i} came ${gap} ms after the one before (200 ms)`);
  }
  const n = gets.length;
  a.start();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(gets.length, n, "a stopped candidate does not campaign again");
  // on the default clock too, another's fresh Lease is held
  const b = candidate("b", { now: undefined }), c = candidate("c", { now: undefined });
  assert.equal(await b.tryAcquireOrRenew(), true);
  assert.equal(await c.tryAcquireOrRenew(), false);
});

Deno.test("LeaderElector: a leader is told once that it leads; its renewals keep acquireTime, and each take-over counts a transition", async () => {
  const { kube, clock, candidate, lease } = await setup();
  await using _ = kube;
  let wall = Date.parse("2026-11-30T00:00:00Z");
  const wallClock = () => new Date(wall);
  const events: string[] = [];
  const cb = (id: string) => ({
    wallClock,
    onStartedLeading: () => events.push(`${id}+`),
    onStoppedLeading: () => events.push(`${id}-`),
  });
  const a = candidate("a", cb("a")), b = candidate("b", cb("b"));
  await a.tick();
  for (let i = 0; i < 3; i++) {
    clock.advance(500);
    wall += 500;
    await a.tick();
  }
  assert.deepEqual(events, ["a+"]);
  assert.deepEqual(lease().spec, {
    holderIdentity: "a",
    leaseDurationSeconds: 2,
    acquireTime: "2026-11-30T00:00:00.000000Z",
    renewTime: "2026-11-30T00:00:01.500000Z",
    leaseTransitions: 0,
  });
  // a stops renewing; b takes over once the lease ran out, then a takes it back the same way
  await b.tick();
  clock.advance(2000);
  wall += 2000;
  await b.tick();
  await a.tick();
  assert.deepEqual(events, ["a+", "b+", "a-"]);
  assert.equal(lease().spec?.acquireTime, "2026-11-30T00:00:03.500000Z", "b's acquireTime");
  assert.equal(lease().spec?.leaseTransitions, 1);
  clock.advance(2000);
  wall += 1000;
  await a.tick();
  await b.tick();
  assert.deepEqual(events, ["a+", "b+", "a-", "a+", "b-"]);
  assert.equal(lease().spec?.acquireTime, "2026-11-30T00:00:04.500000Z");
  assert.equal(lease().spec?.leaseTransitions, 2);
});

Deno.test("LeaderElector: a follower's stop() leaves the leader's Lease alone and calls nothing", async () => {
  const { kube, candidate, lease } = await setup();
  await using _ = kube;
  const events: string[] = [];
  const a = candidate("a");
  const b = candidate("b", {
    onStartedLeading: () => events.push("b+"),
    onStoppedLeading: () => events.push("b-"),
  });
  await a.tick();
  await b.tick();
  const before = lease();
  const log = recordingLogger();
  const c = candidate("c", { log });
  await c.tick();
  await b.stop();
  assert.deepEqual(lease(), before, "not written");
  assert.deepEqual(events, []);
  kube.failNext({ method: "GET", path: /\/leases\/leader$/, code: 500 });
  await c.stop();
  assert.deepEqual(
    log.lines,
    [],
    "a follower has nothing to release: no warning when it cannot read",
  );
  // a leader whose Lease was deleted meanwhile stops quietly
  kube.remove("leases.coordination.k8s.io", "mesh-system", "leader");
  const d = candidate("d", { log });
  await d.tick();
  kube.remove("leases.coordination.k8s.io", "mesh-system", "leader");
  log.lines.length = 0;
  await d.stop();
  assert.deepEqual(log.lines, [
    "info Leader election: d is no longer the leader (Lease mesh-system/leader)",
  ]);
});

Deno.test("LeaderElector: stop() during a round that takes the Lease releases it, calls nothing, and no round follows", async () => {
  const { kube, client, candidate, holder } = await setup();
  await using _ = kube;
  let open!: () => void;
  const gate = new Promise<void>((r) => open = r);
  let gets = 0;
  const gated = {
    ...client,
    get: async (ns: string, n: string) => {
      if (gets++ === 0) await gate;
      return client.get(ns, n);
    },
  };
  const events: string[] = [];
  const a = candidate("a", {
    client: gated,
    now: undefined,
    retryPeriodMs: 20,
    onStartedLeading: () => events.push("a+"),
    onStoppedLeading: () => events.push("a-"),
  });
  a.start();
  const stopped = a.stop();
  open();
  await stopped;
  assert.equal(holder(), "", "created by the round, then released");
  assert.equal(a.isLeader, false);
  assert.deepEqual(events, []);
  const n = gets;
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(gets, n, "no round after stop()");
  assert.equal(holder(), "");
});

Deno.test("LeaderElector: a leader that sees another holder in its Lease steps down at once, and says who", async () => {
  const { kube, clock, candidate, writeSpec } = await setup();
  await using _ = kube;
  const log = recordingLogger();
  const a = candidate("a", { log });
  clock.advance(10_000);
  await a.tick();
  assert.equal(a.isLeader, true);
  // someone else wrote the Lease (an operator, a replica with a clock far ahead)
  writeSpec((spec) => ({ ...spec, holderIdentity: "x" }));
  clock.advance(100);
  await a.tick();
  assert.equal(a.isLeader, false);
  assert.deepEqual(log.lines, [
    "info Leader election: a became the leader (Lease mesh-system/leader)",
    "warn Leader election: Lease mesh-system/leader taken by x",
    "info Leader election: a is no longer the leader (Lease mesh-system/leader)",
  ]);
});

Deno.test("LeaderElector: a candidate waits for the Lease's own duration, exactly, and takes a Lease without a holder at once", async () => {
  const { kube, clock, candidate, holder, writeSpec } = await setup();
  await using _ = kube;
  const a = candidate("a", { leaseDurationMs: 5000 }), b = candidate("b"); // b's own: 2 s
  await a.tick();
  await b.tick();
  clock.advance(4999);
  assert.equal(await b.tryAcquireOrRenew(), false, "the Lease says 5 s");
  clock.advance(1);
  assert.equal(await b.tryAcquireOrRenew(), true, "5 s since b saw it change");
  assert.equal(holder(), "b");
  // a Lease written by hand, with no holder: free
  writeSpec(() => ({ leaseDurationSeconds: 60 }));
  const c = candidate("c");
  assert.equal(await c.tryAcquireOrRenew(), true);
  assert.equal(holder(), "c");
});

Deno.test("LeaderElector: failures are logged and retried, conflicts are not failures, a failing callback is logged", async () => {
  const { kube, client, candidate, holder } = await setup();
  await using _ = kube;
  // two candidates create the Lease at once: one wins, the other sees the conflict
  let waiting = 0, go!: () => void;
  const both = new Promise<void>((r) => go = r);
  const racing = {
    ...client,
    get: async (ns: string, n: string) => {
      const l = await client.get(ns, n);
      if (++waiting === 2) go();
      await both;
      return l;
    },
  };
  const log = recordingLogger();
  const a = candidate("a", { client: racing, log }), b = candidate("b", { client: racing, log });
  const won = await Promise.all([a.tryAcquireOrRenew(), b.tryAcquireOrRenew()]);
  assert.deepEqual(won.filter(Boolean).length, 1, `one creates the Lease: ${won}`);
  const leader = won[0] ? a : b;
  await leader.tick();
  assert.equal(leader.isLeader, true);
  log.lines.length = 0;
  kube.failNext({ method: "PUT", path: /\/leases\/leader$/, code: 409 });
  await leader.tick();
  assert.deepEqual(log.lines, [], "a conflict is a lost round, not an error");
  kube.failNext({ method: "PUT", path: /\/leases\/leader$/, code: 500, message: "etcd is gone" });
  await leader.tick();
  assert.equal(leader.isLeader, true, "within its renew deadline");
  assert.deepEqual(log.lines, [
    "warn Leader election: Lease mesh-system/leader: etcd is gone (HTTP 500)",
  ]);
  kube.failNext({ method: "GET", path: /\/leases\/leader$/, code: 500, message: "etcd is gone" });
  log.lines.length = 0;
  await leader.stop();
  assert.equal(holder(), leader === a ? "a" : "b", "not released: the read failed");
  assert.deepEqual(log.lines.slice(-1), [
    "warn Leader election: cannot release Lease mesh-system/leader: etcd is gone (HTTP 500)",
  ]);
  // a callback that throws
  kube.remove("leases.coordination.k8s.io", "mesh-system", "leader");
  const c = candidate("c", {
    log,
    onStartedLeading: () => {
      throw new Error("boom");
    },
  });
  log.lines.length = 0;
  await c.tick();
  assert.equal(c.isLeader, true);
  assert.deepEqual(log.lines, [
    "info Leader election: c became the leader (Lease mesh-system/leader)",
    "error Leader election: callback failed: boom",
  ]);
});

Deno.test("LeaderElector: a create that fails for another reason than a conflict is a logged failure", async () => {
  const { kube, client, candidate, holder } = await setup();
  await using _ = kube;
  const log = recordingLogger();
  const down = { ...client, create: () => Promise.reject(new Error("connection refused")) };
  const a = candidate("a", { client: down, log });
  await a.tick();
  assert.equal(a.isLeader, false);
  assert.deepEqual(log.lines, [
    "warn Leader election: Lease mesh-system/leader: connection refused",
  ]);
  log.lines.length = 0;
  kube.failNext({ method: "POST", path: /\/leases$/, code: 403, message: "forbidden by RBAC" });
  const b = candidate("b", { log });
  await b.tick();
  assert.equal(holder(), undefined);
  assert.deepEqual(log.lines, [
    "warn Leader election: Lease mesh-system/leader: forbidden by RBAC (HTTP 403)",
  ]);
});

Deno.test("LeaderElector: without a logger, every path that logs still works", async () => {
  const { kube, clock, candidate, holder, writeSpec, flaky } = await setup();
  await using _ = kube;
  const a = candidate("a", {
    client: flaky.client,
    log: undefined,
    onStartedLeading: () => {
      throw new Error("boom");
    },
  });
  await a.tick(); // became the leader; the callback threw
  assert.equal(a.isLeader, true);
  flaky.broken = true;
  clock.advance(2000);
  await a.tick(); // failed, and lost the Lease
  assert.equal(a.isLeader, false);
  flaky.broken = false;
  await a.tick();
  writeSpec((spec) => ({ ...spec, holderIdentity: "x" }));
  await a.tick(); // taken by x
  assert.equal(a.isLeader, false);
  clock.advance(2000);
  await a.tick();
  assert.equal(a.isLeader, true);
  flaky.broken = true;
  await a.stop(); // cannot release
  assert.equal(holder(), "a");
});

Deno.test("kubeLeaseClient: a missing Lease is null; an API server that cannot be reached is its own error, not a TypeError", async () => {
  const kube = await startFakeKube();
  const client = await kubeLeaseClient(await loadKubeConfig(kube.kubeconfigPath));
  assert.equal(await client.get("mesh-system", "nobody"), null);
  await kube.close();
  const err = await client.get("mesh-system", "leader").then(() => undefined, (e) => e);
  assert.ok(err instanceof Error, String(err));
  assert.ok(!(err instanceof TypeError), `${err.name}: ${err.message}`);
  assert.equal(apiErrorStatus(err), undefined, "no HTTP status: the request never got an answer");
});

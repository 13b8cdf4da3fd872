import assert from "node:assert/strict";
import { startFakeKube } from "../../tests/harness/fake_kube.ts";
import { LeaderElector, type LeaderElectorOptions, microTime } from "./leader.ts";
import { kubeLeaseClient } from "./lease_client.ts";
import { loadKubeConfig } from "./mod.ts";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

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
  const holder = () =>
    (kube.get("leases.coordination.k8s.io", "mesh-system", "leader")?.spec as {
      holderIdentity?: string;
    })?.holderIdentity;
  return { kube, client, clock, candidate, holder };
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
  const { kube, client, clock, candidate } = await setup();
  await using _ = kube;
  let broken = false;
  const flaky = {
    get: (ns: string, n: string) =>
      broken ? Promise.reject(new Error("connection refused")) : client.get(ns, n),
    create: client.create,
    replace: client.replace,
  };
  const events: string[] = [];
  const a = candidate("a", {
    client: flaky,
    onStartedLeading: () => events.push("a+"),
    onStoppedLeading: () => events.push("a-"),
  });
  await a.tick();
  assert.equal(a.isLeader, true);
  broken = true;
  clock.advance(1000);
  await a.tick();
  assert.equal(a.isLeader, true, "within the renew deadline (2/3 of 2 s)");
  clock.advance(400);
  await a.tick();
  assert.equal(a.isLeader, false, "1.4 s without renewal");
  assert.deepEqual(events, ["a+", "a-"]);
  // Back: it renews its own Lease (still its holder) and leads again.
  broken = false;
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

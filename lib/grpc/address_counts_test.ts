import assert from "node:assert/strict";
import { SharedAddressCounts } from "./address_counts.ts";

Deno.test("SharedAddressCounts: the listeners of one table count an address together; a remove undoes an add, and an address with none left leaves", () => {
  const buffer = SharedAddressCounts.create(2, 64);
  const [a, b] = [0, 1].map((i) => new SharedAddressCounts(buffer, 2, i));
  assert.equal(a.add("10.0.0.1"), 1);
  assert.equal(b.add("10.0.0.1"), 2);
  assert.equal(b.add("10.0.0.1"), 3);
  assert.equal(a.add("10.0.0.2"), 1);
  assert.equal(a.count("10.0.0.1"), 3);
  assert.equal(a.size, 2);
  b.remove("10.0.0.1");
  assert.equal(a.count("10.0.0.1"), 2);
  // a listener removes only what it counted
  a.remove("10.0.0.2");
  a.remove("10.0.0.2");
  b.remove("10.0.0.2");
  assert.equal(a.count("10.0.0.2"), 0);
  assert.equal(a.size, 1);
  a.remove("10.0.0.1");
  b.remove("10.0.0.1");
  assert.equal(b.count("10.0.0.1"), 0);
  assert.equal(b.size, 0);
  // the unix socket's one "address", IPv6 with a zone
  assert.equal(a.add(""), 1);
  assert.equal(b.add("fe80::1:2:3:4%eth0"), 1);
  assert.equal(a.count(""), 1);
});

Deno.test("SharedAddressCounts: an address it cannot keep (over 60 bytes, not ASCII, the table full) is answered -1 and not counted", () => {
  const buffer = SharedAddressCounts.create(1, 2);
  const t = new SharedAddressCounts(buffer, 1, 0);
  assert.equal(t.add("x".repeat(61)), -1);
  assert.equal(t.add("é"), -1);
  t.remove("x".repeat(61)); // nothing to remove, nothing breaks
  assert.equal(t.add("a"), 1);
  assert.equal(t.add("b"), 1);
  assert.equal(t.add("c"), -1, "a third address in two slots");
  assert.equal(t.add("a"), 2, "an address already kept is still counted");
  t.remove("b");
  assert.equal(t.add("c"), 1, "room again");
  assert.throws(() => new SharedAddressCounts(buffer, 1, 1), /listener 1 of 1/);
  assert.throws(() => new SharedAddressCounts(buffer, 1, -1), /listener -1 of 1/);
  assert.throws(() => new SharedAddressCounts(new SharedArrayBuffer(64), 1, 0), /0 slots/);
});

Deno.test("SharedAddressCounts keeps an address of 60 bytes whole: two that differ only in their last byte are two addresses", () => {
  const t = new SharedAddressCounts(SharedAddressCounts.create(2, 8), 2, 1);
  const a = "2001:db8:1:2:3:4:5:6%a-very-long-interface-name-of-a-host-01";
  const b = a.slice(0, -1) + "2";
  assert.equal(a.length, 60);
  assert.equal(t.add(a), 1);
  assert.equal(t.add(a), 2);
  assert.equal(t.add(b), 1);
  assert.equal(t.count(a), 2);
  t.remove(a);
  t.remove(a);
  assert.equal(t.count(b), 1);
  assert.equal(t.size, 1);
});

for (const [slots, addresses, seed] of [[13, 20, 42], [31, 20, 7], [11, 6, 3], [11, 6, 99]]) {
  Deno.test(`SharedAddressCounts agrees with a plain map through 20,000 random adds, removes and forgets of ${addresses} addresses in ${slots} slots (seed ${seed}: collisions, wrap-around, slots shifted back${slots < addresses ? ", full" : ""})`, () => {
    randomOps(slots, addresses, seed);
  });
}

function randomOps(slots: number, addresses: number, seed: number) {
  const listeners = 3;
  const buffer = SharedAddressCounts.create(listeners, slots);
  const views = Array.from(
    { length: listeners },
    (_, i) => new SharedAddressCounts(buffer, listeners, i),
  );
  const model = new Map<string, number[]>(); // address → count per listener
  const total = (a: string) => (model.get(a) ?? []).reduce((x, y) => x + y, 0);
  // mulberry32
  const rand = (n: number) => {
    let t = seed = (seed + 0x6d2b79f5) | 0;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  for (let step = 0; step < 20_000; step++) {
    const a = `10.0.0.${rand(addresses)}`;
    const l = rand(listeners);
    const counts = model.get(a) ?? Array(listeners).fill(0);
    if (rand(2) === 0) {
      const got = views[l].add(a);
      if (got === -1) {
        assert.equal(model.size, slots, `-1 with ${model.size} of ${slots} addresses kept`);
        assert.equal(total(a), 0, "a kept address was refused");
        continue;
      }
      counts[l]++;
      model.set(a, counts);
      assert.equal(got, total(a), `step ${step}`);
    } else {
      views[l].remove(a);
      if (counts[l] > 0) counts[l]--;
      if (counts.every((c) => c === 0)) model.delete(a);
      else model.set(a, counts);
    }
    {
      for (let i = 0; i < addresses; i++) {
        const x = `10.0.0.${i}`;
        assert.equal(views[0].count(x), total(x), `${x} at step ${step}`);
      }
      assert.equal(views[0].size, model.size);
    }
    if (step % 500 === 499) {
      // a listener dies: what it counted goes, the others' stays
      const dead = rand(listeners);
      SharedAddressCounts.forget(buffer, listeners, dead);
      for (const [x, c] of model) {
        c[dead] = 0;
        if (c.every((n) => n === 0)) model.delete(x);
      }
      assert.equal(views[1].size, model.size, `after forget(${dead})`);
      for (const x of model.keys()) assert.equal(views[2].count(x), total(x), `${x} after forget`);
    }
  }
}

Deno.test("SharedAddressCounts: two workers adding and removing the same addresses at once lose no count", async () => {
  const buffer = SharedAddressCounts.create(2, 256);
  const addresses = Array.from({ length: 10 }, (_, i) => `192.0.2.${i}`);
  const workers = [0, 1].map(() =>
    new Worker(new URL("./testdata/address_counts_worker.ts", import.meta.url), { type: "module" })
  );
  const next = (w: Worker) =>
    new Promise<unknown>((resolve, reject) => {
      w.onmessage = (e) => resolve(e.data);
      w.onerror = (e) => reject(e);
    });
  try {
    const done = workers.map(next);
    const start = new SharedArrayBuffer(8);
    const go = new Int32Array(start);
    workers.forEach((w, index) =>
      w.postMessage({ buffer, of: 2, index, rounds: 200_000, addresses, start })
    );
    while (Atomics.load(go, 1) < 2) await new Promise((r) => setTimeout(r, 1));
    Atomics.store(go, 0, 1);
    Atomics.notify(go, 0);
    const answers = await Promise.all(done) as { most: number }[];
    // one connection of an address at a time each: never over 2 at once
    for (const a of answers) assert.ok(a.most >= 1 && a.most <= 2, JSON.stringify(a));
    const view = new SharedAddressCounts(buffer, 2, 0);
    for (const a of addresses) assert.equal(view.count(a), 2, a);
    const released = workers.map(next);
    for (const w of workers) w.postMessage("release");
    await Promise.all(released);
    assert.equal(view.size, 0);
  } finally {
    for (const w of workers) w.terminate();
  }
});

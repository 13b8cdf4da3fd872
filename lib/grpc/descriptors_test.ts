import assert from "node:assert/strict";
import { ACCEPT_BATCH, DescriptorBudget, procDescriptors } from "./descriptors.ts";

/** A budget over a fake limit and count, with a clock the test moves. */
function fake(limit: number, open: number, reserve?: number, acceptLoops?: number) {
  const state = { limit, open, now: 0, reads: 0 };
  const budget = new DescriptorBudget({
    reserve,
    acceptLoops,
    now: () => state.now,
    source: {
      limit: () => state.limit,
      open: () => (state.reads++, state.open),
    },
  });
  return { state, budget };
}

Deno.test("DescriptorBudget keeps 10 % of the limit free, at least Deno's accept batch + 32, unless told a reserve", () => {
  assert.equal(ACCEPT_BATCH, 128);
  assert.equal(fake(4096, 0).budget.reserve, 410);
  assert.equal(fake(1024, 0).budget.reserve, 160);
  assert.equal(fake(100, 0).budget.reserve, 160);
  assert.equal(fake(1024, 0, 50).budget.budget, 974);
  assert.equal(fake(Infinity, 0).budget.budget, Infinity);
});

Deno.test("DescriptorBudget keeps an accept batch free for each listener of the process that accepts at once", () => {
  // two ADS workers, or a plaintext and a TLS port: each may accept a batch the other does not see
  assert.equal(fake(1024, 0, undefined, 2).budget.reserve, 2 * 128 + 32);
  assert.equal(fake(1024, 0, undefined, 4).budget.reserve, 4 * 128 + 32);
  assert.equal(fake(1024, 0, undefined, 1).budget.reserve, 160);
  assert.equal(fake(1024, 0, undefined, 0).budget.reserve, 160);
  assert.equal(fake(65_536, 0, undefined, 4).budget.reserve, 6554);
  assert.equal(fake(1024, 0, 50, 4).budget.reserve, 50);
});

Deno.test("DescriptorBudget.excess() counts accepts between measurements and measures again near the budget", () => {
  const { state, budget } = fake(200, 50, 40); // budget 160
  assert.equal(budget.excess(), -Infinity); // far from it: no second measurement
  assert.equal(state.reads, 1);
  for (let i = 0; i < 80; i++) budget.opened(); // estimate 130: within the reserve of 160
  state.open = 170; // accepts the runtime made and did not report yet
  state.now = 100;
  assert.equal(budget.excess(), 10);
  assert.equal(state.reads, 2);
  budget.closed();
  assert.equal(budget.excess(), 9); // within 20 ms: the estimate, not a measurement
  assert.equal(state.reads, 2);
});

Deno.test("DescriptorBudget takes the limit as reached when it cannot count (out of descriptors)", () => {
  const { state, budget } = fake(200, 50, 40);
  state.open = -1;
  assert.equal(budget.excess(), 40);
  state.limit = NaN; // the limit cannot be read either: the last one read stays
  state.now = 1000;
  assert.equal(budget.excess(), 40);
});

Deno.test("procDescriptors reads this process's limit and open descriptors", async () => {
  const limit = procDescriptors.limit();
  const open = procDescriptors.open();
  assert.ok(limit > 0, `limit ${limit}`);
  assert.ok(open > 2 && open < limit, `open ${open}`);
  // another count of the same: the directory's entries, less the descriptor reading it
  assert.equal(open, [...Deno.readDirSync("/proc/self/fd")].length - 1);
  // a process started with `ulimit -n 321` reads 321, and its own descriptors
  const script = `import { procDescriptors as p } from ${
    JSON.stringify(
      new URL("./descriptors.ts", import.meta.url).href,
    )
  }; const f = await Deno.open("/proc/self/limits"); console.log(p.limit(), p.open()); f.close();`;
  const out = await new Deno.Command("/bin/sh", {
    args: ["-c", `ulimit -n 321 && exec "$0" eval "$1"`, Deno.execPath(), script],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const [childLimit, childOpen] = new TextDecoder().decode(out.stdout).trim().split(" ").map(
    Number,
  );
  assert.equal(childLimit, 321);
  assert.ok(childOpen > 3 && childOpen < 321, `open ${childOpen}`);
});

Deno.test("DescriptorBudget: what every budget of the process opened and closed counts in each, between measurements", () => {
  const accepted = new Int32Array(new SharedArrayBuffer(4));
  const source = { limit: () => 1024, open: () => 100 };
  let now = 0;
  const [a, b] = [0, 1].map(() => new DescriptorBudget({ accepted, source, now: () => now }));
  assert.equal(a.open, 100);
  assert.equal(b.open, 100);
  for (let i = 0; i < 700; i++) (i % 2 ? a : b).opened();
  b.closed();
  // neither measured again: each sees the other's
  assert.equal(a.open, 799);
  assert.equal(b.open, 799);
  // within the reserve of its budget (864), each measures again (the fake count stays 100)
  assert.equal(a.excess(), 799 - 864);
  now += 20;
  assert.equal(b.excess(), 100 - 864);
});

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Section } from "./_ads_sim.ts";
import { churnAddress, churnSeqsIn, ChurnTracker } from "./_churn.ts";

/** `s` as a protobuf string field (tag, length byte, bytes), as an address is in an EDS response. */
const field = (s: string) => [0x0a, s.length, ...new TextEncoder().encode(s)];

Deno.test("churnSeqsIn() finds the sequence numbers of the churn addresses in a response's bytes", () => {
  const seqs = [1, 7, 255, 256, 1000, 9 * 256 + 99, 65535];
  const bytes = new Uint8Array([
    ...field("10.0.0.1"),
    ...seqs.flatMap((s) => [...field(churnAddress(s)), 0x10, 0x01]),
    ...field("10.251.7"), // no second octet
    ...field("10.251.1.2.3"),
    ...field("10.251.1234.5"),
    ...field("10.251.3.x"),
    ...field("10.251..5"),
    ...field("10.251..5.6"),
    ...field("10.251.0.1.2"),
    ...field("10.251.55."),
  ]);
  assert.deepEqual(churnSeqsIn(bytes), seqs);
  assert.deepEqual(churnSeqsIn(new Uint8Array(field("10.251.0.0"))), [0]);
  assert.deepEqual(churnSeqsIn(new Uint8Array()), []);
});

/** A section carrying the addresses of churn changes `seqs`. */
const sectionOf = (...seqs: number[]) => {
  const bytes = Buffer.from(seqs.flatMap((s) => field(churnAddress(s))));
  return new Section(bytes, seqs.length, false);
};

Deno.test("ChurnTracker: each change's first proxy, and each proxy's longest wait between updates", () => {
  const t = new ChurnTracker();
  const a = {}, b = {};
  t.post(0, 0); // seq 1, service 0
  t.post(1, 10); // seq 2, service 1
  t.received(a, sectionOf(1), 100);
  t.received(b, sectionOf(1, 2), 400);
  // seq 3 of service 0: b's later response has it (and, changes only adding, seq 1 as well)
  t.post(0, 500);
  t.received(a, sectionOf(3), 900);
  t.received(b, sectionOf(3), 2600);
  t.received(a, sectionOf(2), 1000);
  assert.deepEqual(t.first.slice(1), [100, 390, 400], "the first delivery of each change, ms");
  assert.equal(t.delivered, 6);
  assert.equal(t.percentile(100), 2100, "b had seq 3 2.1 s after it was posted");
  assert.deepEqual(t.longestQuiet(), [800, 2200], "a: 100 → 900; b: 400 → 2600");
});

Deno.test("ChurnTracker.absorb() merges another isolate's tracker of the same changes", () => {
  const main = new ChurnTracker(), other = new ChurnTracker();
  for (const t of [main, other]) {
    t.post(0, 0); // seq 1
    t.post(1, 0); // seq 2
  }
  const q = {};
  main.received({}, sectionOf(1), 300);
  other.received(q, sectionOf(1, 2), 200);
  other.received(q, sectionOf(2), 700);
  main.absorb(other.part());
  assert.equal(main.delivered, 3);
  assert.deepEqual(main.first.slice(1), [200, 200], "the earliest of both");
  assert.equal(main.percentile(100), 300, "the slowest delivery of both");
  assert.deepEqual(main.longestQuiet(), [0, 500], "each proxy of both");
  // a change no proxy of the other had keeps this tracker's figure
  const third = new ChurnTracker();
  third.post(0, 0);
  third.post(1, 0);
  main.absorb(third.part());
  assert.deepEqual(main.first.slice(1), [200, 200]);
});

Deno.test("ChurnTracker: a change seen before it is posted here is counted when it is", () => {
  // a client worker can read a push carrying a change before the bench's message about it
  const t = new ChurnTracker();
  const a = {}, b = {};
  t.post(0, 0); // seq 1, service 0
  const both = sectionOf(1, 2);
  t.received(a, both, 100); // seq 2 not posted yet
  assert.equal(t.delivered, 1);
  t.post(1, 40); // seq 2, service 1, posted at 40
  assert.deepEqual(t.first.slice(1), [100, 60], "a had seq 2 at 100");
  t.received(b, both, 120); // the same section, now that seq 2 is known
  assert.equal(t.delivered, 4);
  assert.equal(t.percentile(100), 120);
});

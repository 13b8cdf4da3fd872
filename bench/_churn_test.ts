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

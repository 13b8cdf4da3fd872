import assert from "node:assert/strict";
import { churnAddress, churnSeqsIn } from "./_churn.ts";

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

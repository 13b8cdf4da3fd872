import assert from "node:assert/strict";
import { BufferPool, frame, frameHeader, FrameType, PREFACE } from "./frames.ts";

Deno.test("frame(): a 9-byte header (24-bit length, type, flags, 31-bit stream id) and the payload", () => {
  const f = frame(FrameType.HEADERS, 0x25, 0x7f_ab_cd_ef, new Uint8Array([1, 2, 3]));
  assert.deepEqual([...f], [0, 0, 3, 1, 0x25, 0x7f, 0xab, 0xcd, 0xef, 1, 2, 3]);
  assert.deepEqual([...frame(FrameType.SETTINGS, 1, 0)], [0, 0, 0, 4, 1, 0, 0, 0, 0]);
  const out = new Uint8Array(12).fill(0xee);
  // The reserved bit of the stream id is never set; lengths use all 24 bits.
  frameHeader(out, 2, 0xabcdef, FrameType.DATA, 0, 0xffff_ffff);
  assert.deepEqual([...out], [0xee, 0xee, 0xab, 0xcd, 0xef, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0xee]);
  assert.equal(PREFACE.toString("latin1"), "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
});

Deno.test("BufferPool: power-of-two size classes from 16 KiB, buffers reused up to the limits", () => {
  const pool = new BufferPool({ limit: 64 * 1024, largest: 32 * 1024 });
  assert.equal(pool.take(0).length, 16384);
  assert.equal(pool.take(16384).length, 16384);
  assert.equal(pool.take(16385).length, 32768);
  assert.equal(pool.take(100_000).length, 131072);
  const a = pool.take(20_000);
  pool.give(a);
  assert.equal(pool.take(30_000), a, "a buffer given back is taken again for its class");
  assert.notEqual(pool.take(30_000), a, "and only once");
  const big = pool.take(40_000); // 64 KiB: above `largest`
  pool.give(big);
  assert.notEqual(pool.take(40_000), big, "buffers above `largest` are not kept");
  const bufs = [pool.take(1), pool.take(1), pool.take(1), pool.take(1), pool.take(1)];
  for (const b of bufs) pool.give(b); // 5 × 16 KiB: the fifth is over the 64 KiB limit
  const again = new Set([pool.take(1), pool.take(1), pool.take(1), pool.take(1), pool.take(1)]);
  assert.deepEqual(bufs.map((b) => again.has(b)), [true, true, true, true, false]);
  // Taken buffers no longer count: the 4 come back, filling the 64 KiB again.
  for (const b of bufs.slice(0, 4)) pool.give(b);
  const c1 = pool.take(20_000);
  pool.give(c1);
  assert.notEqual(pool.take(20_000), c1, "the pool is full: a 32 KiB buffer is not kept");
});

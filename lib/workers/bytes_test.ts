import assert from "node:assert/strict";
import { concat, readUpTo } from "./bytes.ts";

const te = new TextEncoder();

/** A body of the given chunks, and how many of them were pulled. */
function body(...parts: string[]) {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (pulled === parts.length) return c.close();
      c.enqueue(te.encode(parts[pulled++]));
    },
  }, { highWaterMark: 0 });
  return { reader: stream.getReader(), pulled: () => pulled };
}

const text = (b: Uint8Array | null) => b === null ? null : new TextDecoder().decode(b);

Deno.test("readUpTo() reads a body shorter than the limit to its end", async () => {
  const { reader } = body("ab", "cd");
  const r = await readUpTo(reader, 10);
  assert.equal(r.done, true);
  assert.equal(r.size, 4);
  assert.equal(text(concat(r.chunks, r.size)), "abcd");
});

Deno.test("readUpTo() stops once the limit is reached and leaves the rest unread", async () => {
  const b = body("abc", "def", "ghi", "jkl");
  const r = await readUpTo(b.reader, 4);
  assert.equal(r.done, false);
  assert.equal(r.size, 6, "it reads whole chunks: the one that crossed the limit is kept");
  assert.equal(b.pulled(), 2, "nothing read past the chunk that reached the limit");
  const rest = await readUpTo(b.reader, 100);
  assert.equal(text(concat(rest.chunks, rest.size)), "ghijkl");
  // exactly at the limit: not known to have ended
  const exact = await readUpTo(body("ab", "cd").reader, 4);
  assert.deepEqual([exact.size, exact.done], [4, false]);
});

Deno.test("readUpTo() of an empty body, and concat() of nothing, one chunk and several", async () => {
  const r = await readUpTo(body().reader, 10);
  assert.deepEqual([r.size, r.done, r.chunks.length], [0, true, 0]);
  assert.equal(concat([], 0), null);
  const one = te.encode("one");
  assert.equal(concat([one], 3), one, "a single chunk is not copied");
  assert.equal(text(concat([te.encode("x"), te.encode("yz"), te.encode("")], 3)), "xyz");
});

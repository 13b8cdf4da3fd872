import assert from "node:assert/strict";
import { MemoryStream } from "./memory.ts";

Deno.test("MemoryStream: records sends, holds and releases them, ends once, and names what a wait was for", async () => {
  const s = new MemoryStream<string>();
  assert.equal(s.peer, "memory:1");
  assert.deepEqual(s.peerIdentities, []);
  await s.send("a");
  s.hold();
  let done = false;
  const held = s.send("b").then(() => done = true);
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(done, false, "a held send stays unresolved");
  s.release();
  await held;
  assert.deepEqual(s.sent, ["a", "b"]);
  assert.equal(s.unread, 2);
  assert.equal(await s.next(), "a");
  assert.equal(s.unread, 1);
  await assert.rejects(
    new MemoryStream<string>().next(20),
    /^Error: Timed out after 20 ms waiting for a response$/,
  );
  await assert.rejects(
    new MemoryStream<string>().waitEnded(20),
    /^Error: Timed out after 20 ms waiting for the stream to end$/,
  );
  s.end();
  s.end({ code: 14, message: "later" });
  assert.deepEqual(s.ended, { code: 0, message: "OK" }, "the first end counts");
  assert.deepEqual(await s.waitEnded(), { code: 0, message: "OK" });
  assert.equal(await s.next(), "b", "responses sent before the end are still read");
  await assert.rejects(s.next(), /^Error: Stream ended \(OK\) while waiting for a response$/);
  await assert.rejects(s.send("c"), /^Error: stream ended$/);
  const named = new MemoryStream<string>("ipv4:10.0.0.1:5000", ["spiffe://x"]);
  assert.deepEqual([named.peer, named.peerIdentities], ["ipv4:10.0.0.1:5000", ["spiffe://x"]]);
  // A wait that timed out is forgotten: a later response wakes only the waits still pending.
  const w = new MemoryStream<string>();
  await assert.rejects(w.next(10));
  const next = w.next();
  await w.send("x");
  assert.equal(await next, "x");
});

import assert from "node:assert/strict";
import { Channel, type MessageEnd, RemoteError } from "./channel.ts";

/** Two channels wired to each other through recording ends (delivery in a later task). */
function linked() {
  const posted: { from: "a" | "b"; message: unknown }[] = [];
  const end = (from: "a" | "b", to: () => Channel): MessageEnd => ({
    postMessage(message) {
      posted.push({ from, message });
      setTimeout(() => to().receive(structuredClone(message)), 0);
    },
  });
  const a: Channel = new Channel(end("a", () => b));
  const b: Channel = new Channel(end("b", () => a));
  return { a, b, posted };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

Deno.test("Channel: a request gets its handler's value, or a RemoteError with its message", async () => {
  const { a, b } = linked();
  b.on("add", (x) => (x as number[]).reduce((s, n) => s + n, 0));
  b.on("later", async (x) => {
    await tick();
    return `later ${x}`;
  });
  b.on("fail", () => {
    throw new Error("no such proxy");
  });
  b.on("throws a string", () => {
    throw "plain";
  });
  b.on("throws null", () => {
    throw null;
  });
  // Requests in flight at once each get their own reply.
  const [sum, late, sum2] = await Promise.all([
    a.request("add", [1, 2, 3]),
    a.request("later", "x"),
    a.request("add", [10]),
  ]);
  assert.deepEqual([sum, late, sum2], [6, "later x", 10]);
  const failed = await a.request("fail").catch((e) => e);
  assert.ok(failed instanceof RemoteError);
  assert.equal(failed.name, "RemoteError");
  assert.equal(failed.message, "no such proxy");
  await assert.rejects(a.request("throws a string"), { name: "RemoteError", message: "plain" });
  await assert.rejects(a.request("throws null"), { name: "RemoteError", message: "null" });
  const missing = await a.request("nobody").catch((e) => e);
  assert.ok(missing instanceof RemoteError);
  assert.equal(missing.message, 'no handler for "nobody"');
});

Deno.test("Channel: a note reaches its handler and is never answered; a note without a handler or whose handler throws is dropped", async () => {
  const { a, b, posted } = linked();
  const got: unknown[] = [];
  b.on("state", (x) => {
    got.push(x);
    if (x === "bad") throw new Error("ignored");
  });
  a.notify("state", { streams: 3 });
  a.notify("state", "bad");
  a.notify("nobody", 1);
  await tick();
  assert.deepEqual(got, [{ streams: 3 }, "bad"]);
  assert.deepEqual(posted.map((p) => p.from), ["a", "a", "a"], "no reply to a note");
  // The channel still works after a note whose handler threw.
  b.on("ping", () => "pong");
  assert.equal(await a.request("ping"), "pong");
});

Deno.test("Channel.receive() takes only channel messages; a reply to no pending request is ignored", () => {
  const posted: unknown[] = [];
  const c = new Channel({ postMessage: (m) => posted.push(m) });
  for (const other of [null, undefined, 5, "res", {}, { ch: 1 }, { id: 1, ok: true }]) {
    assert.equal(c.receive(other), false, JSON.stringify(other));
  }
  assert.equal(c.receive({ ch: "res", id: 99, ok: true, value: 1 }), true);
  const pending = c.request("x");
  assert.equal(c.receive({ ch: "res", id: 1, ok: true, value: 5 }), true);
  assert.equal(c.receive({ ch: "note", method: "x", arg: 1 }), true);
  assert.equal(c.receive({ ch: "req", id: 1, method: "x", arg: 1 }), true);
  assert.equal(posted.length, 2, "the request sent, and the one without a handler answered");
  return pending.then((v) => assert.equal(v, 5));
});

Deno.test("Channel.close() rejects requests in flight and later ones, drops what arrives, answers nothing, sends no note", async () => {
  const posted: { ch: string }[] = [];
  const c = new Channel({ postMessage: (m) => posted.push(m as { ch: string }) });
  let called = 0;
  c.on("work", async () => {
    called++;
    await tick();
    return "done";
  });
  const inFlight = c.request("anything");
  // A request from the other side, being handled when the channel closes: its reply is not sent.
  assert.equal(c.receive({ ch: "req", id: 7, method: "work", arg: null }), true);
  await Promise.resolve();
  c.close("worker 1 died");
  await assert.rejects(inFlight, { message: "worker 1 died" });
  await assert.rejects(c.request("more"), { message: "worker 1 died" });
  assert.equal(c.receive({ ch: "req", id: 8, method: "work", arg: null }), true);
  assert.equal(c.receive({ ch: "note", method: "work", arg: null }), true);
  c.notify("state", 1);
  c.close("again"); // the first reason stays
  await assert.rejects(c.request("more"), { message: "worker 1 died" });
  await tick();
  assert.equal(called, 1, "nothing received after close is handled");
  assert.deepEqual(posted.map((p) => p.ch), ["req"], "only the request sent before close");
});

Deno.test("Channel.request() transfers what it is given (the sender's buffer is detached)", async () => {
  const { port1, port2 } = new MessageChannel();
  const a = new Channel(port1), b = new Channel(port2);
  port1.onmessage = (e) => void a.receive(e.data);
  port2.onmessage = (e) => void b.receive(e.data);
  b.on("size", (x) => (x as ArrayBuffer).byteLength);
  try {
    const buf = new ArrayBuffer(1024);
    assert.equal(await a.request("size", buf, [buf]), 1024);
    assert.equal(buf.byteLength, 0, "transferred, not copied");
    const kept = new ArrayBuffer(16);
    assert.equal(await a.request("size", kept), 16);
    assert.equal(kept.byteLength, 16, "copied when not transferred");
  } finally {
    port1.close();
    port2.close();
  }
});

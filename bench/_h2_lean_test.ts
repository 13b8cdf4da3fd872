import assert from "node:assert/strict";
import { LeanSession } from "./_h2_lean.ts";

/** One frame the fake server received. */
interface Frame {
  type: number;
  flags: number;
  id: number;
  payload: Uint8Array;
}

const DATA = 0, SETTINGS = 4, WINDOW_UPDATE = 8;

/** A frame's bytes. */
function frame(type: number, flags: number, id: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(9 + payload.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, payload.length << 8 | type);
  dv.setUint8(4, flags);
  dv.setUint32(5, id);
  out.set(payload, 9);
  return out;
}

const u32 = (n: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
};

/** SETTINGS INITIAL_WINDOW_SIZE = `n`. */
const initialWindow = (n: number) => {
  const p = new Uint8Array(6);
  new DataView(p.buffer).setUint16(0, 4);
  new DataView(p.buffer).setUint32(2, n);
  return frame(SETTINGS, 0, 0, p);
};

/**
 * A fake HTTP/2 server that keeps the default 65,535-byte connection window and gives each stream
 * `initial` bytes: it records every frame and sends what the test tells it.
 */
function fakeServer(initial: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const frames: Frame[] = [];
  const accepted = listener.accept();
  const done = (async () => {
    const conn = await accepted;
    await conn.write(initialWindow(initial));
    let buf = new Uint8Array(0);
    const chunk = new Uint8Array(64 * 1024);
    let preface = false;
    for (;;) {
      const n = await conn.read(chunk).catch(() => null);
      if (n === null) return;
      const next = new Uint8Array(buf.length + n);
      next.set(buf);
      next.set(chunk.subarray(0, n), buf.length);
      buf = next;
      if (!preface) {
        if (buf.length < 24) continue;
        buf = buf.subarray(24);
        preface = true;
      }
      while (buf.length >= 9) {
        const dv = new DataView(buf.buffer, buf.byteOffset);
        const len = dv.getUint32(0) >>> 8;
        if (buf.length < 9 + len) break;
        frames.push({
          type: buf[3],
          flags: buf[4],
          id: dv.getUint32(5) & 0x7fffffff,
          payload: buf.slice(9, 9 + len),
        });
        buf = buf.subarray(9 + len);
      }
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    frames,
    async send(bytes: Uint8Array) {
      await (await accepted).write(bytes);
    },
    /** DATA bytes received on stream `id`, in order. */
    data(id: number): Uint8Array {
      const parts = frames.filter((f) => f.type === DATA && f.id === id).map((f) => f.payload);
      const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) out.set(p, at), at += p.length;
      return out;
    },
    async close() {
      listener.close();
      (await accepted).close();
      await done;
    },
  };
}

/** Waits until `f()` holds, then a little longer for anything more to arrive. */
async function settle(f: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(f(), "timed out");
  await new Promise((r) => setTimeout(r, 150));
}

Deno.test("the bench's lean HTTP/2 client sends what the stream and connection windows allow, in frames the server accepts", async () => {
  const server = fakeServer(1000);
  const session = await LeanSession.connect(server.port);
  try {
    const payload = new Uint8Array(100_000).map((_, i) => i * 7);
    // the server's SETTINGS is acknowledged (a stream opened before it could use 65,535 bytes)
    await settle(() => server.frames.some((f) => f.type === SETTINGS && f.flags === 1));
    const s1 = session.request("/x", { message() {}, end() {} });
    // two chunks: the queue sends across them
    s1.write([payload.subarray(0, 30_000), payload.subarray(30_000)]);
    // the stream window (1000) holds the rest back
    await settle(() => server.data(1).length >= 1000);
    assert.equal(server.data(1).length, 1000);
    // more stream window: now the connection's 65,535 bytes bound it
    await server.send(frame(WINDOW_UPDATE, 0, 1, u32(1_000_000)));
    await settle(() => server.data(1).length >= 65_535);
    assert.equal(server.data(1).length, 65_535);
    // more connection window: the rest, in frames of at most 16,384 bytes, in order
    await server.send(frame(WINDOW_UPDATE, 0, 0, u32(50_000)));
    await settle(() => server.data(1).length >= 100_000);
    assert.deepEqual(server.data(1), payload);
    const sizes = server.frames.filter((f) => f.type === DATA).map((f) => f.payload.length);
    assert.ok(Math.max(...sizes) <= 16_384, `DATA frames of ${Math.max(...sizes)} bytes`);
    // a new stream starts from the initial window; raising it in SETTINGS raises the stream's
    const s3 = session.request("/y", { message() {}, end() {} });
    s3.write(payload.subarray(0, 5000));
    await settle(() => server.data(3).length >= 1000);
    assert.equal(server.data(3).length, 1000);
    await server.send(initialWindow(3000));
    await settle(() => server.data(3).length >= 3000);
    assert.equal(server.data(3).length, 3000);
    assert.deepEqual(server.data(3), payload.subarray(0, 3000));
    // two streams in one write: together they take what is left of the connection window, no more
    await server.send(initialWindow(1_000_000)); // stream 3 sends its last 2,000 bytes too
    await settle(() => server.data(3).length >= 5000);
    const left = 65_535 + 50_000 - 100_000 - 5000;
    const s5 = session.request("/z", { message() {}, end() {} });
    const s7 = session.request("/z", { message() {}, end() {} });
    s5.write(payload.subarray(0, 20_000));
    s7.write(payload.subarray(0, 20_000));
    await settle(() => server.data(5).length + server.data(7).length >= left);
    assert.equal(server.data(5).length + server.data(7).length, left);
  } finally {
    session.close();
    await server.close();
  }
});

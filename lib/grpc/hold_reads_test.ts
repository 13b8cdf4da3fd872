/**
 * `GrpcCall.holdReads()`: a connection whose reads are held handles nothing the client sends
 * until every hold is released, except when a send waits for the client's window (only reading
 * brings its WINDOW_UPDATE). An ADS push uses it so that sending comes before reading
 * the ACKs of the streams already sent.
 */

import assert from "node:assert/strict";
import { Flag, frame, FrameType } from "./h2/frames.ts";
import { type GrpcCall, GrpcStatus, listenGrpc } from "./mod.ts";
import { grpcFrame, grpcRequest, RawClient } from "./testing.ts";

const { DATA, WINDOW_UPDATE } = FrameType;
const INITIAL_WINDOW_SIZE = 4;

/**
 * A server whose one method records each call and the text of each request message; reading
 * through `node:net`, then through `Deno.Conn` into reused buffers (`nativeReads`).
 */
async function withServer(
  fn: (port: number, calls: GrpcCall[], got: string[]) => Promise<void>,
): Promise<void> {
  await serve(false, fn);
  await serve(true, fn);
}

async function serve(
  nativeReads: boolean,
  fn: (port: number, calls: GrpcCall[], got: string[]) => Promise<void>,
): Promise<void> {
  const calls: GrpcCall[] = [], got: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    nativeReads,
    handlers: new Map([["/t.S/Chat", (c: GrpcCall) => {
      calls.push(c);
      c.onMessage = (m) => got.push(new TextDecoder().decode(m));
    }]]),
  });
  try {
    await fn(listener.port, calls, got);
  } finally {
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 500);
  }
}

const te = new TextEncoder();
const message = (text: string) => frame(DATA, 0, 1, grpcFrame(te.encode(text)));
/** Waits long enough for a message on a loopback connection to be handled, were it read. */
const settle = () => new Promise((r) => setTimeout(r, 150));

Deno.test("holdReads(): nothing the client sends is handled until the last hold is released", async () => {
  await withServer(async (port, calls, got) => {
    const c = await RawClient.connect(port);
    try {
      await c.write(c.headersFrame(1, grpcRequest("/t.S/Chat")), message("one"));
      assert.ok(await c.until(() => got.length === 1), "the first message is handled");
      const call = calls[0];
      call.holdReads();
      call.holdReads();
      await c.write(message("two"));
      await settle();
      assert.deepEqual(got, ["one"], "held: not read");
      call.releaseReads();
      await settle();
      assert.deepEqual(got, ["one"], "one hold of two released: still held");
      call.releaseReads();
      assert.ok(await c.until(() => got.length === 2), "the last release reads it");
      assert.deepEqual(got, ["one", "two"]);
      // held, the socket is paused: what the client sends stays in the kernel, not in our memory
      call.holdReads();
      const before = call.socket.bytesRead;
      const big = new Uint8Array(256 * 1024);
      // 3 MiB, in DATA frames of 16 kB: within the server's 4 MiB stream window
      const msg = grpcFrame(big), frames: Uint8Array[] = [];
      for (let at = 0; at < msg.length; at += 16384) {
        frames.push(frame(DATA, 0, 1, msg.subarray(at, at + 16384)));
      }
      for (let i = 0; i < 12; i++) void c.write(...frames);
      await settle();
      const read = call.socket.bytesRead - before;
      assert.ok(read < 1024 * 1024, `read ${read} of 3 MiB sent while held`);
      call.releaseReads();
      assert.ok(await c.until(() => got.length === 14), `${got.length} messages`);
      assert.ok(call.socket.bytesRead - before >= 12 * msg.length, "read once released");
      got.splice(2);
      call.releaseReads(); // one too many: ignored, and a later hold holds again
      call.holdReads();
      await c.write(message("three"));
      await settle();
      assert.deepEqual(got, ["one", "two"]);
      call.releaseReads();
      assert.ok(await c.until(() => got.length === 3));
    } finally {
      await c.close();
    }
  });
});

Deno.test("holdReads(): a send that waits for the client's window reads on, so its WINDOW_UPDATE comes through", async () => {
  await withServer(async (port, calls, got) => {
    // a 100-byte stream window: a 1000-byte response needs the client's WINDOW_UPDATEs
    const c = await RawClient.connect(port, { settings: [[INITIAL_WINDOW_SIZE, 100]] });
    try {
      await c.write(c.headersFrame(1, grpcRequest("/t.S/Chat")), message("one"));
      assert.ok(await c.until(() => got.length === 1));
      const call = calls[0];
      call.holdReads();
      let sent = false;
      call.send([new Uint8Array(1000)]).then(() => sent = true);
      assert.ok(await c.until(() => c.dataOn(1) >= 100), "the window's worth is sent");
      const increment = new Uint8Array([0, 0, 0x10, 0]); // 4096
      await c.write(frame(WINDOW_UPDATE, 0, 1, increment), message("two"));
      assert.ok(await c.until(() => c.dataOn(1) >= 1005), `sent ${c.dataOn(1)} of 1005 bytes`);
      assert.ok(await c.until(() => sent), "the send completed while held");
      assert.ok(await c.until(() => got.length === 2), "and the connection reads on");
      call.releaseReads();
      // a hold taken while a send waits for the window does not stop reading either
      call.send([new Uint8Array(5000)]).catch(() => {});
      assert.ok(await c.until(() => c.dataOn(1) >= 4096));
      call.holdReads();
      await c.write(frame(WINDOW_UPDATE, 0, 1, increment), message("three"));
      assert.ok(await c.until(() => got.length === 3), "read: a send waited for the window");
      call.releaseReads();
      await c.write(frame(DATA, Flag.END_STREAM, 1));
    } finally {
      await c.close();
    }
  });
});

Deno.test("holdReads(): no hold while a send waits for the connection's window", async () => {
  await withServer(async (port, calls, got) => {
    // a 1 MiB stream window, the default 65535-byte connection window: a 100 kB response waits
    // for the client's connection WINDOW_UPDATE
    const c = await RawClient.connect(port, { settings: [[INITIAL_WINDOW_SIZE, 1 << 20]] });
    try {
      await c.write(c.headersFrame(1, grpcRequest("/t.S/Chat")), message("one"));
      assert.ok(await c.until(() => got.length === 1));
      const call = calls[0];
      let sent = false;
      call.send([new Uint8Array(100_000)]).then(() => sent = true);
      assert.ok(await c.until(() => c.dataOn(1) >= 65535), "the connection window's worth");
      call.holdReads();
      const increment = new Uint8Array([0, 1, 0, 0]); // 65536
      await c.write(frame(WINDOW_UPDATE, 0, 0, increment), message("two"));
      assert.ok(await c.until(() => sent), `sent ${c.dataOn(1)} of 100005 bytes`);
      assert.ok(await c.until(() => got.length === 2), "read: the send waited for the window");
      call.releaseReads();
      await c.write(frame(DATA, Flag.END_STREAM, 1));
    } finally {
      await c.close();
    }
  });
});

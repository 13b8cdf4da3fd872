/**
 * The outbound backlog limit (`maxOutboundBytes`, `sendTimeoutMs`) as a client sees it: a client
 * that stops reading holds the server at the limit (bytes written but not taken stay within it),
 * then gets every byte in order once it reads again; one that never reads again is disconnected
 * after the send timeout.
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { frame, FrameType } from "./h2/frames.ts";
import { type CallHandler, type Connection, GrpcStatus, listenGrpc } from "./mod.ts";
import { eventually, grpcFrame, grpcRequest, RawClient } from "./testing.ts";

const { DATA, WINDOW_UPDATE } = FrameType;
const BULK = "/t.S/Bulk";
const NOTE = "/t.S/Note";
/** Calls of NOTE the server has read. */
let noted = 0;
const LIMIT = 256 * 1024;
const MESSAGE = 64 * 1024;
const COUNT = 512; // 32 MiB: more than the kernel's socket buffers hold
/** The limit counts DATA payloads against the room; their 9-octet frame headers may go over it. */
const MOST = LIMIT + 9 * (LIMIT / 16384 + 1);

/** Sends COUNT messages when asked, then ends OK. */
const bulk: CallHandler = (c) => {
  c.onMessage = () => {
    for (let i = 0; i < COUNT; i++) c.send([Buffer.alloc(MESSAGE, i & 0xff)]).catch(() => {});
    c.end(GrpcStatus.OK);
  };
};

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** The client stops reading, then calls BULK on stream 1 (whose answer is far over LIMIT). */
async function callBulkUnread(c: RawClient): Promise<void> {
  c.socket.pause();
  await c.write(
    c.headersFrame(1, grpcRequest(BULK)),
    frame(DATA, 0, 1, grpcFrame(Buffer.from("go"))),
  );
}

async function start(sendTimeoutMs: number, errors?: string[]) {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map<string, CallHandler>([[BULK, bulk], [NOTE, () => void noted++]]),
    limits: { maxOutboundBytes: LIMIT, sendTimeoutMs, keepaliveIntervalMs: 0 },
    onError: errors && ((m) => errors.push(m)),
  });
  // Flow control never limits: the whole window for the stream and the connection.
  const c = await RawClient.connect(listener.port, { settings: [[4, 0x7fffffff]] });
  await c.write(frame(WINDOW_UPDATE, 0, 0, u32(0x7fffffff - 65535)));
  assert.ok(await c.roundTrip());
  const conn = (): Connection => [...listener.connections][0];
  return { listener, c, conn };
}

Deno.test("a client that stops reading holds the server at maxOutboundBytes, then gets it all", async () => {
  const errors: string[] = [];
  const { listener, c, conn } = await start(60_000, errors);
  try {
    await callBulkUnread(c);
    // The backlog reaches the limit and stays within it while the client does not read.
    assert.ok(await eventually(() => conn().outstanding > 0), "nothing written");
    let most = 0;
    for (let i = 0; i < 50; i++) {
      most = Math.max(most, conn().outstanding);
      assert.ok(conn().outstanding <= MOST, `${conn().outstanding} bytes outstanding`);
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.ok(most > LIMIT / 2, `backlog only reached ${most}`);
    // While backlogged the server reads nothing more: a new call waits in the socket.
    noted = 0;
    await c.write(c.headersFrame(3, grpcRequest(NOTE)));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(noted, 0);
    assert.ok(!c.headers.get(1) || c.headers.get(1)!.length < 2, "trailers came without reading");
    c.socket.resume();
    assert.ok(await c.until(() => (c.headers.get(1)?.length ?? 0) >= 2, 30_000), "no trailers");
    assert.equal(c.dataOn(1), COUNT * (MESSAGE + 5));
    assert.deepEqual(c.headers.get(1)![1], [["grpc-status", "0"]]);
    assert.equal(conn().outstanding, 0);
    assert.ok(await eventually(() => noted === 1), "the waiting call was never read");
    assert.equal(c.goaway, undefined);
    assert.deepEqual(errors, []);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("a client that never reads again is disconnected after sendTimeoutMs", async () => {
  const errors: string[] = [];
  const { listener, c } = await start(300, errors);
  try {
    await callBulkUnread(c);
    assert.ok(await eventually(() => listener.connections.size === 0), "connection still open");
    assert.equal(errors.length, 1, errors.join("\n"));
    assert.match(
      errors[0],
      /^HTTP\/2 connection from ipv4:127\.0\.0\.1:\d+ closed: \d+ bytes not taken by the peer within 300 ms$/,
    );
    const n = Number(/: (\d+) bytes/.exec(errors[0])![1]);
    assert.ok(n >= LIMIT && n <= MOST, `${n} bytes outstanding at the timeout`);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("a client that reads again before sendTimeoutMs keeps its connection: the timeout is cleared once the backlog drains", async () => {
  const errors: string[] = [];
  // A timeout long enough that a busy machine's scheduling never stalls the reads that long.
  const { listener, c, conn } = await start(1000, errors);
  try {
    await callBulkUnread(c);
    assert.ok(await eventually(() => conn().outstanding > LIMIT / 2), "never backlogged");
    await new Promise((r) => setTimeout(r, 100));
    c.socket.resume();
    assert.ok(await c.until(() => (c.headers.get(1)?.length ?? 0) >= 2, 30_000), "no trailers");
    assert.equal(c.dataOn(1), COUNT * (MESSAGE + 5));
    // Well past the send timeout of the first backlog: still connected, and serving.
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(listener.connections.size, 1);
    noted = 0;
    await c.write(c.headersFrame(3, grpcRequest(NOTE)));
    assert.ok(await eventually(() => noted === 1), "the connection no longer serves");
    assert.equal(c.goaway, undefined);
    assert.deepEqual(errors, []);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("a client that sends SETTINGS without reading the acks meets maxOutboundControlFrames", async () => {
  const errors: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[BULK, bulk]]),
    limits: {
      maxOutboundControlFrames: 20,
      maxOutboundBytes: 64 * 1024 * 1024, // never reached: the server keeps reading
      sendTimeoutMs: 60_000,
      keepaliveIntervalMs: 0,
    },
    onError: (m) => errors.push(m),
  });
  const c = await RawClient.connect(listener.port, { settings: [[4, 0x7fffffff]] });
  try {
    await c.write(frame(WINDOW_UPDATE, 0, 0, u32(0x7fffffff - 65535)));
    assert.ok(await c.roundTrip());
    // 32 MiB of response not read: the socket's buffers fill, so nothing more is taken.
    await callBulkUnread(c);
    const conn = [...listener.connections][0];
    let last = -1;
    const settled = () => {
      const now = conn.outstanding;
      const still = now === last && now > 0;
      last = now;
      return still;
    };
    assert.ok(await eventually(settled), "the backlog never settled");
    // 19 acks fit within the budget of control frames not yet written; the 21st is refused.
    for (let i = 0; i < 19; i++) await c.send(FrameType.SETTINGS, 0, 0, Buffer.alloc(0));
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(errors, []);
    for (let i = 0; i < 5; i++) await c.send(FrameType.SETTINGS, 0, 0, Buffer.alloc(0));
    assert.ok(await eventually(() => errors.length > 0), "no connection error");
    assert.match(errors[0], /failed: more than 20 control frames queued \(peer not reading\)$/);
    c.socket.resume();
    assert.ok(await c.until(() => c.goaway !== undefined, 30_000), "no GOAWAY");
    assert.deepEqual([c.goaway!.name, c.goaway!.debug], [
      "ENHANCE_YOUR_CALM",
      "more than 20 control frames queued (peer not reading)",
    ]);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("the send timeout closes the connection without an onError callback too", async () => {
  const { listener, c } = await start(300);
  try {
    await callBulkUnread(c);
    assert.ok(await eventually(() => listener.connections.size === 0), "connection still open");
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("a client that reads in steps: the backlog stays within maxOutboundBytes after every drain", async () => {
  const { listener, c, conn } = await start(60_000, []);
  try {
    await callBulkUnread(c);
    const settled = async () => {
      let last = -1;
      for (let still = 0; still < 3;) {
        const now = conn().outstanding;
        still = now === last ? still + 1 : 0;
        last = now;
        assert.ok(now <= MOST, `${now} bytes outstanding`);
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    assert.ok(await eventually(() => conn().outstanding > 0), "nothing written");
    const total = COUNT * (MESSAGE + 5);
    while (c.dataOn(1) < total) {
      await settled();
      // Read about 2 MiB more, then stop reading again.
      const target = Math.min(total, c.dataBytes + 2 * 1024 * 1024);
      c.socket.resume();
      assert.ok(await c.until(() => c.dataBytes >= target || c.isClosed, 30_000), "stalled");
      c.socket.pause();
    }
    c.socket.resume();
    assert.ok(await c.until(() => (c.headers.get(1)?.length ?? 0) >= 2, 30_000), "no trailers");
    assert.equal(c.headers.get(1)!.length, 2);
    assert.equal(c.dataOn(1), total);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("close() ends a connection whose peer does not read at the grace period", async () => {
  const { listener, c, conn } = await start(60_000);
  try {
    await callBulkUnread(c);
    assert.ok(await eventually(() => conn().outstanding > 0), "nothing written");
    // The GOAWAY cannot be written while the peer does not read: the socket is destroyed at 200 ms.
    await listener.close(GrpcStatus.UNAVAILABLE, "going down", 200);
    assert.equal(listener.connections.size, 0);
  } finally {
    await c.close();
  }
});

/**
 * Protocol errors of misbehaving clients on DATA frames (RFC 9113 §5.1, §6.1): frames written by
 * hand with {@link RawClient}; each case checks the error code and the GOAWAY debug text, and that
 * the well-formed neighbour of each case (a closed stream, padding that just fits) is accepted.
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Flag, frame, FrameType, PREFACE } from "./h2/frames.ts";
import { type CallHandler, GrpcStatus, listenGrpc } from "./mod.ts";
import { grpcFrame, grpcRequest, RawClient } from "./testing.ts";

const { DATA, PING } = FrameType;
const { END_STREAM, PADDED, ACK } = Flag;
const PROTOCOL_ERROR = 1, STREAM_CLOSED = 5;
const ECHO = "/t.S/Echo", HOLD = "/t.S/Hold";

/** Answers each message with the same bytes, and ends when the client half-closes. */
const echo: CallHandler = (c) => {
  c.onMessage = (m) => void c.send([Buffer.from(m)]).catch(() => {});
  c.onEnd = () => c.end(GrpcStatus.OK);
};

/** Never answers: the stream stays open after the client's END_STREAM. Records cancellations. */
const cancelled: string[] = [];
const hold: CallHandler = (c) => {
  c.onMessage = () => {};
  c.onCancel = (why) => cancelled.push(why);
};

async function withClient(fn: (c: RawClient) => Promise<void>): Promise<void> {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[ECHO, echo], [HOLD, hold]]),
  });
  const c = await RawClient.connect(listener.port);
  try {
    await fn(c);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
}

const msg = grpcFrame(Buffer.from("hello"));

/** A PADDED DATA frame: pad length byte, `data`, `pad` zero bytes. */
function padded(id: number, data: Uint8Array, pad: number, flags = 0): Buffer {
  const p = Buffer.alloc(1 + data.length + pad);
  p[0] = pad;
  p.set(data, 1);
  return frame(DATA, PADDED | flags, id, p);
}

/** The connection still works: a PING is acknowledged. */
async function alive(c: RawClient): Promise<void> {
  await c.write(frame(PING, 0, 0, Buffer.from("stillup!")));
  assert.ok(
    await c.until(() =>
      c.frames.some((f) => f.type === PING && f.flags & ACK && f.payload.toString() === "stillup!")
    ),
    "PING not acknowledged",
  );
  assert.equal(c.goaway, undefined);
}

/** The status of a call's trailers, once they came. */
async function statusOf(c: RawClient, id: number): Promise<string | undefined> {
  assert.ok(await c.until(() => (c.headers.get(id)?.length ?? 0) >= 2), `no trailers on ${id}`);
  return c.headers.get(id)!.at(-1)!.find(([k]) => k === "grpc-status")?.[1];
}

const CONNECTION_ERRORS: { name: string; send: (c: RawClient) => Uint8Array[]; debug: string }[] = [
  {
    name: "DATA on stream 0",
    send: () => [frame(DATA, 0, 0, msg)],
    debug: "DATA on stream 0",
  },
  {
    name: "DATA on a stream never opened",
    send: () => [frame(DATA, 0, 5, msg)],
    debug: "DATA on idle stream 5",
  },
  {
    name: "DATA on a stream above the last one opened",
    send: (c) => [c.headersFrame(1, grpcRequest(HOLD)), frame(DATA, 0, 3, msg)],
    debug: "DATA on idle stream 3",
  },
  {
    name: "PADDED DATA whose pad length is the whole payload",
    send: (
      c,
    ) => [c.headersFrame(1, grpcRequest(HOLD)), frame(DATA, PADDED, 1, Buffer.from([3, 0, 0]))],
    debug: "bad DATA padding",
  },
  {
    name: "PADDED DATA whose pad length exceeds the payload",
    send: (
      c,
    ) => [c.headersFrame(1, grpcRequest(HOLD)), frame(DATA, PADDED, 1, Buffer.from([200, 1]))],
    debug: "bad DATA padding",
  },
  {
    name: "PADDED DATA with an empty payload",
    send: (c) => [c.headersFrame(1, grpcRequest(HOLD)), frame(DATA, PADDED | END_STREAM, 1)],
    debug: "bad DATA padding",
  },
];

for (const k of CONNECTION_ERRORS) {
  Deno.test(`DATA protocol errors: ${k.name} is a connection error (GOAWAY PROTOCOL_ERROR)`, async () => {
    await withClient(async (c) => {
      await c.write(...k.send(c));
      assert.ok(await c.until(() => !!c.goaway, 5000), "no GOAWAY");
      assert.deepEqual([c.goaway!.name, c.goaway!.debug], ["PROTOCOL_ERROR", k.debug]);
      assert.equal(c.goaway!.code, PROTOCOL_ERROR);
      assert.ok(await c.until(() => c.isClosed, 5000), "connection left open");
    });
  });
}

Deno.test("DATA protocol errors: DATA after END_STREAM resets only that stream (STREAM_CLOSED)", async () => {
  cancelled.length = 0;
  await withClient(async (c) => {
    await c.write(
      c.headersFrame(1, grpcRequest(HOLD)),
      frame(DATA, END_STREAM, 1, msg),
      frame(DATA, 0, 1, msg),
    );
    assert.ok(await c.until(() => c.resets().has(1), 5000), "no RST_STREAM");
    assert.equal(c.resets().get(1), STREAM_CLOSED);
    assert.deepEqual(cancelled, ["DATA after END_STREAM"]);
    await alive(c);
    // The connection still serves calls.
    await c.write(c.headersFrame(3, grpcRequest(ECHO)), frame(DATA, END_STREAM, 3, msg));
    assert.equal(await statusOf(c, 3), "0");
  });
});

Deno.test("DATA protocol errors: DATA on a stream already closed is dropped, the connection goes on", async () => {
  await withClient(async (c) => {
    await c.write(c.headersFrame(1, grpcRequest(ECHO)), frame(DATA, END_STREAM, 1, msg));
    assert.equal(await statusOf(c, 1), "0");
    // Stream 1 is closed on both sides: late DATA for it is neither an error nor delivered.
    await c.write(frame(DATA, 0, 1, msg), frame(DATA, END_STREAM, 1, msg));
    await alive(c);
    assert.deepEqual([...c.resets()].filter(([, code]) => code !== 0), []);
    await c.write(c.headersFrame(3, grpcRequest(ECHO)), frame(DATA, END_STREAM, 3, msg));
    assert.equal(await statusOf(c, 3), "0");
    assert.equal(c.dataBytes, 2 * msg.length, "only the two calls' answers");
  });
});

Deno.test("DATA protocol errors: padding that just fits is accepted and not delivered", async () => {
  await withClient(async (c) => {
    await c.write(
      c.headersFrame(1, grpcRequest(ECHO)),
      padded(1, msg.subarray(0, 3), 0),
      padded(1, new Uint8Array(), 7), // pad length = payload length - 1: no data at all
      padded(1, msg.subarray(3), 2, END_STREAM),
    );
    assert.equal(await statusOf(c, 1), "0");
    assert.equal(c.dataBytes, msg.length, "the message echoed once, without padding");
    await alive(c);
  });
});

Deno.test("DATA protocol errors: DATA that disagrees with content-length resets the stream and says why", async () => {
  cancelled.length = 0;
  await withClient(async (c) => {
    const withLength = (n: number) => grpcRequest(HOLD, [["content-length", String(n)]]);
    await c.write(
      // content-length 0, then a message: more DATA than announced (§8.1.1).
      c.headersFrame(1, withLength(0)),
      frame(DATA, 0, 1, msg),
      // content-length one byte more than the DATA sent before END_STREAM.
      c.headersFrame(3, withLength(msg.length + 1)),
      frame(DATA, END_STREAM, 3, msg),
    );
    assert.ok(await c.until(() => c.resets().size === 2, 5000), "no RST_STREAM");
    assert.deepEqual([...c.resets()], [[1, PROTOCOL_ERROR], [3, PROTOCOL_ERROR]]);
    assert.deepEqual(cancelled, [
      "more DATA than its content-length",
      "DATA shorter than its content-length",
    ]);
    // A content-length that matches is accepted: the call stays open, nothing is reset.
    await c.write(c.headersFrame(5, withLength(msg.length)), frame(DATA, END_STREAM, 5, msg));
    await alive(c);
    assert.equal(c.resets().has(5), false);
    assert.equal(cancelled.length, 2);
  });
});

// ---- WINDOW_UPDATE and SETTINGS (RFC 9113 §6.5, §6.9) ---------------------------------------------

const { SETTINGS, WINDOW_UPDATE } = FrameType;
const FLOW_CONTROL_ERROR = 3;
const INITIAL_WINDOW_SIZE = 4, MAX_FRAME_SIZE = 5, ENABLE_PUSH = 2;

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

function setting(id: number, value: number): Buffer {
  const b = Buffer.alloc(6);
  b.writeUInt16BE(id, 0);
  b.writeUInt32BE(value, 2);
  return b;
}

const WINDOW_ERRORS: { name: string; send: (c: RawClient) => Uint8Array[]; goaway: string }[] = [
  {
    name: "a connection WINDOW_UPDATE of 0",
    send: () => [frame(WINDOW_UPDATE, 0, 0, u32(0))],
    goaway: "PROTOCOL_ERROR WINDOW_UPDATE of 0",
  },
  {
    name: "a connection window over 2^31-1",
    send: () => [frame(WINDOW_UPDATE, 0, 0, u32(0x7fffffff - 65535 + 1))],
    goaway: "FLOW_CONTROL_ERROR connection window overflow",
  },
  {
    name: "a WINDOW_UPDATE of 3 bytes",
    send: () => [frame(WINDOW_UPDATE, 0, 0, Buffer.from([0, 0, 1]))],
    goaway: "FRAME_SIZE_ERROR WINDOW_UPDATE size",
  },
  {
    name: "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1",
    send: () => [frame(SETTINGS, 0, 0, setting(INITIAL_WINDOW_SIZE, 0x80000000))],
    goaway: "FLOW_CONTROL_ERROR SETTINGS_INITIAL_WINDOW_SIZE",
  },
  {
    name: "SETTINGS_INITIAL_WINDOW_SIZE pushing an open stream's window over 2^31-1",
    send: (c) => [
      c.headersFrame(1, grpcRequest(HOLD)),
      frame(WINDOW_UPDATE, 0, 1, u32(0x7fffffff - 65535)), // the stream window is now 2^31-1
      frame(SETTINGS, 0, 0, setting(INITIAL_WINDOW_SIZE, 65536)),
    ],
    goaway: "FLOW_CONTROL_ERROR stream window overflow",
  },
  {
    name: "SETTINGS_MAX_FRAME_SIZE below 16384",
    send: () => [frame(SETTINGS, 0, 0, setting(MAX_FRAME_SIZE, 16383))],
    goaway: "PROTOCOL_ERROR SETTINGS_MAX_FRAME_SIZE 16383",
  },
  {
    name: "SETTINGS_MAX_FRAME_SIZE over 2^24-1",
    send: () => [frame(SETTINGS, 0, 0, setting(MAX_FRAME_SIZE, 16777216))],
    goaway: "PROTOCOL_ERROR SETTINGS_MAX_FRAME_SIZE 16777216",
  },
  {
    name: "SETTINGS_ENABLE_PUSH of 2",
    send: () => [frame(SETTINGS, 0, 0, setting(ENABLE_PUSH, 2))],
    goaway: "PROTOCOL_ERROR SETTINGS_ENABLE_PUSH 2",
  },
  {
    name: "SETTINGS on a stream",
    send: (c) => [c.headersFrame(1, grpcRequest(HOLD)), frame(SETTINGS, 0, 1)],
    goaway: "PROTOCOL_ERROR SETTINGS on a stream",
  },
  {
    name: "a SETTINGS ACK with a payload",
    send: () => [frame(SETTINGS, ACK, 0, setting(ENABLE_PUSH, 0))],
    goaway: "FRAME_SIZE_ERROR SETTINGS ACK with data",
  },
  {
    name: "SETTINGS of 7 bytes",
    send: () => [frame(SETTINGS, 0, 0, Buffer.alloc(7))],
    goaway: "FRAME_SIZE_ERROR SETTINGS size",
  },
];

for (const k of WINDOW_ERRORS) {
  Deno.test(`flow-control and SETTINGS errors: ${k.name} is a connection error (GOAWAY ${k.goaway})`, async () => {
    await withClient(async (c) => {
      await c.write(...k.send(c));
      assert.ok(await c.until(() => !!c.goaway, 5000), "no GOAWAY");
      assert.equal(`${c.goaway!.name} ${c.goaway!.debug}`, k.goaway);
      assert.ok(await c.until(() => c.isClosed, 5000), "connection left open");
    });
  });
}

Deno.test("flow-control and SETTINGS errors: stream WINDOW_UPDATEs of 0 or past 2^31-1 reset only that stream", async () => {
  cancelled.length = 0;
  await withClient(async (c) => {
    await c.write(
      c.headersFrame(1, grpcRequest(HOLD)),
      frame(WINDOW_UPDATE, 0, 1, u32(0)),
      c.headersFrame(3, grpcRequest(HOLD)),
      frame(WINDOW_UPDATE, 0, 3, u32(0x7fffffff - 65535)), // just fits
      frame(WINDOW_UPDATE, 0, 3, u32(1)),
    );
    assert.ok(await c.until(() => c.resets().size === 2, 5000), "no RST_STREAM");
    assert.deepEqual([...c.resets()], [[1, PROTOCOL_ERROR], [3, FLOW_CONTROL_ERROR]]);
    assert.deepEqual(cancelled, ["WINDOW_UPDATE of 0", "stream window overflow"]);
    await alive(c);
  });
});

Deno.test("flow-control and SETTINGS errors: the limits themselves are accepted, and updates for closed streams ignored", async () => {
  await withClient(async (c) => {
    await c.write(
      frame(SETTINGS, 0, 0, setting(MAX_FRAME_SIZE, 16384)),
      frame(SETTINGS, 0, 0, setting(MAX_FRAME_SIZE, 16777215)),
      frame(SETTINGS, 0, 0, setting(ENABLE_PUSH, 1)),
      frame(SETTINGS, 0, 0, setting(INITIAL_WINDOW_SIZE, 0x7fffffff)),
      frame(SETTINGS, ACK, 0),
      frame(WINDOW_UPDATE, 0, 0, u32(0x7fffffff - 65535)),
      c.headersFrame(1, grpcRequest(ECHO)),
      frame(DATA, END_STREAM, 1, msg),
    );
    assert.equal(await statusOf(c, 1), "0");
    await c.write(frame(WINDOW_UPDATE, 0, 1, u32(100)));
    await alive(c);
    assert.deepEqual([...c.resets()].filter(([, code]) => code !== 0), []);
  });
});

// ---- other frames (RFC 9113 §6) -----------------------------------------------------------------

const { HEADERS, PRIORITY, RST_STREAM, PUSH_PROMISE, GOAWAY, CONTINUATION } = FrameType;
const { END_HEADERS } = Flag;
const FIVE = Buffer.from([0, 0, 0, 0, 16]);

const FRAME_ERRORS: { name: string; send: (c: RawClient) => Uint8Array[]; goaway: string }[] = [
  {
    name: "PRIORITY on stream 0",
    send: () => [frame(PRIORITY, 0, 0, FIVE)],
    goaway: "PROTOCOL_ERROR PRIORITY on stream 0",
  },
  {
    name: "PRIORITY of 4 bytes",
    send: () => [frame(PRIORITY, 0, 1, Buffer.alloc(4))],
    goaway: "FRAME_SIZE_ERROR PRIORITY size",
  },
  {
    name: "RST_STREAM on stream 0",
    send: () => [frame(RST_STREAM, 0, 0, u32(8))],
    goaway: "PROTOCOL_ERROR RST_STREAM on stream 0",
  },
  {
    name: "RST_STREAM of 5 bytes",
    send: (c) => [c.headersFrame(1, grpcRequest(HOLD)), frame(RST_STREAM, 0, 1, Buffer.alloc(5))],
    goaway: "FRAME_SIZE_ERROR RST_STREAM size",
  },
  {
    name: "RST_STREAM on a stream never opened",
    send: () => [frame(RST_STREAM, 0, 1, u32(8))],
    goaway: "PROTOCOL_ERROR RST_STREAM on an idle stream",
  },
  {
    name: "PUSH_PROMISE from the client",
    send: () => [frame(PUSH_PROMISE, END_HEADERS, 1, Buffer.alloc(4))],
    goaway: "PROTOCOL_ERROR PUSH_PROMISE from a client",
  },
  {
    name: "PING on a stream",
    send: () => [frame(PING, 0, 1, Buffer.alloc(8))],
    goaway: "PROTOCOL_ERROR PING on a stream",
  },
  {
    name: "PING of 7 bytes",
    send: () => [frame(PING, 0, 0, Buffer.alloc(7))],
    goaway: "FRAME_SIZE_ERROR PING size",
  },
  {
    name: "GOAWAY on a stream",
    send: () => [frame(GOAWAY, 0, 1, Buffer.alloc(8))],
    goaway: "PROTOCOL_ERROR GOAWAY on a stream",
  },
  {
    name: "CONTINUATION without HEADERS",
    send: () => [frame(CONTINUATION, END_HEADERS, 1, Buffer.alloc(1))],
    goaway: "PROTOCOL_ERROR unexpected CONTINUATION",
  },
  {
    name: "CONTINUATION of another stream",
    send: (c) => [
      frame(HEADERS, 0, 1, c.headersFrame(1, grpcRequest(HOLD)).subarray(9)),
      frame(CONTINUATION, END_HEADERS, 3, Buffer.alloc(1)),
    ],
    goaway: "PROTOCOL_ERROR unexpected CONTINUATION",
  },
  {
    name: "another frame inside a header block",
    send: (c) => [
      frame(HEADERS, 0, 1, c.headersFrame(1, grpcRequest(HOLD)).subarray(9)),
      frame(PING, 0, 0, Buffer.alloc(8)),
    ],
    goaway: "PROTOCOL_ERROR expected CONTINUATION",
  },
  {
    name: "HEADERS on stream 0",
    send: (c) => [c.headersFrame(0, grpcRequest(HOLD))],
    goaway: "PROTOCOL_ERROR HEADERS on stream 0",
  },
  {
    name: "HEADERS on an even stream",
    send: (c) => [c.headersFrame(2, grpcRequest(HOLD))],
    goaway: "PROTOCOL_ERROR HEADERS on stream 2",
  },
  {
    name: "PADDED HEADERS whose pad length is the whole payload",
    send: () => [frame(HEADERS, END_HEADERS | PADDED, 1, Buffer.from([2, 0]))],
    goaway: "PROTOCOL_ERROR bad HEADERS padding",
  },
  {
    name: "HEADERS with the PRIORITY flag and 4 bytes",
    send: () => [frame(HEADERS, END_HEADERS | Flag.PRIORITY, 1, Buffer.alloc(4))],
    goaway: "FRAME_SIZE_ERROR HEADERS size",
  },
  {
    name: "PADDED HEADERS whose padding leaves less than the 5 priority bytes",
    send: () => [
      frame(
        HEADERS,
        END_HEADERS | PADDED | Flag.PRIORITY,
        1,
        Buffer.from([2, 0, 0, 0, 0, 16, 0]),
      ),
    ],
    goaway: "FRAME_SIZE_ERROR HEADERS size",
  },
];

for (const k of FRAME_ERRORS) {
  Deno.test(`frame errors: ${k.name} is a connection error (GOAWAY ${k.goaway})`, async () => {
    await withClient(async (c) => {
      await c.write(...k.send(c));
      assert.ok(await c.until(() => !!c.goaway, 5000), "no GOAWAY");
      assert.equal(`${c.goaway!.name} ${c.goaway!.debug}`, k.goaway);
      assert.ok(await c.until(() => c.isClosed, 5000), "connection left open");
    });
  });
}

Deno.test("frame errors: a first frame other than SETTINGS is a connection error", async () => {
  const listener = await listenGrpc({ host: "127.0.0.1", port: 0, handlers: new Map() });
  const c = await RawClient.connect(listener.port, { preface: false });
  try {
    await c.write(PREFACE, frame(PING, 0, 0, Buffer.alloc(8)));
    assert.ok(await c.until(() => !!c.goaway, 5000), "no GOAWAY");
    assert.equal(
      `${c.goaway!.name} ${c.goaway!.debug}`,
      "PROTOCOL_ERROR first frame is not SETTINGS",
    );
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("frame errors: padded and prioritized HEADERS that fit, a header block over CONTINUATIONs, unknown frame types and a client GOAWAY are accepted", async () => {
  await withClient(async (c) => {
    const block = c.headersFrame(1, grpcRequest(ECHO)).subarray(9);
    const padded = Buffer.concat([Buffer.from([3]), FIVE, block, Buffer.alloc(3)]);
    await c.write(
      frame(HEADERS, END_HEADERS | PADDED | Flag.PRIORITY, 1, padded),
      frame(DATA, END_STREAM, 1, msg),
      frame(0x42, 0, 0, Buffer.from("unknown")), // unknown types are ignored (§4.1)
    );
    assert.equal(await statusOf(c, 1), "0");
    const block3 = c.headersFrame(3, grpcRequest(ECHO)).subarray(9);
    await c.write(
      frame(HEADERS, 0, 3, block3.subarray(0, 4)),
      frame(CONTINUATION, 0, 3, block3.subarray(4, 8)),
      frame(CONTINUATION, END_HEADERS, 3, block3.subarray(8)),
      frame(DATA, END_STREAM, 3, msg),
    );
    assert.equal(await statusOf(c, 3), "0");
    await c.write(frame(GOAWAY, 0, 0, Buffer.alloc(8)));
    await alive(c);
  });
});

Deno.test("stream errors: request trailers end the request; trailers after END_STREAM or with a pseudo-header reset the stream", async () => {
  cancelled.length = 0;
  await withClient(async (c) => {
    await c.write(
      c.headersFrame(1, grpcRequest(ECHO)),
      frame(DATA, 0, 1, msg),
      c.headersFrame(1, [["x-trailer", "1"]], END_STREAM),
    );
    assert.equal(await statusOf(c, 1), "0", "the trailers ended the request");
    await c.write(
      c.headersFrame(3, grpcRequest(HOLD), END_STREAM),
      c.headersFrame(3, [["x-trailer", "1"]], END_STREAM),
      c.headersFrame(5, grpcRequest(HOLD)),
      c.headersFrame(5, [[":path", "/x"]], END_STREAM),
    );
    assert.ok(await c.until(() => c.resets().size === 2, 5000), "no RST_STREAM");
    assert.deepEqual([...c.resets()], [[3, STREAM_CLOSED], [5, PROTOCOL_ERROR]]);
    assert.deepEqual(cancelled, ["HEADERS after END_STREAM", "pseudo-header in trailers"]);
    await alive(c);
  });
});

Deno.test("stream errors: a second HEADERS without END_STREAM resets that stream only (RFC 9113 §8.1); the other calls go on", async () => {
  cancelled.length = 0;
  await withClient(async (c) => {
    await c.write(
      c.headersFrame(1, grpcRequest(ECHO)),
      c.headersFrame(3, grpcRequest(HOLD)),
      c.headersFrame(3, [["x", "y"]]),
    );
    assert.ok(await c.until(() => c.resets().has(3), 5000), "no RST_STREAM");
    assert.deepEqual([...c.resets()], [[3, PROTOCOL_ERROR]]);
    assert.deepEqual(cancelled, ["second HEADERS without END_STREAM"]);
    assert.equal(c.goaway, undefined);
    await c.write(frame(DATA, END_STREAM, 1, msg));
    assert.equal(await statusOf(c, 1), "0", "the other call was not spared");
    await alive(c);
  });
});

Deno.test("flood budgets: header blocks with END_STREAM on closed streams are a flood past one per stream opened (+5)", async () => {
  await withClient(async (c) => {
    await c.write(c.headersFrame(1, grpcRequest(ECHO)), frame(DATA, END_STREAM, 1, msg));
    assert.equal(await statusOf(c, 1), "0");
    // Up to 5 + 1 (streams opened) are dropped quietly, as trailers that crossed a reset.
    for (let i = 0; i < 6; i++) await c.write(c.headersFrame(1, [["x-trailer", "1"]], END_STREAM));
    await alive(c);
    for (let i = 0; i < 100 && !c.goaway && !c.isClosed; i++) {
      await c.write(c.headersFrame(1, [["x-trailer", "1"]], END_STREAM));
    }
    assert.ok(await c.until(() => !!c.goaway, 5000), "no GOAWAY");
    assert.equal(
      `${c.goaway!.name} ${c.goaway!.debug}`,
      "ENHANCE_YOUR_CALM 7 header blocks on closed streams",
    );
  });
});

/**
 * How a call ends, as the client sees it on the wire (frames written and read by hand with
 * {@link RawClient}): refused calls (Trailers-Only, and RST_STREAM NO_ERROR only while the client
 * is still sending), a request that fails mid-stream (nothing more reaches the handler), and a
 * call reset by the client while a send waits for flow-control credit.
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { frame, FrameType } from "./h2/frames.ts";
import { type CallHandler, type GrpcCall, GrpcStatus, listenGrpc } from "./mod.ts";
import { END_STREAM, eventually, grpcFrame, grpcRequest, RawClient } from "./testing.ts";

const { DATA, RST_STREAM } = FrameType;
const NO_ERROR = 0, CANCEL = 8;
const SETTINGS_INITIAL_WINDOW_SIZE = 4;
const RECORD = "/t.S/Record";

/** Calls seen by the handler, and the messages each received. */
interface Seen {
  call: GrpcCall;
  messages: string[];
  cancelled: string[];
  ended: number;
}

async function withClient(
  fn: (c: RawClient, seen: Seen[]) => Promise<void>,
  settings: [number, number][] = [],
  handle: (s: Seen) => void = () => {},
): Promise<void> {
  const seen: Seen[] = [];
  const record: CallHandler = (call) => {
    const s: Seen = { call, messages: [], cancelled: [], ended: 0 };
    seen.push(s);
    call.onMessage = (m) => {
      s.messages.push(Buffer.from(m).toString());
      handle(s);
    };
    call.onEnd = () => s.ended++;
    call.onCancel = (why) => s.cancelled.push(why);
  };
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[RECORD, record]]),
  });
  const c = await RawClient.connect(listener.port, { settings });
  try {
    await fn(c, seen);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
}

/** The header blocks of stream `id` once `n` of them came. */
async function blocks(c: RawClient, id: number, n = 1) {
  assert.ok(await c.until(() => (c.headers.get(id)?.length ?? 0) >= n), `no headers on ${id}`);
  return c.headers.get(id)!;
}

Deno.test("an unknown method is refused Trailers-Only; RST_STREAM NO_ERROR only if the client still sends", async () => {
  await withClient(async (c) => {
    // Half-closed with the HEADERS (and a content-length that no DATA will match): the answer is
    // the Trailers-Only response alone.
    await c.write(
      c.headersFrame(1, grpcRequest("/t.S/Nope", [["content-length", "5"]]), END_STREAM),
    );
    assert.deepEqual(await blocks(c, 1), [[
      [":status", "200"],
      ["content-type", "application/grpc"],
      ["grpc-status", String(GrpcStatus.UNIMPLEMENTED)],
      ["grpc-message", "Method not found: /t.S/Nope"],
    ]]);
    // Still sending: the same answer, then RST_STREAM NO_ERROR (RFC 9113 §8.1).
    await c.write(c.headersFrame(3, grpcRequest("/t.S/Nope")));
    assert.equal((await blocks(c, 3))[0][2][1], String(GrpcStatus.UNIMPLEMENTED));
    assert.ok(await c.until(() => c.resets().has(3)), "no RST_STREAM on stream 3");
    assert.ok(await c.roundTrip());
    assert.deepEqual([...c.resets()], [[3, NO_ERROR]]);
    const ends = c.frames.filter((f) => f.id === 1 && f.type !== RST_STREAM);
    assert.equal(ends.length, 1);
    assert.equal(c.goaway, undefined);
  });
});

Deno.test("a request that fails mid-stream delivers nothing more to the handler", async () => {
  await withClient(async (c, seen) => {
    await c.write(c.headersFrame(1, grpcRequest(RECORD)));
    // One write, so the server reads all of it before it flushes the failure: a good message,
    // a compressed one without grpc-encoding, a good one in the same DATA frame, then another
    // DATA frame.
    const bad = grpcFrame(Buffer.from("zz"), true);
    await c.write(
      frame(
        DATA,
        0,
        1,
        Buffer.concat([grpcFrame(Buffer.from("one")), bad, grpcFrame(Buffer.from("two"))]),
      ),
      frame(DATA, 0, 1, grpcFrame(Buffer.from("three"))),
    );
    const [trailers] = await blocks(c, 1);
    assert.deepEqual(trailers, [
      [":status", "200"],
      ["content-type", "application/grpc"],
      ["grpc-status", String(GrpcStatus.INTERNAL)],
      ["grpc-message", "Compressed message without a grpc-encoding"],
    ]);
    assert.ok(await c.until(() => c.resets().get(1) === NO_ERROR));
    // Later DATA on the finished stream is dropped.
    await c.write(frame(DATA, END_STREAM, 1, grpcFrame(Buffer.from("four"))));
    assert.ok(await c.roundTrip());
    assert.equal(seen.length, 1);
    assert.deepEqual(seen[0].messages, ["one"]);
    assert.equal(seen[0].ended, 0);
    assert.equal(c.goaway, undefined);
  });
});

Deno.test("a client reset rejects the sends waiting for window and every later send", async () => {
  let pending: Promise<void> | undefined;
  // The client grants no stream window: the handler's first send waits for credit.
  await withClient(
    async (c, seen) => {
      await c.write(
        c.headersFrame(1, grpcRequest(RECORD)),
        frame(DATA, 0, 1, grpcFrame(Buffer.from("go"))),
      );
      assert.ok(await c.until(() => pending !== undefined));
      let why: unknown;
      const waited = pending!.then(() => "resolved", (e) => (why = e, "rejected"));
      // Only the response HEADERS can go (no DATA without window).
      assert.ok(await c.until(() => c.headers.has(1)));
      const buf = Buffer.alloc(4);
      buf.writeUInt32BE(CANCEL);
      await c.write(frame(RST_STREAM, 0, 1, buf));
      assert.equal(await waited, "rejected");
      assert.equal((why as Error).message, "client reset the stream (code 8)");
      assert.deepEqual(seen[0].cancelled, ["client reset the stream (code 8)"]);
      // A send after the reset fails at once.
      let later = "pending";
      seen[0].call.send([Buffer.from("late")]).then(
        () => later = "resolved",
        (e: Error) => later = e.message,
      );
      await Promise.resolve();
      await Promise.resolve();
      assert.equal(later, "stream ended");
      assert.ok(await c.roundTrip());
      assert.equal(c.dataOn(1), 0);
      assert.equal(c.goaway, undefined);
    },
    [[SETTINGS_INITIAL_WINDOW_SIZE, 0]],
    (s) => {
      pending ??= s.call.send([Buffer.from("answer")]);
    },
  );
});

Deno.test("a client that goes away cancels each open call once and rejects its waiting sends", async () => {
  const sends: Promise<string>[] = [];
  await withClient(
    async (c, seen) => {
      for (const id of [1, 3]) {
        await c.write(
          c.headersFrame(id, grpcRequest(RECORD)),
          frame(DATA, 0, id, grpcFrame(Buffer.from("go"))),
        );
      }
      assert.ok(await c.until(() => sends.length === 2));
      await c.close();
      assert.ok(await eventually(() => seen.every((s) => s.cancelled.length > 0)));
      for (const s of seen) {
        assert.equal(s.cancelled.length, 1);
        assert.match(s.cancelled[0], /^(client closed the connection|connection closed)$/);
      }
      for (const r of await Promise.all(sends)) {
        assert.match(r, /^(client closed the connection|connection closed)$/);
      }
    },
    [[SETTINGS_INITIAL_WINDOW_SIZE, 0]],
    (s) =>
      void sends.push(s.call.send([Buffer.from("answer")]).then(() => "sent", (e) => e.message)),
  );
});

Deno.test("a handler that throws fails the connection: GOAWAY INTERNAL_ERROR, debug text cut at 200", async () => {
  const errors: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[RECORD, () => {
      throw new Error("x".repeat(150) + "y".repeat(150));
    }]]),
    onError: (m) => errors.push(m),
  });
  const c = await RawClient.connect(listener.port);
  try {
    await c.write(c.headersFrame(1, grpcRequest(RECORD), END_STREAM));
    assert.ok(await c.until(() => c.goaway !== undefined));
    assert.deepEqual([c.goaway!.name, c.goaway!.debug], [
      "INTERNAL_ERROR",
      "x".repeat(150) + "y".repeat(50),
    ]);
    assert.ok(await c.until(() => c.isClosed));
    assert.match(errors.join("\n"), /failed: x{150}y{150}$/m);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("a call ended without a message is answered Trailers-Only; RST_STREAM NO_ERROR only if the client still sends", async () => {
  await withClient(
    async (c) => {
      // Half-closed with its message: the Trailers-Only response alone.
      await c.write(
        c.headersFrame(1, grpcRequest(RECORD)),
        frame(DATA, END_STREAM, 1, grpcFrame(Buffer.from("a"))),
      );
      // Still sending: the same answer, then RST_STREAM NO_ERROR.
      await c.write(
        c.headersFrame(3, grpcRequest(RECORD)),
        frame(DATA, 0, 3, grpcFrame(Buffer.from("b"))),
      );
      for (const id of [1, 3]) {
        assert.deepEqual(await blocks(c, id), [[
          [":status", "200"],
          ["content-type", "application/grpc"],
          ["grpc-status", String(GrpcStatus.INVALID_ARGUMENT)],
          ["grpc-message", "no such thing"],
        ]]);
        const h = c.frames.find((f) => f.id === id && f.type === FrameType.HEADERS)!;
        assert.equal(h.flags & END_STREAM, END_STREAM);
      }
      assert.ok(await c.until(() => c.resets().has(3)));
      assert.ok(await c.roundTrip());
      assert.deepEqual([...c.resets()], [[3, NO_ERROR]]);
      assert.equal(c.dataOn(1) + c.dataOn(3), 0);
    },
    [],
    (s) => s.call.end(GrpcStatus.INVALID_ARGUMENT, "no such thing"),
  );
});

Deno.test("a message over the connection's buffered-request budget ends its call RESOURCE_EXHAUSTED only", async () => {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[RECORD, (call: GrpcCall) => {
      call.onMessage = (m) => void call.send([Buffer.from(m)]).catch(() => {});
      call.onEnd = () => call.end(GrpcStatus.OK);
    }]]),
    limits: { maxBufferedRequestBytes: 100_000 },
  });
  // The whole window for the answers (echoes of up to 100000 octets).
  const c = await RawClient.connect(listener.port, { settings: [[4, 0x7fffffff]] });
  const wu = Buffer.alloc(4);
  wu.writeUInt32BE(0x7fffffff - 65535);
  await c.write(frame(FrameType.WINDOW_UPDATE, 0, 0, wu));
  try {
    // A 150000-octet message whose first 1000 octets came: it would be held whole.
    const head = Buffer.alloc(5 + 1000);
    head.writeUInt32BE(150_000, 1);
    await c.write(c.headersFrame(1, grpcRequest(RECORD)), frame(DATA, 0, 1, head));
    const [trailers] = await blocks(c, 1);
    assert.deepEqual(trailers.slice(2), [
      ["grpc-status", String(GrpcStatus.RESOURCE_EXHAUSTED)],
      ["grpc-message", "Request data buffered on this connection would exceed 100000 bytes"],
    ]);
    // The connection stays, and a message within the budget still goes through.
    // A message of exactly the budget, twice (the buffer of the first is given back).
    for (const id of [3, 5]) {
      const body = grpcFrame(Buffer.alloc(100_000, 7));
      const frames = [];
      for (let at = 0; at < body.length; at += 16384) {
        const end = Math.min(at + 16384, body.length);
        frames.push(frame(DATA, end === body.length ? END_STREAM : 0, id, body.subarray(at, end)));
      }
      await c.write(c.headersFrame(id, grpcRequest(RECORD)), ...frames);
      const h = await blocks(c, id, 2);
      assert.deepEqual(h[1], [["grpc-status", "0"]]);
      assert.equal(c.dataOn(id), 100_005);
    }
    // Two partial messages held at once: the second would go over the budget.
    const part = Buffer.alloc(5 + 1000);
    part.writeUInt32BE(60_000, 1);
    await c.write(c.headersFrame(7, grpcRequest(RECORD)), frame(DATA, 0, 7, part));
    assert.ok(await c.roundTrip());
    await c.write(c.headersFrame(9, grpcRequest(RECORD)), frame(DATA, 0, 9, part));
    const [t9] = await blocks(c, 9);
    assert.equal(t9[2][1], String(GrpcStatus.RESOURCE_EXHAUSTED));
    assert.equal(c.headers.get(7), undefined); // still receiving its message
    assert.equal(c.goaway, undefined);
    assert.equal([...listener.connections][0].failed, true);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("a gzip message that does not inflate ends its call INTERNAL with the reason", async () => {
  await withClient(async (c, seen) => {
    await c.write(
      c.headersFrame(1, grpcRequest(RECORD, [["grpc-encoding", "gzip"]])),
      frame(DATA, END_STREAM, 1, grpcFrame(Buffer.from("not gzip at all"), true)),
    );
    const [trailers] = await blocks(c, 1);
    assert.equal(trailers[2][1], String(GrpcStatus.INTERNAL));
    assert.match(trailers[3][1], /^Cannot decompress the gzip message: /);
    assert.deepEqual(seen[0].messages, []);
  });
});

Deno.test("responses whose frames add up to about 16 KiB are written whole, RST_STREAM NO_ERROR after trailers only while the client sends", async () => {
  // One write per flush: HEADERS, DATA, trailers (and RST_STREAM) around the buffer size class
  // of 16384 octets, for each message size from 16250 to 16379 octets.
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[RECORD, (call: GrpcCall) => {
      call.onMessage = (m) => {
        call.send([Buffer.alloc(m.readUInt16BE(0), 1)]).catch(() => {});
        call.end(GrpcStatus.OK);
      };
    }]]),
  });
  const c = await RawClient.connect(listener.port);
  try {
    const wu = Buffer.alloc(4);
    wu.writeUInt32BE(0x7fffffff - 65535);
    await c.write(frame(FrameType.WINDOW_UPDATE, 0, 0, wu));
    let id = 1;
    for (let size = 16250; size <= 16379; size++, id += 2) {
      const ask = Buffer.alloc(2);
      ask.writeUInt16BE(size);
      const ended = size % 2 === 0;
      await c.write(
        c.headersFrame(id, grpcRequest(RECORD)),
        frame(DATA, ended ? END_STREAM : 0, id, grpcFrame(ask)),
      );
      const h = await blocks(c, id, 2);
      assert.deepEqual(h[1], [["grpc-status", "0"]], `size ${size}`);
      assert.equal(c.dataOn(id), size + 5, `size ${size}`);
      if (!ended) assert.ok(await c.until(() => c.resets().get(id) === NO_ERROR), `size ${size}`);
    }
    assert.ok(await c.roundTrip());
    // RST_STREAM NO_ERROR on exactly the calls whose client had not half-closed.
    const resets = [...c.resets()];
    assert.equal(resets.length, 65);
    assert.ok(resets.every(([sid, code]) => code === NO_ERROR && ((sid - 1) / 2) % 2 === 1));
    assert.equal(c.goaway, undefined);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("350 calls answered Trailers-Only in one flush are all written, each with its RST_STREAM", async () => {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[RECORD, (call: GrpcCall) => call.end(GrpcStatus.UNAVAILABLE)]]),
    limits: { maxConcurrentStreams: 1000 },
  });
  const c = await RawClient.connect(listener.port);
  try {
    assert.ok(await c.roundTrip());
    const ids = Array.from({ length: 350 }, (_, i) => 1 + 2 * i);
    // One write: the server reads them at once and answers them in one flush of about 19 KB
    // (over the 16 KiB buffer size class by less than the RST_STREAMs: both must be counted).
    await c.write(...ids.map((id) => c.headersFrame(id, grpcRequest(RECORD))));
    assert.ok(await c.until(() => c.resets().size === 350), `${c.resets().size} resets`);
    for (const id of ids) {
      assert.equal(c.headers.get(id)?.[0].find(([k]) => k === "grpc-status")?.[1], "14");
      assert.equal(c.resets().get(id), NO_ERROR);
    }
    assert.equal(c.goaway, undefined);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("a handler whose onMessage throws fails the connection (GOAWAY INTERNAL_ERROR), not just its call", async () => {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[RECORD, (call: GrpcCall) => {
      call.onMessage = () => {
        throw new Error("handler bug");
      };
    }]]),
  });
  const c = await RawClient.connect(listener.port);
  try {
    await c.write(
      c.headersFrame(1, grpcRequest(RECORD)),
      frame(DATA, 0, 1, grpcFrame(Buffer.from("x"))),
    );
    assert.ok(await c.until(() => c.goaway !== undefined, 5000), "no GOAWAY");
    assert.deepEqual([c.goaway!.name, c.goaway!.debug], ["INTERNAL_ERROR", "handler bug"]);
    assert.equal(c.headers.get(1), undefined);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

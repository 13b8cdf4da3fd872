import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import http2 from "node:http2";
import net from "node:net";
import zlib from "node:zlib";
import { type CallHandler, type GrpcCall, GrpcStatus, listenGrpc, percentEncode } from "./mod.ts";
import { frame, FrameType } from "./h2/frames.ts";
import { grpcFrame, grpcRequest, messagesOf, RawClient } from "./testing.ts";

interface Result {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  messages: Buffer[];
}

/** One call through node:http2 (an independent HTTP/2 implementation): sends, half-closes, reads. */
function call(
  session: http2.ClientHttp2Session,
  path: string,
  send: Uint8Array[],
  extra: http2.OutgoingHttpHeaders = {},
  endRequest = true,
): { result: Promise<Result>; stream: http2.ClientHttp2Stream } {
  const stream = session.request({
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
    ...extra,
  });
  const result = new Promise<Result>((resolve, reject) => {
    let headers: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => (headers = h));
    stream.on("trailers", (h) => (trailers = h));
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", reject);
    // The server's END_STREAM ends the readable side (a client still sending gets "end" then
    // a reset; one that half-closed gets "close").
    const done = () => resolve({ headers, trailers, messages: messagesOf(Buffer.concat(chunks)) });
    stream.on("end", done);
    stream.on("close", done);
  });
  for (const m of send) stream.write(grpcFrame(m));
  if (endRequest) stream.end();
  return { result, stream };
}

async function withServer(
  handlers: Record<string, CallHandler>,
  fn: (
    port: number,
    connect: (settings?: http2.Settings) => Promise<http2.ClientHttp2Session>,
  ) => Promise<void>,
) {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map(Object.entries(handlers)),
  });
  const sessions: http2.ClientHttp2Session[] = [];
  const connect = (settings?: http2.Settings) =>
    new Promise<http2.ClientHttp2Session>((resolve, reject) => {
      const s = http2.connect(`http://127.0.0.1:${listener.port}`, { settings });
      sessions.push(s);
      s.once("connect", () => resolve(s));
      s.once("error", reject);
    });
  try {
    await fn(listener.port, connect);
  } finally {
    for (const s of sessions) s.destroy();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 500);
  }
}

/** An echo handler: every message back (as two parts), OK when the client half-closes. */
const echo: CallHandler = (c: GrpcCall) => {
  c.onMessage = (msg) => {
    const m = Buffer.from(msg); // the message is only valid during the call
    const half = m.length >> 1;
    c.send([m.subarray(0, half), m.subarray(half)]).catch(() => {});
  };
  c.onEnd = () => c.end(GrpcStatus.OK);
};

Deno.test("listenGrpc() answers each message of a stream and ends with grpc-status 0", async () => {
  await withServer({ "/t.S/Echo": echo }, async (_port, connect) => {
    const s = await connect();
    const msgs = ["one", "two", "three"].map((x) => new TextEncoder().encode(x));
    const r = await call(s, "/t.S/Echo", msgs).result;
    assert.equal(r.headers[":status"], 200);
    assert.equal(r.headers["content-type"], "application/grpc");
    // The encodings we accept, so a client may compress its next requests (gRPC's negotiation).
    assert.equal(r.headers["grpc-accept-encoding"], "identity,gzip");
    assert.deepEqual(r.messages.map((m) => m.toString()), ["one", "two", "three"]);
    assert.equal(r.trailers["grpc-status"], "0");
  });
});

Deno.test("listenGrpc() sends a message larger than the client's windows intact (flow control)", async () => {
  await withServer({ "/t.S/Echo": echo }, async (_port, connect) => {
    // A 16 kB stream window: the 1 MB reply needs ~64 WINDOW_UPDATEs from the client.
    const s = await connect({ initialWindowSize: 16384 });
    const big = new Uint8Array(1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7919) & 0xff;
    // The request is larger than one frame too (it arrives in many DATA frames).
    const r = await call(s, "/t.S/Echo", [big, big.subarray(0, 10)]).result;
    assert.equal(r.trailers["grpc-status"], "0");
    assert.equal(r.messages.length, 2);
    assert.equal(Buffer.compare(r.messages[0], big), 0);
    assert.equal(r.messages[1].length, 10);
  });
});

Deno.test("listenGrpc() answers an unknown method with UNIMPLEMENTED (trailers only)", async () => {
  await withServer({ "/t.S/Echo": echo }, async (_port, connect) => {
    const s = await connect();
    const r = await call(s, "/t.S/Nope", []).result;
    assert.equal(r.headers[":status"], 200);
    assert.equal(r.headers["grpc-status"], String(GrpcStatus.UNIMPLEMENTED));
    assert.equal(r.headers["grpc-message"], "Method not found: /t.S/Nope");
    // The connection still serves other calls.
    const ok = await call(s, "/t.S/Echo", [new TextEncoder().encode("x")]).result;
    assert.equal(ok.trailers["grpc-status"], "0");
  });
});

Deno.test("listenGrpc() accepts gzip requests, refuses other encodings and non-gRPC content types", async () => {
  await withServer({ "/t.S/Echo": echo }, async (_port, connect) => {
    const s = await connect();
    const body = new TextEncoder().encode("hello ".repeat(100));
    const z = zlib.gzipSync(body);
    const framed = Buffer.alloc(5 + z.length);
    framed[0] = 1; // compressed
    framed.writeUInt32BE(z.length, 1);
    framed.set(z, 5);
    const gz = call(s, "/t.S/Echo", [], { "grpc-encoding": "gzip" }, false);
    gz.stream.end(framed);
    const r = await gz.result;
    assert.equal(r.trailers["grpc-status"], "0");
    assert.deepEqual(r.messages.map((m) => m.toString()), ["hello ".repeat(100)]);
    const other = await call(s, "/t.S/Echo", [], { "grpc-encoding": "deflate" }).result;
    assert.equal(other.headers["grpc-status"], String(GrpcStatus.UNIMPLEMENTED));
    assert.match(String(other.headers["grpc-message"]), /Compression "deflate" is not supported/);
    const json = await call(s, "/t.S/Echo", [], { "content-type": "application/json" }).result;
    assert.equal(json.headers[":status"], 415);
  });
});

Deno.test("listenGrpc() bounds a gzip message by the max message size after decompression (zip bomb)", async () => {
  await withServer({ "/t.S/Echo": echo }, async (_port, connect) => {
    const s = await connect();
    const z = zlib.gzipSync(new Uint8Array(64 * 1024 * 1024)); // ~64 KB that inflate to 64 MiB
    const framed = Buffer.alloc(5 + z.length);
    framed[0] = 1;
    framed.writeUInt32BE(z.length, 1);
    framed.set(z, 5);
    const gz = call(s, "/t.S/Echo", [], { "grpc-encoding": "gzip" }, false);
    gz.stream.end(framed);
    const r = await gz.result;
    assert.equal(r.headers["grpc-status"], String(GrpcStatus.RESOURCE_EXHAUSTED));
    assert.match(String(r.headers["grpc-message"]), /larger than max after decompression/);
  });
});

Deno.test("listenGrpc() ends a call whose request message is over 4 MiB with RESOURCE_EXHAUSTED", async () => {
  await withServer({ "/t.S/Echo": echo }, async (_port, connect) => {
    const s = await connect();
    const r = await call(s, "/t.S/Echo", [new Uint8Array(4 * 1024 * 1024 + 1)], {}, false).result;
    // Nothing was sent yet: a Trailers-Only response (the status in the headers).
    assert.equal(r.headers["grpc-status"], String(GrpcStatus.RESOURCE_EXHAUSTED));
    assert.match(String(r.headers["grpc-message"]), /larger than max/);
  });
});

Deno.test("listenGrpc() tells the handler when the client resets the stream", async () => {
  let cancelled: (why: string) => void = () => {};
  const why = new Promise<string>((r) => (cancelled = r));
  let started: () => void = () => {};
  const running = new Promise<void>((r) => (started = r));
  await withServer({
    "/t.S/Wait": (c) => {
      c.onMessage = () => started();
      c.onCancel = cancelled;
    },
  }, async (_port, connect) => {
    const s = await connect();
    const { stream, result } = call(s, "/t.S/Wait", [new Uint8Array(1)], {}, false);
    await running;
    stream.close(http2.constants.NGHTTP2_CANCEL);
    await result.catch(() => {});
    assert.match(await why, /client reset the stream \(code 8\)/);
  });
});

/** Raw HTTP/2 frames over TCP: reads frames until `until` matches one (or the socket closes). */
function rawExchange(
  port: number,
  frames: Buffer[],
  until: (type: number, flags: number, payload: Buffer) => boolean,
): Promise<{ type: number; flags: number; payload: Buffer }[]> {
  return new Promise((resolve, reject) => {
    const got: { type: number; flags: number; payload: Buffer }[] = [];
    let buf = Buffer.alloc(0);
    const c = net.connect(port, "127.0.0.1", () => {
      c.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), ...frames]));
    });
    c.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        const f = { type: buf[3], flags: buf[4], payload: buf.subarray(9, 9 + len) };
        buf = buf.subarray(9 + len);
        got.push(f);
        if (until(f.type, f.flags, f.payload)) {
          c.destroy();
          return resolve(got);
        }
      }
    });
    c.on("error", reject);
    c.on("close", () => resolve(got));
  });
}

function rawFrame(type: number, flags: number, id: number, payload: Uint8Array = new Uint8Array()) {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(id, 5);
  return Buffer.concat([h, payload]);
}

Deno.test("listenGrpc() acknowledges a PING with the same payload", async () => {
  await withServer({}, async (port) => {
    const data = Buffer.from("12345678");
    const frames = await rawExchange(
      port,
      [rawFrame(4, 0, 0), rawFrame(6, 0, 0, data)],
      (type, flags) => type === 6 && flags === 1,
    );
    const ack = frames.find((f) => f.type === 6);
    assert.ok(ack, `no PING ACK among ${JSON.stringify(frames.map((f) => f.type))}`);
    assert.equal(ack.payload.toString(), "12345678");
  });
});

Deno.test("listenGrpc() answers a frame larger than its SETTINGS_MAX_FRAME_SIZE with GOAWAY", async () => {
  await withServer({}, async (port) => {
    const frames = await rawExchange(
      port,
      [rawFrame(4, 0, 0), rawFrame(6, 0, 0, new Uint8Array(20000))],
      (type) => type === 7,
    );
    const goaway = frames.find((f) => f.type === 7);
    assert.ok(goaway, "no GOAWAY");
    assert.equal(goaway.payload.readUInt32BE(4), 6, "FRAME_SIZE_ERROR");
  });
});

Deno.test("listenGrpc() ends open calls with UNAVAILABLE and sends GOAWAY on close", async () => {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([["/t.S/Wait", (c: GrpcCall) => (c.onMessage = () => c.send([]))]]),
  });
  const s = http2.connect(`http://127.0.0.1:${listener.port}`);
  try {
    await new Promise((resolve, reject) => {
      s.once("connect", resolve);
      s.once("error", reject);
    });
    const { result } = call(s, "/t.S/Wait", [new Uint8Array(0)], {}, false);
    const goaway = new Promise<number>((r) => s.once("goaway", (code: number) => r(code)));
    // Once the call is running, close the listener.
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (listener.connections.size && [...listener.connections][0].streams) {
          clearInterval(t);
          resolve();
        }
      }, 5);
    });
    await listener.close(GrpcStatus.UNAVAILABLE, "Server is shutting down", 1000);
    const r = await result;
    assert.equal(r.trailers["grpc-status"], String(GrpcStatus.UNAVAILABLE));
    assert.equal(r.trailers["grpc-message"], "Server is shutting down");
    assert.equal(await goaway, 0);
  } finally {
    s.destroy();
    await listener.close(GrpcStatus.UNAVAILABLE, "", 100);
  }
});

Deno.test("listenGrpc() closes a connection that does not start with the HTTP/2 preface", async () => {
  const errors: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map(),
    onError: (m) => errors.push(m),
  });
  try {
    const got = await new Promise<string>((resolve, reject) => {
      const c = net.connect(listener.port, "127.0.0.1", () => {
        c.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      });
      const chunks: Buffer[] = [];
      c.on("data", (d: Buffer) => chunks.push(d));
      c.on("error", reject);
      c.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
    });
    // Our SETTINGS, then a GOAWAY (type 7) with PROTOCOL_ERROR; then the connection closes.
    assert.ok(got.includes("not an HTTP/2 connection preface"), JSON.stringify(got));
    assert.match(errors.join("\n"), /not an HTTP\/2 connection preface/);
  } finally {
    await listener.close(GrpcStatus.UNAVAILABLE, "", 100);
  }
});

Deno.test("percentEncode() escapes '%' and bytes outside printable ASCII as gRPC requires", () => {
  assert.equal(percentEncode("plain text"), "plain text");
  assert.equal(percentEncode("100% ü\n"), "100%25 %C3%BC%0A");
});

Deno.test("listenGrpc() refuses a method other than POST (405) and content types other than application/grpc[+x|;x] (415), each with its message", async () => {
  await withServer({ "/t.S/Echo": echo }, async (_port, connect) => {
    const s = await connect();
    const x = new TextEncoder().encode("x");
    const get = await call(s, "/t.S/Echo", [], { ":method": "GET" }).result;
    assert.deepEqual(
      [get.headers[":status"], get.headers["grpc-status"], get.headers["grpc-message"]],
      [405, String(GrpcStatus.INTERNAL), "Method GET is not POST"],
    );
    for (
      const [ct, ok] of [
        ["application/grpc+proto", true],
        ["application/grpc;charset=utf-8", true],
        ["application/grpcx", false],
        ["text/application/grpc", false],
      ] as const
    ) {
      const r = await call(s, "/t.S/Echo", [x], { "content-type": ct }).result;
      if (ok) assert.equal(r.trailers["grpc-status"], "0", ct);
      else {
        assert.deepEqual(
          [r.headers[":status"], r.headers["grpc-message"]],
          [415, `Content-type ${ct} is not gRPC`],
          ct,
        );
      }
    }
    const none = await call(s, "/t.S/Echo", [], { "content-type": undefined }).result;
    assert.deepEqual(
      [none.headers[":status"], none.headers["grpc-status"], none.headers["grpc-message"]],
      [415, String(GrpcStatus.INTERNAL), "Content-type (none) is not gRPC"],
    );
    const identity = await call(s, "/t.S/Echo", [x], { "grpc-encoding": "identity" }).result;
    assert.equal(identity.trailers["grpc-status"], "0");
    assert.deepEqual(identity.messages.map(String), ["x"]);
    const br = await call(s, "/t.S/Echo", [], { "grpc-encoding": "br" }).result;
    assert.deepEqual(
      [br.headers[":status"], br.headers["grpc-message"]],
      [200, 'Compression "br" is not supported (only identity and gzip)'],
    );
    // A compressed message on a stream without grpc-encoding.
    const c = call(s, "/t.S/Echo", [], {}, false);
    c.stream.end(Buffer.from([1, 0, 0, 0, 1, 0]));
    const cr = await c.result;
    assert.deepEqual(
      [cr.headers["grpc-status"], cr.headers["grpc-message"]],
      [String(GrpcStatus.INTERNAL), "Compressed message without a grpc-encoding"],
    );
    // And with grpc-encoding identity (nothing to decompress with).
    const ci = call(s, "/t.S/Echo", [], { "grpc-encoding": "identity" }, false);
    ci.stream.end(Buffer.from([1, 0, 0, 0, 1, 0]));
    const cir = await ci.result;
    assert.deepEqual(
      [cir.headers["grpc-status"], cir.headers["grpc-message"]],
      [String(GrpcStatus.INTERNAL), "Compressed message without a grpc-encoding"],
    );
  });
});

Deno.test("listenGrpc() delivers a push of more than 16 MiB made at one instant to every client", async () => {
  // Four calls answered in the same turn with 6 MiB each: past the 16 MiB written per turn across
  // connections, the fourth connection's output waits for the next turn, and must then go out
  // although its client sends nothing more (no WINDOW_UPDATE, no PING) to wake the connection.
  const SIZE = 6 * 1024 * 1024;
  const calls: GrpcCall[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([["/t.S/Push", (c: GrpcCall) => void calls.push(c)]]),
    limits: { keepaliveIntervalMs: 0 },
  });
  const clients: RawClient[] = [];
  try {
    for (let i = 0; i < 4; i++) {
      // Windows never limit: the whole window for the stream and for the connection.
      const c = await RawClient.connect(listener.port, { settings: [[4, 0x7fffffff]] });
      clients.push(c);
      const inc = Buffer.alloc(4);
      inc.writeUInt32BE(0x7fffffff - 65535);
      await c.write(
        frame(FrameType.WINDOW_UPDATE, 0, 0, inc),
        c.headersFrame(1, grpcRequest("/t.S/Push")),
      );
      assert.ok(await c.roundTrip());
    }
    assert.equal(calls.length, 4);
    for (const [i, call] of calls.entries()) {
      call.send([Buffer.alloc(SIZE, i + 1)]).catch(() => {});
      call.end(GrpcStatus.OK);
    }
    for (const [i, c] of clients.entries()) {
      const trailers = () => (c.headers.get(1) ?? []).length === 2;
      assert.ok(await c.until(trailers, 30_000), `client ${i}: no trailers`);
      assert.equal(c.dataOn(1), 5 + SIZE, `client ${i}: the whole message`);
      assert.deepEqual(c.headers.get(1)![1], [["grpc-status", "0"]]);
    }
  } finally {
    for (const c of clients) await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 500);
  }
});

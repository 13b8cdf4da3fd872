/**
 * HTTP/2 flow control of listenGrpc(), in both directions, per stream and per connection, well
 * past the windows, with independent clients: node:http2 (Deno's), grpc-js, python-hyper `h2`
 * (`/usr/bin/python3`) and nghttp2's `h2load`.
 *
 * Receive side: our stream window is 4 MiB and the connection's 16 MiB, so a client sending more
 * stalls unless we return WINDOW_UPDATEs as we read. Send side: we must never send past the
 * client's stream or connection window (h2 and nghttp2 treat that as FLOW_CONTROL_ERROR).
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import http2 from "node:http2";
import { Flag, frame, FrameType, PREFACE } from "./h2/frames.ts";
import { encodeHeaders } from "./h2/hpack.ts";
import { type CallHandler, GrpcStatus, listenGrpc } from "./mod.ts";
import { grpcFrame, grpcRequest, messagesOf, RawClient } from "./testing.ts";

const MIB = 1024 * 1024;

/** Byte `i` of message `seed` (the same formula as the Python client). */
function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i % 256) * 31 + seed & 0xff;
  return b;
}

function sumOf(b: Uint8Array, s = 0): number {
  for (let i = 0; i < b.length; i++) s = (s + b[i]) >>> 0;
  return s;
}

/** The byte sum of `bytes` sent as 1 MiB messages of pattern `seed`. */
function expectedSum(bytes: number, seed: number): number {
  let s = 0;
  for (let left = bytes; left > 0; left -= MIB) s = sumOf(pattern(Math.min(MIB, left), seed), s);
  return s;
}

/** Counts the bytes and byte sum of every request message; answers `{"bytes","sum"}` at the end. */
const sink: CallHandler = (c) => {
  let bytes = 0, sum = 0;
  c.onMessage = (m) => {
    bytes += m.length;
    sum = sumOf(m, sum);
  };
  c.onEnd = () => {
    c.send([new TextEncoder().encode(JSON.stringify({ bytes, sum }))]).catch(() => {});
    c.end(GrpcStatus.OK);
  };
};

/** Answers a request of 8 bytes (a big-endian size) with that many bytes in 1 MiB messages. */
const source: CallHandler = (c) => {
  c.onMessage = (m) => {
    const size = Number(Buffer.from(m).readBigUInt64BE(0));
    const sends: Promise<void>[] = [];
    for (let left = size; left > 0; left -= MIB) sends.push(c.send([SOURCE_MSG(left)]));
    Promise.all(sends).then(() => c.end(GrpcStatus.OK), () => {});
  };
  c.onEnd = () => {};
};
const SOURCE_FULL = pattern(MIB, 7);
const SOURCE_MSG = (left: number) =>
  left >= MIB ? SOURCE_FULL : SOURCE_FULL.subarray(0, Math.min(MIB, left));

async function withServer(fn: (port: number) => Promise<void>): Promise<void> {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([["/t.S/Sink", sink], ["/t.S/Source", source]]),
  });
  try {
    await fn(listener.port);
  } finally {
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 500);
  }
}

/** Rejects after `ms` (a stalled transfer fails the test instead of hanging it). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: number;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

// ---- node:http2 ---------------------------------------------------------------------------------

function connect(port: number, settings?: http2.Settings): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const s = http2.connect(`http://127.0.0.1:${port}`, { settings });
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
}

/** One call: writes `messages` (respecting backpressure), half-closes, returns what came back. */
function nodeCall(
  session: http2.ClientHttp2Session,
  path: string,
  messages: Uint8Array[],
): Promise<{ status: string; messages: Buffer[] }> {
  const stream = session.request({
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
  });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let status = "";
    stream.on("trailers", (h) => status = String(h["grpc-status"]));
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", reject);
    stream.on("close", () => resolve({ status, messages: messagesOf(Buffer.concat(chunks)) }));
    (async () => {
      for (const m of messages) {
        if (!stream.write(grpcFrame(m))) {
          await new Promise((r) => stream.once("drain", r));
        }
      }
      stream.end();
    })().catch(reject);
  });
}

function upload(bytes: number, seed: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let left = bytes; left > 0; left -= MIB) out.push(pattern(Math.min(MIB, left), seed));
  return out;
}

function sizeRequest(bytes: number): Uint8Array {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(bytes));
  return b;
}

Deno.test("flow control (node:http2): a 10 MiB request on one stream, 2.5 stream windows, arrives whole", async () => {
  await withServer(async (port) => {
    const s = await connect(port);
    try {
      const r = await within(nodeCall(s, "/t.S/Sink", upload(10 * MIB, 1)), 20_000, "upload");
      assert.equal(r.status, "0");
      assert.deepEqual(JSON.parse(r.messages[0].toString()), {
        bytes: 10 * MIB,
        sum: expectedSum(10 * MIB, 1),
      });
    } finally {
      s.destroy();
    }
  });
});

Deno.test("flow control (node:http2): 8 streams of 5 MiB at once, 2.5 connection windows, all arrive whole", async () => {
  await withServer(async (port) => {
    const s = await connect(port);
    try {
      const calls = Array.from(
        { length: 8 },
        (_, k) =>
          nodeCall(s, "/t.S/Sink", upload(5 * MIB, k)).then((r) => {
            assert.equal(r.status, "0");
            assert.deepEqual(JSON.parse(r.messages[0].toString()), {
              bytes: 5 * MIB,
              sum: expectedSum(5 * MIB, k),
            });
          }),
      );
      await within(Promise.all(calls), 30_000, "uploads");
    } finally {
      s.destroy();
    }
  });
});

Deno.test("flow control (node:http2): responses past a 64 KiB client stream window, on one stream and on 8 at once", async () => {
  await withServer(async (port) => {
    const s = await connect(port, { initialWindowSize: 65536 });
    try {
      const check = async (bytes: number) => {
        const r = await nodeCall(s, "/t.S/Source", [sizeRequest(bytes)]);
        assert.equal(r.status, "0");
        assert.equal(r.messages.reduce((n, m) => n + m.length, 0), bytes);
        assert.equal(r.messages.reduce((n, m) => sumOf(m, n), 0), expectedSum(bytes, 7));
      };
      await within(check(8 * MIB), 20_000, "one stream");
      await within(Promise.all(Array.from({ length: 8 }, () => check(2 * MIB))), 30_000, "8");
    } finally {
      s.destroy();
    }
  });
});

// ---- python-hyper h2 ------------------------------------------------------------------------------

const PY_CLIENT = new URL("./testdata/h2_flow_client.py", import.meta.url).pathname;

interface PyResult {
  ok: boolean;
  error?: string;
  streams?: { status: string; bytes: number; sum: number; reply: string }[];
}

async function py(port: number, args: (string | number)[]): Promise<PyResult> {
  const out = await new Deno.Command("/usr/bin/python3", {
    args: [PY_CLIENT, String(port), ...args.map(String)],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.ok(out.success, `h2 client failed: ${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(text);
}

Deno.test("flow control (python h2): uploads of 10 MiB on one stream and 8 × 5 MiB on one connection arrive whole", async () => {
  await withServer(async (port) => {
    for (const [streams, bytes] of [[1, 10 * MIB], [8, 5 * MIB]]) {
      const r = await py(port, ["upload", streams, bytes]);
      assert.equal(r.error, undefined, `${streams} × ${bytes}`);
      assert.deepEqual(
        r.streams!.map((s) => [s.status, JSON.parse(s.reply)]),
        Array.from({ length: streams }, (_, k) => ["0", { bytes, sum: expectedSum(bytes, k) }]),
      );
    }
  });
});

Deno.test("flow control (python h2): downloads stay within the client's stream and connection windows", async () => {
  await withServer(async (port) => {
    // A 64 KiB stream window (the connection's is 65535 too): 8 MiB is 128 windows.
    const one = await py(port, ["download", 1, 8 * MIB, 65536]);
    assert.equal(one.error, undefined);
    assert.deepEqual(one.streams, [{
      status: "0",
      bytes: 8 * MIB,
      sum: expectedSum(8 * MIB, 7),
      reply: "",
    }]);
    // 1 MiB stream windows on 8 streams: the 65535-byte connection window is what limits.
    const many = await py(port, ["download", 8, 2 * MIB, MIB]);
    assert.equal(many.error, undefined);
    assert.deepEqual(
      many.streams,
      Array(8).fill({ status: "0", bytes: 2 * MIB, sum: expectedSum(2 * MIB, 7), reply: "" }),
    );
  });
});

// ---- grpc-js ---------------------------------------------------------------------------------------

Deno.test("flow control (grpc-js): 6 client-streaming calls of 6 MiB and 6 server-streaming calls of 6 MiB at once", async () => {
  const grpc = await import("../deps/grpc.ts");
  await withServer(async (port) => {
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const id = (b: Buffer) => b;
    try {
      const uploads = Array.from({ length: 6 }, (_, k) =>
        new Promise<void>((resolve, reject) => {
          const call = client.makeClientStreamRequest<Buffer, Buffer>(
            "/t.S/Sink",
            id,
            id,
            (err, reply) => {
              if (err) return reject(err);
              try {
                assert.deepEqual(JSON.parse(reply!.toString()), {
                  bytes: 6 * MIB,
                  sum: expectedSum(6 * MIB, k),
                });
                resolve();
              } catch (e) {
                reject(e);
              }
            },
          );
          for (const m of upload(6 * MIB, k)) call.write(Buffer.from(m));
          call.end();
        }));
      const downloads = Array.from({ length: 6 }, () =>
        new Promise<void>((resolve, reject) => {
          const call = client.makeServerStreamRequest<Buffer, Buffer>(
            "/t.S/Source",
            id,
            id,
            Buffer.from(sizeRequest(6 * MIB)),
          );
          let bytes = 0, sum = 0;
          call.on("data", (m: Buffer) => {
            bytes += m.length;
            sum = sumOf(m, sum);
          });
          call.on("error", reject);
          call.on("status", (st: { code: number }) => {
            try {
              assert.equal(st.code, 0);
              assert.deepEqual({ bytes, sum }, { bytes: 6 * MIB, sum: expectedSum(6 * MIB, 7) });
              resolve();
            } catch (e) {
              reject(e);
            }
          });
        }));
      await within(Promise.all([...uploads, ...downloads]), 30_000, "grpc-js calls");
    } finally {
      client.close();
    }
  });
});

// ---- nghttp2 (h2load) -------------------------------------------------------------------------------

Deno.test("flow control (h2load): 16 requests of 6 MiB, 8 at a time on one connection, and 16 downloads through 64 KiB windows", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-h2load-" });
  try {
    const up = `${dir}/up`, down = `${dir}/down`;
    await Deno.writeFile(up, Buffer.concat(upload(6 * MIB, 3).map((m) => grpcFrame(m))));
    await Deno.writeFile(down, grpcFrame(sizeRequest(4 * MIB)));
    await withServer(async (port) => {
      const run = async (path: string, data: string, extra: string[]) => {
        const out = await new Deno.Command("h2load", {
          args: [
            "-n16",
            "-c1",
            "-m8",
            // A stalled transfer fails instead of hanging: no frame for 10 s ends the connection.
            "-N10s",
            "-d",
            data,
            "-H",
            "content-type: application/grpc",
            "-H",
            "te: trailers",
            ...extra,
            `http://127.0.0.1:${port}${path}`,
          ],
          stdout: "piped",
          stderr: "piped",
          signal: AbortSignal.timeout(60_000),
        }).output();
        const text = new TextDecoder().decode(out.stdout);
        assert.match(text, /requests: 16 total, 16 started, 16 done, 16 succeeded, 0 failed/, text);
        return text;
      };
      await run("/t.S/Sink", up, []);
      // -w/-W: 2^16-1 byte stream and connection windows of the client.
      const text = await run("/t.S/Source", down, ["-w16", "-W16"]);
      // 16 × 4 MiB of messages (plus prefixes and headers) came through.
      const m = /^traffic: .*\((\d+)\) data$/m.exec(text);
      assert.ok(m && Number(m[1]) >= 16 * 4 * MIB, text);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---- raw frames: padding --------------------------------------------------------------------------

Deno.test("flow control (raw frames): padded DATA frames count whole but deliver only their data", async () => {
  await withServer(async (port) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      const body = grpcFrame(pattern(1000, 5));
      // Two PADDED DATA frames: pad length byte, data, 200 and 0 bytes of padding.
      const padded = (data: Uint8Array, pad: number, flags: number) => {
        const p = new Uint8Array(1 + data.length + pad);
        p[0] = pad;
        p.set(data, 1);
        return frame(FrameType.DATA, Flag.PADDED | flags, 1, p);
      };
      const headers = encodeHeaders([
        [":method", "POST"],
        [":scheme", "http"],
        [":path", "/t.S/Sink"],
        [":authority", "x"],
        ["content-type", "application/grpc"],
        ["te", "trailers"],
      ]);
      await conn.write(Buffer.concat([
        PREFACE,
        frame(FrameType.SETTINGS, 0, 0, new Uint8Array()),
        frame(FrameType.HEADERS, Flag.END_HEADERS, 1, headers),
        padded(body.subarray(0, 600), 200, 0),
        padded(body.subarray(600), 0, Flag.END_STREAM),
      ]));
      // Read frames until the stream's trailers; collect its DATA.
      let buf = Buffer.alloc(0);
      const data: Buffer[] = [];
      const chunk = new Uint8Array(65536);
      for (let done = false; !done;) {
        const n = await within(conn.read(chunk), 10_000, "response");
        assert.ok(n !== null, "connection closed early");
        buf = Buffer.concat([buf, chunk.subarray(0, n)]);
        while (buf.length >= 9 && buf.length >= 9 + buf.readUIntBE(0, 3)) {
          const len = buf.readUIntBE(0, 3), type = buf[3], flags = buf[4];
          const id = buf.readUInt32BE(5) & 0x7fffffff;
          assert.notEqual(type, FrameType.GOAWAY, "GOAWAY");
          if (type === FrameType.DATA && id === 1) data.push(buf.subarray(9, 9 + len));
          if (type === FrameType.HEADERS && id === 1 && flags & Flag.END_STREAM) done = true;
          buf = buf.subarray(9 + len);
        }
      }
      assert.deepEqual(JSON.parse(messagesOf(Buffer.concat(data))[0].toString()), {
        bytes: 1000,
        sum: sumOf(pattern(1000, 5)),
      });
    } finally {
      conn.close();
    }
  });
});

Deno.test("flow control (raw frames): the server gives back exactly the DATA it received, per stream and per connection", async () => {
  // 5 calls of 8 MiB (2 stream windows each, 2.5 connection windows in all), sent one after the
  // other in 16 KiB DATA frames without waiting for any WINDOW_UPDATE. The server's windows are
  // 4 MiB per stream (SETTINGS) and 16 MiB per connection; it gives back what was consumed each
  // time half a window is used, never on a frame that ends the stream (the stream is done).
  await withServer(async (port) => {
    const c = await RawClient.connect(port);
    try {
      const perCall = 8 * MIB, calls = 5, frameSize = 16384;
      const body = Buffer.concat(
        Array.from({ length: perCall / MIB }, () => grpcFrame(pattern(MIB - 5, 3))),
      );
      for (let i = 0; i < calls; i++) {
        const id = 1 + 2 * i;
        assert.ok(await c.write(c.headersFrame(id, grpcRequest("/t.S/Sink"))));
        for (let at = 0; at < body.length; at += frameSize) {
          const last = at + frameSize >= body.length;
          const ok = await c.send(
            FrameType.DATA,
            last ? Flag.END_STREAM : 0,
            id,
            body.subarray(at, at + frameSize),
          );
          assert.ok(ok, `connection closed at call ${i}, byte ${at}`);
        }
      }
      const ids = Array.from({ length: calls }, (_, i) => 1 + 2 * i);
      assert.ok(
        await c.until(() => ids.every((id) => (c.headers.get(id)?.length ?? 0) >= 2), 20_000),
        "every call answered",
      );
      assert.equal(c.goaway, undefined);
      assert.deepEqual([...c.resets()].filter(([, code]) => code !== 0), []);
      const updates = (id: number) =>
        c.frames.filter((f) => f.type === FrameType.WINDOW_UPDATE && f.id === id)
          .map((f) => f.payload.readUInt32BE(0));
      assert.equal(c.settings().get(4), 4 * MIB, "SETTINGS_INITIAL_WINDOW_SIZE");
      for (const id of ids) {
        assert.deepEqual(updates(id), [2 * MIB, 2 * MIB, 2 * MIB], `stream ${id}`);
      }
      assert.deepEqual(updates(0), [16 * MIB - 65535, 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB]);
      for (const id of ids) {
        const status = c.headers.get(id)!.at(-1)!.find(([k]) => k === "grpc-status")?.[1];
        assert.equal(status, "0", `stream ${id} status`);
      }
    } finally {
      await c.close();
    }
  });
});

/** A SETTINGS payload of one setting. */
function setting(id: number, value: number): Buffer {
  const b = Buffer.alloc(6);
  b.writeUInt16BE(id, 0);
  b.writeUInt32BE(value, 2);
  return b;
}

/** A WINDOW_UPDATE payload. */
function increment(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

Deno.test("flow control (raw frames): a response uses exactly the client's stream and connection windows as SETTINGS and WINDOW_UPDATEs change them", async () => {
  const { WINDOW_UPDATE, SETTINGS, DATA } = FrameType;
  const INITIAL_WINDOW_SIZE = 4, MAX_FRAME_SIZE = 5;
  await withServer(async (port) => {
    // A 1000-byte stream window; the connection window is the default 65535.
    const c = await RawClient.connect(port, { settings: [[INITIAL_WINDOW_SIZE, 1000]] });
    try {
      const size = 300_000, body = size + 5; // one message of 300000 bytes
      await c.write(
        c.headersFrame(1, grpcRequest("/t.S/Source")),
        frame(DATA, Flag.END_STREAM, 1, grpcFrame(sizeRequest(size))),
      );
      const sentAfter = async (n: number, what: string) => {
        assert.ok(await c.until(() => c.dataOn(1) >= n), `${what}: ${c.dataOn(1)} of ${n} bytes`);
        assert.ok(await c.roundTrip());
        assert.equal(c.dataOn(1), n, what);
      };
      await sentAfter(1000, "the stream window of the client's SETTINGS");
      await c.send(WINDOW_UPDATE, 0, 1, increment(500));
      await sentAfter(1500, "a stream WINDOW_UPDATE of 500");
      await c.send(SETTINGS, 0, 0, setting(INITIAL_WINDOW_SIZE, 3000));
      await sentAfter(3500, "a larger initial window adds the difference to the open stream");
      // A smaller one takes it back: the window is -1000, and 1500 more gives room for 500.
      await c.send(SETTINGS, 0, 0, setting(INITIAL_WINDOW_SIZE, 2000));
      await c.send(WINDOW_UPDATE, 0, 1, increment(1500));
      await sentAfter(4000, "a smaller initial window");
      await c.send(WINDOW_UPDATE, 0, 1, increment(1_000_000));
      await sentAfter(65535, "the connection window");
      await c.send(WINDOW_UPDATE, 0, 0, increment(10_000));
      await sentAfter(75535, "a connection WINDOW_UPDATE of 10000");
      const frames = () =>
        c.frames.filter((f) => f.type === DATA && f.id === 1).map((f) => f.length);
      assert.equal(Math.max(...frames()), 16384, "DATA frames of at most the default 16384 bytes");
      // A larger SETTINGS_MAX_FRAME_SIZE allows larger DATA frames; the rest of the window opens.
      await c.send(SETTINGS, 0, 0, setting(MAX_FRAME_SIZE, 65536));
      await c.send(WINDOW_UPDATE, 0, 0, increment(body - 75535));
      assert.ok(await c.until(() => (c.headers.get(1)?.length ?? 0) >= 2), "trailers");
      assert.equal(c.dataOn(1), body);
      assert.equal(Math.max(...frames()), 65536, "DATA frames up to the new maximum");
      const status = c.headers.get(1)!.at(-1)!.find(([k]) => k === "grpc-status")?.[1];
      assert.equal(status, "0");
      assert.equal(c.goaway, undefined);
    } finally {
      await c.close();
    }
  });
});

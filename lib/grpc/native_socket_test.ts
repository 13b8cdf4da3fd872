import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import { Connection } from "./h2/connection.ts";
import { Flag, frame, FrameType, PREFACE } from "./h2/frames.ts";
import { encodeHeaders } from "./h2/hpack.ts";
import { type GrpcCall, GrpcStatus, listenGrpc } from "./mod.ts";
import { concat, grpcFrame, grpcRequest, RawClient } from "./testing.ts";
import { NativeSocket } from "./native_socket.ts";

const { DATA, HEADERS, SETTINGS } = FrameType;
const PATH = "/t.S/Collect";

/** Message `i`: `n` bytes of a pattern of its own. */
const message = (i: number, n: number) =>
  Buffer.from(Array.from({ length: n }, (_, k) => (k * 31 + i * 17) % 251));

/**
 * What a client writes for one call on stream `id`: HEADERS, then the messages as DATA frames of
 * at most 16 KiB, the last with END_STREAM.
 */
function call(id: number, messages: Uint8Array[]): Uint8Array {
  const body = concat(...messages.map((m) => grpcFrame(m)));
  const frames: Uint8Array[] = [
    frame(HEADERS, Flag.END_HEADERS, id, encodeHeaders(grpcRequest(PATH))),
  ];
  for (let at = 0; at < body.length; at += 16384) {
    const end = Math.min(body.length, at + 16384);
    frames.push(frame(DATA, end === body.length ? Flag.END_STREAM : 0, id, body.subarray(at, end)));
  }
  return concat(...frames);
}

/** A socket that hands every chunk out of one buffer, scribbled over after each `data` event. */
class ReusingSocket extends EventEmitter {
  readonly transientReads = true;
  readonly remoteFamily = "IPv4";
  readonly remoteAddress = "127.0.0.1";
  readonly remotePort = 1;
  destroyed = false;
  writable = true;
  written: Uint8Array[] = [];
  #buf = Buffer.alloc(1024);
  setNoDelay(): this {
    return this;
  }
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  write(b: Uint8Array, cb?: (e?: Error | null) => void): boolean {
    this.written.push(Uint8Array.from(b));
    setTimeout(() => cb?.(null), 0);
    return true;
  }
  end(): this {
    return this;
  }
  destroy(): this {
    this.destroyed = true;
    return this;
  }
  /** Delivers `wire` in reads of the given sizes (cycled), each through the same buffer. */
  feed(wire: Uint8Array, sizes: number[]): void {
    for (let at = 0, i = 0; at < wire.length; i++) {
      const n = Math.min(sizes[i % sizes.length], wire.length - at, this.#buf.length);
      this.#buf.set(wire.subarray(at, at + n));
      this.emit("data", this.#buf.subarray(0, n));
      this.#buf.fill(0xee);
      at += n;
    }
  }
}

Deno.test("Connection keeps the bytes of frames split over reads when the socket reuses its read buffer", () => {
  const socket = new ReusingSocket();
  const got: Buffer[] = [];
  const errors: string[] = [];
  const conn = new Connection(socket as unknown as Socket, {
    handlers: new Map([[PATH, (c: GrpcCall) => {
      c.onMessage = (m) => got.push(Buffer.from(m));
    }]]),
    onError: (m) => errors.push(m),
    limits: { prefaceTimeoutMs: 0, keepaliveIntervalMs: 0 },
  });
  const sent = [message(1, 40_000), message(2, 3), message(3, 20_000), message(4, 100)];
  const wire = concat(
    PREFACE,
    frame(SETTINGS, 0, 0),
    call(1, sent.slice(0, 2)),
    call(3, sent.slice(2)),
  );
  // Reads that end inside frame headers, payloads and message prefixes.
  socket.feed(wire, [7, 1000, 3, 999, 512, 1, 1024, 13]);
  assert.deepEqual(errors, []);
  assert.equal(got.length, sent.length);
  got.forEach((m, i) => assert.ok(m.equals(sent[i]), `message ${i} intact`));
  assert.equal(conn.failed, false);
  socket.emit("close");
});

Deno.test("listenGrpc() with nativeReads serves calls whose messages arrive in pieces, each intact", async () => {
  const got: Buffer[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    nativeReads: true,
    acceptCheckMs: 0,
    handlers: new Map([[PATH, (c: GrpcCall) => {
      c.onMessage = (m) => got.push(Buffer.from(m));
      c.onEnd = () => c.end(GrpcStatus.OK);
    }]]),
  });
  try {
    const c = await RawClient.connect(listener.port);
    try {
      const sent = [message(5, 50_000), message(6, 7), message(7, 33_333)];
      const wire = call(1, sent);
      // Pieces with pauses between them, so that they arrive in separate reads.
      for (let at = 0, i = 0; at < wire.length; i++) {
        const n = [5, 4000, 9, 16_000, 1][i % 5];
        await c.write(wire.subarray(at, at + n));
        at += n;
        if (i % 3 === 0) await new Promise((r) => setTimeout(r, 2));
      }
      assert.ok(await c.until(() => (c.headers.get(1)?.length ?? 0) >= 1), "response");
      assert.deepEqual(c.headers.get(1)![0].find(([k]) => k === "grpc-status"), [
        "grpc-status",
        "0",
      ]);
      assert.equal(got.length, sent.length);
      got.forEach((m, i) => assert.ok(m.equals(sent[i]), `message ${i} intact`));
    } finally {
      await c.close();
    }
  } finally {
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("NativeSocket writes in order, reads after resume(), and closes once after end()", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const client = Deno.connect({ hostname: "127.0.0.1", port: l.addr.port });
    const s = new NativeSocket(await l.accept(), 64);
    const peer = await client;
    const chunks: string[] = [];
    s.on("data", (c: Uint8Array) => chunks.push(new TextDecoder().decode(c)));
    let closes = 0;
    s.on("close", () => closes++);
    await peer.write(new TextEncoder().encode("before resume"));
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(chunks, [], "paused until resume()");
    s.resume();
    const done: number[] = [];
    for (let i = 0; i < 5; i++) s.write(new TextEncoder().encode(`w${i};`), () => done.push(i));
    s.end();
    let text = "";
    const buf = new Uint8Array(256);
    for (;;) {
      const n = await peer.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    assert.equal(text, "w0;w1;w2;w3;w4;");
    assert.deepEqual(done, [0, 1, 2, 3, 4]);
    assert.equal(chunks.join(""), "before resume");
    peer.close();
    assert.ok(
      await new Promise((r) => {
        const t = setInterval(() => closes && (clearInterval(t), r(true)), 5);
      }),
    );
    assert.equal(closes, 1);
    assert.equal(s.write(new Uint8Array(1)), false);
  } finally {
    l.close();
  }
});

Deno.test("listenGrpc() with nativeReads on a shared port reads through node:net, and says so, without --unstable-net", async () => {
  const listener = new URL("./listener.ts", import.meta.url).href;
  const script = `
    const { listenGrpc, unstableNet } = await import(${JSON.stringify(listener)});
    if (unstableNet()) throw new Error("unstable net enabled");
    const errors = [];
    const l = await listenGrpc({
      host: "127.0.0.1", port: 0, handlers: new Map(), nativeReads: true, acceptCheckMs: 0,
      reusePort: { index: 0, of: 1 }, onError: (m) => errors.push(m),
    });
    const c = await Deno.connect({ hostname: "127.0.0.1", port: l.port });
    c.close();
    await l.close(14, "over", 100);
    console.log(JSON.stringify(errors));`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), [
    "reading through node:net: Deno.listen({ reusePort }) needs --unstable-net",
  ]);
});

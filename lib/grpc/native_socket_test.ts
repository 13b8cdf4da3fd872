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

/** A NativeSocket over an accepted loopback connection, and the peer's end of it. */
async function nativePair(): Promise<{ s: NativeSocket; peer: Deno.Conn; close: () => void }> {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const client = Deno.connect({ hostname: "127.0.0.1", port: l.addr.port });
  const s = new NativeSocket(await l.accept());
  const peer = await client;
  l.close();
  return {
    s,
    peer,
    close: () => {
      s.destroy();
      try {
        peer.close();
      } catch {
        // closed by the test
      }
    },
  };
}

/** Events of `s`: how many `error`, `end` and `close` it emitted. */
function counted(s: NativeSocket) {
  const n = { error: 0, end: 0, close: 0 };
  s.on("error", () => n.error++);
  s.on("end", () => n.end++);
  s.on("close", () => n.close++);
  return n;
}

const waitFor = async (pred: () => boolean, what: string) => {
  const deadline = Date.now() + 5000;
  while (!pred()) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

Deno.test("NativeSocket keeps large writes whole and in order while the peer reads nothing, and calls back in order", async () => {
  const { s, peer, close } = await nativePair();
  try {
    const size = 1 << 21; // 2 MiB each: far more than the socket buffers hold
    const done: number[] = [];
    for (let i = 0; i < 4; i++) {
      assert.equal(s.write(new Uint8Array(size).fill(i + 1), () => done.push(i)), true);
    }
    await new Promise((r) => setTimeout(r, 50)); // the writes back up
    const got = new Uint8Array(4 * size);
    for (let at = 0; at < got.length;) {
      const n = await peer.read(got.subarray(at));
      assert.ok(n !== null, `the stream ended after ${at} bytes`);
      at += n;
    }
    for (let i = 0; i < 4; i++) {
      const part = got.subarray(i * size, (i + 1) * size);
      assert.ok(part.every((b) => b === i + 1), `write ${i} whole, in its place`);
    }
    await waitFor(() => done.length === 4, "the callbacks");
    assert.deepEqual(done, [0, 1, 2, 3]);
  } finally {
    close();
  }
});

for (const reading of [false, true]) {
  Deno.test(`NativeSocket ${reading ? "reading" : "paused"}: a peer that resets the connection fails every queued write, and the socket ends once`, async () => {
    const { s, peer, close } = await nativePair();
    try {
      const n = counted(s);
      if (reading) s.resume();
      // unread bytes at the peer make its close a reset (RST)
      await new Promise((r) => s.write(new Uint8Array(1000), r));
      await new Promise((r) => setTimeout(r, 20));
      peer.close();
      await new Promise((r) => setTimeout(r, 20));
      const results: (Error | null | undefined)[] = [];
      s.write(new Uint8Array(1 << 20)); // without a callback: fails quietly
      for (let i = 0; i < 3; i++) s.write(new Uint8Array(1 << 20), (e) => results.push(e));
      await waitFor(() => results.length === 3 && n.close > 0, "the callbacks and the close");
      assert.ok(results.every((e) => e instanceof Error), `every write failed: ${results}`);
      // Paused, the write meets the reset: an error. Reading, the read meets it first: an error,
      // or (Deno 2.7.14 reads a reset as the end of the stream) an end.
      if (!reading) assert.deepEqual(n, { error: 1, end: 0, close: 1 });
      else assert.ok(n.close === 1 && n.error + n.end === 1, JSON.stringify(n));
      assert.deepEqual([s.destroyed, s.writable], [true, false]);
      assert.equal(s.write(new Uint8Array(1)), false, "nothing is written once destroyed");
    } finally {
      close();
    }
  });
}

Deno.test("NativeSocket end(): the peer sees the end at once with nothing queued, writes after it fail, and a paused socket still closes at the peer's end, once", async () => {
  const { s, peer, close } = await nativePair();
  try {
    const n = counted(s);
    assert.equal(s.writable, true);
    s.end(); // never resumed: paused
    s.end();
    const buf = new Uint8Array(16);
    assert.equal(await peer.read(buf), null, "the peer read the end");
    let err: Error | null | undefined;
    assert.equal(s.write(new Uint8Array(1), (e) => err = e), false);
    await waitFor(() => err !== undefined, "the failed write's callback");
    assert.ok(err instanceof Error);
    assert.equal(s.writable, false);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(n, { error: 0, end: 0, close: 0 }, "open until the peer ends its side");
    peer.close();
    await waitFor(() => n.close > 0, "the close");
    s.destroy();
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(n, { error: 0, end: 1, close: 1 });
  } finally {
    close();
  }
});

for (const host of ["127.0.0.1", "::1"]) {
  Deno.test(`listenGrpc() with nativeReads tells a call its peer as grpc-js does (${host})`, async () => {
    const peers: string[] = [];
    const listener = await listenGrpc({
      host,
      port: 0,
      nativeReads: true,
      acceptCheckMs: 0,
      handlers: new Map([[PATH, (c: GrpcCall) => {
        peers.push(c.peer);
        c.onEnd = () => c.end(GrpcStatus.OK);
      }]]),
    });
    const conn = await Deno.connect({ hostname: host, port: listener.port });
    try {
      await conn.write(concat(PREFACE, frame(SETTINGS, 0, 0), call(1, [message(1, 10)])));
      await waitFor(() => peers.length === 1, "the call");
      const port = (conn.localAddr as Deno.NetAddr).port;
      assert.equal(peers[0], host === "::1" ? `ipv6:[::1]:${port}` : `ipv4:127.0.0.1:${port}`);
    } finally {
      conn.close();
      await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
    }
  });
}

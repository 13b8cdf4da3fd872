/**
 * A randomized frame-sequence fuzzer for the transport: 10 000 sequences of mostly plausible
 * frames (valid requests, bad flags, wrong sizes, odd stream ids, truncations, garbage) fed to a
 * {@link Connection} over an in-memory socket in random chunks. Asserts that nothing throws out of
 * the connection, that everything it writes is well-formed HTTP/2 frames, that each connection lets
 * go of its streams when closed, and that memory stays bounded. The seed is printed; rerun one
 * with `FUZZ_SEED=<seed> deno test -A lib/grpc/fuzz_test.ts` (`FUZZ_SEQUENCES` sets the count).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import { frame, FrameType, PREFACE } from "./h2/frames.ts";
import { encodeHeaders, type HeaderList } from "./h2/hpack.ts";
import { type CallHandler, GrpcStatus } from "./mod.ts";
import { Connection } from "./h2/connection.ts";
import { grpcFrame, grpcRequest } from "./testing.ts";
import { rng } from "../../tests/fuzz/_gen.ts";

type Rng = ReturnType<typeof rng>;

/** An in-memory socket: records what the connection writes, completes writes asynchronously. */
class FakeSocket extends EventEmitter {
  remoteFamily = "IPv4";
  remoteAddress = "127.0.0.1";
  remotePort = 1;
  writable = true;
  destroyed = false;
  out: Buffer[] = [];
  setNoDelay() {}
  pause() {}
  resume() {}
  write(b: Uint8Array, cb?: (e?: Error | null) => void) {
    this.out.push(Buffer.from(b));
    queueMicrotask(() => cb?.(this.destroyed ? new Error("destroyed") : null));
    return true;
  }
  end() {
    this.writable = false;
  }
  destroy() {
    if (this.destroyed) return;
    this.destroyed = true;
    this.writable = false;
    queueMicrotask(() => this.emit("close"));
  }
}

const PATH = "/t.S/Echo";
const handlers = new Map<string, CallHandler>([[PATH, (c) => {
  c.onMessage = (m) => void c.send([Buffer.from(m), Buffer.alloc(m.length % 7)]).catch(() => {});
  c.onEnd = () => c.end(GrpcStatus.OK);
}]]);

function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
}

/** A well-formed frame a real client could send (requests, messages, pings, resets, updates). */
function tameFrame(r: Rng, streams: number[]): Uint8Array {
  const open = () => {
    const id = (streams.at(-1) ?? -1) + 2;
    streams.push(id);
    return id;
  };
  const some = () => r.pick(streams);
  switch (streams.length ? r.int(6) : 0) {
    case 0:
      return frame(FrameType.HEADERS, r.pick([4, 5]), open(), encodeHeaders(grpcRequest(PATH)));
    case 1:
    case 2:
      return frame(
        FrameType.DATA,
        r.pick([0, 0, 1]),
        some(),
        grpcFrame(new Uint8Array(r.int(3000))),
      );
    case 3:
      return frame(FrameType.WINDOW_UPDATE, 0, r.chance(0.5) ? 0 : some(), u32(1 + r.int(100000)));
    case 4:
      return frame(FrameType.RST_STREAM, 0, some(), u32(8));
    default:
      return frame(FrameType.SETTINGS, 0, 0, Buffer.from([0, 4, 0, 1, 0, 0]));
  }
}

/** One random frame (or a few bytes of garbage). */
function randomFrame(r: Rng, streams: number[]): Uint8Array {
  const sid = () =>
    r.chance(0.7) && streams.length ? r.pick(streams) : r.pick([0, 1, 2, 3, 5, 7, 2 ** 31 - 1]);
  const newId = () => {
    const id = (streams.at(-1) ?? -1) + 2;
    streams.push(id);
    return id;
  };
  const flags = () => r.chance(0.5) ? r.int(256) : r.pick([0, 1, 4, 5, 8, 0x20, 0x24, 0x25]);
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => r.int(256)));
  switch (r.int(13)) {
    case 0: {
      const h: HeaderList = r.chance(0.8) ? grpcRequest(PATH) : grpcRequest(r.pick(["/x", ""]));
      if (r.chance(0.2)) h.push([r.pick(["Upper", "connection", "te", ":path"]), "x"]);
      return frame(FrameType.HEADERS, r.pick([4, 5, 0, 0x24, 0x2c]), newId(), encodeHeaders(h));
    }
    case 1:
      return frame(FrameType.HEADERS, flags(), sid(), bytes(r.int(40)));
    case 2:
      return frame(FrameType.CONTINUATION, flags(), sid(), bytes(r.int(20)));
    case 3:
    case 4:
      return frame(
        FrameType.DATA,
        r.pick([0, 1, 8, 9]),
        sid(),
        r.chance(0.7) ? grpcFrame(bytes(r.int(200))) : bytes(r.int(300)),
      );
    case 5:
      return frame(
        FrameType.RST_STREAM,
        0,
        sid(),
        r.chance(0.9) ? u32(r.int(14)) : bytes(r.int(8)),
      );
    case 6: {
      const n = r.int(4);
      const p = Buffer.alloc(n * 6 + (r.chance(0.05) ? 1 : 0));
      for (let i = 0; i < n; i++) {
        p.writeUInt16BE(r.int(8), i * 6);
        p.writeUInt32BE(r.chance(0.5) ? r.int(70000) : r.int(2 ** 32), i * 6 + 2);
      }
      return frame(FrameType.SETTINGS, r.chance(0.1) ? 1 : 0, r.chance(0.05) ? 1 : 0, p);
    }
    case 7:
      return frame(
        FrameType.PING,
        r.chance(0.2) ? 1 : 0,
        r.chance(0.05) ? 1 : 0,
        bytes(r.chance(0.9) ? 8 : r.int(12)),
      );
    case 8:
      return frame(FrameType.PRIORITY, 0, sid(), bytes(r.chance(0.9) ? 5 : r.int(8)));
    case 9:
      return frame(
        FrameType.WINDOW_UPDATE,
        0,
        sid(),
        r.chance(0.9) ? u32(r.int(2 ** 31)) : bytes(r.int(6)),
      );
    case 10:
      return frame(FrameType.GOAWAY, 0, r.chance(0.9) ? 0 : 1, bytes(8 + r.int(10)));
    case 11:
      return frame(10 + r.int(240), flags(), sid(), bytes(r.int(30)));
    default: {
      // A frame header claiming more (or less) than follows, or raw garbage.
      const b = frame(r.int(10), flags(), sid(), bytes(r.int(30)));
      if (r.chance(0.5)) b.writeUIntBE(r.int(20000), 0, 3);
      return r.chance(0.5) ? b : bytes(r.int(20));
    }
  }
}

/**
 * Checks that `out` is a sequence of whole frames within the default max frame size; returns
 * their types.
 */
function checkOutput(out: Buffer): number[] {
  const types: number[] = [];
  let at = 0;
  while (at < out.length) {
    assert.ok(out.length - at >= 9, "a truncated frame header");
    const len = out.readUIntBE(at, 3);
    assert.ok(len <= 16384, `an output frame of ${len} bytes`);
    assert.ok(at + 9 + len <= out.length, "a truncated frame");
    types.push(out[at + 3]);
    at += 9 + len;
  }
  return types;
}

Deno.test("fuzz: random frame sequences never crash the connection, output stays well-formed, memory bounded", async () => {
  const seed = Number(Deno.env.get("FUZZ_SEED") ?? Math.floor(Math.random() * 2 ** 31));
  const count = Number(Deno.env.get("FUZZ_SEQUENCES") ?? 10_000);
  console.log(`fuzz seed ${seed} (rerun with FUZZ_SEED=${seed}), ${count} sequences`);
  const r = rng(seed);
  const rssBefore = Deno.memoryUsage().rss;
  let goaways = 0;
  for (let i = 0; i < count; i++) {
    const socket = new FakeSocket();
    const conn = new Connection(socket as unknown as Socket, {
      handlers,
      limits: { prefaceTimeoutMs: 0, keepaliveIntervalMs: 0 },
      onError: Deno.env.get("FUZZ_DEBUG")
        ? (m) => tame && console.log(m.replace(/from \S+ /, ""))
        : undefined,
    });
    const streams: number[] = [];
    const parts: Uint8Array[] = [];
    // A third of the sequences are mostly well-formed, to reach the deeper states.
    const tame = r.chance(1 / 3);
    if (r.chance(0.97)) parts.push(PREFACE, frame(FrameType.SETTINGS, 0, 0));
    else parts.push(Buffer.from(PREFACE.subarray(0, r.int(PREFACE.length))), Buffer.from("GET /"));
    const n = 1 + r.int(30);
    for (let k = 0; k < n; k++) {
      parts.push(tame && r.chance(0.95) ? tameFrame(r, streams) : randomFrame(r, streams));
    }
    const wire = Buffer.concat(parts);
    try {
      // Delivered in random chunks, with microtasks (flushes, write callbacks) in between.
      for (let at = 0; at < wire.length && !socket.destroyed;) {
        const len = 1 + r.int(r.chance(0.5) ? 64 : wire.length);
        socket.emit("data", wire.subarray(at, at + len));
        at += len;
        if (r.chance(0.3)) await Promise.resolve();
      }
      for (let k = 0; k < 4; k++) await Promise.resolve();
      // A macrotask now and then: the transport's per-tick write budget resets in one.
      if (i % 50 === 0) await new Promise((res) => setTimeout(res, 0));
    } catch (e) {
      throw new Error(`sequence ${i} (seed ${seed}) threw: ${(e as Error).stack}`);
    }
    const out = Buffer.concat(socket.out);
    if (checkOutput(out).includes(FrameType.GOAWAY)) goaways++;
    socket.emit("close");
    await Promise.resolve();
    assert.equal(conn.streams, 0, `sequence ${i}: streams left after close`);
  }
  const growth = Deno.memoryUsage().rss - rssBefore;
  console.log(
    `fuzz: ${count} sequences, ${goaways} ended in GOAWAY; RSS +${
      (growth / 2 ** 20).toFixed(1)
    } MB`,
  );
  assert.ok(goaways > count / 10, "the sequences hardly exercise the error paths");
  assert.ok(growth < 256 * 2 ** 20, `RSS grew ${growth} bytes`);
});

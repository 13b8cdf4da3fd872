/**
 * Test and benchmark support for the transport: a raw HTTP/2 client that writes frames by hand
 * ({@link RawClient}), the attack classes the transport defends against ({@link ATTACKS}, shared by
 * `lib/grpc/attack_test.ts` and `bench/h2_attack.ts`), a normal client probing another connection
 * while an attack runs ({@link startProbe}), and the RSS of a process ({@link rssOf}).
 * @module
 */

import { Buffer } from "node:buffer";
import net from "node:net";
import { Flag, frame, FrameType, PREFACE } from "./h2/frames.ts";
import { encodeHeaders, type HeaderList, HpackDecoder } from "./h2/hpack.ts";
import type { GrpcCall } from "./h2/stream.ts";
import { MessageBuilder } from "../protowire/mod.ts";

const { DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PING, GOAWAY } = FrameType;
const { WINDOW_UPDATE, CONTINUATION } = FrameType;
const { END_STREAM, END_HEADERS } = Flag;

/**
 * A call as its handler sees it, without a connection, recording what the handler does (`send N`
 * with N parts, `end S` or `end S message`): `send` stays pending until `written()`, and `sent`
 * resolves at the first send.
 */
export function recordingCall(path: string, headers: HeaderList = []): {
  call: GrpcCall;
  events: string[];
  sent: Promise<void>;
  written: () => void;
} {
  const events: string[] = [];
  let written = () => {};
  let onSent = () => {};
  const sent = new Promise<void>((r) => onSent = r);
  const call = {
    path,
    headers,
    peer: "ipv4:127.0.0.1:1",
    socket: {},
    onMessage: (_m: Buffer) => {},
    onEnd: () => {},
    onCancel: (_why: string) => {},
    send(parts: readonly Uint8Array[]) {
      events.push(`send ${parts.length}`);
      onSent();
      return new Promise<void>((resolve) => written = resolve);
    },
    end(status: number, message?: string) {
      events.push(`end ${status}${message ? ` ${message}` : ""}`);
    },
  } as unknown as GrpcCall;
  return { call, events, sent, written: () => written() };
}

/** The bytes of `parts` one after another, in a new array. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** HTTP/2 error code names (RFC 9113 §7), for answers. */
export const ERROR_NAMES: Record<number, string> = {
  0: "NO_ERROR",
  1: "PROTOCOL_ERROR",
  2: "INTERNAL_ERROR",
  3: "FLOW_CONTROL_ERROR",
  5: "STREAM_CLOSED",
  6: "FRAME_SIZE_ERROR",
  7: "REFUSED_STREAM",
  8: "CANCEL",
  9: "COMPRESSION_ERROR",
  11: "ENHANCE_YOUR_CALM",
};

/** One frame received from the server. */
export interface RawFrame {
  type: number;
  flags: number;
  id: number;
  /** The payload (empty for DATA: counted, not kept). */
  payload: Buffer;
  /** The payload's length as received (DATA included). */
  length: number;
}

/** The server's GOAWAY. */
export interface Goaway {
  lastStreamId: number;
  code: number;
  /** `ENHANCE_YOUR_CALM`, ... */
  name: string;
  debug: string;
}

/** A 5-byte-prefixed gRPC message. */
export function grpcFrame(body: Uint8Array, compressed = false): Buffer {
  const b = Buffer.alloc(5 + body.length);
  b[0] = compressed ? 1 : 0;
  b.writeUInt32BE(body.length, 1);
  b.set(body, 5);
  return b;
}

/** The messages of received gRPC bytes (5-byte-prefixed messages back to back). */
export function messagesOf(data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at + 5 <= data.length;) {
    const len = data.readUInt32BE(at + 1);
    out.push(data.subarray(at + 5, at + 5 + len));
    at += 5 + len;
  }
  return out;
}

/** The request headers of a gRPC call to `path` (plus `extra`). */
export function grpcRequest(path: string, extra: HeaderList = []): HeaderList {
  return [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", path],
    [":authority", "127.0.0.1"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ...extra,
  ];
}

/**
 * An HTTP/2 client whose frames are written by hand: it sends the preface and a SETTINGS frame,
 * records every frame the server sends, and never answers anything on its own (no SETTINGS ack,
 * no PING ack, no WINDOW_UPDATE) unless asked.
 */
export class RawClient {
  readonly frames: RawFrame[] = [];
  /** Decoded response header blocks by stream id (headers, then trailers). */
  readonly headers = new Map<number, HeaderList[]>();
  /** Bytes received on DATA frames. */
  dataBytes = 0;
  #buf: Buffer = Buffer.alloc(0);
  #hpack = new HpackDecoder({ maxHeaderListSize: 1 << 20 });
  #waiters = new Set<() => void>();
  #closed = false;
  #pings = 0;
  /** Resolves when the server closed the connection (or it failed). */
  readonly closed: Promise<void>;

  private constructor(readonly socket: net.Socket) {
    socket.on("data", (c: Buffer) => this.#receive(c));
    socket.on("error", () => {});
    this.closed = new Promise<void>((resolve) => {
      socket.once("close", () => {
        this.#closed = true;
        this.#wake();
        resolve();
      });
    });
  }

  /**
   * Connects to 127.0.0.1:`port` (or the unix socket `path`); with `preface` (default) sends the
   * client preface and SETTINGS (`settings`: [id, value] pairs); `localAddress` picks the source
   * address (e.g. 127.0.0.2).
   */
  static connect(
    port: number,
    opts: {
      preface?: boolean;
      settings?: [number, number][];
      localAddress?: string;
      path?: string;
    } = {},
  ): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const where = opts.path
        ? { path: opts.path }
        : { port, host: "127.0.0.1", localAddress: opts.localAddress };
      const socket = net.connect(where, () => {
        socket.off("error", reject);
        const c = new RawClient(socket);
        if (opts.preface ?? true) {
          const s = Buffer.alloc(6 * (opts.settings?.length ?? 0));
          opts.settings?.forEach(([k, v], i) => {
            s.writeUInt16BE(k, i * 6);
            s.writeUInt32BE(v, i * 6 + 2);
          });
          c.write(PREFACE, frame(SETTINGS, 0, 0, s));
        }
        resolve(c);
      });
      socket.once("error", reject);
    });
  }

  /** True once the server closed the connection. */
  get isClosed(): boolean {
    return this.#closed;
  }

  /** Writes raw bytes; resolves false when the socket is gone, after a drain when backed up. */
  async write(...bufs: Uint8Array[]): Promise<boolean> {
    if (this.#closed || this.socket.destroyed) return false;
    const ok = this.socket.write(bufs.length === 1 ? bufs[0] : Buffer.concat(bufs));
    if (ok) return true;
    let timer: number | undefined;
    await Promise.race([
      new Promise<void>((r) => this.socket.once("drain", () => r())),
      this.closed,
      new Promise<void>((r) => timer = setTimeout(r, 200)),
    ]);
    clearTimeout(timer);
    return !this.#closed;
  }

  /** Writes one frame. */
  send(type: number, flags: number, id: number, payload?: Uint8Array): Promise<boolean> {
    return this.write(frame(type, flags, id, payload));
  }

  /** A HEADERS frame (END_HEADERS) with `headers` encoded. */
  headersFrame(id: number, headers: HeaderList, flags = 0): Buffer {
    return frame(HEADERS, END_HEADERS | flags, id, encodeHeaders(headers));
  }

  /** The server's GOAWAY, once received. */
  get goaway(): Goaway | undefined {
    const f = this.frames.find((f) => f.type === GOAWAY);
    if (!f) return undefined;
    const code = f.payload.readUInt32BE(4);
    return {
      lastStreamId: f.payload.readUInt32BE(0) & 0x7fffffff,
      code,
      name: ERROR_NAMES[code] ?? String(code),
      debug: f.payload.subarray(8).toString(),
    };
  }

  /** Bytes received on DATA frames of stream `id`. */
  dataOn(id: number): number {
    let n = 0;
    for (const f of this.frames) if (f.type === DATA && f.id === id) n += f.length;
    return n;
  }

  /** Sends a PING and resolves once it is acknowledged: the server handled what came before. */
  async roundTrip(ms = 10_000): Promise<boolean> {
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(++this.#pings, 4);
    if (!await this.send(PING, 0, 0, payload)) return false;
    return this.until(
      () => this.frames.some((f) => f.type === PING && f.flags & 1 && f.payload.equals(payload)),
      ms,
    );
  }

  /** RST_STREAM codes received, by stream id. */
  resets(): Map<number, number> {
    const m = new Map<number, number>();
    for (const f of this.frames) if (f.type === RST_STREAM) m.set(f.id, f.payload.readUInt32BE(0));
    return m;
  }

  /** The server's SETTINGS (non-ack) as a map. */
  settings(): Map<number, number> {
    const m = new Map<number, number>();
    for (const f of this.frames) {
      if (f.type !== SETTINGS || f.flags & 1) continue;
      for (let i = 0; i + 6 <= f.payload.length; i += 6) {
        m.set(f.payload.readUInt16BE(i), f.payload.readUInt32BE(i + 2));
      }
    }
    return m;
  }

  /** Resolves when `pred()` holds or the connection closed, false after `ms`. */
  async until(pred: () => boolean, ms = 10_000): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!pred()) {
      if (this.#closed) return pred();
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((r) => {
        const t = setTimeout(done, Math.min(left, 100));
        function done() {
          clearTimeout(t);
          r();
        }
        this.#waiters.add(done);
      });
    }
    return true;
  }

  /** Closes the connection. */
  close(): Promise<void> {
    this.socket.destroy();
    return this.closed;
  }

  #wake(): void {
    const ws = [...this.#waiters];
    this.#waiters.clear();
    for (const w of ws) w();
  }

  #receive(c: Buffer): void {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, c]) : c;
    while (this.#buf.length >= 9) {
      const len = this.#buf.readUIntBE(0, 3);
      if (this.#buf.length < 9 + len) break;
      const f: RawFrame = {
        type: this.#buf[3],
        flags: this.#buf[4],
        id: this.#buf.readUInt32BE(5) & 0x7fffffff,
        payload: Buffer.from(this.#buf.subarray(9, 9 + len)),
        length: len,
      };
      this.#buf = this.#buf.subarray(9 + len);
      if (f.type === DATA) {
        this.dataBytes += len;
        f.payload = Buffer.alloc(0); // counted, not kept
      }
      if (f.type === HEADERS) {
        const list = this.headers.get(f.id) ?? [];
        list.push(this.#hpack.decode(f.payload));
        this.headers.set(f.id, list);
      }
      if (this.frames.length < 100_000 || f.type === GOAWAY) this.frames.push(f);
    }
    this.#wake();
  }
}

/**
 * A client of `port` that sent its preface and acknowledged SETTINGS (kept in `into`, for the
 * caller to close): true when the server serves it (a PING answered within `ms`), false when it
 * was closed at once (refused).
 */
export async function servedClient(port: number, into: RawClient[], ms = 5000): Promise<boolean> {
  const c = await RawClient.connect(port);
  into.push(c);
  await c.send(SETTINGS, 1, 0);
  return await c.roundTrip(ms);
}

/** Polls `pred` every 5 ms until it holds, for at most `ms`; answers whether it held. */
export async function eventually(pred: () => boolean, ms = 10_000): Promise<boolean> {
  for (const end = performance.now() + ms; !pred();) {
    if (performance.now() > end) return false;
    await new Promise((r) => setTimeout(r, 5));
  }
  return true;
}

/** What the server answered an attack with. */
export interface AttackResult {
  /** E.g. `GOAWAY ENHANCE_YOUR_CALM (too_many_pings)`, `RST_STREAM REFUSED_STREAM ×900`. */
  answer: string;
  /** Bytes the attacker wrote. */
  sent: number;
}

/** Options of an attack run. */
export interface AttackOptions {
  /** The gRPC method attacked (a streaming method of the server under attack). */
  path: string;
  /** A request message for it. */
  request: Uint8Array;
  /** Stop after this long even if the server has not answered (ms). */
  maxMs: number;
}

/** One class of attack. */
export interface Attack {
  name: string;
  /** What the server should answer, for the test's assertion (a regex over the answer). */
  expect: RegExp;
  run(port: number, opts: AttackOptions): Promise<AttackResult>;
}

/** Describes how a connection ended: its GOAWAY, or that it was closed without one. */
function ending(c: RawClient): string {
  const g = c.goaway;
  if (g) return `GOAWAY ${g.name}${g.debug ? ` (${g.debug.slice(0, 60)})` : ""}`;
  return c.isClosed ? "closed" : "no answer";
}

/**
 * Writes `unit()` repeatedly until the server sends GOAWAY or closes, or `maxMs` passes. Returns
 * the bytes written.
 */
async function flood(c: RawClient, unit: (i: number) => Uint8Array, maxMs: number) {
  const end = Date.now() + maxMs;
  let sent = 0;
  for (let i = 0; Date.now() < end && !c.goaway && !c.isClosed; i++) {
    const batch: Uint8Array[] = [];
    for (let k = 0; k < 64; k++) batch.push(unit(i * 64 + k));
    const b = Buffer.concat(batch);
    if (!(await c.write(b))) break;
    sent += b.length;
    if (i % 16 === 15) await new Promise((r) => setTimeout(r, 0));
  }
  await c.until(() => !!c.goaway || c.isClosed, 2000);
  return sent;
}

/** Runs `fn` on a fresh connection and closes it afterwards. */
async function onConnection(
  port: number,
  fn: (c: RawClient) => Promise<AttackResult>,
  opts: { preface?: boolean; settings?: [number, number][] } = {},
): Promise<AttackResult> {
  const c = await RawClient.connect(port, opts);
  try {
    await c.send(SETTINGS, 1, 0); // ack the server's SETTINGS, as clients do
    return await fn(c);
  } finally {
    await c.close();
  }
}

const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
};

/** 1 MB of empty SETTINGS frames, built once. */
let settingsBurst: Buffer | undefined;

/** The attack classes of issue 13, each as a hostile client would run it. */
export const ATTACKS: readonly Attack[] = [
  {
    name: "CONTINUATION flood (empty frames)",
    expect: /^GOAWAY ENHANCE_YOUR_CALM/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        await c.write(frame(HEADERS, 0, 1, encodeHeaders(grpcRequest(o.path))));
        const empty = frame(CONTINUATION, 0, 1);
        return { sent: await flood(c, () => empty, o.maxMs), answer: ending(c) };
      }),
  },
  {
    name: "CONTINUATION flood (1-byte frames)",
    expect: /^GOAWAY ENHANCE_YOUR_CALM/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        await c.write(frame(HEADERS, 0, 1, encodeHeaders(grpcRequest(o.path))));
        const one = frame(CONTINUATION, 0, 1, Buffer.from([0x40]));
        return { sent: await flood(c, () => one, o.maxMs), answer: ending(c) };
      }),
  },
  {
    name: "PING flood",
    expect: /^GOAWAY ENHANCE_YOUR_CALM \(too_many_pings\)/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        const ping = frame(PING, 0, 0, Buffer.alloc(8));
        return { sent: await flood(c, () => ping, o.maxMs), answer: ending(c) };
      }),
  },
  {
    name: "SETTINGS flood (1 MB burst, not reading)",
    expect: /^GOAWAY ENHANCE_YOUR_CALM/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        // One burst of 1 MB of SETTINGS frames while not reading, then a look at the answer.
        c.socket.pause();
        const burst = settingsBurst ??= Buffer.concat(
          Array.from({ length: 116_508 }, () => frame(SETTINGS, 0, 0)),
        );
        await c.write(burst);
        await new Promise((r) => setTimeout(r, Math.min(o.maxMs, 500)));
        c.socket.resume();
        await c.until(() => !!c.goaway || c.isClosed, 5000);
        return { sent: burst.length, answer: ending(c) };
      }),
  },
  {
    name: "rapid reset (HEADERS + RST_STREAM)",
    expect: /^GOAWAY ENHANCE_YOUR_CALM/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        const block = encodeHeaders(grpcRequest(o.path));
        const sent = await flood(c, (i) => {
          const id = 2 * i + 1;
          return Buffer.concat([
            frame(HEADERS, END_HEADERS, id, block),
            frame(RST_STREAM, 0, id, u32(8)),
          ]);
        }, o.maxMs);
        return { sent, answer: ending(c) };
      }),
  },
  {
    name: "concurrent streams (1000 on one connection)",
    expect: /RST_STREAM REFUSED_STREAM/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        const block = encodeHeaders(grpcRequest(o.path));
        const msg = frame(DATA, 0, 1, grpcFrame(o.request)).subarray(9);
        const frames: Uint8Array[] = [];
        for (let i = 0; i < 1000; i++) {
          frames.push(
            frame(HEADERS, END_HEADERS, 2 * i + 1, block),
            frame(DATA, 0, 2 * i + 1, msg),
          );
        }
        const b = Buffer.concat(frames);
        await c.write(b);
        await c.until(() => !!c.goaway || c.resets().size >= 900, o.maxMs);
        const refused = [...c.resets().values()].filter((v) => v === 7).length;
        return { sent: b.length, answer: `RST_STREAM REFUSED_STREAM ×${refused}; ${ending(c)}` };
      }),
  },
  {
    name: "partial 4 MiB messages on 100 streams",
    expect: /RESOURCE_EXHAUSTED/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        const block = encodeHeaders(grpcRequest(o.path));
        const head = Buffer.alloc(5 + 16000);
        head.writeUInt32BE(4 * 1024 * 1024 - 1, 1);
        let sent = 0;
        for (let i = 0; i < 100; i++) {
          const id = 2 * i + 1;
          const b = Buffer.concat([
            frame(HEADERS, END_HEADERS, id, block),
            frame(DATA, 0, id, head),
          ]);
          await c.write(b);
          sent += b.length;
        }
        const exhausted = () =>
          [...c.headers.values()].filter((l) =>
            l.some((h) => h.some(([k, v]) => k === "grpc-status" && v === "8"))
          ).length;
        await c.until(() => exhausted() >= 90, o.maxMs);
        return { sent, answer: `grpc-status RESOURCE_EXHAUSTED on ${exhausted()} of 100 streams` };
      }),
  },
  {
    name: "WINDOW_UPDATE flood",
    expect: /^GOAWAY ENHANCE_YOUR_CALM/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        const wu = frame(WINDOW_UPDATE, 0, 0, u32(1));
        return { sent: await flood(c, () => wu, o.maxMs), answer: ending(c) };
      }),
  },
  {
    name: "empty DATA frames",
    expect: /^GOAWAY ENHANCE_YOUR_CALM/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        await c.write(c.headersFrame(1, grpcRequest(o.path)));
        const empty = frame(DATA, 0, 1);
        return { sent: await flood(c, () => empty, o.maxMs), answer: ending(c) };
      }),
  },
  {
    name: "PRIORITY flood",
    expect: /^GOAWAY ENHANCE_YOUR_CALM/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        const p = frame(PRIORITY, 0, 1, Buffer.from([0, 0, 0, 3, 16]));
        return { sent: await flood(c, () => p, o.maxMs), answer: ending(c) };
      }),
  },
  {
    name: "stalled reader (huge window, 100 streams, never reading)",
    expect: /^(closed|backlog held)/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        c.socket.pause();
        await c.write(frame(WINDOW_UPDATE, 0, 0, u32(0x7fffffff - 65535)));
        let sent = 0;
        for (let i = 0; i < 100; i++) {
          const id = 2 * i + 1;
          const b = Buffer.concat([
            c.headersFrame(id, grpcRequest(o.path)),
            frame(DATA, 0, id, grpcFrame(o.request)),
          ]);
          await c.write(b);
          sent += b.length;
        }
        // A paused socket does not report the server's close: look after maxMs.
        await new Promise((r) => setTimeout(r, o.maxMs));
        c.socket.resume();
        const closed = await c.until(() => c.isClosed, 1000);
        return { sent, answer: closed ? "closed after the send timeout" : "backlog held" };
      }, { settings: [[4, 0x7fffffff]] }),
  },
  {
    name: "GOAWAY then keep sending",
    expect: /^GOAWAY PROTOCOL_ERROR.*; socket closed/,
    run: (port, o) =>
      onConnection(port, async (c) => {
        await c.write(frame(DATA, 0, 0, Buffer.alloc(10))); // DATA on stream 0
        const junk = frame(0x20, 0, 0, Buffer.alloc(16000)); // unknown type: ignored if read
        let sent = 0;
        const end = Date.now() + o.maxMs;
        while (!c.isClosed && Date.now() < end) {
          if (!(await c.write(junk))) break;
          sent += junk.length;
        }
        await c.until(() => c.isClosed, 3000);
        return { sent, answer: `${ending(c)}; socket ${c.isClosed ? "closed" : "open"}` };
      }),
  },
];

/** What {@link sustain} saw: the most frequent answer, how many runs, every answer. */
export interface SustainedResult {
  answer: string;
  runs: number;
  answers: Map<string, number>;
}

/**
 * Runs `attack` again and again for `ms` from `attackers` clients at once, each starting over on a
 * new connection as soon as the server has cut the last one off (a real attacker's loop).
 * Answers are counted with their numbers replaced by N.
 */
export async function sustain(
  attack: Attack,
  port: number,
  opts: Omit<AttackOptions, "maxMs">,
  ms: number,
  attackers = 1,
): Promise<SustainedResult> {
  const end = Date.now() + ms;
  const answers = new Map<string, number>();
  let runs = 0;
  await Promise.all(Array.from({ length: attackers }, async () => {
    do {
      const maxMs = Math.max(100, Math.min(end - Date.now(), 2000));
      const res = await attack.run(port, { ...opts, maxMs })
        .catch((e) => ({ answer: `error: ${(e as Error).message}`, sent: 0 }));
      runs++;
      const a = res.answer.replace(/\d+/g, "N");
      answers.set(a, (answers.get(a) ?? 0) + 1);
    } while (Date.now() < end);
  }));
  const answer = [...answers].sort((a, b) => b[1] - a[1])[0]?.[0] ?? "";
  return { answer, runs, answers };
}

/**
 * Connections that never send the preface (`count` of them, held until the server closed them all
 * or `holdMs` passed). Answers how many the server had closed by then.
 */
export async function silentConnections(
  port: number,
  count: number,
  holdMs: number,
): Promise<AttackResult> {
  const cs = await Promise.all(
    Array.from({ length: count }, () => RawClient.connect(port, { preface: false })),
  );
  await eventually(() => cs.every((c) => c.isClosed), holdMs);
  const closed = cs.filter((c) => c.isClosed).length;
  await Promise.all(cs.map((c) => c.close()));
  return { sent: 0, answer: `${closed} of ${count} silent connections closed by the server` };
}

/** A normal client on its own connection: response times while an attack runs. */
export interface Probe {
  /** Stops probing; resolves with every response time (ms) and the calls that failed. */
  stop(): Promise<{ latencies: number[]; failures: string[] }>;
}

/**
 * Every `everyMs`, opens a stream to `path` on one connection, sends `request` and times the
 * first response message (then cancels the stream, as a client done with it would).
 */
export async function startProbe(
  port: number,
  path: string,
  request: Uint8Array,
  everyMs = 100,
): Promise<Probe> {
  const c = await RawClient.connect(port);
  await c.send(SETTINGS, 1, 0);
  const latencies: number[] = [];
  const failures: string[] = [];
  let stopped = false;
  let id = 1;
  const loop = (async () => {
    while (!stopped && !c.isClosed) {
      const sid = id;
      id += 2;
      const t0 = performance.now();
      const before = c.dataBytes;
      const b = Buffer.concat([
        c.headersFrame(sid, grpcRequest(path)),
        frame(DATA, 0, sid, grpcFrame(request)),
        frame(WINDOW_UPDATE, 0, 0, u32(1 << 20)),
      ]);
      await c.write(b);
      const ok = await c.until(
        () => c.frames.some((f) => f.id === sid && (f.type === DATA || f.type === RST_STREAM)),
        30_000,
      );
      if (ok && c.dataBytes > before) latencies.push(performance.now() - t0);
      else failures.push(`stream ${sid}: ${ok ? "reset" : "no response in 30 s"}`);
      await c.send(RST_STREAM, 0, sid, u32(8));
      // Forget this stream's frames so the list stays short.
      for (let i = c.frames.length - 1; i >= 0; i--) {
        if (c.frames[i].id === sid) c.frames.splice(i, 1);
      }
      c.headers.delete(sid);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      if (c.goaway) failures.push(`probe connection got ${ending(c)}`);
      await c.close();
      return { latencies, failures };
    },
  };
}

/** The p-th percentile (0-100) of `xs`. */
export function percentile(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

/** Resident memory of process `pid` in bytes (Linux /proc). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
  return m ? Number(m[1]) * 1024 : 0;
}

export { END_STREAM };

/** The ADS method of SotW xDS (envoy.service.discovery.v3). */
export const ADS_PATH =
  "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";

/**
 * A `DiscoveryRequest` (xDS v3) encoded by hand: `node.id` and `type_url` (default CDS), enough
 * for a control plane to answer, without a protobuf library.
 */
export function discoveryRequest(
  nodeId: string,
  typeUrl = "type.googleapis.com/envoy.config.cluster.v3.Cluster",
): Uint8Array {
  const node = new MessageBuilder().string(1, nodeId, true).finish();
  return new MessageBuilder().message(2, node).string(4, typeUrl, true).finish();
}

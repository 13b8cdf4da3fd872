/**
 * The frame-level limits and checks of the transport at their exact thresholds, as a client sees
 * them (frames written by hand with {@link RawClient}): one frame below each flood limit is served,
 * the limit itself ends the connection with GOAWAY ENHANCE_YOUR_CALM and the reason as debug text
 * (empty frames, PRIORITY, WINDOW_UPDATE, rapid reset, control frames, header-block frames), and the
 * RFC 9113 checks of HEADERS, PRIORITY, RST_STREAM and SETTINGS with their error codes. The slow
 * `attack_test.ts` runs the same attacks at scale against a server in its own process.
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Flag, frame, FrameType, PREFACE } from "./h2/frames.ts";
import { encodeHeaders } from "./h2/hpack.ts";
import { type CallHandler, GrpcStatus, type H2Limits, listenGrpc } from "./mod.ts";
import { grpcFrame, grpcRequest, RawClient } from "./testing.ts";

const { DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE } = FrameType;
const { CONTINUATION } = FrameType;
const { END_STREAM, END_HEADERS, PADDED } = Flag;
const PROTOCOL_ERROR = 1, REFUSED_STREAM = 7, CANCEL = 8;
const ECHO = "/t.S/Echo", HOLD = "/t.S/Hold", ONCE = "/t.S/Once";
const msg = grpcFrame(Buffer.from("hello"));
/** A PRIORITY payload: depends on stream `on`, weight 16. */
const dependsOn = (on: number) => Buffer.from([0, 0, 0, on, 16]);

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

interface Ctx {
  /** A client on the server, its SETTINGS sent and the server's acknowledged. */
  c: RawClient;
  /** What the server logged (its `onError`). */
  errors: string[];
  /** Why the server cancelled HOLD calls. */
  cancelled: string[];
  /** Another connection to the same server (closed at the end). */
  connect(): Promise<RawClient>;
  /** The server's port. */
  port: number;
}

/**
 * A server with `limits` (ECHO echoes and ends at the client's END_STREAM, HOLD never answers and
 * records its cancellations, ONCE answers its first message and ends) and a client on it.
 */
async function withClient(
  limits: Partial<H2Limits>,
  fn: (ctx: Ctx) => Promise<void>,
  { onError = true } = {},
): Promise<void> {
  const errors: string[] = [], cancelled: string[] = [];
  const handlers: Record<string, CallHandler> = {
    [ECHO]: (call) => {
      call.onMessage = (m) => void call.send([Buffer.from(m)]).catch(() => {});
      call.onEnd = () => call.end(GrpcStatus.OK);
    },
    [HOLD]: (call) => {
      call.onMessage = () => {};
      call.onCancel = (why) => cancelled.push(why);
    },
    [ONCE]: (call) => {
      call.onMessage = (m) => {
        call.send([Buffer.from(m)]).catch(() => {});
        call.end(GrpcStatus.OK);
      };
    },
  };
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map(Object.entries(handlers)),
    limits,
    onError: onError ? (m) => errors.push(m) : undefined,
  });
  const clients: RawClient[] = [];
  const connect = async () => {
    const c = await RawClient.connect(listener.port);
    clients.push(c);
    await c.send(SETTINGS, Flag.ACK, 0);
    return c;
  };
  try {
    await fn({ c: await connect(), errors, cancelled, connect, port: listener.port });
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
}

/** The connection still works: a PING is answered and no GOAWAY came. */
async function alive(c: RawClient, what = "the connection"): Promise<void> {
  assert.ok(await c.roundTrip(5000), `${what}: PING not acknowledged`);
  assert.equal(c.goaway, undefined, `${what}: GOAWAY ${JSON.stringify(c.goaway)}`);
}

/** The GOAWAY's code name and debug text, once it came, and the socket closed. */
async function goaway(c: RawClient): Promise<string> {
  assert.ok(await c.until(() => c.goaway !== undefined, 5000), "no GOAWAY");
  assert.ok(await c.until(() => c.isClosed, 5000), "connection left open after GOAWAY");
  return `${c.goaway!.name} ${c.goaway!.debug}`;
}

/** The grpc-status of stream `id`'s trailers, once they came. */
async function statusOf(c: RawClient, id: number): Promise<string | undefined> {
  assert.ok(
    await c.until(() => (c.headers.get(id)?.length ?? 0) >= 2, 5000),
    `no trailers on ${id}`,
  );
  return c.headers.get(id)!.at(-1)!.find(([k]) => k === "grpc-status")?.[1];
}

/** `block` cut into `n` non-empty pieces: HEADERS, then CONTINUATIONs, the last with END_HEADERS. */
function headerFrames(id: number, block: Uint8Array, n: number): Buffer[] {
  const size = Math.ceil(block.length / n);
  const out: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const last = i === n - 1;
    const piece = block.subarray(i * size, last ? block.length : (i + 1) * size);
    const type = i === 0 ? HEADERS : CONTINUATION;
    out.push(frame(type, last ? END_HEADERS : 0, id, piece));
  }
  return out;
}

// ---- preface and frame size ---------------------------------------------------------------------

Deno.test("the preface, SETTINGS and a call written in two pieces are served wherever the cut falls", async () => {
  await withClient({}, async ({ port }) => {
    const bytes = Buffer.concat([
      PREFACE,
      frame(SETTINGS, 0, 0, Buffer.from([0, 4, 0, 1, 0, 0])), // INITIAL_WINDOW_SIZE 65536
      frame(HEADERS, END_HEADERS, 1, encodeHeaders(grpcRequest(ECHO))),
      frame(DATA, END_STREAM, 1, msg),
    ]);
    // Every cut in the preface, the SETTINGS frame and the HEADERS frame's header.
    for (let cut = 1; cut < PREFACE.length + 15 + 9 + 1; cut++) {
      const c = await RawClient.connect(port, { preface: false });
      try {
        await c.write(bytes.subarray(0, cut));
        await new Promise((r) => setTimeout(r, 1));
        await c.write(bytes.subarray(cut));
        assert.equal(await statusOf(c, 1), "0", `cut at ${cut}`);
        assert.equal(c.goaway, undefined, `cut at ${cut}`);
      } finally {
        await c.close();
      }
    }
  });
});

Deno.test("a frame announcing more than 16384 octets is refused from its header alone; 16384 is served", async () => {
  await withClient({}, async ({ c, connect }) => {
    // A whole 16384-octet DATA frame: one gRPC message of 16379 octets, echoed.
    const big = grpcFrame(Buffer.alloc(16384 - 5, 7));
    await c.write(c.headersFrame(1, grpcRequest(ECHO)), frame(DATA, END_STREAM, 1, big));
    assert.equal(await statusOf(c, 1), "0");
    assert.equal(c.dataOn(1), 16384);
    // The 9-octet header of a 16385-octet DATA frame, with none of its payload sent.
    const d = await connect();
    const header = frame(DATA, 0, 1, Buffer.alloc(16385)).subarray(0, 9);
    await d.write(d.headersFrame(1, grpcRequest(HOLD)), header);
    assert.equal(
      await goaway(d),
      "FRAME_SIZE_ERROR frame of 16385 bytes exceeds SETTINGS_MAX_FRAME_SIZE 16384",
    );
  });
});

// ---- empty frames (Envoy's max_consecutive_inbound_frames_with_empty_payload) -------------------

Deno.test("empty frames: one empty DATA at a time is served; the second in a row is ENHANCE_YOUR_CALM", async () => {
  await withClient({}, async ({ c, errors }) => {
    await c.write(c.headersFrame(1, grpcRequest(HOLD)), c.headersFrame(3, grpcRequest(HOLD)));
    await c.write(frame(DATA, 0, 1)); // 1 empty frame: within the default limit of 1
    await alive(c);
    await c.write(frame(DATA, 0, 1, Buffer.from([0])), frame(DATA, 0, 1)); // data resets the count
    await alive(c);
    // An empty DATA with END_STREAM ends a request: not counted, and it resets the count.
    await c.write(frame(DATA, END_STREAM, 3), frame(DATA, 0, 1));
    await alive(c);
    await c.write(frame(DATA, 0, 1));
    assert.equal(await goaway(c), "ENHANCE_YOUR_CALM 2 consecutive frames with an empty payload");
    assert.match(errors.join("\n"), /failed: 2 consecutive frames with an empty payload$/m);
  });
});

Deno.test("empty frames: empty HEADERS and CONTINUATION frames count too; a header block with one empty CONTINUATION is served", async () => {
  await withClient({}, async ({ c, connect }) => {
    // An empty HEADERS after an empty DATA: the second empty frame in a row.
    await c.write(c.headersFrame(1, grpcRequest(HOLD)), frame(DATA, 0, 1));
    await alive(c);
    await c.write(frame(HEADERS, END_HEADERS, 3));
    assert.equal(await goaway(c), "ENHANCE_YOUR_CALM 2 consecutive frames with an empty payload");
    // One empty CONTINUATION inside a block is served; two in a row are not.
    const block = encodeHeaders(grpcRequest(ECHO));
    const d = await connect();
    await d.write(
      frame(HEADERS, 0, 1, block.subarray(0, 10)),
      frame(CONTINUATION, 0, 1),
      frame(CONTINUATION, END_HEADERS, 1, block.subarray(10)),
      frame(DATA, END_STREAM, 1, msg),
    );
    assert.equal(await statusOf(d, 1), "0");
    const e = await connect();
    await e.write(
      frame(HEADERS, 0, 1, block.subarray(0, 10)),
      frame(CONTINUATION, 0, 1),
      frame(CONTINUATION, 0, 1),
    );
    assert.equal(await goaway(e), "ENHANCE_YOUR_CALM 2 consecutive frames with an empty payload");
  });
});

// ---- header blocks ------------------------------------------------------------------------------

Deno.test("header blocks: maxHeaderBlockFrames frames are served, one more is ENHANCE_YOUR_CALM", async () => {
  await withClient({ maxHeaderBlockFrames: 4 }, async ({ c, connect }) => {
    const block = encodeHeaders(grpcRequest(ECHO));
    await c.write(...headerFrames(1, block, 4), frame(DATA, END_STREAM, 1, msg));
    assert.equal(await statusOf(c, 1), "0");
    const d = await connect();
    await d.write(...headerFrames(1, block, 5));
    assert.equal(await goaway(d), "ENHANCE_YOUR_CALM header block of more than 4 frames");
  });
});

Deno.test("header blocks: a block of exactly 128 KiB is served, one octet more is PROTOCOL_ERROR", async () => {
  await withClient({}, async ({ c, connect }) => {
    // Dynamic table size updates (0x20: size 0, one octet each) pad the block to the bound, twice
    // SETTINGS_MAX_HEADER_LIST_SIZE; the headers themselves stay small.
    const padded = (total: number) => {
      const headers = encodeHeaders(grpcRequest(ECHO));
      return Buffer.concat([Buffer.alloc(total - headers.length, 0x20), headers]);
    };
    await c.write(...headerFrames(1, padded(131072), 8), frame(DATA, END_STREAM, 1, msg));
    assert.equal(await statusOf(c, 1), "0");
    const d = await connect();
    await d.write(...headerFrames(1, padded(131073), 9));
    assert.equal(await goaway(d), "PROTOCOL_ERROR header block too large");
  });
});

// ---- HEADERS ------------------------------------------------------------------------------------

Deno.test("HEADERS: padding as long as the payload is PROTOCOL_ERROR with the PRIORITY flag too (§6.2)", async () => {
  const PRIO = END_HEADERS | PADDED | Flag.PRIORITY;
  for (
    const payload of [
      Buffer.from([7, 0, 0, 0, 0, 16, 0]), // pad length 7 of a 7-octet payload
      Buffer.from([9, 0, 0, 0, 0, 16, 0]), // past it
      Buffer.alloc(0), // no pad length at all
    ]
  ) {
    await withClient({}, async ({ c }) => {
      await c.write(frame(HEADERS, PRIO, 1, payload));
      assert.equal(await goaway(c), "PROTOCOL_ERROR bad HEADERS padding", payload.toString("hex"));
    });
  }
});

Deno.test("HEADERS: exactly the 5 priority octets and no header field is a malformed request, not a frame error", async () => {
  await withClient({}, async ({ c, errors }) => {
    await c.write(frame(HEADERS, END_HEADERS | Flag.PRIORITY | END_STREAM, 1, dependsOn(0)));
    assert.ok(await c.until(() => c.resets().has(1), 5000), "no RST_STREAM");
    assert.equal(c.resets().get(1), PROTOCOL_ERROR);
    await alive(c);
    assert.match(errors.join("\n"), /refused: missing :method$/m);
  });
});

Deno.test("HEADERS depending on their own stream are refused with RST_STREAM PROTOCOL_ERROR (§5.3.1)", async () => {
  await withClient({}, async ({ c }) => {
    const block = encodeHeaders(grpcRequest(ECHO));
    const prio = (id: number, on: number) =>
      frame(HEADERS, END_HEADERS | Flag.PRIORITY, id, Buffer.concat([dependsOn(on), block]));
    await c.write(prio(1, 1), prio(3, 1), frame(DATA, END_STREAM, 3, msg));
    assert.equal(await statusOf(c, 3), "0", "depending on another stream is fine");
    assert.deepEqual([...c.resets()], [[1, PROTOCOL_ERROR]]);
    assert.equal(c.headers.has(1), false);
    await alive(c);
  });
});

Deno.test("HEADERS: a new stream id must be above every earlier one, a finished stream's included (§5.1.1)", async () => {
  await withClient({}, async ({ c, connect }) => {
    await c.write(c.headersFrame(5, grpcRequest(HOLD)), c.headersFrame(3, grpcRequest(HOLD)));
    assert.equal(await goaway(c), "PROTOCOL_ERROR HEADERS on stream 3, not above the last one (5)");
    const d = await connect();
    await d.write(d.headersFrame(1, grpcRequest(ECHO)), frame(DATA, END_STREAM, 1, msg));
    assert.equal(await statusOf(d, 1), "0");
    await d.write(d.headersFrame(1, grpcRequest(ECHO)));
    assert.equal(await goaway(d), "PROTOCOL_ERROR HEADERS on stream 1, not above the last one (1)");
  });
});

Deno.test("HEADERS: request trailers that cross the server's RST_STREAM are ignored, the connection goes on (§5.1)", async () => {
  await withClient({}, async ({ c }) => {
    // ONCE answers and ends while the client still sends: trailers, then RST_STREAM NO_ERROR.
    await c.write(c.headersFrame(1, grpcRequest(ONCE)), frame(DATA, 0, 1, msg));
    assert.equal(await statusOf(c, 1), "0");
    assert.ok(await c.until(() => c.resets().has(1), 5000), "no RST_STREAM");
    // A malformed request is refused with RST_STREAM PROTOCOL_ERROR.
    await c.write(c.headersFrame(3, grpcRequest(ECHO).filter(([k]) => k !== ":scheme")));
    assert.ok(await c.until(() => c.resets().has(3), 5000), "no RST_STREAM");
    // Both clients' trailers were on their way: dropped, not a connection error.
    await c.write(
      c.headersFrame(1, [["x-trailer", "1"]], END_STREAM),
      c.headersFrame(3, [["x-trailer", "1"]], END_STREAM),
    );
    await alive(c);
    await c.write(c.headersFrame(5, grpcRequest(ECHO)), frame(DATA, END_STREAM, 5, msg));
    assert.equal(await statusOf(c, 5), "0");
    assert.deepEqual([...c.resets()], [[1, 0], [3, PROTOCOL_ERROR]]);
  });
});

Deno.test("HEADERS: maxConcurrentStreams streams are served, the next is REFUSED_STREAM, and a finished one frees its place", async () => {
  await withClient({ maxConcurrentStreams: 2 }, async ({ c }) => {
    await c.write(
      c.headersFrame(1, grpcRequest(ECHO)),
      c.headersFrame(3, grpcRequest(HOLD)),
      c.headersFrame(5, grpcRequest(HOLD)),
    );
    assert.ok(await c.until(() => c.resets().has(5), 5000), "no RST_STREAM");
    assert.deepEqual([...c.resets()], [[5, REFUSED_STREAM]]);
    await c.write(frame(DATA, END_STREAM, 1, msg));
    assert.equal(await statusOf(c, 1), "0");
    await c.write(c.headersFrame(7, grpcRequest(ECHO)), frame(DATA, END_STREAM, 7, msg));
    assert.equal(await statusOf(c, 7), "0");
    assert.deepEqual([...c.resets()], [[5, REFUSED_STREAM]]);
  });
});

Deno.test("a GET is answered 405 Trailers-Only with the reason, and the connection goes on", async () => {
  await withClient({}, async ({ c }) => {
    await c.write(
      c.headersFrame(1, [[":method", "GET"], ...grpcRequest(ECHO).slice(1)], END_STREAM),
    );
    assert.ok(await c.until(() => c.headers.has(1), 5000), "no answer");
    assert.deepEqual(c.headers.get(1), [[
      [":status", "405"],
      ["content-type", "application/grpc"],
      ["grpc-status", String(GrpcStatus.INTERNAL)],
      ["grpc-message", "Method GET is not POST"],
    ]]);
    await alive(c);
  });
});

Deno.test("a malformed request is refused with RST_STREAM PROTOCOL_ERROR by a server without onError too", async () => {
  await withClient({}, async ({ c }) => {
    await c.write(c.headersFrame(1, grpcRequest(ECHO).filter(([k]) => k !== ":scheme")));
    assert.ok(await c.until(() => c.resets().has(1), 5000), "no RST_STREAM");
    assert.equal(c.resets().get(1), PROTOCOL_ERROR);
    await alive(c);
  }, { onError: false });
});

Deno.test("after the client's GOAWAY new streams are REFUSED_STREAM, open calls go on", async () => {
  await withClient({}, async ({ c }) => {
    await c.write(c.headersFrame(1, grpcRequest(ECHO)), frame(GOAWAY, 0, 0, Buffer.alloc(8)));
    await c.write(c.headersFrame(3, grpcRequest(ECHO)));
    assert.ok(await c.until(() => c.resets().has(3), 5000), "no RST_STREAM");
    assert.equal(c.resets().get(3), REFUSED_STREAM);
    await c.write(frame(DATA, END_STREAM, 1, msg));
    assert.equal(await statusOf(c, 1), "0");
  });
});

// ---- PRIORITY -----------------------------------------------------------------------------------

Deno.test("PRIORITY: frames on idle and open streams are accepted; one naming its own stream resets it (§5.3.1)", async () => {
  await withClient({}, async ({ c, cancelled }) => {
    await c.write(
      frame(PRIORITY, 0, 9, dependsOn(0)), // an idle stream, as browsers build their tree
      c.headersFrame(1, grpcRequest(HOLD)),
      frame(PRIORITY, 0, 1, dependsOn(9)),
    );
    await alive(c);
    assert.deepEqual([...c.resets()], []);
    await c.write(frame(PRIORITY, 0, 1, dependsOn(1)), frame(PRIORITY, 0, 11, dependsOn(11)));
    assert.ok(await c.until(() => c.resets().size === 2, 5000), "no RST_STREAM");
    assert.deepEqual([...c.resets()], [[1, PROTOCOL_ERROR], [11, PROTOCOL_ERROR]]);
    assert.deepEqual(cancelled, ["stream depends on itself"]);
    await alive(c);
  });
});

Deno.test("PRIORITY flood: 5 + 2 × streams × (1 + maxPriorityFramesPerStream) frames are accepted, one more is ENHANCE_YOUR_CALM", async () => {
  await withClient({ maxPriorityFramesPerStream: 3 }, async ({ c, connect }) => {
    // Before any stream: 5 (a browser's initial priority tree).
    const prio = (n: number) =>
      Array.from({ length: n }, () => frame(PRIORITY, 0, 1, dependsOn(0)));
    await c.write(...prio(5));
    await alive(c);
    await c.write(...prio(1));
    assert.equal(await goaway(c), "ENHANCE_YOUR_CALM too many PRIORITY frames (6)");
    // Two streams opened: 5 + 2 × 2 × (1 + 3) = 21.
    const d = await connect();
    await d.write(d.headersFrame(1, grpcRequest(HOLD)), d.headersFrame(3, grpcRequest(HOLD)));
    await d.write(...prio(21));
    await alive(d);
    await d.write(...prio(1));
    assert.equal(await goaway(d), "ENHANCE_YOUR_CALM too many PRIORITY frames (22)");
  });
});

// ---- RST_STREAM and rapid reset -----------------------------------------------------------------

Deno.test("RST_STREAM on a finished stream is ignored", async () => {
  await withClient({}, async ({ c }) => {
    await c.write(c.headersFrame(1, grpcRequest(ECHO)), frame(DATA, END_STREAM, 1, msg));
    assert.equal(await statusOf(c, 1), "0");
    await c.write(frame(RST_STREAM, 0, 1, u32(CANCEL)));
    await alive(c);
  });
});

// Kept before the next test: after its 1.1 s wait the process is older than a second, so the age of
// a stream (now - openedAt) differs from any sum of the two clocks there.
Deno.test("rapid reset: resets of streams whose response ended, or older than a second, do not count", async () => {
  await withClient({ prematureResetMinStreams: 2 }, async ({ c, connect }) => {
    // Each reset follows the message its call answers and ends in the same read.
    await c.write(
      ...[1, 3, 5, 7].flatMap((id) => [
        c.headersFrame(id, grpcRequest(ONCE)),
        frame(DATA, 0, id, msg),
        frame(RST_STREAM, 0, id, u32(CANCEL)),
      ]),
    );
    await alive(c);
    // Streams reset more than a second after they were opened.
    const d = await connect();
    await d.write(...[1, 3].map((id) => d.headersFrame(id, grpcRequest(HOLD))));
    await alive(d);
    await new Promise((r) => setTimeout(r, 1100));
    await d.write(frame(RST_STREAM, 0, 1, u32(CANCEL)), frame(RST_STREAM, 0, 3, u32(CANCEL)));
    await alive(d);
  });
});

Deno.test("rapid reset: once prematureResetMinStreams streams were opened, early resets of half of them end the connection", async () => {
  await withClient({ prematureResetMinStreams: 4 }, async ({ c, errors, cancelled }) => {
    await c.write(...[1, 3, 5, 7].map((id) => c.headersFrame(id, grpcRequest(HOLD))));
    await alive(c);
    await c.write(frame(RST_STREAM, 0, 1, u32(CANCEL))); // 1 of 4
    await alive(c);
    assert.deepEqual(cancelled, ["client reset the stream (code 8)"]);
    await c.write(frame(RST_STREAM, 0, 3, u32(CANCEL))); // 2 of 4: half
    assert.equal(await goaway(c), "ENHANCE_YOUR_CALM rapid reset: 2 of 4 streams reset early");
    assert.match(errors.join("\n"), /failed: rapid reset: 2 of 4 streams reset early$/m);
  });
});

// ---- PING, control frames ----------------------------------------------------------------------

Deno.test("PING strikes: the server logs why it sent too_many_pings", async () => {
  await withClient({ keepaliveMinTimeMs: 60_000 }, async ({ c, errors }) => {
    for (let i = 0; i < 4; i++) await c.send(PING, 0, 0, Buffer.alloc(8));
    assert.equal(await goaway(c), "ENHANCE_YOUR_CALM too_many_pings");
    assert.match(errors.join("\n"), /failed: too many pings \(more often than every 60000 ms\)$/m);
  });
});

Deno.test("control frames: maxOutboundControlFrames acks queued in one read are sent, one more is ENHANCE_YOUR_CALM", async () => {
  await withClient({ maxOutboundControlFrames: 20 }, async ({ c, connect }) => {
    const settings = (n: number) => Array.from({ length: n }, () => frame(SETTINGS, 0, 0));
    await alive(c);
    await c.write(...settings(20));
    await alive(c);
    const acks = c.frames.filter((f) => f.type === SETTINGS && f.flags & Flag.ACK);
    assert.equal(acks.length, 21); // the client's first SETTINGS and the 20
    const d = await connect();
    await alive(d);
    await d.write(...settings(21));
    assert.equal(
      await goaway(d),
      "ENHANCE_YOUR_CALM more than 20 control frames queued (peer not reading)",
    );
  });
});

// ---- WINDOW_UPDATE and SETTINGS_INITIAL_WINDOW_SIZE ---------------------------------------------

Deno.test("WINDOW_UPDATE flood: 5 updates before any stream or data are accepted, the 6th is ENHANCE_YOUR_CALM", async () => {
  await withClient({}, async ({ c }) => {
    for (let i = 0; i < 5; i++) await c.send(WINDOW_UPDATE, 0, 0, u32(1));
    await alive(c);
    await c.send(WINDOW_UPDATE, 0, 0, u32(1));
    assert.equal(await goaway(c), "ENHANCE_YOUR_CALM too many WINDOW_UPDATE frames (6)");
  });
});

Deno.test("WINDOW_UPDATE on a stream never opened is PROTOCOL_ERROR (§6.9, §5.1)", async () => {
  await withClient({}, async ({ c }) => {
    await c.write(c.headersFrame(1, grpcRequest(HOLD)), frame(WINDOW_UPDATE, 0, 5, u32(1)));
    assert.equal(await goaway(c), "PROTOCOL_ERROR WINDOW_UPDATE on idle stream 5");
  });
});

Deno.test("SETTINGS_INITIAL_WINDOW_SIZE may take an open stream's window to exactly 2^31-1, not past it", async () => {
  const setting = (v: number) => {
    const b = Buffer.alloc(6);
    b.writeUInt16BE(4, 0); // SETTINGS_INITIAL_WINDOW_SIZE
    b.writeUInt32BE(v, 2);
    return frame(SETTINGS, 0, 0, b);
  };
  await withClient({}, async ({ c }) => {
    await c.write(
      c.headersFrame(1, grpcRequest(ECHO)),
      frame(WINDOW_UPDATE, 0, 1, u32(0x7fffffff - 65535 - 1)), // the window is 2^31-2
      setting(65536), // + 1: exactly 2^31-1
    );
    await alive(c);
    await c.write(frame(DATA, END_STREAM, 1, msg));
    assert.equal(await statusOf(c, 1), "0");
    await c.write(
      c.headersFrame(3, grpcRequest(HOLD)),
      frame(WINDOW_UPDATE, 0, 3, u32(0x7fffffff - 65536)),
    );
    await alive(c);
    await c.write(setting(65537)); // stream 3: 2^31-1 + 1
    assert.equal(await goaway(c), "FLOW_CONTROL_ERROR stream window overflow");
  });
});

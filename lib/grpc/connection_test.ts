/**
 * The start of a connection and the server's log of refused requests, as a client sees them: a
 * client preface that arrives in pieces is accepted, one that goes wrong in its first bytes is
 * refused at once (without waiting for the rest), and the reasons logged for malformed requests.
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import net from "node:net";
import { frame, FrameType, PREFACE } from "./h2/frames.ts";
import { encodeHeaders } from "./h2/hpack.ts";
import { type GrpcCall, GrpcStatus, listenGrpc, peerUris, percentEncode } from "./mod.ts";
import { END_STREAM, grpcFrame, grpcRequest, RawClient } from "./testing.ts";

const { SETTINGS } = FrameType;
const ECHO = "/t.S/Echo";

async function withServer(
  fn: (port: number, errors: string[]) => Promise<void>,
): Promise<void> {
  const errors: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[ECHO, (c) => {
      c.onEnd = () => c.end(GrpcStatus.OK);
    }]]),
    onError: (m) => errors.push(m),
  });
  try {
    await fn(listener.port, errors);
  } finally {
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
}

Deno.test("a client preface written one octet at a time is accepted", async () => {
  await withServer(async (port) => {
    const c = await RawClient.connect(port, { preface: false });
    try {
      for (const b of PREFACE) {
        await c.write(Uint8Array.of(b));
        await new Promise((r) => setTimeout(r, 1));
      }
      await c.write(frame(SETTINGS, 0, 0, Buffer.alloc(0)));
      await c.write(c.headersFrame(1, grpcRequest(ECHO), END_STREAM));
      assert.ok(await c.until(() => (c.headers.get(1)?.length ?? 0) >= 1));
      assert.deepEqual(c.headers.get(1)![0].find(([k]) => k === "grpc-status"), [
        "grpc-status",
        "0",
      ]);
      assert.equal(c.goaway, undefined);
    } finally {
      await c.close();
    }
  });
});

Deno.test("a preface wrong in its first octets is refused before the rest arrives", async () => {
  for (const start of ["X", "PRX", "PRI * HTTP/1.1", "PRI * HTTP/2.0\r\n\r\nSM\r\n\rX"]) {
    await withServer(async (port, errors) => {
      const c = await RawClient.connect(port, { preface: false });
      try {
        // The first wrong octet ends it: the server does not wait for all 24 of the preface.
        await c.write(Buffer.from(start, "latin1"));
        assert.ok(await c.until(() => c.goaway !== undefined, 5000), `no GOAWAY after ${start}`);
        assert.deepEqual([c.goaway!.name, c.goaway!.debug], [
          "PROTOCOL_ERROR",
          "not an HTTP/2 connection preface",
        ]);
        assert.ok(await c.until(() => c.isClosed, 5000));
        assert.match(errors.join("\n"), /failed: not an HTTP\/2 connection preface/);
      } finally {
        await c.close();
      }
    });
  }
  // Exactly the 23 first octets of the preface: the server waits (no GOAWAY), then serves.
  await withServer(async (port) => {
    const c = await RawClient.connect(port, { preface: false });
    try {
      await c.write(PREFACE.subarray(0, 23));
      await c.write(PREFACE.subarray(23), frame(SETTINGS, 0, 0, Buffer.alloc(0)));
      assert.ok(await c.roundTrip());
      assert.equal(c.goaway, undefined);
    } finally {
      await c.close();
    }
  });
});

Deno.test("requests refused as malformed are logged with the peer and the reason; others answered", async () => {
  await withServer(async (port, errors) => {
    const c = await RawClient.connect(port);
    try {
      await c.write(
        c.headersFrame(1, grpcRequest(ECHO).filter(([k]) => k !== ":path"), END_STREAM),
        c.headersFrame(3, grpcRequest(ECHO).filter(([k]) => k !== "content-type"), END_STREAM),
      );
      assert.ok(await c.until(() => c.resets().has(1) && c.headers.has(3)));
      assert.deepEqual([...c.resets()], [[1, 1]]); // PROTOCOL_ERROR
      const local = c.socket.localPort;
      assert.ok(
        errors.includes(`HTTP/2 request from ipv4:127.0.0.1:${local} refused: missing :path`),
        errors.join("\n"),
      );
      // No content-type: 415 with the reason in grpc-message.
      assert.deepEqual(c.headers.get(3), [[
        [":status", "415"],
        ["content-type", "application/grpc"],
        ["grpc-status", String(GrpcStatus.INTERNAL)],
        ["grpc-message", "Content-type (none) is not gRPC"],
      ]]);
    } finally {
      await c.close();
    }
  });
});

Deno.test("listenGrpc() refuses a negative maxFailedConnectionsPerSecond; 0 turns pacing off", async () => {
  for (const bad of [-1, NaN]) {
    await assert.rejects(
      listenGrpc({
        host: "127.0.0.1",
        port: 0,
        handlers: new Map(),
        maxFailedConnectionsPerSecond: bad,
      }),
      new RangeError(`maxFailedConnectionsPerSecond must not be negative, got ${bad}`),
    );
  }
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map(),
    maxFailedConnectionsPerSecond: 0,
  });
  try {
    // Three connections failing at once from one address are not paced: the fourth is served.
    for (let i = 0; i < 3; i++) {
      const bad = await RawClient.connect(listener.port, { preface: false });
      await bad.write(Buffer.from("X"));
      assert.ok(await bad.until(() => bad.isClosed, 5000));
    }
    const c = await RawClient.connect(listener.port);
    try {
      assert.ok(await c.roundTrip());
      assert.equal(listener.throttled, 0);
    } finally {
      await c.close();
    }
  } finally {
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("the accept check of a listener on a wildcard or bracketed address reaches it", async () => {
  for (const host of ["0.0.0.0", "::", "[::1]", "127.0.0.1"]) {
    const changes: string[] = [];
    const errors: string[] = [];
    const listener = await listenGrpc({
      host,
      port: 0,
      handlers: new Map(),
      acceptCheckMs: 10,
      onAcceptingChange: (ok, why) => changes.push(`${ok} ${why}`),
      onError: (m) => errors.push(m),
    });
    try {
      // Many checks: one that connected elsewhere would be refused at once and turn accepting
      // off; one the listener did not recognise as its own would go unanswered (two in a row,
      // a second each, turn accepting off).
      await new Promise((r) => setTimeout(r, host === "127.0.0.1" ? 2500 : 300));
      assert.equal(listener.accepting, true, `${host}: ${changes.join(", ")}`);
      assert.deepEqual(changes, [], host);
      assert.deepEqual(errors, [], host);
      if (!host.includes(":")) {
        const c = await RawClient.connect(listener.port);
        try {
          assert.ok(await c.roundTrip());
        } finally {
          await c.close();
        }
      }
    } finally {
      await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
    }
  }
});

Deno.test("after the max-age GOAWAY new streams are refused, open calls go on, then end UNAVAILABLE", async () => {
  let open: GrpcCall | undefined;
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[ECHO, (c) => {
      open = c;
      c.onMessage = (m) => void c.send([Buffer.from(m)]).catch(() => {});
    }]]),
    limits: { maxConnectionAgeMs: 50, maxConnectionAgeGraceMs: 1000, keepaliveIntervalMs: 0 },
  });
  const c = await RawClient.connect(listener.port);
  try {
    await c.write(c.headersFrame(1, grpcRequest(ECHO)));
    assert.ok(await c.until(() => c.goaway !== undefined, 5000), "no GOAWAY");
    assert.deepEqual([c.goaway!.name, c.goaway!.debug, c.goaway!.lastStreamId], [
      "NO_ERROR",
      "max_age",
      1,
    ]);
    await c.write(
      c.headersFrame(3, grpcRequest(ECHO)),
      frame(FrameType.DATA, 0, 1, grpcFrame(Buffer.from("still here"))),
    );
    assert.ok(await c.until(() => c.resets().has(3)));
    assert.equal(c.resets().get(3), 7); // REFUSED_STREAM
    assert.ok(await c.until(() => c.dataOn(1) === 5 + 10), "the open call stopped");
    assert.ok(open);
    // After the grace period: UNAVAILABLE, and the connection closes.
    const [, trailers] = await blocksOf(c, 1, 2);
    assert.deepEqual(trailers, [
      ["grpc-status", String(GrpcStatus.UNAVAILABLE)],
      ["grpc-message", "Connection reached its maximum age"],
    ]);
    assert.ok(await c.until(() => c.isClosed, 5000));
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("close() sends GOAWAY, ends calls and closes each connection once written, not at the grace", async () => {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[ECHO, () => {}]]),
  });
  const c = await RawClient.connect(listener.port);
  try {
    await c.write(c.headersFrame(1, grpcRequest(ECHO)));
    assert.ok(await c.roundTrip());
    const closing = listener.close(GrpcStatus.UNAVAILABLE, "going down", 60_000);
    assert.ok(await c.until(() => c.isClosed, 10_000), "still open (waiting for the grace?)");
    await closing;
    assert.deepEqual([c.goaway?.name, c.goaway?.debug], ["NO_ERROR", ""]);
    assert.deepEqual(c.headers.get(1), [[
      [":status", "200"],
      ["content-type", "application/grpc"],
      ["grpc-status", String(GrpcStatus.UNAVAILABLE)],
      ["grpc-message", "going down"],
    ]]);
  } finally {
    await c.close();
  }
});

Deno.test("finished calls free their stream: many sequential calls under maxConcurrentStreams 2", async () => {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[ECHO, (call) => {
      call.onMessage = (m) => void call.send([Buffer.from(m)]).catch(() => {});
      call.onEnd = () => call.end(GrpcStatus.OK);
    }]]),
    limits: { maxConcurrentStreams: 2 },
  });
  const c = await RawClient.connect(listener.port);
  try {
    for (let id = 1; id <= 11; id += 2) {
      // Each call half-closes with its message; its stream is gone once the answer is out.
      await c.write(
        c.headersFrame(id, grpcRequest(ECHO)),
        frame(FrameType.DATA, END_STREAM, id, grpcFrame(Buffer.from("hi"))),
      );
      const [, trailers] = await blocksOf(c, id, 2);
      assert.deepEqual(trailers, [["grpc-status", "0"]], `call ${id}`);
      assert.equal(c.dataOn(id), 7);
    }
    assert.ok(await c.roundTrip());
    assert.deepEqual([...c.resets()], []);
    assert.equal([...listener.connections][0].streams, 0);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

async function blocksOf(c: RawClient, id: number, n: number) {
  assert.ok(await c.until(() => (c.headers.get(id)?.length ?? 0) >= n), `no headers on ${id}`);
  return c.headers.get(id)!;
}

Deno.test("peerUris() gives the URI SANs of a verified peer certificate only", () => {
  const san = "DNS:a.example, URI:spiffe://cluster.local/ns/a/sa/b, IP Address:10.0.0.1, URI:x:y";
  const socket = (authorized: boolean, subjectaltname?: string) => ({
    authorized,
    getPeerCertificate: () => (subjectaltname === undefined ? {} : { subjectaltname }),
  });
  assert.deepEqual(peerUris(socket(true, san)), ["spiffe://cluster.local/ns/a/sa/b", "x:y"]);
  assert.deepEqual(peerUris(socket(false, san)), []);
  assert.deepEqual(peerUris(socket(true)), []);
  assert.deepEqual(peerUris({}), []);
  assert.deepEqual(peerUris({ authorized: true }), []);
  assert.deepEqual(
    peerUris({
      authorized: true,
      getPeerCertificate: () => {
        throw new Error("gone");
      },
    }),
    [],
  );
});

Deno.test("the server's first frames: its SETTINGS and a connection WINDOW_UPDATE to 16 MiB", async () => {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map(),
    limits: { maxConcurrentStreams: 7 },
  });
  const c = await RawClient.connect(listener.port);
  try {
    assert.ok(await c.roundTrip());
    const first = c.frames[0];
    assert.equal(first.type, SETTINGS);
    assert.equal(first.flags, 0);
    assert.deepEqual([...c.settings()], [
      [4, 4 * 1024 * 1024], // SETTINGS_INITIAL_WINDOW_SIZE
      [6, 65536], // SETTINGS_MAX_HEADER_LIST_SIZE
      [2, 0], // SETTINGS_ENABLE_PUSH
      [3, 7], // SETTINGS_MAX_CONCURRENT_STREAMS
    ]);
    const wu = c.frames[1];
    assert.deepEqual([wu.type, wu.id, wu.payload.readUInt32BE(0)], [
      FrameType.WINDOW_UPDATE,
      0,
      16 * 1024 * 1024 - 65535,
    ]);
    // The client's SETTINGS acknowledged; a well-behaved connection has not failed.
    assert.ok(c.frames.some((f) => f.type === SETTINGS && f.flags & 1));
    assert.equal([...listener.connections][0].failed, false);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("calls see their peer as ipv4:address:port or ipv6:[address]:port", async () => {
  const peers: string[] = [];
  for (const host of ["127.0.0.1", "::1"]) {
    const listener = await listenGrpc({
      host,
      port: 0,
      handlers: new Map([[ECHO, (call) => {
        peers.push(call.peer);
        call.end(GrpcStatus.OK);
      }]]),
    });
    try {
      const sock = await new Promise<import("node:net").Socket>((resolve, reject) => {
        const s = net.connect({ host, port: listener.port }, () => resolve(s));
        s.once("error", reject);
      });
      try {
        sock.write(Buffer.concat([
          PREFACE,
          frame(SETTINGS, 0, 0, Buffer.alloc(0)),
          frame(FrameType.HEADERS, 4 | END_STREAM, 1, encodeHeaders(grpcRequest(ECHO))),
        ]));
        for (let i = 0; i < 500 && peers.length < (host === "::1" ? 2 : 1); i++) {
          await new Promise((r) => setTimeout(r, 10));
        }
        const want = host === "::1"
          ? `ipv6:[::1]:${sock.localPort}`
          : `ipv4:127.0.0.1:${sock.localPort}`;
        assert.equal(peers.at(-1), want);
      } finally {
        sock.destroy();
      }
    } finally {
      await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
    }
  }
});

Deno.test("keepalive: an idle peer is pinged with our opaque data; its ack keeps the connection", async () => {
  const errors: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map(),
    limits: { keepaliveIntervalMs: 50, keepaliveTimeoutMs: 60_000 },
    onError: (m) => errors.push(m),
  });
  const c = await RawClient.connect(listener.port);
  try {
    const pings = () => c.frames.filter((f) => f.type === FrameType.PING && !(f.flags & 1));
    assert.ok(await c.until(() => pings().length >= 1, 5000), "no keepalive PING");
    assert.equal(pings()[0].payload.toString("latin1"), "meshkeep");
    await c.send(FrameType.PING, 1, 0, pings()[0].payload);
    // Pinged again after the next silent interval, still connected.
    assert.ok(await c.until(() => pings().length >= 2, 5000), "no second PING");
    assert.equal(c.isClosed, false);
    assert.equal(c.goaway, undefined);
    assert.deepEqual(errors, []);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("keepalive: a peer that does not ack is closed with the reason logged", async () => {
  const errors: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map(),
    limits: { keepaliveIntervalMs: 50, keepaliveTimeoutMs: 100 },
    onError: (m) => errors.push(m),
  });
  const c = await RawClient.connect(listener.port);
  try {
    assert.ok(await c.until(() => c.isClosed, 5000), "still open");
    assert.equal(c.goaway, undefined); // closed at once, no GOAWAY
    assert.match(
      errors.join("\n"),
      /^HTTP\/2 connection from ipv4:127\.0\.0\.1:\d+ closed: keepalive PING not acknowledged within 100 ms$/m,
    );
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("keepalive enforcement: the third PING within keepaliveMinTimeMs is too_many_pings; sending forgives", async () => {
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[ECHO, (call) => call.end(GrpcStatus.OK)]]),
    limits: { keepaliveMinTimeMs: 60_000 },
  });
  const c = await RawClient.connect(listener.port);
  try {
    // The first PING starts the clock; two strikes are tolerated.
    for (let i = 0; i < 3; i++) assert.ok(await c.roundTrip());
    // A response (headers) forgives the strikes: two more are tolerated again.
    await c.write(c.headersFrame(1, grpcRequest(ECHO), END_STREAM));
    assert.ok(await c.until(() => c.headers.has(1)));
    for (let i = 0; i < 2; i++) assert.ok(await c.roundTrip());
    assert.equal(c.goaway, undefined);
    await c.send(FrameType.PING, 0, 0, Buffer.alloc(8));
    assert.ok(await c.until(() => c.goaway !== undefined, 5000));
    assert.deepEqual([c.goaway!.name, c.goaway!.debug], ["ENHANCE_YOUR_CALM", "too_many_pings"]);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("a connection without the preface is closed at prefaceTimeoutMs, with the reason logged", async () => {
  const errors: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map(),
    limits: { prefaceTimeoutMs: 100 },
    onError: (m) => errors.push(m),
  });
  const c = await RawClient.connect(listener.port, { preface: false });
  try {
    await c.write(PREFACE); // the preface alone, without SETTINGS, does not stop the clock
    assert.ok(await c.until(() => c.isClosed, 5000), "still open");
    assert.match(
      errors.join("\n"),
      /^HTTP\/2 connection from ipv4:127\.0\.0\.1:\d+ closed: no client preface and SETTINGS within 100 ms$/m,
    );
    assert.equal([...listener.connections].length, 0);
  } finally {
    await c.close();
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("percentEncode() keeps exactly 0x20-0x7E but '%'", () => {
  assert.equal(percentEncode(" ~}"), " ~}");
  assert.equal(percentEncode("\x1f\x7f%"), "%1F%7F%25");
  assert.equal(percentEncode("é"), "%C3%A9");
});

Deno.test("prefaceTimeoutMs 0 waits for the preface; the timeouts close connections without onError too", async () => {
  const off = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map(),
    limits: { prefaceTimeoutMs: 0 },
  });
  const late = await RawClient.connect(off.port, { preface: false });
  try {
    await new Promise((r) => setTimeout(r, 100));
    await late.write(PREFACE, frame(SETTINGS, 0, 0, Buffer.alloc(0)));
    assert.ok(await late.roundTrip());
    assert.equal(late.isClosed, false);
  } finally {
    await late.close();
    await off.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
  // No onError: the preface deadline and the keepalive timeout still close the connection.
  for (
    const limits of [{ prefaceTimeoutMs: 50 }, { keepaliveIntervalMs: 30, keepaliveTimeoutMs: 50 }]
  ) {
    const listener = await listenGrpc({ host: "127.0.0.1", port: 0, handlers: new Map(), limits });
    const c = await RawClient.connect(listener.port, { preface: "keepaliveIntervalMs" in limits });
    try {
      assert.ok(await c.until(() => c.isClosed, 5000), JSON.stringify(limits));
    } finally {
      await c.close();
      await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
    }
  }
});

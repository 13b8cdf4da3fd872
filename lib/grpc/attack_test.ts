/**
 * Adversarial tests of the transport: each attack class of issue 13 with frames written by hand,
 * against a server in its own process (`_attack_server.ts`) so its memory can be measured, while
 * a normal client on another connection keeps calling. Then connection hygiene (preface deadline,
 * keepalive, max age) and the RFC 9113 conformance gaps, against an in-process server.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Flag, frame, FrameType } from "./h2/frames.ts";
import { encodeHeaders, type HeaderList } from "./h2/hpack.ts";
import { type CallHandler, DEFAULT_LIMITS, GrpcStatus, type H2Limits, listenGrpc } from "./mod.ts";
import {
  ATTACKS,
  grpcFrame,
  grpcRequest,
  RawClient,
  rssOf,
  silentConnections,
  startProbe,
  sustain,
} from "./testing.ts";

const { DATA, HEADERS, PRIORITY, SETTINGS, PING, WINDOW_UPDATE } = FrameType;
const { END_STREAM, END_HEADERS, PADDED } = Flag;
const MB = 1024 * 1024;

interface Mem {
  rss: number;
  heapUsed: number;
  connections: number;
  accepting: boolean;
  refused: number;
  shed: number;
  accepted: number;
}

/**
 * The attack server as a child process (with `maxFds`, under `ulimit -n`; errors of the server
 * are printed only with `quiet: false`).
 */
async function startServer(
  limits: Partial<H2Limits>,
  listen: Record<string, unknown> = {},
  maxFds = 0,
) {
  const args = [
    "run",
    "-A",
    "--v8-flags=--expose-gc",
    new URL("./_attack_server.ts", import.meta.url).pathname,
    JSON.stringify(limits),
    JSON.stringify(listen),
  ];
  const child = new Deno.Command(maxFds ? "/bin/sh" : Deno.execPath(), {
    args: maxFds ? ["-c", `ulimit -n ${maxFds} && exec "$0" "$@"`, Deno.execPath(), ...args] : args,
    stdin: "piped",
    stdout: "piped",
    stderr: Deno.env.get("ATTACK_SERVER_LOG") ? "inherit" : "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  const line = async () => {
    while (!buf.includes("\n")) {
      const r = await reader.read();
      if (r.done) throw new Error("attack server exited");
      buf += r.value;
    }
    const i = buf.indexOf("\n");
    const l = buf.slice(0, i);
    buf = buf.slice(i + 1);
    return l;
  };
  const port = Number((await line()).replace("port ", ""));
  const writer = child.stdin.getWriter();
  return {
    port,
    pid: child.pid,
    async mem(): Promise<Mem> {
      await writer.write(new TextEncoder().encode("mem\n"));
      return JSON.parse(await line());
    },
    async close() {
      await writer.close();
      await child.status;
      await reader.cancel().catch(() => {});
    },
  };
}

const ECHO = "/t.S/Echo";
const request = new TextEncoder().encode("ping");

Deno.test("the transport withstands every attack class: answer, bounded memory, other clients served", async (t) => {
  // Each class's per-connection limits alone: the per-address budget of failed connections
  // (which would pace these thousands of loopback reconnects) is tested on its own below.
  const server = await startServer(
    { sendTimeoutMs: 1000, prefaceTimeoutMs: 500 },
    { maxFailedConnectionsPerSecond: 0 },
  );
  try {
    const base = await server.mem();
    for (const attack of ATTACKS) {
      await t.step(attack.name, async () => {
        const before = rssOf(server.pid);
        let peak = before;
        const sampler = setInterval(() => (peak = Math.max(peak, rssOf(server.pid))), 50);
        const probe = await startProbe(server.port, ECHO, request, 50);
        const path = attack.name.startsWith("stalled") ? "/t.S/Big" : ECHO;
        let result;
        try {
          // Repeated for a second at least, reconnecting whenever the server cuts it off.
          // (The stalled reader runs past the server's 1 s send timeout, to see it closed.)
          const ms = path === ECHO ? 1000 : 2500;
          result = await sustain(attack, server.port, { path, request }, ms);
        } finally {
          clearInterval(sampler);
        }
        const { latencies, failures } = await probe.stop();
        console.log(
          `${attack.name}: ${result.answer} (${result.runs} runs); server ` +
            `RSS +${((peak - before) / MB).toFixed(1)} MB; probe ${latencies.length} responses, ` +
            `slowest ${Math.round(Math.max(...latencies))} ms`,
        );
        for (const a of result.answers.keys()) assert.match(a, attack.expect);
        if (path !== ECHO) assert.equal(result.answer, "closed after the send timeout");
        // Before the limits these grew the server by 1-2 GB.
        assert.ok(peak - before < 192 * MB, `server RSS grew ${(peak - before) / MB} MB`);
        // Liveness, not performance: the other connection keeps being answered.
        assert.deepEqual(failures, []);
        assert.ok(latencies.length > 0, "the probe got no response during the attack");
        assert.ok(Math.max(...latencies) < 10_000, `probe waited ${Math.max(...latencies)} ms`);
      });
    }
    await t.step("connections that never send the preface are closed at the deadline", async () => {
      // (the deadline is 500 ms; generous for a loaded box, where closing 200 takes a while)
      const r = await silentConnections(server.port, 200, 30_000);
      assert.equal(r.answer, "200 of 200 silent connections closed by the server");
    });
    await t.step("everything the abusive connections held is released", async () => {
      // Rerun the attacks 5 more times, then compare the heap after a full GC with the start.
      for (let i = 0; i < 5; i++) {
        for (const attack of ATTACKS) {
          if (attack.name.startsWith("stalled")) continue; // the slowest; run once above
          await attack.run(server.port, { path: ECHO, request, maxMs: 1000 });
        }
      }
      let after = await server.mem();
      for (let i = 0; i < 50 && after.connections > 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        after = await server.mem();
      }
      console.log(
        `heap after GC: ${(base.heapUsed / MB).toFixed(1)} MB at start, ` +
          `${(after.heapUsed / MB).toFixed(1)} MB after every attack above (thousands of abusive ` +
          `connections) and 5 more rounds`,
      );
      assert.equal(after.connections, 0);
      assert.ok(
        after.heapUsed - base.heapUsed < 16 * MB,
        `heap grew ${after.heapUsed - base.heapUsed}`,
      );
    });
  } finally {
    await server.close();
  }
});

/** An in-process server with `limits`, for the protocol tests. */
async function withServer(
  limits: Partial<H2Limits>,
  fn: (port: number, errors: string[]) => Promise<void>,
  handlers: Record<string, CallHandler> = { [ECHO]: echo },
) {
  const errors: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map(Object.entries(handlers)),
    limits,
    onError: (m) => errors.push(m),
  });
  try {
    await fn(listener.port, errors);
  } finally {
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
}

const echo: CallHandler = (c) => {
  c.onMessage = (m) => void c.send([Buffer.from(m)]).catch(() => {});
  c.onEnd = () => c.end(GrpcStatus.OK);
};

async function connected(port: number): Promise<RawClient> {
  const c = await RawClient.connect(port);
  await c.send(SETTINGS, 1, 0);
  return c;
}

Deno.test("SETTINGS_MAX_CONCURRENT_STREAMS is advertised and enforced with REFUSED_STREAM", async () => {
  await withServer({ maxConcurrentStreams: 3 }, async (port) => {
    const c = await connected(port);
    try {
      await c.until(() => c.settings().size > 0);
      assert.equal(c.settings().get(3), 3);
      for (const id of [1, 3, 5, 7]) await c.write(c.headersFrame(id, grpcRequest(ECHO)));
      await c.until(() => c.resets().has(7));
      assert.deepEqual([...c.resets()], [[7, 7]]); // stream 7: REFUSED_STREAM
      // Once a stream is done, a new one is accepted.
      await c.write(frame(DATA, END_STREAM, 1, grpcFrame(request)));
      await c.until(() => (c.headers.get(1)?.length ?? 0) >= 2);
      await c.write(c.headersFrame(9, grpcRequest(ECHO)));
      await c.write(frame(DATA, END_STREAM, 9, grpcFrame(request)));
      assert.ok(await c.until(() => (c.headers.get(9)?.length ?? 0) >= 2));
      assert.equal(c.resets().get(9), undefined);
    } finally {
      await c.close();
    }
  });
});

Deno.test("a connection error GOAWAY closes the socket: nothing more is read", async () => {
  await withServer({}, async (port) => {
    const c = await connected(port);
    await c.write(frame(DATA, 0, 0, Buffer.alloc(4)));
    assert.ok(await c.until(() => c.isClosed, 5000), "socket still open");
    assert.equal(c.goaway?.name, "PROTOCOL_ERROR");
  });
});

Deno.test("connections without the client preface are closed after the preface deadline", async () => {
  await withServer({ prefaceTimeoutMs: 200 }, async (port, errors) => {
    const c = await RawClient.connect(port, { preface: false });
    assert.ok(await c.until(() => c.isClosed, 5000));
    assert.match(errors.join("\n"), /no client preface and SETTINGS within 200 ms/);
  });
});

Deno.test("keepalive: pings more often than the minimum time get GOAWAY too_many_pings", async () => {
  await withServer({ keepaliveMinTimeMs: 60_000 }, async (port) => {
    const c = await connected(port);
    try {
      // The first PING sets the clock; the next two are strikes, tolerated.
      for (let i = 0; i < 3; i++) await c.send(PING, 0, 0, Buffer.alloc(8));
      await c.until(() => c.frames.filter((f) => f.type === PING).length >= 3);
      assert.equal(c.goaway, undefined);
      await c.send(PING, 0, 0, Buffer.alloc(8));
      await c.until(() => !!c.goaway);
      const g = c.goaway as { name: string; debug: string } | undefined;
      assert.deepEqual([g?.name, g?.debug], ["ENHANCE_YOUR_CALM", "too_many_pings"]);
    } finally {
      await c.close();
    }
  });
});

Deno.test("keepalive: a silent peer is pinged and closed when it does not answer", async () => {
  await withServer({ keepaliveIntervalMs: 100, keepaliveTimeoutMs: 200 }, async (port, errors) => {
    const alive = await connected(port);
    const dead = await connected(port);
    // The live peer acks every PING; the dead one never does.
    const acker = setInterval(() => {
      for (const f of alive.frames.splice(0)) {
        if (f.type === PING && !(f.flags & 1)) void alive.send(PING, 1, 0, f.payload);
      }
    }, 20);
    try {
      assert.ok(await dead.until(() => dead.isClosed, 5000));
      assert.ok(dead.frames.some((f) => f.type === PING && !(f.flags & 1)));
      assert.match(errors.join("\n"), /keepalive PING not acknowledged within 200 ms/);
      assert.equal(alive.isClosed, false);
    } finally {
      clearInterval(acker);
      await alive.close();
      await dead.close();
    }
  });
});

Deno.test("max connection age: a graceful GOAWAY, then open calls end UNAVAILABLE after the grace", async () => {
  await withServer({ maxConnectionAgeMs: 200, maxConnectionAgeGraceMs: 200 }, async (port) => {
    const c = await connected(port);
    try {
      await c.write(c.headersFrame(1, grpcRequest(ECHO)));
      assert.ok(await c.until(() => !!c.goaway, 5000));
      assert.deepEqual([c.goaway?.name, c.goaway?.debug], ["NO_ERROR", "max_age"]);
      assert.ok(await c.until(() => c.isClosed, 5000));
      const status = c.headers.get(1)?.flat().find(([k]) => k === "grpc-status")?.[1];
      assert.equal(status, String(GrpcStatus.UNAVAILABLE));
    } finally {
      await c.close();
    }
  });
});

/** RFC 9113 gaps of issue 13: what the client sends, and the answer expected. */
const CONFORMANCE: {
  name: string;
  send: (c: RawClient) => Uint8Array[];
  expect: { goaway: string } | { rst: [number, number] };
}[] = [
  {
    name: "WINDOW_UPDATE on an idle stream (§6.9)",
    send: () => [frame(WINDOW_UPDATE, 0, 5, Buffer.from([0, 0, 0, 1]))],
    expect: { goaway: "PROTOCOL_ERROR" },
  },
  {
    name: "a stream id going backwards (§5.1.1)",
    send: (c) => [c.headersFrame(5, grpcRequest(ECHO)), c.headersFrame(3, grpcRequest(ECHO))],
    expect: { goaway: "PROTOCOL_ERROR" },
  },
  {
    name: "HEADERS depending on its own stream (§5.3.1)",
    send: () => [
      frame(
        HEADERS,
        END_HEADERS | Flag.PRIORITY,
        1,
        Buffer.concat([
          Buffer.from([0, 0, 0, 1, 16]),
          encodeHeaders(grpcRequest(ECHO)),
        ]),
      ),
    ],
    expect: { rst: [1, 1] },
  },
  {
    name: "PRIORITY depending on its own stream (§5.3.1)",
    send: () => [frame(PRIORITY, 0, 3, Buffer.from([0, 0, 0, 3, 16]))],
    expect: { rst: [3, 1] },
  },
  {
    name: "PADDED HEADERS with an empty payload (§6.2)",
    send: () => [frame(HEADERS, END_HEADERS | PADDED, 1)],
    expect: { goaway: "PROTOCOL_ERROR" },
  },
  ...([
    ["missing :scheme", grpcRequest(ECHO).filter(([k]) => k !== ":scheme")],
    ["an upper-case field name", [...grpcRequest(ECHO), ["X-Upper", "1"]]],
    ["a connection header", [...grpcRequest(ECHO), ["connection", "keep-alive"]]],
    ["a transfer-encoding header", [...grpcRequest(ECHO), ["transfer-encoding", "chunked"]]],
    ["a pseudo-header after a regular field", [...grpcRequest(ECHO), [":authority", "x"]]],
    ["te other than trailers", [...grpcRequest(ECHO).filter(([k]) => k !== "te"), ["te", "gzip"]]],
    ["an unknown pseudo-header", [[":status", "200"], ...grpcRequest(ECHO)]],
  ] as [string, HeaderList][]).map(([what, headers]) => ({
    name: `a request with ${what} (§8.2, §8.3)`,
    send: (c: RawClient) => [c.headersFrame(1, headers, END_STREAM)],
    expect: { rst: [1, 1] as [number, number] },
  })),
  {
    name: "a content-length larger than the DATA (§8.1.1)",
    send: (c) => [
      c.headersFrame(1, [...grpcRequest(ECHO), ["content-length", "100"]]),
      frame(DATA, END_STREAM, 1, grpcFrame(request)),
    ],
    expect: { rst: [1, 1] },
  },
  {
    name: "a content-length smaller than the DATA (§8.1.1)",
    send: (c) => [
      c.headersFrame(1, [...grpcRequest(ECHO), ["content-length", "2"]]),
      frame(DATA, END_STREAM, 1, grpcFrame(request)),
    ],
    expect: { rst: [1, 1] },
  },
];

Deno.test("RFC 9113 conformance: protocol and malformed-request errors", async (t) => {
  await withServer({}, async (port) => {
    for (const k of CONFORMANCE) {
      await t.step(k.name, async () => {
        const c = await connected(port);
        try {
          await c.write(...k.send(c));
          if ("goaway" in k.expect) {
            assert.ok(await c.until(() => !!c.goaway, 5000), "no GOAWAY");
            assert.equal(c.goaway?.name, k.expect.goaway);
          } else {
            const [id, code] = k.expect.rst;
            assert.ok(await c.until(() => c.resets().has(id), 5000), "no RST_STREAM");
            assert.equal(c.resets().get(id), code);
            assert.equal(c.goaway, undefined);
          }
        } finally {
          await c.close();
        }
      });
    }
    // A well-formed request on the same server is still answered.
    const c = await connected(port);
    await c.write(
      c.headersFrame(1, grpcRequest(ECHO)),
      frame(DATA, END_STREAM, 1, grpcFrame(request)),
    );
    assert.ok(await c.until(() => (c.headers.get(1)?.length ?? 0) >= 2));
    assert.equal(c.headers.get(1)![1].find(([k]) => k === "grpc-status")?.[1], "0");
    await c.close();
  });
});

Deno.test("listenGrpc() caps connections and says so once per 10 s", async () => {
  const errors: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[ECHO, echo]]),
    maxConnections: 2,
    onError: (m) => errors.push(m),
  });
  const cs: RawClient[] = [];
  try {
    for (let i = 0; i < 4; i++) cs.push(await connected(listener.port));
    await cs[0].until(() => cs[2].isClosed && cs[3].isClosed, 5000);
    assert.deepEqual(cs.map((c) => c.isClosed), [false, false, true, true]);
    assert.equal(listener.refused, 2);
    assert.equal(errors.filter((e) => /the limit is 2/.test(e)).length, 1);
  } finally {
    await Promise.all(cs.map((c) => c.close()));
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("an address whose connections keep failing has its next connection held", async () => {
  const errors: string[] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: new Map([[ECHO, echo]]),
    maxFailedConnectionsPerSecond: 2,
    onError: (m) => errors.push(m),
  });
  const cs: RawClient[] = [];
  try {
    // Three connection errors (DATA on stream 0) from 127.0.0.1: over a budget of 2 a second.
    for (let i = 0; i < 3; i++) {
      const c = await connected(listener.port);
      cs.push(c);
      await c.send(DATA, 0, 0, Buffer.alloc(1));
      assert.ok(await c.until(() => c.isClosed, 5000), "the failing connection was not closed");
    }
    assert.equal(listener.throttled, 0);
    // Another address is served at once; the failing one's next connection is held, then served.
    const other = await RawClient.connect(listener.port, { localAddress: "127.0.0.2" });
    cs.push(other);
    assert.ok(await other.until(() => other.settings().size > 0, 5000), "127.0.0.2 not served");
    assert.equal(listener.throttled, 0);
    const held = await connected(listener.port);
    cs.push(held);
    assert.ok(await held.until(() => held.settings().size > 0, 5000), "never served");
    assert.equal(listener.throttled, 1);
    assert.ok(!held.isClosed);
    assert.equal(
      errors.filter((e) => /more than 2 of its connections a second ended in a/.test(e)).length,
      1,
    );
  } finally {
    await Promise.all(cs.map((c) => c.close()));
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

/** How long the TCP handshake of each probe took (ms): see {@link answeredIn}. */
const handshakes: number[] = [];

/**
 * Connects from `localAddress` and times the server's SETTINGS and PING answer from the moment
 * the connection is established (ms, or -1). The handshake itself is the kernel's: a SYN it drops
 * (the backlog full, or the port pair still in the server's TIME_WAIT from a connection the
 * server closed, as it does to shed them) is sent again 1 s later, whatever the server does; its
 * time is kept in {@link handshakes}, bounded apart. An accept the server is slow to make is in
 * the answer's time: SETTINGS is sent once the connection is accepted.
 */
async function answeredIn(port: number, localAddress: string, cs: RawClient[]): Promise<number> {
  const t0 = performance.now();
  const c = await RawClient.connect(port, { localAddress });
  cs.push(c);
  const t1 = performance.now();
  handshakes.push(t1 - t0);
  const ok = await c.until(() => c.settings().size > 0, 5000) && await c.roundTrip(5000);
  return ok ? performance.now() - t1 : -1;
}

/**
 * The bound on a new client's answer: 1 s, the target, or on a box slower than that (a
 * loaded CI machine: timed tests hold no performance targets) 20 times the slowest answer the same
 * client got before the attack. The target itself is measured by `deno task bench h2_attack`.
 */
async function answerBound(port: number, cs: RawClient[]): Promise<number> {
  const base: number[] = [];
  for (let i = 0; i < 5; i++) base.push(await answeredIn(port, "127.0.0.2", cs));
  assert.ok(base.every((ms) => ms >= 0), `not answered before the attack: ${base.join(", ")} ms`);
  return Math.round(Math.max(1000, 20 * Math.max(...base)));
}

/**
 * Waits until the server has accepted `n` connections: the connects the attack made are all
 * through the backlog (a client that finds the backlog full waits for its SYN to be sent again,
 * 1 s and 3 s later: the kernel's, whatever the server does, and only a matter of CPU here).
 */
async function acceptedAll(server: Awaited<ReturnType<typeof startServer>>, n: number) {
  let m = await server.mem();
  for (const end = performance.now() + 60_000; m.accepted < n;) {
    assert.ok(performance.now() < end, `accepted ${m.accepted} of ${n} connections in 60 s`);
    await new Promise((r) => setTimeout(r, 50));
    m = await server.mem();
  }
  return m;
}

Deno.test("idle connections up to the descriptor limit starve no one: accept never fails, another address is answered within 1 s during the attack, every new client within 1 s after (20 times its answer before the attack on a slower box)", async () => {
  // The attack: the server at a 1024-descriptor limit, 1100 idle TCP connections (no
  // preface) from one address, here from three (127.0.0.1, .3 and .4), so that both the bound
  // per address and the shedding of silent connections come into play.
  const server = await startServer({}, { acceptCheckMs: 200 }, 1024);
  const attackers: RawClient[] = [];
  const cs: RawClient[] = [];
  try {
    const bound = await answerBound(server.port, cs);
    const before = (await server.mem()).accepted;
    const silent = (localAddress: string) =>
      RawClient.connect(server.port, { preface: false, localAddress }).then((c) => {
        attackers.push(c);
      }, () => {});
    for (let i = 0; i < 1100; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) => silent(`127.0.0.${[1, 3, 4][(i + j) % 3]}`)),
      );
    }
    await acceptedAll(server, before + attackers.length);
    const during: number[] = [];
    for (let i = 0; i < 5; i++) {
      during.push(await answeredIn(server.port, "127.0.0.2", cs));
      // The attack goes on: new silent connections keep coming.
      await Promise.all(Array.from({ length: 50 }, () => silent("127.0.0.1")));
      const m = await acceptedAll(server, before + attackers.length + i + 1);
      assert.ok(m.accepting, "the listener stopped accepting during the attack");
    }
    const fmt = (a: number[]) => a.map(Math.round).join(", ");
    console.log(`a new client answered during the attack in ${fmt(during)} ms (bound ${bound} ms)`);
    assert.ok(
      during.every((ms) => ms >= 0 && ms < bound),
      `during: ${during.join(", ")} ms (bound ${bound} ms)`,
    );
    const m = await server.mem();
    assert.ok(m.shed > 0, "no silent connection was shed");
    await Promise.all(attackers.splice(0).map((c) => c.close()));
    const after: number[] = [];
    for (let i = 0; i < 10; i++) after.push(await answeredIn(server.port, "127.0.0.1", cs));
    console.log(`after it in ${fmt(after)} ms; TCP handshakes ${fmt(handshakes)} ms`);
    assert.ok(
      after.every((ms) => ms >= 0 && ms < bound),
      `after: ${after.join(", ")} ms (bound ${bound} ms)`,
    );
    // two SYNs lost at most (1 s, then 3 s): a listener that stopped would refuse or never answer
    assert.ok(handshakes.every((ms) => ms < 5000), `TCP handshakes: ${fmt(handshakes)} ms`);
    assert.ok((await server.mem()).accepting);
  } finally {
    await Promise.all([...attackers, ...cs].map((c) => c.close()));
    await server.close();
  }
});

Deno.test("docs/ads.md documents every limit with its default", async () => {
  const doc = await Deno.readTextFile(new URL("../../docs/ads.md", import.meta.url));
  const documented = new Map<string, number>();
  const unit: Record<string, number> = { "": 1, MiB: MB, s: 1000 };
  for (const m of doc.matchAll(/^\| `(\w+)`\s+\| (\d+)(?: (MiB|s))?(?: \(none\))?\s+\|/gm)) {
    documented.set(m[1], Number(m[2]) * unit[m[3] ?? ""]);
  }
  assert.deepEqual(Object.fromEntries(documented), { ...DEFAULT_LIMITS });
});

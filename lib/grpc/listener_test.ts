/**
 * The listener around the connections (`listenGrpc()`): the accept check and its recovery when
 * the process is out of file descriptors (this process's `RLIMIT_NOFILE` lowered for a moment
 * through libc, so it all runs in-process), the logging of failed TLS handshakes (never our own
 * checks), held connections on close, a listener without `onError`, unix sockets, a taken port.
 * Linux only (`/proc/net/tcp`, libc). The limit is the whole process's: while a test here holds
 * it at 0 nothing else in the process can open a file, so this file is not for `--parallel`
 * (test files run one after the other by default, as `deno task test` does).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import net from "node:net";
import tls from "node:tls";
import { listenerTls, makeTestPki, type TestPki } from "../../tests/harness/certs.ts";
import { fdLimit } from "../../tests/harness/fd_limit.ts";
import { FrameType } from "./h2/frames.ts";
import {
  type CallHandler,
  type GrpcListener,
  type GrpcListenOptions,
  GrpcStatus,
  listenGrpc,
} from "./mod.ts";
import { eventually, RawClient } from "./testing.ts";
import { AcceptCheck, PROBE_PORT_BASE } from "./listener.ts";

const { DATA, SETTINGS } = FrameType;
const te = new TextEncoder();
const ECHO = "/t.S/Echo";
const echo: CallHandler = (c) => {
  c.onMessage = (m) => void c.send([Buffer.from(m)]).catch(() => {});
  c.onEnd = () => c.end(GrpcStatus.OK);
};
const handlers = new Map([[ECHO, echo]]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `pred` holds, at most 20 s (a reopen takes a few checks); answers whether it held. */
const until = (pred: () => boolean) => eventually(pred, 20_000);

/** A client that sent its preface and acknowledged the server's SETTINGS. */
async function connected(port: number, opts: { path?: string; localAddress?: string } = {}) {
  const c = await RawClient.connect(port, opts);
  await c.send(SETTINGS, 1, 0);
  return c;
}

/**
 * Two connections from `localAddress` that end in a connection error (DATA on stream 0), made
 * together: an address over a budget of one failure a second, for the next second.
 */
async function failTwice(port: number, localAddress?: string): Promise<void> {
  const cs = await Promise.all([0, 1].map(() => connected(port, { localAddress })));
  await Promise.all(cs.map((c) => c.send(DATA, 0, 0, Buffer.alloc(1))));
  for (const c of cs) {
    assert.ok(await c.until(() => c.isClosed), "a failing connection stayed open");
  }
}

/** Two connections from `localAddress` that fail ({@link failTwice}), then a third, open. */
async function failThenConnect(port: number, localAddress: string): Promise<RawClient> {
  await failTwice(port, localAddress);
  return await connected(port, { localAddress });
}

/** A listener whose log lines and accepting changes are recorded. */
async function recorded(opts: Partial<GrpcListenOptions> = {}) {
  const errors: string[] = [];
  const changes: [boolean, string][] = [];
  const listener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers,
    onError: (m) => errors.push(m),
    onAcceptingChange: (ok, reason) => changes.push([ok, reason]),
    ...opts,
  });
  return { listener, errors, changes };
}

/**
 * Accept checks to `port` that are over: our checks close first (a TLS listener sends nothing
 * before the client's hello), so each leaves its TCP connection in TIME_WAIT (60 s on Linux) on
 * its side, with the listener's port as the remote one.
 */
function checksDone(port: number): number {
  let n = 0;
  for (const f of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of Deno.readTextFileSync(f).split("\n").slice(1)) {
      const [, , remote, state] = line.trim().split(/\s+/);
      if (state === "06" && parseInt(remote?.split(":")[1] ?? "", 16) === port) n++;
    }
  }
  return n;
}

for (const nativeReads of [false, true]) {
  Deno.test(`out of file descriptors, the listener says it cannot accept, reopens on the same port once it can, and keeps its connections${nativeReads ? " (nativeReads: Deno.listen)" : ""}`, async () => {
    await outOfDescriptors(nativeReads);
  });
}

async function outOfDescriptors(nativeReads: boolean) {
  const { listener, errors, changes } = await recorded({ acceptCheckMs: 20, nativeReads });
  assert.equal(listener.reusedReads, nativeReads);
  const { port } = listener;
  const limit = fdLimit();
  const clients: RawClient[] = [];
  try {
    const old = await connected(port);
    clients.push(old);
    assert.ok(await old.roundTrip(), "no answer before");
    // Twice: each episode logs its own lines (the reopen error once per episode, not per check).
    for (let episode = 1; episode <= 2; episode++) {
      limit.exhaust();
      try {
        assert.ok(await until(() => errors.some((e) => e.startsWith("cannot reopen"))), "stuck");
        assert.equal(listener.accepting, false);
        // Later checks try to reopen again, and fail the same way: not logged again.
        await sleep(300);
      } finally {
        limit.restore();
      }
      assert.ok(await until(() => listener.accepting), "never accepting again");
      assert.deepEqual(changes.splice(0), [[false, "too many open files (EMFILE)"], [true, ""]]);
      const lines = errors.splice(0);
      assert.equal(lines.length, 3, lines.join("\n"));
      assert.equal(lines[0], "cannot accept connections: too many open files (EMFILE)");
      assert.match(lines[1], /^cannot reopen the listener: .*(EMFILE|Too many open files)/);
      assert.equal(lines[2], `accepting connections again on port ${port}`);
      // New connections are served on the same port; the old one was never dropped.
      const c = await connected(port);
      clients.push(c);
      assert.ok(await c.until(() => c.settings().size > 0), `no SETTINGS (episode ${episode})`);
      assert.ok(await old.roundTrip(), `the old connection is gone (episode ${episode})`);
    }
    // Closed while it cannot reopen: close() ends, and nothing reopens once descriptors are back.
    limit.exhaust();
    try {
      assert.ok(await until(() => errors.some((e) => e.startsWith("cannot reopen"))), "stuck");
      await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
      assert.ok(await old.until(() => old.isClosed), "the old connection stayed open");
    } finally {
      limit.restore();
    }
    await sleep(200);
    assert.equal(errors.length, 2, errors.join("\n"));
    assert.deepEqual(changes, [[false, "too many open files (EMFILE)"]]);
    Deno.listen({ hostname: "127.0.0.1", port }).close();
  } finally {
    limit.dispose();
    await Promise.all(clients.map((c) => c.close()));
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
}

/**
 * Stops `listener`'s accept loop: a connection the kernel completes while no descriptor is left,
 * whose accept in Deno then fails for good. Tried again when an accept check fell in that moment
 * (its own connection then fails with EMFILE first: the path tested above). Returns once the
 * listener said it cannot accept because of it.
 */
async function stopAcceptLoop(
  listener: GrpcListener,
  limit: ReturnType<typeof fdLimit>,
  changes: [boolean, string][],
  errors: string[],
): Promise<void> {
  for (let attempt = 0;; attempt++) {
    const fd = limit.socket();
    const served = listener.connections.size;
    limit.exhaust();
    try {
      limit.connect(fd, listener.port);
      await sleep(5);
    } finally {
      limit.restore();
    }
    assert.ok(await until(() => changes.length > 0), "the listener never noticed");
    if (changes[0][1] === "the accept loop stopped") return;
    assert.equal(listener.connections.size, served, "the connection was accepted");
    assert.ok(attempt < 10, `an accept check ran in the window ${attempt + 1} times`);
    assert.ok(await until(() => listener.accepting));
    changes.length = 0;
    errors.length = 0;
  }
}

Deno.test("when the accept loop stops (an accept failed with EMFILE), two unanswered checks reopen the listener; closed meanwhile, it stays closed", async () => {
  const errors: string[] = [];
  const changes: [boolean, string][] = [];
  let closeWhenStopped = false;
  let closed: Promise<void> | undefined;
  const listener: GrpcListener = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers,
    acceptCheckMs: 50,
    onError: (m) => errors.push(m),
    onAcceptingChange: (ok, reason) => {
      changes.push([ok, reason]);
      // Closed just as the listener is about to be reopened.
      if (!ok && closeWhenStopped) closed = listener.close(GrpcStatus.UNAVAILABLE, "bye", 200);
    },
  });
  const { port } = listener;
  const limit = fdLimit();
  const clients: RawClient[] = [];
  try {
    const old = await connected(port);
    clients.push(old);
    await stopAcceptLoop(listener, limit, changes, errors);
    assert.ok(await until(() => listener.accepting), "never accepting again");
    assert.deepEqual(changes.splice(0), [[false, "the accept loop stopped"], [true, ""]]);
    assert.deepEqual(errors.splice(0), [
      "cannot accept connections: the accept loop stopped",
      `accepting connections again on port ${port}`,
    ]);
    const c = await connected(port);
    clients.push(c);
    assert.ok(await c.until(() => c.settings().size > 0), "no SETTINGS after the reopen");
    assert.ok(await old.roundTrip(), "the old connection is gone");

    closeWhenStopped = true;
    await stopAcceptLoop(listener, limit, changes, errors);
    assert.ok(closed, "not closed");
    await closed;
    assert.ok(await old.until(() => old.isClosed), "the old connection stayed open");
    await sleep(200);
    assert.deepEqual(changes, [[false, "the accept loop stopped"]]);
    // The port is free: the reopened socket was closed too.
    Deno.listen({ hostname: "127.0.0.1", port }).close();
  } finally {
    limit.dispose();
    await Promise.all(clients.map((c) => c.close()));
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

/** A TLS listener's options with a server certificate of `pki`. */
async function tlsOf(pki: TestPki) {
  const server = await pki.issue("server", { ips: ["127.0.0.1", "::1"] });
  return listenerTls(pki, server);
}

Deno.test("accept checks pass quietly on 127.0.0.1, 0.0.0.0, :: and [::1]; a failed TLS handshake is logged once", async () => {
  const pki = await makeTestPki();
  const other = await makeTestPki();
  try {
    const t = await tlsOf(pki);
    const stranger = await other.issue("client", {});
    for (const host of ["127.0.0.1", "0.0.0.0", "::", "[::1]"]) {
      const { listener, errors, changes } = await recorded({ host, tls: t, acceptCheckMs: 10 });
      try {
        // Our checks never handshake: their TLS errors are not logged, and they pass.
        assert.ok(await until(() => checksDone(listener.port) >= 4), `${host}: no checks`);
        assert.deepEqual(errors, [], host);
        assert.deepEqual(changes, [], host);
        assert.equal(listener.accepting, true);
        // A TLS client without a certificate is served (the server's SETTINGS come), and h2 is
        // negotiated by ALPN (gRPC clients such as grpc-go require it).
        const alpn = await new Promise<string | false | null>((resolve, reject) => {
          const c = tls.connect({
            port: listener.port,
            host: host === "[::1]" ? "::1" : "127.0.0.1",
            ca: Deno.readTextFileSync(pki.caCert),
            ALPNProtocols: ["h2"],
          });
          c.once("data", () => {
            resolve(c.alpnProtocol);
            c.destroy();
          });
          c.on("error", reject);
          c.on("close", () => reject(new Error(`${host}: closed unserved`)));
        });
        assert.equal(alpn, "h2", host);
        // A client that speaks plaintext to the TLS port is logged, once.
        const raw = net.connect({ port: listener.port, host: host === "[::1]" ? "::1" : host });
        raw.on("error", () => {});
        raw.resume(); // reads the server's alert and end: then the socket closes
        const closed = new Promise((r) => raw.once("close", r));
        raw.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        await closed;
        assert.ok(await until(() => errors.length > 0), host);
        await sleep(50);
        assert.deepEqual(errors, [
          "TLS handshake failed: received corrupt message of type " +
          "InvalidContentType",
        ], host);
        if (host !== "127.0.0.1") continue;
        // A certificate of another CA is refused after the handshake, and said so.
        errors.length = 0;
        const s = tls.connect({
          port: listener.port,
          host: "127.0.0.1",
          ca: Deno.readTextFileSync(pki.caCert),
          cert: Deno.readTextFileSync(stranger.cert),
          key: Deno.readTextFileSync(stranger.key),
          ALPNProtocols: ["h2"],
        });
        let served = false;
        s.on("data", () => (served = true));
        s.on("error", () => {});
        await new Promise((r) => s.once("close", r));
        assert.equal(served, false);
        assert.equal(errors.length, 1, errors.join("\n"));
        assert.match(
          errors[0],
          /^TLS client 127\.0\.0\.1:\d+ refused: certificate not verified \(/,
        );
      } finally {
        await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
      }
    }
  } finally {
    await pki.remove();
    await other.remove();
  }
});

Deno.test("a listener without onError survives refusals, held connections, TLS failures and running out of descriptors", async () => {
  const pki = await makeTestPki();
  const other = await makeTestPki();
  const limit = fdLimit();
  const plain = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers,
    // 3: an accept check is usually served as a connection until it closes (CI, loaded, saw one
    // hold a slot while the two failing connections came, and one of them refused)
    maxConnections: 3,
    maxFailedConnectionsPerSecond: 1,
    // the budget's clock stands still: a loaded machine's pauses do not drain it
    throttleClock: () => 0,
    acceptCheckMs: 20,
  });
  const secure = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers,
    tls: await tlsOf(pki),
    acceptCheckMs: 0,
  });
  const clients: RawClient[] = [];
  try {
    // Two connection errors from 127.0.0.2: its next connection is held (throttle log).
    const held = await failThenConnect(plain.port, "127.0.0.2");
    clients.push(held);
    // 1, or 2 when the second failing connection arrived after the first failure was counted
    // (then it is held too)
    assert.ok(await until(() => plain.throttled >= 1));
    // Served at its turn.
    assert.ok(await held.until(() => held.settings().size > 0), "the held connection was lost");
    // Over maxConnections (refusal log).
    for (let i = 0; i < 4; i++) clients.push(await connected(plain.port));
    assert.ok(await until(() => plain.refused >= 1));
    // TLS: plaintext bytes (handshake failure), a certificate of another CA (refused).
    const raw = net.connect({ port: secure.port, host: "127.0.0.1" });
    raw.on("error", () => {});
    raw.resume();
    raw.write("hello");
    await new Promise((r) => raw.once("close", r));
    const stranger = await other.issue("client", {});
    const refused = await new Promise<boolean>((resolve) => {
      const s = tls.connect({
        port: secure.port,
        host: "127.0.0.1",
        ca: Deno.readTextFileSync(pki.caCert),
        cert: Deno.readTextFileSync(stranger.cert),
        key: Deno.readTextFileSync(stranger.key),
        ALPNProtocols: ["h2"],
      });
      s.on("error", () => resolve(true));
      s.on("close", () => resolve(true));
      s.on("data", () => resolve(false));
    });
    assert.ok(refused, "a certificate of another CA was served");
    // Out of descriptors (the accept and reopen logs), then back.
    limit.exhaust();
    try {
      assert.ok(await until(() => !plain.accepting), "still accepting");
      await sleep(200);
    } finally {
      limit.restore();
    }
    assert.ok(await until(() => plain.accepting), "never accepting again");
  } finally {
    limit.dispose();
    await Promise.all(clients.map((c) => c.close()));
    await plain.close(GrpcStatus.UNAVAILABLE, "test over", 200);
    await secure.close(GrpcStatus.UNAVAILABLE, "test over", 200);
    await pki.remove();
    await other.remove();
  }
});

Deno.test("an address over its failure budget: its next connections are held (up to 2 s), then refused; close() drops the held ones unserved; IPv4 clients of an IPv6 listener logged as IPv4", async () => {
  const { listener, errors } = await recorded({
    host: "::",
    maxFailedConnectionsPerSecond: 1,
    // the budget's clock stands still: a loaded machine's pauses do not drain it
    throttleClock: () => 0,
    acceptCheckMs: 0,
  });
  const clients: RawClient[] = [];
  try {
    // Two connection errors: over the budget of 1 a second for the next second.
    await failTwice(listener.port);
    errors.length = 0;
    // Paced one a second: the next waits about 1 s, the one after 2 s, the third would wait 3 s
    // (over 2 s) and is refused at once. One log line for all three (one per 10 s).
    const held = [await connected(listener.port), await connected(listener.port)];
    const refused = await connected(listener.port);
    clients.push(...held, refused);
    assert.ok(await refused.until(() => refused.isClosed), "not refused");
    assert.equal(refused.settings().size, 0);
    assert.equal(listener.throttled, 3);
    assert.deepEqual(errors, [
      "held or refused 1 new connection(s) (latest from 127.0.0.1): more than 1 of its " +
      "connections a second ended in a connection error",
    ]);
    assert.ok(held.every((c) => !c.isClosed), "a held connection was closed");
    // A held connection that resets does not hurt the listener.
    held[0].socket.resetAndDestroy();
    await held[0].closed;
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
    assert.ok(await held[1].until(() => held[1].isClosed), "the held connection stayed open");
    assert.equal(held[1].settings().size, 0, "the held connection was served");
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("connections over maxConnections are closed at once and logged once per 10 s, with the count and the latest address", async () => {
  const { listener, errors } = await recorded({ maxConnections: 1, acceptCheckMs: 0 });
  const clients: RawClient[] = [];
  try {
    const first = await connected(listener.port);
    clients.push(first);
    assert.ok(await first.roundTrip());
    for (let i = 0; i < 2; i++) {
      const c = await connected(listener.port, { localAddress: "127.0.0.3" });
      clients.push(c);
      assert.ok(await c.until(() => c.isClosed), "not refused");
    }
    assert.equal(listener.refused, 2);
    assert.equal(errors.length, 1, errors.join("\n"));
    assert.match(
      errors[0],
      /^refused 1 connection\(s\) \(latest from 127\.0\.0\.3:\d+\): 1 connections open, the limit is 1$/,
    );
    assert.ok(await first.roundTrip(), "the open connection was dropped");
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
  }
});

Deno.test("a listener on a unix socket path serves gRPC, reports port 0 and runs no accept check", async () => {
  const dir = await Deno.makeTempDir({ prefix: "grpc-unix-" });
  const path = `${dir}/grpc.sock`;
  const { listener, errors, changes } = await recorded({ path, acceptCheckMs: 10 });
  const clients: RawClient[] = [];
  try {
    assert.equal(listener.port, 0);
    const c = await connected(0, { path });
    clients.push(c);
    assert.ok(await c.until(() => c.settings().size > 0), "no SETTINGS over the unix socket");
    assert.ok(await c.roundTrip());
    // A check would go to port 0 and fail at once.
    await sleep(200);
    assert.equal(listener.accepting, true);
    assert.deepEqual([errors, changes], [[], []]);
    const t = { cert: te.encode("x"), key: te.encode("y"), ca: te.encode("z") };
    assert.throws(() => listener.setTls(t), /^Error: setTls\(\) on a plaintext listener$/);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("listenGrpc() on a port already taken rejects with EADDRINUSE", async () => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    await assert.rejects(
      listenGrpc({ host: "127.0.0.1", port: taken.addr.port, handlers, acceptCheckMs: 0 }),
      /EADDRINUSE/,
    );
  } finally {
    taken.close();
  }
});

for (const nativeReads of [false, true]) {
  Deno.test(`maxConnectionsPerAddress closes an address's connections beyond its bound at once; other addresses are served${nativeReads ? " (nativeReads)" : ""}`, async () => {
    const { listener, errors } = await recorded({
      maxConnectionsPerAddress: 2,
      acceptCheckMs: 0,
      nativeReads,
    });
    assert.equal(listener.reusedReads, nativeReads);
    const cs: RawClient[] = [];
    try {
      for (let i = 0; i < 2; i++) cs.push(await connected(listener.port));
      for (const c of cs) assert.ok(await c.until(() => c.settings().size > 0), "not served");
      const third = await RawClient.connect(listener.port);
      cs.push(third);
      assert.ok(
        await third.until(() => third.isClosed),
        "a third connection from 127.0.0.1 stayed",
      );
      assert.equal(third.settings().size, 0);
      const other = await connected(listener.port, { localAddress: "127.0.0.2" });
      cs.push(other);
      assert.ok(await other.until(() => other.settings().size > 0), "127.0.0.2 not served");
      assert.equal(listener.refused, 1);
      assert.deepEqual(errors, [
        "refused 1 connection(s) (latest from 127.0.0.1): the address holds 2, the limit is 2",
      ]);
      // Once one of its connections closes, the address may connect again.
      await cs[0].close();
      assert.ok(await until(() => listener.connections.size === 2));
      const again = await connected(listener.port);
      cs.push(again);
      assert.ok(await again.until(() => again.settings().size > 0), "not served again");
    } finally {
      await Promise.all(cs.map((c) => c.close()));
      await listener.close(GrpcStatus.UNAVAILABLE, "test over", 200);
    }
  });
}

Deno.test("unansweredReason(): an unanswered check says nothing when the loop was late or the process saturated, else the accept loop stopped", async () => {
  const { unansweredReason } = await import("./listener.ts");
  const stopped = "the accept loop stopped";
  const busy = "the event loop was busy";
  assert.equal(unansweredReason(1000, 5), stopped, "idle process, timer on time (EMFILE)");
  assert.equal(unansweredReason(1240, 100), stopped);
  assert.equal(unansweredReason(1250, 0), busy, "timer 250 ms late");
  assert.equal(unansweredReason(1000, 800), busy, "on the CPU 80 % of the wait");
  assert.equal(unansweredReason(1000, 790), stopped);
});

for (const shared of [false, true]) {
  Deno.test(`an accept check whose thread was blocked past its second is answered, not taken for a stopped accept loop${shared ? " (shared port)" : ""}`, async () => {
    // The check's connection waits in the backlog while the thread sleeps (no CPU, so not
    // "busy"; 100 ms late, under the lateness that says nothing): when the thread wakes, its
    // accept and the check's timer are due in the same turn, and the timer runs first.
    const check = new AcceptCheck(net, shared ? { index: 0, of: 1 } : undefined);
    const server = net.createServer((s) => {
      if (check.isProbe(s)) s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { port } = server.address() as net.AddressInfo;
      const answer = check.run(port, "127.0.0.1");
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1100);
      assert.deepEqual(await answer, { ok: true, reason: "" });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
}

/** A server on 127.0.0.1 that closes each accepted socket; `probes`: those `check` knew as its own. */
async function closingServer(check: AcceptCheck | undefined) {
  let probes = 0;
  const server = net.createServer((s) => {
    if (check?.isProbe(s)) probes++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    probes: () => probes,
    close: () => new Promise((r) => server.close(r)),
  };
}

Deno.test("a shared port's accept check connects from its next source port when one is taken", async () => {
  // the first port of the check's block, held by a listener (or by whoever holds it already)
  const holder = net.createServer();
  await new Promise<void>((r) => {
    holder.once("error", () => r());
    holder.listen(PROBE_PORT_BASE, "127.0.0.1", r);
  });
  const check = new AcceptCheck(net, { index: 0, of: 1 });
  const server = await closingServer(check);
  try {
    assert.deepEqual(await check.run(server.port, "127.0.0.1"), { ok: true, reason: "" });
    assert.equal(server.probes(), 1);
  } finally {
    await server.close();
    await new Promise((r) => holder.close(r));
  }
});

Deno.test("a shared port's accept check whose every connection reaches another listener fails, saying so", async () => {
  // the kernel hands each of the check's connections to another listener of the port, which
  // does not know it as a check and closes it (here: a server with no check)
  const check = new AcceptCheck(net, { index: 0, of: 1 });
  const server = await closingServer(undefined);
  try {
    assert.deepEqual(await check.run(server.port, "127.0.0.1"), {
      ok: false,
      reason: "8 checks in a row went to other listeners",
    });
  } finally {
    await server.close();
  }
});

/**
 * A gRPC listener's state as a server's `/metrics` tells it (`<prefix>_accepting`,
 * `<prefix>_refused_connections`, `<prefix>_throttled_connections`, `<prefix>_shed_connections`,
 * see lib/monitoring/listeners.ts), and clients that move it: connections that fail until the
 * failed-connection throttle counts one, and the process out of file descriptors until the
 * listeners cannot accept.
 * @module
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import net from "node:net";
import tls from "node:tls";
import { RawClient } from "../../lib/grpc/testing.ts";
import { fdLimit, keptAlive } from "./fd_limit.ts";
import { waitUntil } from "./procs.ts";

/** The four listener gauges of `text` named `<prefix>_...` (NaN when one is missing). */
export function listenerGauges(text: string, prefix: string) {
  const read = (name: string) =>
    Number(new RegExp(`^${prefix}_${name} (\\d+)$`, "m").exec(text)?.[1] ?? NaN);
  return {
    accepting: read("accepting"),
    refused: read("refused_connections"),
    throttled: read("throttled_connections"),
    shed: read("shed_connections"),
  };
}

/**
 * One connection to 127.0.0.1:`port` (over TLS, not verified, when `tls` is set) that sends
 * something other than the HTTP/2 preface (a connection error, which the throttle counts as a
 * failure); resolves once the server closed it, or after 5 s.
 */
export async function failingConnection(port: number, overTls = false): Promise<void> {
  const socket: net.Socket = overTls
    ? tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["h2"] })
    : net.connect({ host: "127.0.0.1", port });
  const closed = new Promise<void>((resolve) => {
    socket.once("close", () => resolve());
    socket.on("error", () => {});
  });
  socket.once(overTls ? "secureConnect" : "connect", () => {
    socket.write(Buffer.from("GET / HTTP/1.1\r\nhost: x\r\n\r\n"));
  });
  socket.resume();
  const timer = setTimeout(() => socket.destroy(), 5000);
  await closed;
  clearTimeout(timer);
}

/**
 * Opens failing connections to `port`, `batch` at once, until `/metrics` at `monitoring`
 * counts a throttled one (within 30 s); then checks that nothing else moved: the listeners
 * still accept, and no connection was refused or shed.
 */
export async function throttleUntilCounted(
  o: { port: number; tls?: boolean; monitoring: string; prefix: string; batch?: number },
): Promise<void> {
  const scrape = async () =>
    listenerGauges(await (await fetch(`http://${o.monitoring}/metrics`)).text(), o.prefix);
  assert.deepEqual(await scrape(), { accepting: 1, refused: 0, throttled: 0, shed: 0 });
  await waitUntil(
    async () => {
      await Promise.all(
        Array.from({ length: o.batch ?? 48 }, () => failingConnection(o.port, o.tls)),
      );
      return (await scrape()).throttled > 0;
    },
    30_000,
    `${o.prefix}_throttled_connections to count a connection`,
  );
  const after = await scrape();
  assert.deepEqual({ ...after, throttled: 0 }, { accepting: 1, refused: 0, throttled: 0, shed: 0 });
}

/**
 * Runs this process out of file descriptors until `/metrics` at `monitoring` (read on a
 * connection opened before) says `<prefix>_accepting 0`, then gives them back and waits for 1.
 */
export async function acceptingThroughFdExhaustion(
  monitoring: string,
  prefix: string,
): Promise<void> {
  const limit = fdLimit();
  const metrics = await keptAlive(monitoring);
  const accepting = async () =>
    listenerGauges((await metrics.get("/metrics")).body, prefix).accepting;
  try {
    assert.equal(await accepting(), 1);
    limit.exhaust();
    try {
      // the listeners' accept checks cannot connect
      await waitUntil(async () => (await accepting()) === 0, 20_000, `${prefix}_accepting 0`);
    } finally {
      limit.restore();
    }
    await waitUntil(async () => (await accepting()) === 1, 20_000, `${prefix}_accepting 1`);
  } finally {
    limit.dispose();
    metrics.close();
  }
}

/**
 * How long a new HTTP/2 client from `localAddress` waits for the server's SETTINGS and a PING's
 * answer on `port` (ms; -1 when it is not answered within 5 s). The connection is kept in `into`.
 */
export async function h2AnsweredIn(
  port: number,
  localAddress: string,
  into: RawClient[],
): Promise<number> {
  const t0 = performance.now();
  const c = await RawClient.connect(port, { localAddress }).catch(() => undefined);
  if (!c) return -1;
  into.push(c);
  const ok = await c.until(() => c.settings().size > 0, 5000) && await c.roundTrip(5000);
  return ok ? performance.now() - t0 : -1;
}

/**
 * How long a TLS handshake from `localAddress` with `port` takes (ms; -1 when it does not end
 * within 5 s). The socket is closed after.
 */
export async function tlsAnsweredIn(port: number, localAddress: string): Promise<number> {
  const t0 = performance.now();
  const socket = tls.connect({
    socket: net.connect({ host: "127.0.0.1", port, localAddress }),
    rejectUnauthorized: false,
    ALPNProtocols: ["h2"],
  });
  socket.on("error", () => {});
  const ok = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 5000);
    socket.once("secureConnect", () => (clearTimeout(timer), resolve(true)));
    socket.once("close", () => (clearTimeout(timer), resolve(false)));
  });
  socket.destroy();
  return ok ? performance.now() - t0 : -1;
}

/**
 * The attack of a server run with `ulimit -n 1024`: 1,100 connections that never speak, from
 * 127.0.0.1 and 127.0.0.3. Throughout, the listeners accept (`<prefix>_accepting` stays 1) and a
 * client from another address is answered within 1 s (`answeredIn`); `/metrics` counts what
 * the descriptor reserve and the bound per address refused or shed; once the attackers left,
 * every new client from 127.0.0.1 is answered within 1 s.
 */
export async function idleConnectionsAttack(o: {
  port: number;
  monitoring: string;
  prefix: string;
  answeredIn: (localAddress: string) => Promise<number>;
  /** The server's output, whose end an assertion that fails shows. */
  output?: () => string;
}): Promise<void> {
  const tail = () => o.output ? `\n${o.output().slice(-4000)}` : "";
  const scrape = async () =>
    listenerGauges(await (await fetch(`http://${o.monitoring}/metrics`)).text(), o.prefix);
  const attackers: RawClient[] = [];
  try {
    assert.equal((await scrape()).accepting, 1);
    const silent = (localAddress: string) =>
      RawClient.connect(o.port, { preface: false, localAddress }).then(
        (c) => void attackers.push(c),
        () => {},
      );
    for (let i = 0; i < 1100; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) => silent((i + j) % 2 ? "127.0.0.3" : "127.0.0.1")),
      );
    }
    const during: number[] = [];
    for (let i = 0; i < 5; i++) {
      during.push(await o.answeredIn("127.0.0.2"));
      assert.equal((await scrape()).accepting, 1, `the listeners stopped accepting${tail()}`);
    }
    assert.ok(
      during.every((ms) => ms >= 0 && ms < 1000),
      `during: ${during.join(", ")} ms${tail()}`,
    );
    const { refused, shed } = await scrape();
    assert.ok(refused + shed > 0, `refused ${refused}, shed ${shed}${tail()}`);
    await Promise.all(attackers.splice(0).map((c) => c.close()));
    const after: number[] = [];
    for (let i = 0; i < 10; i++) after.push(await o.answeredIn("127.0.0.1"));
    assert.ok(after.every((ms) => ms >= 0 && ms < 1000), `after: ${after.join(", ")} ms${tail()}`);
    assert.equal((await scrape()).accepting, 1, `the listeners stopped accepting${tail()}`);
  } finally {
    await Promise.all(attackers.map((c) => c.close()));
  }
}

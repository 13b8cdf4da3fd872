import assert from "node:assert/strict";
import { type GrpcListener, type GrpcListenOptions, listenGrpc } from "./mod.ts";
import { reserveSharedPort } from "../workers/mod.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { listenerTls, makeTestPki } from "../../tests/harness/certs.ts";
import { FrameType } from "./h2/frames.ts";
import { type RawClient, servedClient } from "./testing.ts";

/**
 * Two listeners sharing `port` (`reusePort` index 0 and 1, unless `o` says otherwise), each with
 * `o(index)`'s options, added to `into` as they start (for the caller to close).
 */
async function twoListeners(
  port: number,
  into: GrpcListener[],
  o: (index: number) => Partial<GrpcListenOptions>,
): Promise<void> {
  for (const index of [0, 1]) {
    into.push(
      await listenGrpc({
        host: "127.0.0.1",
        port,
        handlers: new Map(),
        reusePort: { index, of: 2 },
        ...o(index),
      }),
    );
  }
}

/** A client's HTTP/2 preface and an empty SETTINGS frame. */
const PREFACE = new Uint8Array([
  ...new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
  ...[0, 0, 0, FrameType.SETTINGS, 0, 0, 0, 0, 0],
]);

for (const transport of ["plaintext", "TLS"] as const) {
  Deno.test(`listenGrpc() with reusePort (${transport}): listeners on one port pass their accept checks quietly though the kernel hands some checks to the other`, async () => {
    const pki = transport === "TLS" ? await makeTestPki() : undefined;
    let tls: { cert: Uint8Array; key: Uint8Array; ca: Uint8Array } | undefined;
    if (pki) {
      const server = await pki.issue("server", { ips: ["127.0.0.1"] });
      tls = listenerTls(pki, server);
    }
    const port = await reserveSharedPort("127.0.0.1", 0);
    const changes: string[] = [];
    const errors: string[] = [];
    const listeners: GrpcListener[] = [];
    try {
      await twoListeners(port, listeners, (index) => ({
        tls,
        acceptCheckMs: 20,
        onAcceptingChange: (ok, why) => changes.push(`${index}: ${ok} ${why}`),
        onError: (m) => errors.push(`${index}: ${m}`),
      }));
      assert.equal(listeners[1].port, port);
      // Both listeners accept new connections (the kernel spreads them), and neither serves the
      // other's checks as connections.
      const net = await import("node:net");
      const tlsMod = await import("node:tls");
      const seen = new Set<number>();
      await waitUntil(
        async () => {
          const s = tls
            ? tlsMod.connect({
              port,
              host: "127.0.0.1",
              rejectUnauthorized: false,
              ALPNProtocols: ["h2"],
            })
            : net.connect({ port, host: "127.0.0.1" });
          await new Promise((r) => s.once(tls ? "secureConnect" : "connect", r));
          // the preface and SETTINGS, answered with the server's SETTINGS: the connection is
          // served (over TLS, the handshake is done on the server's side too, so closing it now
          // is not a failed handshake)
          const answered = new Promise((r) => {
            s.once("data", r);
            s.once("close", r); // refused: then no listener holds it
          });
          s.write(PREFACE);
          await answered;
          listeners.forEach((l, i) => l.connections.size > 0 && seen.add(i));
          s.destroy();
          return seen.size === 2;
        },
        10_000,
        "both listeners to accept a connection",
      );
      // Many checks (every 20 ms for 3 s): each found its own listener, none failed; a check that
      // went to the other listener was taken for that at once, not left to its one-second limit
      // (two unanswered checks in a row would reopen the listener).
      await new Promise((r) => setTimeout(r, 3000));
      assert.deepEqual(changes, []);
      assert.deepEqual(errors, []);
      for (const l of listeners) assert.equal(l.accepting, true);
    } finally {
      for (const l of listeners) await l.close(14, "bye", 100);
      await pki?.remove();
    }
  });
}

Deno.test("listenGrpc() with reusePort and shared connection counts: maxConnections caps the port's connections, whichever listener holds them", async () => {
  const port = await reserveSharedPort("127.0.0.1", 0);
  const slots = new Int32Array(new SharedArrayBuffer(8));
  const errors: string[] = [];
  const listeners: GrpcListener[] = [];
  const clients: RawClient[] = [];
  const open = () => servedClient(port, clients);
  try {
    await twoListeners(port, listeners, (index) => ({
      reusePort: { index, of: 2, connections: slots },
      maxConnections: 3,
      acceptCheckMs: 0,
      onError: (m) => errors.push(`${index}: ${m}`),
    }));
    // until both listeners were offered connections (the kernel picks by source port): each
    // alone would serve 3
    const offered = () => listeners.every((l) => l.connections.size + l.refused > 0);
    const served: boolean[] = [];
    for (let i = 0; i < 8 || !offered(); i++) {
      assert.ok(i < 40, "40 connections, all to one listener");
      served.push(await open());
    }
    assert.deepEqual(served, [true, true, true, ...served.slice(3).map(() => false)]);
    const held = listeners.map((l) => l.connections.size);
    assert.equal(held[0] + held[1], 3);
    assert.deepEqual([...slots], held);
    assert.equal(listeners[0].refused + listeners[1].refused, served.length - 3);
    assert.ok(errors.length > 0 && errors.length <= 2, errors.join("\n"));
    for (const e of errors) {
      assert.match(
        e,
        /^[01]: refused 1 connection\(s\) \(latest from 127\.0\.0\.1:\d+\): 3 connections open on the shared port, the limit is 3$/,
      );
    }
    // one closes: its slot is given back, and the port takes one more, not more
    await clients[0].close();
    await waitUntil(() => slots[0] + slots[1] === 2, 10_000, "the closed connection's slot");
    assert.deepEqual([await open(), await open()], [true, false]);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    for (const l of listeners) await l.close(14, "bye", 100);
  }
});

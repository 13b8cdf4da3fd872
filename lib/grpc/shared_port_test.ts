import assert from "node:assert/strict";
import { type GrpcListener, listenGrpc } from "./mod.ts";
import { reserveSharedPort } from "../workers/mod.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { listenerTls, makeTestPki } from "../../tests/harness/certs.ts";

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
      for (const index of [0, 1]) {
        listeners.push(
          await listenGrpc({
            host: "127.0.0.1",
            port,
            handlers: new Map(),
            reusePort: { index, of: 2 },
            tls,
            acceptCheckMs: 20,
            onAcceptingChange: (ok, why) => changes.push(`${index}: ${ok} ${why}`),
            onError: (m) => errors.push(`${index}: ${m}`),
          }),
        );
      }
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
          await new Promise((r) => setTimeout(r, 20));
          listeners.forEach((l, i) => l.connections.size > 0 && seen.add(i));
          s.destroy();
          return seen.size === 2;
        },
        10_000,
        "both listeners to accept a connection",
      );
      // Many checks (every 20 ms for a second): each found its own listener, none failed.
      await new Promise((r) => setTimeout(r, 1000));
      assert.deepEqual(changes, []);
      assert.deepEqual(errors, []);
      for (const l of listeners) assert.equal(l.accepting, true);
    } finally {
      for (const l of listeners) await l.close(14, "bye", 100);
      await pki?.remove();
    }
  });
}

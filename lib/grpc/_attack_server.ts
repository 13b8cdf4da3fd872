/**
 * A gRPC server on the transport for the adversarial tests (`attack_test.ts`), run as its own
 * process so that its memory can be measured: `deno run -A --v8-flags=--expose-gc
 * lib/grpc/_attack_server.ts '<limits JSON>' '<listener options JSON>'`. Prints `port <n>`; then answers each `mem` line on
 * stdin with `{rss, heapUsed, connections, accepting, refused, shed, accepted}` after a full GC.
 *
 * Methods: `/t.S/Echo` (each message back; OK when the client half-closes) and `/t.S/Big`
 * (answers each request with a 1 MiB message, like a large CDS push).
 * @module
 */

import { Buffer } from "node:buffer";
import { type CallHandler, GrpcStatus, listenGrpc } from "./mod.ts";

const limits = JSON.parse(Deno.args[0] ?? "{}");
/** Listener options (`acceptCheckMs`, `maxConnections`). */
const listenOpts = JSON.parse(Deno.args[1] ?? "{}");
const big = new Uint8Array(1024 * 1024).fill(7);
const handlers = new Map<string, CallHandler>([
  ["/t.S/Echo", (c) => {
    c.onMessage = (m) => void c.send([Buffer.from(m)]).catch(() => {});
    c.onEnd = () => c.end(GrpcStatus.OK);
  }],
  ["/t.S/Big", (c) => {
    c.onMessage = () => void c.send([big]).catch(() => {});
    c.onEnd = () => c.end(GrpcStatus.OK);
  }],
]);
const listener = await listenGrpc({
  host: "127.0.0.1",
  port: 0,
  handlers,
  limits,
  ...listenOpts,
  onError: (m) => console.error(`attack server: ${m}`),
});
console.log(`port ${listener.port}`);
const gc = (globalThis as { gc?: () => void }).gc;
const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream());
let buf = "";
for await (const chunk of lines) {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    const cmd = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    if (cmd === "mem") {
      gc?.();
      gc?.();
      const m = Deno.memoryUsage();
      console.log(JSON.stringify({
        rss: m.rss,
        heapUsed: m.heapUsed,
        external: m.external,
        connections: listener.connections.size,
        accepting: listener.accepting,
        refused: listener.refused,
        shed: listener.shed,
        accepted: listener.accepted,
      }));
    }
  }
}
await listener.close(GrpcStatus.UNAVAILABLE, "bye", 100);

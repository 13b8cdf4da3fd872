/**
 * How long one write to each of `N` connections takes to complete (its callback), through
 * `node:net` (`socket.write`, which Deno 2.7.14 tries synchronously, `uv_try_write`) and through
 * `NativeSocket` over `Deno.Conn` (`lib/grpc/native_socket.ts`, an eager async op per write): the
 * send phase of a push to `N` streams. One mode per run, so that the other's sockets do not count.
 *
 * `deno run -A bench/write_latency.ts node|native [--connections 2500] [--bytes 400] [--rounds 4]`
 * @module
 */

import net from "node:net";
import process from "node:process";
import { parseArgs } from "node:util";
import { Buffer } from "node:buffer";
import { NativeSocket } from "../lib/grpc/native_socket.ts";
import { helpIfAsked } from "./_help.ts";

/** A server side socket's write. */
type Writer = { write(b: Uint8Array, cb: () => void): unknown };

/** `n` accepted `node:net` sockets, their clients connected with `Deno.connect`. */
async function nodeSockets(n: number): Promise<Writer[]> {
  const socks: net.Socket[] = [];
  const server = net.createServer((s) => socks.push(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  for (let i = 0; i < n; i++) drain(await Deno.connect({ port, hostname: "127.0.0.1" }));
  while (socks.length < n) await new Promise((r) => setTimeout(r, 5));
  return socks;
}

/** `n` accepted `NativeSocket`s, reading. */
async function nativeSockets(n: number): Promise<Writer[]> {
  const l = Deno.listen({ port: 0, hostname: "127.0.0.1" });
  const socks: NativeSocket[] = [];
  (async () => {
    for await (const c of l) socks.push(new NativeSocket(c).resume());
  })();
  for (let i = 0; i < n; i++) {
    drain(await Deno.connect({ port: l.addr.port, hostname: "127.0.0.1" }));
  }
  while (socks.length < n) await new Promise((r) => setTimeout(r, 5));
  return socks;
}

/** Reads and drops what a client receives. */
function drain(c: Deno.Conn): void {
  const buf = new Uint8Array(16384);
  (async () => {
    while ((await c.read(buf).catch(() => null)) !== null);
  })();
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      connections: { type: "string", default: "2500" },
      bytes: { type: "string", default: "400" },
      rounds: { type: "string", default: "4" },
    },
  });
  const mode = positionals[0];
  const n = Number(values.connections), bytes = Number(values.bytes);
  const rounds = Number(values.rounds);
  if (mode !== "node" && mode !== "native") {
    console.error(`Error: mode must be "node" or "native", got "${mode ?? ""}"`);
    Deno.exit(2);
  }
  for (const [k, v] of Object.entries({ connections: n, bytes, rounds })) {
    if (!Number.isInteger(v) || v <= 0) {
      console.error(`Error: --${k} must be a positive integer, got "${v}"`);
      Deno.exit(2);
    }
  }
  const socks = mode === "node" ? await nodeSockets(n) : await nativeSockets(n);
  const payload = Buffer.alloc(bytes, 1);
  for (let round = 0; round < rounds; round++) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let issued = 0;
    await new Promise<void>((resolve) => {
      let left = n;
      for (const s of socks) s.write(payload, () => --left === 0 && resolve());
      issued = performance.now() - t0;
    });
    const done = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    console.log(
      `${mode} round ${round}: ${n} writes of ${bytes} B issued in ${issued.toFixed(1)} ms, ` +
        `all completed in ${done.toFixed(1)} ms, CPU ${
          ((cpu.user + cpu.system) / 1000).toFixed(0)
        } ms`,
    );
    await new Promise((r) => setTimeout(r, 100));
  }
  Deno.exit(0);
}

if (import.meta.main) {
  await helpIfAsked(import.meta.url);
  await main();
}

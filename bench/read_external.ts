/**
 * What one read costs in V8 external memory, and how many major GCs it starts: `N` connections
 * each receive one `S`-byte message per wave (like an ADS worker's 2,500 streams each receiving a
 * SotW EDS ACK of ~35 kB that names every watched cluster), `W` waves, read two ways:
 *
 * - `node`: `node:net`, as `lib/grpc` reads today. Deno 2.7.14's native read callback
 *   (`ext/node/ops/stream_wrap.rs`, `on_uv_read`) wraps each read in a new ArrayBuffer (a 64 KiB
 *   allocation, counted by V8 as the `nread` bytes it holds), freed only when a GC sweeps it;
 * - `deno`: `Deno.listen` and `Deno.Conn.read()` into one buffer per connection, reused.
 *
 * In `node` mode the child then writes one reused 2000-byte Buffer to every connection (the output
 * side's pooled buffers) and reports the external memory that allocated.
 *
 * Each mode runs in a child process with `--trace-gc --trace-incremental-marking`; the figures are
 * the external memory allocated per wave (the rises of V8's `external_memory`, sampled every
 * millisecond) and the Mark-Compacts with what started their marking.
 *
 * `deno run -A bench/read_external.ts [--connections 2500] [--bytes 35000] [--waves 10]`
 * @module
 */

import { parseArgs } from "node:util";
import { helpIfAsked } from "./_help.ts";

interface Options {
  connections: number;
  bytes: number;
  waves: number;
}

/** The child: serves `mode`, sends the waves from in-process clients, prints `wave` lines. */
async function child(mode: string, o: Options): Promise<void> {
  const v8 = await import("node:v8");
  const external = () => v8.getHeapStatistics().external_memory;
  // Allocated external memory: the sum of its rises, sampled between tasks (a GC's sweep only
  // lowers it).
  let allocated = 0, last = external();
  const sample = () => {
    const e = external();
    if (e > last) allocated += e - last;
    last = e;
  };
  setInterval(sample, 1);
  let received = 0;
  let port: number;
  const accepted: import("node:net").Socket[] = [];
  if (mode === "node") {
    const net = await import("node:net");
    const server = net.createServer((s) => {
      accepted.push(s);
      s.on("data", (c: Uint8Array) => received += c.length);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as { port: number }).port;
  } else {
    const listener = Deno.listen({ port: 0, hostname: "127.0.0.1" });
    port = listener.addr.port;
    (async () => {
      for await (const conn of listener) {
        (async () => {
          const buf = new Uint8Array(16 * 1024);
          for (;;) {
            const n = await conn.read(buf).catch(() => null);
            if (n === null) break;
            received += n;
          }
        })();
      }
    })();
  }
  const clients: Deno.Conn[] = [];
  for (let i = 0; i < o.connections; i++) {
    clients.push(await Deno.connect({ port, hostname: "127.0.0.1" }));
  }
  const message = new Uint8Array(o.bytes).fill(7);
  for (let w = 0; w < o.waves; w++) {
    await new Promise((r) => setTimeout(r, 300));
    sample();
    const a0 = allocated, r0 = received;
    await Promise.all(clients.map(async (c) => {
      for (let at = 0; at < o.bytes;) at += await c.write(message.subarray(at));
    }));
    while (received - r0 < o.connections * o.bytes) await new Promise((r) => setTimeout(r, 2));
    sample();
    console.error(`wave ${w} ${((allocated - a0) / 1e6).toFixed(1)} ${(received - r0) / 1e6}`);
  }
  if (mode === "node") {
    // The other direction: one write of the same pooled buffer to every connection.
    const out = (await import("node:buffer")).Buffer.allocUnsafeSlow(2000);
    sample();
    const a0 = allocated;
    await Promise.all(accepted.map((s) => new Promise((r) => s.write(out, r))));
    sample();
    console.error(`writes ${((allocated - a0) / 1e6).toFixed(3)} ${accepted.length}`);
  }
  Deno.exit(0);
}

/** Runs one mode in a child process and summarises its waves and GC trace. */
async function run(mode: string, o: Options): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--v8-flags=--trace-gc,--trace-incremental-marking",
      import.meta.filename!,
      "--child",
      mode,
      "--connections",
      String(o.connections),
      "--bytes",
      String(o.bytes),
      "--waves",
      String(o.waves),
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  // V8's trace on stdout, the waves on stderr (the two are buffered apart).
  const lines = new TextDecoder().decode(out.stdout).split("\n")
    .concat(new TextDecoder().decode(out.stderr).split("\n"));
  const waves: string[] = [];
  let writes = "";
  const starts = new Map<string, number>();
  let compacts = 0;
  for (const l of lines) {
    if (/Mark-Compact/.test(l) && !l.includes("[IncrementalMarking]")) compacts++;
    const s = /\[IncrementalMarking\] Start \(([^)]+)\)/.exec(l);
    if (s) starts.set(s[1], (starts.get(s[1]) ?? 0) + 1);
    const w = /^wave (\d+) (-?[\d.]+) ([\d.]+)$/.exec(l);
    if (w) waves.push(w[2]);
    const x = /^writes ([\d.]+) (\d+)$/.exec(l);
    if (x) writes = `; one write of a reused 2000-byte Buffer to each of ${x[2]}: +${x[1]} MB`;
  }
  const why = [...starts].map(([k, n]) => `${n} ${k}`).join(", ") || "none";
  return `${mode}: external MB per wave ${waves.join(" ")}; ${compacts} Mark-Compacts ` +
    `(markings started by: ${why})${writes}`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      child: { type: "string" },
      connections: { type: "string", default: "2500" },
      bytes: { type: "string", default: "35000" },
      waves: { type: "string", default: "10" },
    },
  });
  const o: Options = {
    connections: Number(values.connections),
    bytes: Number(values.bytes),
    waves: Number(values.waves),
  };
  for (const [k, v] of Object.entries(o)) {
    if (!Number.isInteger(v) || v <= 0) {
      console.error(`Error: --${k} must be a positive integer, got "${v}"`);
      Deno.exit(2);
    }
  }
  if (values.child) return await child(values.child, o);
  console.log(
    `${o.connections} connections × ${o.bytes} B per wave (${
      (o.connections * o.bytes / 1e6).toFixed(1)
    } MB), ${o.waves} waves`,
  );
  for (const mode of ["node", "deno"]) console.log(await run(mode, o));
}

if (import.meta.main) {
  await helpIfAsked(import.meta.url);
  await main();
}

/**
 * mesh-policy benchmark (the real program, Check over gRPC):
 *
 * 1. headline latency at 1000 checks/s from an independent client, `h2load` (nghttp2, Debian
 *    package nghttp2-client) sending gRPC-framed Check requests over HTTP/2 with a per-request
 *    log, evenly paced by a timing script (the headline) and then with h2load's own `--rps`
 *    (bursts of ~10 every 10 ms): p50/p99/p999 (target p99 ≤ 1 ms) next to the no-op grpc-js handler
 *    (`bench/_noop_mixer.ts`) driven the same way; responses are verified (one request through
 *    `nghttp -v` must end with `grpc-status: 0`, and the server's `mesh_policy_check_total{code="0"}`
 *    must grow by every request h2load completed);
 * 2. the same rate from a grpc-js client in the bench process (the cross-check) and the server's
 *    CPU, as vCPU per 1000 checks/s (the reference system's Mixer needed 0.5);
 * 3. maximum Check throughput (closed loop, N calls in flight) next to a no-op grpc-js unary
 *    handler (`bench/_noop_mixer.ts`) measured in the same run (target ≥ 50 %).
 *
 * The configuration is realistic: the default telemetry rules, a denier rule whose match does
 * not hold, and a listchecker whitelist that every request passes.
 *
 * `deno task bench policy [--seconds N] [--rate N] [--inflight N]`; `--help` prints this.
 * @module
 */

import { DEFAULT_MANIFEST } from "../lib/expr/mod.ts";
import { compress, GLOBAL_DICTIONARY, mixerCodec } from "../lib/mixer/mod.ts";
import { denyConfig, policyAddresses, policyServerArgs } from "../tests/harness/policy.ts";
import { type ProgramProcess, spawnProgram } from "../tests/harness/procs.ts";
import { V8_FLAGS } from "../compile.ts";
import { h2loadClosedLoop } from "./_h2load.ts";

const USAGE =
  `Usage: deno task bench policy [--seconds N] [--rate N] [--inflight N] [--latency-only]

Check latency (p50, p99, p999) at --rate checks/s (default 1000) from h2load (nghttp2) sending
gRPC-framed requests, against mesh-policy and a no-op grpc-js handler, first evenly paced (one
request every 1000/rate ms, the headline), then with h2load's bursty --rps. mesh-policy runs with
the V8 flags it is built with (compile.ts V8_FLAGS); the even run is repeated against a second
mesh-policy with V8's defaults, to show what the flags change (in the middle of the first one's
run, cut in two halves: A B B A, so that neither gains from going first). Then the same rate from a
grpc-js client (open loop) as the cross-check, with mesh-policy's CPU; then
the maximum Check throughput with --inflight calls in flight (default 32) against mesh-policy and
against a no-op grpc-js unary handler measured in the same run.

  --seconds N    duration of each measured phase (default 5)
  --rate N       open-loop rate of the latency phase (default 1000)
  --inflight N   calls in flight in the throughput phases (default 32)
  --latency-only stop after the h2load latency runs
  --workers-only only the last phase: Check throughput of mesh-policy --workers 1 against
                 --workers 2 (h2load, 16 connections)

The phases above run mesh-policy with --workers 1 (one isolate). The last phase measures the
speed-up of --workers 2: h2load (C, one thread, in its own process) keeps 16 connections with 4
Checks in flight each against mesh-policy --workers 1 and --workers 2, alternately (A B B A,
--seconds / 2 each), and reports Checks/s, the server's CPU (from /proc) and the rest of the
machine's (h2load and anything else running; the box has as many cores as it says).

On a shared machine the latency tail measures the scheduler as much as the server: run it alone,
or give the measured processes the CPU with \`chrt -f 10 deno task bench policy --latency-only\`
(real-time priority is inherited by the servers and h2load; do not use it for the throughput
phases, which would starve the rest of the machine).

Needs h2load and nghttp (Debian package nghttp2-client). With nghttpd (nghttp2-server) the even run
also goes to nghttpd serving a 20-byte file: a C HTTP/2 server that does no work, the floor that
the client, the kernel and the scheduler of this machine set.
`;

interface Options {
  seconds: number;
  rate: number;
  inflight: number;
  latencyOnly: boolean;
  workersOnly: boolean;
}

function parseArgs(args: string[]): Options | undefined {
  const o: Options = {
    seconds: 5,
    rate: 1000,
    inflight: 32,
    latencyOnly: false,
    workersOnly: false,
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--help" || a === "-h") return undefined;
    if (a === "--latency-only") {
      o.latencyOnly = true;
      continue;
    }
    if (a === "--workers-only") {
      o.workersOnly = true;
      continue;
    }
    const key = a.replace(/^--/, "") as "seconds" | "rate" | "inflight";
    if (!["seconds", "rate", "inflight"].includes(key)) {
      throw new Error(`Unknown flag ${a}\n\n${USAGE}`);
    }
    const v = Number(args[++i]);
    if (!(v > 0)) throw new Error(`Flag ${a}: want a positive number`);
    o[key] = v;
  }
  return o;
}

// A deny rule that matches none of the bench's calls (evaluated on each), and a list check.
const CONFIG = `${
  denyConfig('destination.labels["version"] == "v0" && source.name.startsWith("legacy")')
}---
apiVersion: config.mesh.io/v1alpha2
kind: listchecker
metadata: {name: allowed, namespace: mesh-system}
spec: {overrides: [reviews, ratings, productpage], blacklist: false}
---
apiVersion: config.mesh.io/v1alpha2
kind: listentry
metadata: {name: src, namespace: mesh-system}
spec:
  value: source.labels["app"] | "unknown"
---
apiVersion: config.mesh.io/v1alpha2
kind: rule
metadata: {name: whitelist, namespace: mesh-system}
spec:
  match: context.protocol == "http"
  actions: [{handler: allowed.listchecker, instances: [src.listentry]}]
`;

const ATTRS = {
  "context.protocol": "http",
  "source.name": "reviews-v1-1234",
  "source.labels": { app: "reviews", version: "v1" },
  "destination.service": "ratings.default.svc.cluster.local",
  "destination.labels": { app: "ratings", version: "v1" },
  "request.method": "GET",
  "request.path": "/ratings/0",
  "request.headers": { ":authority": "ratings:9080", "user-agent": "bench", "x-request-id": "r" },
};

type Client = { check(): Promise<number>; close(): void };

async function client(address: string): Promise<Client> {
  const grpc = await import("../lib/deps/grpc.ts");
  // deno-lint-ignore no-explicit-any
  const pkg = grpc.loadPackageDefinition((await mixerCodec()).definition) as any;
  const c = new pkg.mesh.mixer.v1.Mixer(address, grpc.credentials.createInsecure());
  const req = {
    attributes: compress(ATTRS, DEFAULT_MANIFEST),
    global_word_count: GLOBAL_DICTIONARY.length,
  };
  return {
    check: () =>
      new Promise((resolve, reject) =>
        c.Check(
          req,
          (e: Error | null, r: { precondition: { status: { code?: number } } }) =>
            e ? reject(e) : resolve(r.precondition.status.code ?? 0),
        )
      ),
    close: () => c.close(),
  };
}

/** CPU seconds (user + system) used so far by process `pid`. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/** The Check request as a gRPC message: 5-byte prefix (uncompressed, length) + CheckRequest. */
async function grpcFrame(): Promise<Uint8Array> {
  const msg = (await mixerCodec()).encodeCheckRequest({
    attributes: compress(ATTRS, DEFAULT_MANIFEST),
    global_word_count: GLOBAL_DICTIONARY.length,
  });
  const frame = new Uint8Array(5 + msg.length);
  new DataView(frame.buffer).setUint32(1, msg.length);
  frame.set(msg, 5);
  return frame;
}

const CHECK_PATH = "/mesh.mixer.v1.Mixer/Check";
const GRPC_HEADERS = ["-H", "content-type: application/grpc", "-H", "te: trailers"];

/** One Check through `nghttp -v`: the grpc-status of its trailers (or headers if trailers-only). */
async function nghttpStatus(address: string, body: string): Promise<string> {
  const out = await new Deno.Command("nghttp", {
    args: ["-v", "-d", body, ...GRPC_HEADERS, `http://${address}${CHECK_PATH}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder("utf-8", { fatal: false }).decode(out.stdout);
  return /grpc-status: (\d+)/.exec(text)?.[1] ?? `none (nghttp exit ${out.code})`;
}

/**
 * nghttpd (plain HTTP/2) serving `<dir>/www` on a free loopback port, or undefined when nghttpd is
 * not installed. The path of the Check (`/mesh.mixer.v1.Mixer/Check`) is a 20-byte file there.
 */
async function startNghttpd(dir: string) {
  const www = `${dir}/www/mesh.mixer.v1.Mixer`;
  await Deno.mkdir(www, { recursive: true });
  await Deno.writeTextFile(`${www}/Check`, "x".repeat(20));
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  let child;
  try {
    child = new Deno.Command("nghttpd", {
      args: ["--no-tls", "-a", "127.0.0.1", "-d", `${dir}/www`, String(port)],
      stdout: "null",
      stderr: "null",
    }).spawn();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  for (let i = 0; i < 100; i++) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return { child, port };
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  child.kill();
  await child.status;
  throw new Error(`nghttpd did not listen on 127.0.0.1:${port}`);
}

/** How h2load spaces the requests of the latency phase. */
type Pacing = "even" | "rps";

/**
 * h2load at `rate` requests/s for `seconds`, logging every request to `log`. Returns the sorted
 * latencies (ms) and h2load's count of completed requests.
 *
 * - `even`: one HTTP/2 connection (up to 16 streams, so a slow answer does not hold back the
 *   schedule) playing a timing script with one request every `1000 / rate` ms (h2load's timing
 *   scripts have microsecond resolution): the arrival pattern of "1000 checks/s".
 * - `rps`: h2load's own `--rps` over 4 connections. Its rate timer ticks every 10 ms, so the
 *   requests arrive in bursts of about `rate / 100` at once (measured: bursts of 8 to 12 at
 *   1000/s); the last of a burst waits for the others. Shown as the harsher pattern.
 */
async function h2loadCheck(
  address: string,
  body: string,
  log: string,
  rate: number,
  seconds: number,
  pacing: Pacing,
) {
  const url = `http://${address}${CHECK_PATH}`;
  let shape: string[];
  if (pacing === "even") {
    const script = `${log}.timing`;
    const n = Math.round(rate * seconds);
    const lines = Array.from({ length: n }, (_, i) => `${(i * 1000 / rate).toFixed(3)}\t${url}`);
    await Deno.writeTextFile(script, lines.join("\n") + "\n");
    shape = ["-c", "1", "-m", "16", "--timing-script-file", script];
  } else {
    const clients = 4;
    shape = [
      "-c",
      String(clients),
      "-m",
      "16",
      "--rps",
      String(rate / clients),
      "-D",
      String(seconds),
      url,
    ];
  }
  const out = await new Deno.Command("h2load", {
    args: ["-t", "1", ...shape, "--log-file", log, "-d", body, ...GRPC_HEADERS],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`h2load failed: ${new TextDecoder().decode(out.stderr)}${text}`);
  }
  const rows = (await Deno.readTextFile(log)).trim().split("\n").filter((l) => l)
    .map((l) => l.split("\t").map(Number));
  const bad = rows.filter((r) => r[1] !== 200).length;
  if (bad > 0) {
    throw new Error(`${bad} of ${rows.length} requests got HTTP status != 200:\n${text}`);
  }
  const done = Number(/requests: \d+ total, \d+ started, (\d+) done/.exec(text)?.[1] ?? NaN);
  return { ms: rows.map((r) => r[2] / 1000).sort((a, b) => a - b), done };
}

function latencyRow(label: string, ms: number[]): string {
  const f = (x: number) => x.toFixed(3).padStart(8);
  return `${label.padEnd(40)} ${String(ms.length).padStart(6)} ${f(percentile(ms, 0.5))} ${
    f(percentile(ms, 0.99))
  } ${f(percentile(ms, 0.999))} ${f(ms.at(-1)!)}`;
}

async function openLoop(c: Client, rate: number, seconds: number) {
  const lat: number[] = [];
  let errors = 0;
  const pending: Promise<void>[] = [];
  const start = performance.now();
  let sent = 0;
  while (performance.now() - start < seconds * 1000) {
    const due = Math.floor(((performance.now() - start) / 1000) * rate);
    for (; sent < due; sent++) {
      const t0 = performance.now();
      pending.push(
        c.check().then(() => void lat.push(performance.now() - t0), () => void errors++),
      );
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(pending);
  lat.sort((a, b) => a - b);
  return { sent, errors, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99) };
}

async function closedLoop(c: Client, inflight: number, seconds: number) {
  let done = 0, errors = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: inflight }, async () => {
    while (performance.now() < end) {
      try {
        await c.check();
        done++;
      } catch {
        errors++;
      }
    }
  }));
  return { rate: done / seconds, errors };
}

/** The share of Checks the server answered within 1 ms (its own histogram). */
async function serverSide(monitoring: string) {
  const text = await (await fetch(`http://${monitoring}/metrics`)).text();
  const v = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  const count = v(/^mesh_policy_check_duration_seconds_count (\S+)$/m);
  const le1 = v(/^mesh_policy_check_duration_seconds_bucket\{le="0.001"\} (\S+)$/m);
  const ok = v(/^mesh_policy_check_total\{code="0"\} (\S+)$/m);
  const all = [...text.matchAll(/^mesh_policy_check_total\{code="[^"]*"\} (\S+)$/gm)]
    .reduce((n, m) => n + Number(m[1]), 0);
  return { count, le1, within1ms: (100 * le1) / count, ok, notOk: all - ok };
}

async function warm(c: Client) {
  await closedLoop(c, 8, 1);
}

/** Busy and total CPU seconds of the whole machine so far (/proc/stat, USER_HZ = 100). */
async function machineCpu(): Promise<{ busy: number; total: number }> {
  const f = (await Deno.readTextFile("/proc/stat")).split("\n")[0].trim().split(/\s+/).slice(1)
    .map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: (total - f[3] - (f[4] ?? 0)) / 100, total: total / 100 };
}

/**
 * h2load closed loop against `address` for `seconds`: 16 connections, 4 Checks in flight each,
 * one client thread. Returns the requests completed and those started.
 */
async function h2loadMax(address: string, body: string, seconds: number) {
  const r = await h2loadClosedLoop({
    url: `http://${address}${CHECK_PATH}`,
    body,
    headers: GRPC_HEADERS.filter((h) => h !== "-H"),
    connections: 16,
    streams: 4,
    seconds,
  });
  return { done: r.done, started: r.started };
}

/**
 * Check throughput of mesh-policy --workers 1 against --workers 2, alternately (A B B A), from
 * h2load in its own process; every Check must be counted OK by the server.
 */
async function workersPhase(dir: string, o: Options): Promise<void> {
  const body = `${dir}/check.bin`;
  await Deno.writeFile(body, await grpcFrame());
  const servers: { w: number; proc: ProgramProcess; address: string; monitoring: string }[] = [];
  try {
    for (const w of [1, 2]) {
      // with its V8 flags (spawnProgram's default: compile.ts V8_FLAGS)
      const proc = spawnProgram("mesh-policy", policyServerArgs(dir, "--workers", String(w)));
      servers.push({ w, proc, address: "", monitoring: "" });
      const s = servers.at(-1)!;
      Object.assign(s, await policyAddresses(proc, 60_000));
      if (await nghttpStatus(s.address, body) !== "0") {
        throw new Error(`mesh-policy --workers ${w}: the Check is not answered OK`);
      }
      await h2loadMax(s.address, body, 2); // warm-up (every worker: 16 connections)
    }
    const sum = new Map<
      number,
      { done: number; secs: number; cpu: number; busy: number; wall: number }
    >();
    const half = o.seconds / 2;
    for (const s of [servers[0], servers[1], servers[1], servers[0]]) {
      const before = await serverSide(s.monitoring);
      const cpu0 = await cpuSeconds(s.proc.pid), m0 = await machineCpu();
      const r = await h2loadMax(s.address, body, half);
      const cpu1 = await cpuSeconds(s.proc.pid), m1 = await machineCpu();
      const after = await serverSide(s.monitoring);
      // Requests still in flight when h2load's time is up are answered but not counted done.
      const ok = after.ok - before.ok;
      if (ok < r.done || ok > r.started || after.notOk !== before.notOk) {
        throw new Error(
          `mesh-policy --workers ${s.w} counted ${ok} Checks OK (${
            after.notOk - before.notOk
          } not OK); h2load: ${r.done} done of ${r.started} started`,
        );
      }
      const acc = sum.get(s.w) ?? { done: 0, secs: 0, cpu: 0, busy: 0, wall: 0 };
      acc.done += r.done;
      acc.secs += half;
      acc.cpu += cpu1 - cpu0;
      acc.busy += m1.busy - m0.busy;
      acc.wall += (m1.total - m0.total) / navigator.hardwareConcurrency;
      sum.set(s.w, acc);
    }
    const rate = (w: number) => sum.get(w)!.done / sum.get(w)!.secs;
    console.log(
      `Check throughput by worker isolates (h2load: 1 thread, 16 connections x 4 in flight, ` +
        `${half} s x 2 each, A B B A; ${navigator.hardwareConcurrency} cores; load average ` +
        `${Deno.loadavg().map((v) => v.toFixed(2)).join(" ")}):`,
    );
    for (const w of [1, 2]) {
      const a = sum.get(w)!;
      console.log(
        `  --workers ${w}: ${rate(w).toFixed(0)} checks/s, server CPU ${
          (1e6 * a.cpu / a.done).toFixed(0)
        } µs/check; server ${(a.cpu / a.wall).toFixed(2)} ` +
          `cores, rest of the machine (h2load, others) ${
            ((a.busy - a.cpu) / a.wall).toFixed(2)
          } cores`,
      );
    }
    const x = rate(2) / rate(1);
    console.log(
      `  speed-up W=2 / W=1: ${x.toFixed(2)}x (target >= 1.4x): ${x >= 1.4 ? "met" : "MISSED"}`,
    );
  } finally {
    for (const s of servers) await s.proc.stop();
  }
}

/** Runs the benchmark. */
export async function main(args: string[] = []): Promise<void> {
  const o = parseArgs(args);
  if (!o) {
    console.log(USAGE);
    return;
  }
  const dir = await Deno.makeTempDir({ prefix: "mesh-bench-policy-" });
  await Deno.writeTextFile(`${dir}/rules.yaml`, CONFIG);
  let server: ProgramProcess | undefined, noop: ProgramProcess | undefined;
  let plain: ProgramProcess | undefined;
  let floor: { child: Deno.ChildProcess; port: number } | undefined;
  let c: Client | undefined, b: Client | undefined;
  try {
    if (o.workersOnly) return await workersPhase(dir, o);
    const policyArgs = policyServerArgs(dir, "--workers", "1");
    // As built by compile.ts (its V8 flags: spawnProgram's default), and with V8's defaults for
    // comparison (no --v8-flags).
    server = spawnProgram("mesh-policy", policyArgs);
    plain = spawnProgram("mesh-policy", policyArgs, { denoArgs: ["-A"] });
    noop = spawnProgram(new URL("./_noop_mixer.ts", import.meta.url).pathname);
    const { address, monitoring } = await policyAddresses(server, 30_000);
    const port = (await noop.waitFor(/listening (\d+)/, 30_000)).split(" ")[1];
    const plainAddress = (await plain.waitFor(/Policy API listening on (\S+)/, 30_000)).split(" ")
      .at(-1)!;
    c = await client(address);
    b = await client(`127.0.0.1:${port}`);
    if ((await c.check()) !== 0) {
      throw new Error("the bench configuration does not allow the request");
    }
    await warm(c);
    await warm(b);

    // 1. Headline: h2load, an independent HTTP/2 client, sending gRPC-framed Checks.
    await Deno.writeFile(`${dir}/check.bin`, await grpcFrame());
    const noopAddress = `127.0.0.1:${port}`;
    const status = {
      policy: await nghttpStatus(address, `${dir}/check.bin`),
      noop: await nghttpStatus(noopAddress, `${dir}/check.bin`),
    };
    if (status.policy !== "0" || status.noop !== "0") {
      throw new Error(
        `nghttp Check: grpc-status ${status.policy} (mesh-policy), ` +
          `${status.noop} (no-op handler); want 0`,
      );
    }
    const h2Run = (addr: string, log: string, seconds: number, pacing: Pacing) =>
      h2loadCheck(addr, `${dir}/check.bin`, `${dir}/${pacing}-${log}`, o.rate, seconds, pacing);
    /** One pacing against both servers; checks that mesh-policy counted every request OK. */
    /**
     * With `between`, mesh-policy's run is cut in two halves with `between` in the middle, so
     * that a comparison measured there sits at the same average time (A B B A: fair to a
     * machine whose background load drifts during the run).
     */
    const phase = async (pacing: Pacing, between?: () => Promise<void>) => {
      await h2Run(noopAddress, "warm.log", 2, pacing);
      const base = await h2Run(noopAddress, "noop.log", o.seconds, pacing);
      await h2Run(address, "warm.log", 2, pacing);
      const before = await serverSide(monitoring);
      let ours;
      if (between) {
        const a = await h2Run(address, "policy-a.log", o.seconds / 2, pacing);
        await between();
        const b = await h2Run(address, "policy-b.log", o.seconds / 2, pacing);
        ours = { ms: [...a.ms, ...b.ms].sort((x, y) => x - y), done: a.done + b.done };
      } else ours = await h2Run(address, "policy.log", o.seconds, pacing);
      const after = await serverSide(monitoring);
      const okDelta = after.ok - before.ok, errDelta = after.notOk - before.notOk;
      if (okDelta !== ours.done || errDelta !== 0) {
        throw new Error(
          `mesh-policy answered ${okDelta} Checks OK of ${ours.done} h2load completed (${errDelta} not OK)`,
        );
      }
      const within = (100 * (after.le1 - before.le1) / (after.count - before.count)).toFixed(2);
      return { base, ours, within, count: after.count - before.count };
    };
    let evenPlain: Awaited<ReturnType<typeof h2Run>> | undefined;
    await h2Run(plainAddress, "warm.log", 2, "even");
    const even = await phase("even", async () => {
      evenPlain = await h2Run(plainAddress, "plain.log", o.seconds, "even");
    });
    let evenFloor: Awaited<ReturnType<typeof h2Run>> | undefined;
    floor = await startNghttpd(dir);
    if (floor) {
      const floorAddress = `127.0.0.1:${floor.port}`;
      await h2Run(floorAddress, "warm.log", 2, "even");
      evenFloor = await h2Run(floorAddress, "floor.log", o.seconds, "even");
      floor.child.kill();
      await floor.child.status;
      floor = undefined;
    }
    const rps = await phase("rps");
    console.log(
      `h2load (nghttp2), ${o.rate} gRPC Check requests/s for ${o.seconds} s per run, each server ` +
        `warmed up by 2 s of the same; nghttp -v: grpc-status 0 from both servers; mesh-policy's ` +
        `mesh_policy_check_total{code="0"} grew by exactly the requests h2load completed in every run.\n` +
        `  even: one connection, a timing script with one request every ${
          (1000 / o.rate).toFixed(3)
        } ms\n` +
        `  rps:  h2load --rps over 4 connections (its 10 ms rate timer sends bursts of ~${
          Math.round(o.rate / 100)
        } at once)`,
    );
    console.log(
      `${"latency (ms)".padEnd(40)} ${"n".padStart(6)} ${"p50".padStart(8)} ${"p99".padStart(8)} ${
        "p999".padStart(8)
      } ${"max".padStart(8)}`,
    );
    for (const [name, r] of [["even", even], ["rps", rps]] as const) {
      console.log(latencyRow(`${name}: baseline no-op grpc-js handler`, r.base.ms));
      console.log(latencyRow(`${name}: mesh-policy Check`, r.ours.ms));
      if (name !== "even") continue;
      console.log(latencyRow(`even: mesh-policy, V8 defaults`, evenPlain!.ms));
      if (evenFloor) {
        console.log(latencyRow(`even: floor, nghttpd (C) serving a file`, evenFloor.ms));
      } else console.log(`even: floor not measured (no nghttpd: Debian package nghttp2-server)`);
    }
    console.log(
      `mesh-policy's V8 flags (compile.ts): ${V8_FLAGS["mesh-policy"]?.join(" ") || "none"}; ` +
        `"V8 defaults": the same program without them`,
    );
    for (const [name, r] of [["even", even], ["rps", rps]] as const) {
      console.log(
        `server side during the ${name} run: ${r.within} % of ${r.count} checks answered within 1 ms`,
      );
    }
    const h2p99 = percentile(even.ours.ms, 0.99);
    console.log(
      `target Check p99 <= 1 ms at ${o.rate} checks/s (h2load, even pacing): ${
        h2p99 <= 1 ? "met" : "MISSED"
      } (${h2p99.toFixed(3)} ms; with --rps bursts: ${
        percentile(rps.ours.ms, 0.99).toFixed(3)
      } ms)`,
    );

    if (o.latencyOnly) return;
    // 2. Cross-check: the same rate from a grpc-js client in this process.

    const cpu0 = await cpuSeconds(server.pid);
    const t0 = performance.now();
    const lat = await openLoop(c, o.rate, o.seconds);
    const cpu = (await cpuSeconds(server.pid) - cpu0) / ((performance.now() - t0) / 1000);
    const served = await serverSide(monitoring);
    const achieved = lat.sent / o.seconds;
    console.log(
      `cross-check, grpc-js client in the bench process, open loop ${o.rate} checks/s for ${o.seconds} s: sent ${lat.sent}, errors ${lat.errors}, ` +
        `p50 ${lat.p50.toFixed(3)} ms, p99 ${lat.p99.toFixed(3)} ms`,
    );
    console.log(
      `server side (mesh_policy_check_duration_seconds, every Check so far): ` +
        `${served.within1ms.toFixed(2)} % of ${served.count} checks answered within 1 ms`,
    );
    console.log(
      `mesh-policy CPU: ${cpu.toFixed(3)} vCPU at ${achieved.toFixed(0)} checks/s = ` +
        `${(cpu / (achieved / 1000)).toFixed(3)} vCPU per 1000 checks/s (reference Mixer: 0.5)`,
    );
    const baseLat = await openLoop(b, o.rate, o.seconds);
    console.log(
      `baseline, no-op grpc-js handler at ${o.rate} checks/s: errors ${baseLat.errors}, ` +
        `p50 ${baseLat.p50.toFixed(3)} ms, p99 ${baseLat.p99.toFixed(3)} ms`,
    );
    const ours = await closedLoop(c, o.inflight, o.seconds);
    const base = await closedLoop(b, o.inflight, o.seconds);
    console.log(
      `max throughput (${o.inflight} in flight, ${o.seconds} s): mesh-policy ${
        ours.rate.toFixed(0)
      } ` +
        `checks/s (errors ${ours.errors}); no-op grpc-js handler ${
          base.rate.toFixed(0)
        } checks/s ` +
        `(errors ${base.errors}); ratio ${
          (100 * ours.rate / base.rate).toFixed(1)
        } % (target >= 50 %)`,
    );
    await workersPhase(dir, o);
  } finally {
    c?.close();
    b?.close();
    floor?.child.kill();
    await floor?.child.status;
    await server?.stop();
    await plain?.stop();
    await noop?.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) await main(Deno.args);

/**
 * mesh-policy benchmark (the real program, Check over gRPC from grpc-js clients):
 *
 * 1. latency at 1000 checks/s (open loop): p50/p99 (target p99 ≤ 1 ms) and the server's CPU,
 *    as vCPU per 1000 checks/s (the reference system's Mixer needed 0.5);
 * 2. maximum Check throughput (closed loop, N calls in flight) next to a no-op grpc-js unary
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
import { type ProgramProcess, spawnProgram } from "../tests/harness/procs.ts";

const USAGE = `Usage: deno task bench policy [--seconds N] [--rate N] [--inflight N]

Check latency (p50, p99) and mesh-policy's CPU at --rate checks/s (default 1000, open loop; the
same against a no-op grpc-js handler as the baseline of the client and machine), then
the maximum Check throughput with --inflight calls in flight (default 32) against mesh-policy and
against a no-op grpc-js unary handler measured in the same run.

  --seconds N    duration of each measured phase (default 5)
  --rate N       open-loop rate of the latency phase (default 1000)
  --inflight N   calls in flight in the throughput phases (default 32)
`;

interface Options {
  seconds: number;
  rate: number;
  inflight: number;
}

function parseArgs(args: string[]): Options | undefined {
  const o: Options = { seconds: 5, rate: 1000, inflight: 32 };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--help" || a === "-h") return undefined;
    const key = a.replace(/^--/, "") as keyof Options;
    if (!(key in o)) throw new Error(`Unknown flag ${a}\n\n${USAGE}`);
    const v = Number(args[++i]);
    if (!(v > 0)) throw new Error(`Flag ${a}: want a positive number`);
    o[key] = v;
  }
  return o;
}

const CONFIG = `apiVersion: config.mesh.io/v1alpha2
kind: denier
metadata: {name: deny, namespace: mesh-system}
spec: {status: {code: 7}}
---
apiVersion: config.mesh.io/v1alpha2
kind: checknothing
metadata: {name: nothing, namespace: mesh-system}
spec: {}
---
apiVersion: config.mesh.io/v1alpha2
kind: rule
metadata: {name: deny-old, namespace: mesh-system}
spec:
  match: destination.labels["version"] == "v0" && source.name.startsWith("legacy")
  actions: [{handler: deny.denier, instances: [nothing.checknothing]}]
---
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
  return { count, within1ms: (100 * le1) / count };
}

async function warm(c: Client) {
  await closedLoop(c, 8, 1);
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
  let c: Client | undefined, b: Client | undefined;
  try {
    server = spawnProgram("mesh-policy", [
      "server",
      "--address",
      "tcp://127.0.0.1:0",
      "--monitoringPort",
      "0",
      "--configStoreURL",
      `fs://${dir}`,
    ]);
    noop = spawnProgram(new URL("./_noop_mixer.ts", import.meta.url).pathname);
    const m = await server.waitFor(/Policy API listening on (\S+)/, 30_000);
    const address = m.split(" ").at(-1)!;
    const monitoring = (await server.waitFor(/Monitoring listening on (\S+)/, 30_000)).split(" ")
      .at(-1)!;
    const port = (await noop.waitFor(/listening (\d+)/, 30_000)).split(" ")[1];
    c = await client(address);
    b = await client(`127.0.0.1:${port}`);
    if ((await c.check()) !== 0) {
      throw new Error("the bench configuration does not allow the request");
    }
    await warm(c);
    await warm(b);

    const cpu0 = await cpuSeconds(server.pid);
    const t0 = performance.now();
    const lat = await openLoop(c, o.rate, o.seconds);
    const cpu = (await cpuSeconds(server.pid) - cpu0) / ((performance.now() - t0) / 1000);
    const served = await serverSide(monitoring);
    const achieved = lat.sent / o.seconds;
    console.log(
      `open loop ${o.rate} checks/s for ${o.seconds} s: sent ${lat.sent}, errors ${lat.errors}, ` +
        `p50 ${lat.p50.toFixed(3)} ms, p99 ${lat.p99.toFixed(3)} ms (target p99 <= 1 ms)`,
    );
    console.log(
      `server side (mesh_policy_check_duration_seconds, warm-up included): ` +
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
  } finally {
    c?.close();
    b?.close();
    await server?.stop();
    await noop?.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) await main(Deno.args);

/**
 * xDS scale benchmark: mesh-discovery (the real program, as a subprocess, so its RSS is measured
 * alone) serving `--services` ServiceEntries × `--endpoints` endpoints from a config directory to
 * `--proxies` simulated sidecars (raw HTTP/2 ADS streams, `_ads_sim.ts`).
 *
 * Measures: server RSS idle and per connected proxy, initial sync time, endpoint-change
 * propagation (one endpoint edited → every proxy received the EDS update), ServiceEntry edits (one
 * ServiceEntry's endpoint address and a label: a config push; and its endpoint address alone: an
 * endpoint push, as in Istio → every proxy received the EDS update), full push (a new
 * service → every proxy received all of it: the CDS naming the new cluster, the RDS carrying its
 * virtual host and its EDS), and bytes on the wire for a one-endpoint change, SotW vs delta. Each
 * sample starts once the server is quiet (no proxy received a response for 300 ms), so a sample
 * never overlaps the previous one's push. A baseline at `--baseline` proxies is measured in the
 * same run. `--protocol` chooses the ADS flavour of the main proxies (`sotw`, the default and
 * Envoy's, or `delta`); the `--delta` extra proxies always use delta.
 *
 * Proxyless mix: `--proxyless-share 0.5` makes that share of `--proxies` simulated proxyless gRPC
 * workloads (`_grpc_sim.ts`: node and metadata of mesh-agent `--proxyless`'s bootstrap, LDS by name
 * for their server Listener `grpc/server?xds.resource.listening_address=<ip>:8080` and the api
 * listeners `<host>:8080` of the services the changes touch, then RDS, CDS and EDS for what those
 * name; `_proxyless_mix.ts`). They connect after the sidecar figures are taken; the endpoint
 * changes and ServiceEntry edits are then repeated with both kinds connected, and a second table
 * puts proxyless connect-to-ready, push latency p50/p99, server CPU per proxy per push and RSS per
 * proxy beside the sidecars'. Default 0 (sidecars only).
 *
 * Server CPU per proxy per endpoint push is printed for the baseline and the full set (issue 26:
 * within 1.2× at 10,000 of the 2,000 figure: `--baseline 2000 --proxies 10000`). `--churn-rate R
 * --churn-seconds S` adds a sustained-churn phase at full scale: R endpoint changes a second for S
 * seconds (registry path), with the time from each change to each proxy's update (p50/p99/max over
 * every (change, proxy) pair), the server's RSS every 5 s, and `/ready`, REST CDS and a new ADS
 * stream's CDS timed throughout by the independent C-core prober (`_core_prober.ts`); beside
 * it the server's own side, from its `mesh_xds_convergence_time` (first change of a push → every
 * affected proxy handed it; the simulated proxies' figure includes their own backlog on a box they
 * share with the server), and what tells the two apart: each change's time to its first proxy,
 * each proxy's longest wait between two updates (every change reaches every proxy, so a long wait
 * is a stream left waiting or a socket this process did not read), and this process's event-loop
 * lag. `--client-workers K` (K > 1) closes the sidecars before the churn and reopens as many in K
 * worker isolates of this process (`_churn_shards.ts`), each reading its own sessions and tracking
 * the churn; their figures are merged (one isolate with 5,005 connections leaves some unread for
 * seconds).
 * `--storm-seconds T` then closes every proxy and reconnects them all within T seconds, and
 * reports when all were synced again, with the same probes throughout. `--per-session N` puts N ADS
 * streams on one HTTP/2 connection (needed past ~9,900 proxies on a box whose file descriptor
 * limit is 20,000: every proxy connects from 127.0.0.1).
 *
 * `--workers N` (N > 1) runs everything twice, the server with `--workers 1` and then `--workers N`
 * (its ADS connections owned by N worker isolates), and ends with a table of both: connect time,
 * endpoint change and full push → the last proxy's update, and the server's CPU per push (every
 * isolate: the process's CPU time). The simulated proxies run in this process, the server in its
 * own; on a small box they share the cores. So the run also measures the server's own side of an
 * endpoint push with the cores to itself: `--paused-changes N` (default 5 with `--workers`, else
 * 0) more endpoint changes, after each of which this process sleeps `--pause-ms` (default 3000)
 * without using CPU while the server pushes into the sockets' buffers; the figure is the server's
 * `mesh_xds_push_time` for each push (flush → every affected proxy handed its update), and the
 * speed-up W = N against W = 1 is the ratio of their p50s.
 *
 * The server runs with mesh-discovery's V8 flags (compile.ts `V8_FLAGS`: a 1 MiB young
 * generation), then those of `--server-v8-flags F` (e.g. `--trace-gc`; `--max-semi-space-size=0`
 * for V8's default young generation).
 *
 * `--server-reused-reads` starts the server with `--grpcReusedReads` (its one serving isolate reads
 * each connection into a reused buffer, as the workers do). `MESH_BENCH_SERVER_LOG=<file>` appends
 * the server's whole output to the file and every probe of the C-core prober to `<file>.probes`
 * (`<epoch ms at its start> <kind> <ms>`), to lay beside the server's `MESH_XDS_TRACE`.
 *
 * `--profile-changes D`, `--profile-edits D`, `--profile-full-push D` and `--profile-churn D` record
 * CPU profiles of the server (its `/debug/pprof/profile`, 2 s slices) and of this process during
 * that phase into directory D; with `--profile-allocs`, allocation profiles instead (the server's
 * `/debug/pprof/allocs`: where each byte was allocated, freed since or not). Summarize them with
 * `deno run -A bench/cpuprofile_top.ts D/server-*`.
 *
 * `deno task bench xds -- --proxies 2000` (or `deno run -A bench/xds.ts --proxies 2000`).
 * @module
 */

import { parseArgs } from "node:util";
import { wholeNumber } from "./_flags.ts";
import { type ProbeSummary, startCoreProber } from "./_core_prober.ts";
import { atMost, bucketQuantile, type Histogram, readHistogram, since } from "./_histogram.ts";
import { startAllocationProfile, startCpuProfile } from "../lib/process/mod.ts";
import { LAG_RESOLUTION_MS, sampleLag } from "../lib/monitoring/event_loop_lag.ts";
import process from "node:process";
import type http2 from "node:http2";
import { LeanSession } from "./_h2_lean.ts";
import { churnAddress, ChurnTracker } from "./_churn.ts";
import { ChurnShards } from "./_churn_shards.ts";
import { sidecarNodeId } from "./_churn_worker.ts";
import {
  type ClientKind,
  connectSession,
  type Section,
  sectionStats,
  SimProxy,
  type SimResponse,
  type TypeName,
} from "./_ads_sim.ts";
import { GrpcSim } from "./_grpc_sim.ts";
import { V8_FLAGS } from "../compile.ts";
import * as mix from "./_proxyless_mix.ts";
import { helpIfAsked } from "./_help.ts";

/** A simulated sidecar or proxyless gRPC workload. */
type AnyProxy = SimProxy | GrpcSim;

const REPO = new URL("../", import.meta.url);

/** ADS flavour of the main set of simulated proxies. */
type Protocol = "sotw" | "delta";

interface Options {
  /** Protocol of the baseline and main proxies (the `--delta` extras are always delta). */
  protocol: Protocol;
  proxies: number;
  baseline: number;
  services: number;
  endpoints: number;
  delta: number;
  changes: number;
  fullPushes: number;
  perSession: number;
  /** Directory for a V8 CPU profile of the server (`deno run --cpu-prof-dir`), or "". */
  serverCpuProf: string;
  /** HTTP/2 client of the simulated sidecars. */
  client: ClientKind;
  /** Directory for CPU profiles of server and client recorded during the full-scale full pushes. */
  profileFullPush: string;
  /** Proxyless gRPC workloads (`--proxyless-share` of `--proxies`); `proxies` is the rest. */
  proxyless: number;
  /** Directory for CPU profiles recorded during the full-scale endpoint changes. */
  profileChanges: string;
  /** Directory for CPU profiles recorded during the full-scale ServiceEntry edits. */
  profileEdits: string;
  /** Directory for CPU profiles recorded during the sustained churn. */
  profileChurn: string;
  /** The `--profile-*` directories get allocation profiles instead of CPU profiles. */
  profileAllocs: boolean;
  /** Sustained churn: endpoint changes per second (0: no churn phase). */
  churnRate: number;
  /** Sustained churn: how long, seconds. */
  churnSeconds: number;
  /** Reconnect storm: every proxy reconnects within this many seconds (0: no storm). */
  stormSeconds: number;
  /** Sustained churn: the sidecars reopened in this many worker isolates (1: this one's). */
  clientWorkers: number;
  /**
   * `--workers N` (N > 1): the whole run twice, the server with `--workers 1` then `--workers N`,
   * and a table of both side by side (0: one run).
   */
  workers: number;
  /** The server's `--workers` in this run (set by `--workers`; default 1). */
  serverWorkers: number;
  /** V8 flags of the server (`deno run --v8-flags=...`), or "". */
  serverV8Flags: string;
  /** The server with `--grpcReusedReads` (its one serving isolate reads into reused buffers). */
  serverReusedReads: boolean;
  /**
   * Endpoint changes whose push the server makes while this process (every simulated proxy) is
   * paused, so that the server has the cores to itself (0: none).
   */
  pausedChanges: number;
  /** How long this process pauses after each of those changes, ms. */
  pauseMs: number;
}

function parse(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      protocol: { type: "string", default: "sotw" },
      proxies: { type: "string", default: "500" },
      baseline: { type: "string", default: "100" },
      services: { type: "string", default: "1000" },
      endpoints: { type: "string", default: "5" },
      delta: { type: "string", default: "10" },
      changes: { type: "string", default: "10" },
      "full-pushes": { type: "string", default: "3" },
      "per-session": { type: "string", default: "1" },
      "server-cpu-prof": { type: "string", default: "" },
      "profile-full-push": { type: "string", default: "" },
      "profile-changes": { type: "string", default: "" },
      "profile-edits": { type: "string", default: "" },
      "profile-churn": { type: "string", default: "" },
      "profile-allocs": { type: "boolean", default: false },
      "churn-rate": { type: "string", default: "0" },
      "churn-seconds": { type: "string", default: "60" },
      "storm-seconds": { type: "string", default: "0" },
      "client-workers": { type: "string", default: "1" },
      "server-v8-flags": { type: "string", default: "" },
      "server-reused-reads": { type: "boolean", default: false },
      client: { type: "string", default: "lean" },
      "proxyless-share": { type: "string", default: "0" },
      workers: { type: "string", default: "0" },
      "server-workers": { type: "string", default: "1" },
      "paused-changes": { type: "string" },
      "pause-ms": { type: "string", default: "3000" },
    },
    // Unknown flags are left to the other benches run by bench/main.ts.
    strict: false,
  });
  const protocol = values.protocol;
  if (protocol !== "sotw" && protocol !== "delta") {
    throw new Error(`Flag --protocol must be "sotw" or "delta", got "${protocol}"`);
  }
  const client = values.client;
  if (client !== "lean" && client !== "node-http2") {
    throw new Error(`Flag --client must be "lean" or "node-http2", got "${client}"`);
  }
  const o = {
    protocol: protocol as Protocol,
    client: client as ClientKind,
    proxies: wholeNumber("proxies", values.proxies, 1),
    baseline: wholeNumber("baseline", values.baseline, 1),
    services: wholeNumber("services", values.services, 1),
    endpoints: wholeNumber("endpoints", values.endpoints, 1),
    delta: wholeNumber("delta", values.delta, 0),
    changes: wholeNumber("changes", values.changes, 1),
    fullPushes: wholeNumber("full-pushes", values["full-pushes"], 1),
    perSession: wholeNumber("per-session", values["per-session"], 1),
    serverCpuProf: String(values["server-cpu-prof"] ?? ""),
    profileFullPush: String(values["profile-full-push"] ?? ""),
    proxyless: 0,
    profileChanges: String(values["profile-changes"] ?? ""),
    profileEdits: String(values["profile-edits"] ?? ""),
    profileChurn: String(values["profile-churn"] ?? ""),
    profileAllocs: values["profile-allocs"] === true,
    churnRate: wholeNumber("churn-rate", values["churn-rate"], 0),
    churnSeconds: wholeNumber("churn-seconds", values["churn-seconds"], 1),
    stormSeconds: wholeNumber("storm-seconds", values["storm-seconds"], 0),
    clientWorkers: wholeNumber("client-workers", values["client-workers"], 1),
    serverV8Flags: String(values["server-v8-flags"] ?? ""),
    serverReusedReads: values["server-reused-reads"] === true,
    workers: wholeNumber("workers", values.workers, 0),
    serverWorkers: wholeNumber("server-workers", values["server-workers"], 0),
    pausedChanges: 0,
    pauseMs: wholeNumber("pause-ms", values["pause-ms"], 100),
  };
  // With --workers N the speed-up on the server's own side is the point: 5 by default.
  o.pausedChanges = values["paused-changes"] === undefined
    ? (o.workers > 1 ? 5 : 0)
    : wholeNumber("paused-changes", values["paused-changes"], 0);
  o.proxyless = Math.round(o.proxies * mix.parseShare(values["proxyless-share"]));
  if (o.proxyless >= o.proxies) {
    throw new Error(`Flag --proxyless-share leaves no sidecar of --proxies ${o.proxies}`);
  }
  o.proxies -= o.proxyless;
  if (o.baseline > o.proxies) o.baseline = o.proxies;
  return o;
}

/** The proxy ID of the C-core prober's REST and ADS requests (a sidecar of no bench service). */
const PROBE_NODE = "sidecar~10.254.0.1~prober.default~default.svc.cluster.local";

const svcName = (i: number) => `svc-${String(i).padStart(4, "0")}.bench.example`;
const clusterName = (i: number) => `outbound|8080||${svcName(i)}`;

function serviceEntry(i: number, endpoints: number, bump = 0, rev = 0): string {
  const a = 1 + Math.floor(i / 250), b = i % 250;
  const eps = Array.from({ length: endpoints }, (_, e) => {
    const last = e === 0 && bump ? 100 + (bump % 150) : e + 1;
    return `    - address: 10.${a}.${b}.${last}\n      labels: {version: v${(e % 2) + 1}}`;
  }).join("\n");
  const labels = rev ? `, labels: {rev: "${rev}"}` : "";
  return `apiVersion: networking.mesh.io/v1alpha3
kind: ServiceEntry
metadata: {name: svc-${i}, namespace: bench${labels}}
spec:
  hosts: [${svcName(i)}]
  ports:
    - {number: 8080, name: http, protocol: HTTP}
  location: MESH_INTERNAL
  resolution: STATIC
  endpoints:
${eps}
`;
}

/**
 * ServiceEntries per config file. The file store stats every file every 100 ms, which with 1000
 * files costs the server more CPU than xDS does; bundling keeps the store's cost out of the figures.
 */
const PER_FILE = 100;
const bundleName = (f: number) => `bench-${String(f).padStart(3, "0")}.yaml`;

/**
 * The multi-document file `f` (services f*PER_FILE...), with each service's endpoint bump and
 * label revision.
 */
function bundle(
  f: number,
  o: { services: number; endpoints: number },
  bumps: Map<number, number>,
  revs: ReadonlyMap<number, number> = new Map(),
) {
  const docs: string[] = [];
  for (let i = f * PER_FILE; i < Math.min(o.services, (f + 1) * PER_FILE); i++) {
    docs.push(serviceEntry(i, o.endpoints, bumps.get(i) ?? 0, revs.get(i) ?? 0));
  }
  return docs.join("---\n");
}

async function writeAtomic(file: string, text: string) {
  await Deno.writeTextFile(file + ".tmp", text);
  await Deno.rename(file + ".tmp", file);
}

function rssOf(pid: number): number {
  const s = Deno.readTextFileSync(`/proc/${pid}/status`);
  const m = s.match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) * 1024 : NaN;
}

function cpuOf(pid: number): number {
  const f = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, seconds (USER_HZ 100)
}

/** CPU seconds of each thread of `pid` (`/proc/<pid>/task`), by thread id, with its name. */
function threadCpu(pid: number): Map<string, { name: string; cpu: number }> {
  const out = new Map<string, { name: string; cpu: number }>();
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/stat`);
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      out.set(t.name, { name, cpu: (Number(f[11]) + Number(f[12])) / 100 });
    } catch { /* the thread ended */ }
  }
  return out;
}

/** The threads that used the most CPU between two {@link threadCpu} readings: "name 1.2 s, ...". */
function busiestThreads(
  a: Map<string, { name: string; cpu: number }>,
  b: Map<string, { name: string; cpu: number }>,
  per: number,
): string {
  return [...b].map(([tid, t]) => ({ name: t.name, cpu: t.cpu - (a.get(tid)?.cpu ?? 0) }))
    .sort((x, y) => y.cpu - x.cpu).slice(0, 5)
    .map((t) => `${t.name} ${((t.cpu / per) * 1000).toFixed(0)} ms`).join(", ");
}

const mb = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MB`;
const ms = (s: number) => (Number.isFinite(s) ? `${s.toFixed(0)} ms` : "timed out");
/** Milliseconds as "640 ms" or, from 1 s, "2.1 s". */
const dur = (x: number) =>
  !Number.isFinite(x) ? "timed out" : x < 1000 ? ms(x) : `${(x / 1000).toFixed(1)} s`;

function pct(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function until(what: string, pred: () => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * What a sample waits for at every live proxy: a response of `type` with a resource named `name`
 * (exact), or else one whose resources carry the bytes `needle` (make it exact by including the
 * protobuf length prefix).
 */
interface Target {
  type: TypeName;
  name?: string;
  needle?: Uint8Array;
  /** The resource the needle is in (proxyless workloads are waited for only if they watch it). */
  resource?: string;
}

/** A target being watched: when (ms after `since`) and in how many bytes each proxy got it. */
interface Watch extends Target {
  since: number;
  seen: Map<AnyProxy, number>;
  bytes: Map<AnyProxy, number>;
}

/** A string as a protobuf string field payload (length byte + bytes), for exact needles. */
function lengthPrefixed(s: string): Uint8Array {
  const b = new TextEncoder().encode(s);
  if (b.length > 127) throw new Error(`Needle "${s}" is longer than 127 bytes`);
  return Uint8Array.of(b.length, ...b);
}

const u8IndexOf = Uint8Array.prototype.indexOf;

/** Whether `hay` contains `needle` (native first-byte search; Deno's Buffer.indexOf is slow JS). */
function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  if (!needle.length) return true;
  const first = needle[0], last = hay.length - needle.length;
  for (
    let i = u8IndexOf.call(hay, first);
    i >= 0 && i <= last;
    i = u8IndexOf.call(hay, first, i + 1)
  ) {
    let k = 1;
    while (k < needle.length && hay[i + k] === needle[k]) k++;
    if (k === needle.length) return true;
  }
  return false;
}

/** Whether the resources `s` hold `w`'s target; answered once per distinct content. */
function matches(w: Watch, s: Section): boolean {
  let m = s.memo.get(w);
  if (m === undefined) {
    m = w.name !== undefined
      ? s.names.includes(w.name)
      : contains(s.bytes, w.needle ?? new Uint8Array());
    s.memo.set(w, m);
  }
  return m;
}

/** A sample starts once no proxy received a response for this long... */
const QUIET_MS = 300;
/** ...or, if the server never gets that quiet, after this long (reported). */
const QUIET_DEADLINE_MS = 30_000;

/** The figures of one run that `--workers` puts side by side. */
interface RunSummary {
  workers: number;
  proxies: number;
  changes: number;
  /** Endpoint change → last proxy's update, ms, per change. */
  changeMs: number[];
  /** Server CPU for the endpoint changes, s. */
  changeCpu: number;
  /** The server's busiest threads during the endpoint changes, CPU per push. */
  changeThreads: string;
  fullMs: number[];
  fullCpu: number;
  fullPushes: number;
  connectSeconds: number;
  connectCpu: number;
  rss: number;
  /** The server's side of endpoint pushes made while every simulated proxy was paused. */
  paused?: { pushMs: number[]; threads: string; cpu: number };
}

/**
 * Runs the benchmark; prints a report to stdout. With `--workers N` (N > 1) runs it with the
 * server's `--workers 1` and then `--workers N`, and prints both side by side.
 */
export async function main(args: string[] = Deno.args): Promise<void> {
  const o = parse(args);
  if (o.workers > 1) await compareWorkers(args, o.workers, o.pausedChanges);
  else await runOnce(o);
}

/**
 * `--workers N`: one run per server `--workers` value (1, N), then a table of both. Each run is
 * parsed without `--workers`, so it is given `paused` (the `--paused-changes` of the whole run).
 */
async function compareWorkers(args: string[], n: number, paused: number): Promise<void> {
  const rest = args.filter((a, i) =>
    !/^--workers(=|$)/.test(a) && !(args[i - 1] === "--workers" && !a.startsWith("--"))
  );
  const load = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  const runs: RunSummary[] = [];
  for (const w of [1, n]) {
    console.log(`\n### server --workers ${w} (load average before: ${load()})`);
    const run = { ...parse([...rest, "--server-workers", String(w)]), pausedChanges: paused };
    runs.push((await runOnce(run))!);
  }
  const pair = (xs: number[], p1: number, p2: number) =>
    `${ms(pct([...xs].sort((a, b) => a - b), p1))} / ${ms(pct([...xs].sort((a, b) => a - b), p2))}`;
  const cell = (f: (r: RunSummary) => string) => runs.map(f).join(" | ");
  const r0 = runs[0];
  console.log(
    `\n| same run, ${r0.proxies} proxies (load average after: ${load()}) | ` +
      runs.map((r) => `--workers ${r.workers}`).join(" | ") + " |",
  );
  console.log("| --- | --- | --- |");
  console.log(
    `| connect + initial sync (server CPU) | ${
      cell((r) => `${r.connectSeconds.toFixed(1)} s (${r.connectCpu.toFixed(1)} s)`)
    } |`,
  );
  console.log(
    `| endpoint change → last proxy's update, p50 / max (${r0.changes} changes) | ${
      cell((r) => pair(r.changeMs, 50, 100))
    } |`,
  );
  console.log(
    `| server CPU per endpoint push (all isolates) | ${
      cell((r) => `${((r.changeCpu / r.changes) * 1000).toFixed(0)} ms`)
    } |`,
  );
  console.log(
    `| busiest server threads, CPU per endpoint push | ${cell((r) => r.changeThreads)} |`,
  );
  console.log(
    `| full push → last proxy's update, p50 / max (${r0.fullPushes} pushes) | ${
      cell((r) => pair(r.fullMs, 50, 100))
    } |`,
  );
  console.log(
    `| server CPU per full push (all isolates) | ${
      cell((r) => `${((r.fullCpu / r.fullPushes) * 1000).toFixed(0)} ms`)
    } |`,
  );
  console.log(`| server RSS at ${r0.proxies} proxies | ${cell((r) => mb(r.rss))} |`);
  const [a, b] = runs.map((r) => r.paused);
  if (!a || !b) return;
  console.log(
    `| simulated proxies paused: server push time (change flushed → every proxy handed its ` +
      `update), p50 / max (${a.pushMs.length} changes) | ${
        cell((r) => pair(r.paused!.pushMs, 50, 100))
      } |`,
  );
  console.log(
    `| simulated proxies paused: server CPU per change (push, ACKs, /metrics; all isolates) | ${
      cell((r) => `${(r.paused!.cpu * 1000).toFixed(0)} ms`)
    } |`,
  );
  console.log(
    `| simulated proxies paused: busiest server threads, CPU per change | ${
      cell((r) => r.paused!.threads)
    } |`,
  );
  const p50 = (xs: number[]) => pct(xs, 50);
  console.log(
    `\nserver's side of an endpoint push, --workers ${runs[1].workers} against ` +
      `--workers 1 (p50 push time, simulated proxies paused): ` +
      `${(p50(a.pushMs) / p50(b.pushMs)).toFixed(2)}× (issue 26: ≥ 1.4×)`,
  );
}

/**
 * The server's own lag under churn, from its `mesh_xds_convergence_time` observations (one per
 * push: from the first change merged into it until every affected proxy was handed it), to the
 * resolution of the histogram's buckets: what the simulated proxies' figure cannot separate from
 * their own backlog when they share the box with the server.
 */
function convergenceText(h: Histogram): string {
  if (h.count <= 0) return "no push";
  const bound = (le: number) => le === Infinity ? "> 30 s" : `≤ ${le} s`;
  return `${h.count} pushes, mean ${ms((h.sum / h.count) * 1000)}, ${atMost(h, 1)} of ${h.count} ` +
    `within 1 s, p50 ${bound(bucketQuantile(h, 0.5))}, p99 ${bound(bucketQuantile(h, 0.99))}`;
}

/**
 * What separates the server's lateness from the simulated proxies' backlog under churn: how soon
 * the first proxy had each change, and each proxy's longest wait between two EDS responses.
 */
function churnSplitText(t: ChurnTracker): string {
  const firsts = t.first.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  const quiet = t.longestQuiet();
  const over = (s: number) => quiet.filter((x) => x > s * 1000).length;
  return `each change → its first proxy p50 ${ms(pct(firsts, 50))}, p99 ${ms(pct(firsts, 99))}; ` +
    `each proxy's longest wait between two updates p50 ${ms(pct(quiet, 50))}, max ${
      ms(quiet[quiet.length - 1] ?? NaN)
    } (${over(1)} of ${quiet.length} proxies over 1 s, ${over(2)} over 2 s)`;
}

/**
 * How late this process's timers fire (one every 20 ms) until `stop()`, which returns it as text:
 * a busy event loop here delays the reading of every simulated proxy, and their change → update
 * figure includes that delay.
 */
function clientLag(): { stop(): string } {
  const { histogram: h, stop } = sampleLag();
  return {
    stop() {
      stop();
      return `event-loop lag p50 ${ms(h.percentile(50) * 1000)}, p99 ${
        ms(h.percentile(99) * 1000)
      }, max ${ms(h.max * 1000)} (a timer every ${LAG_RESOLUTION_MS} ms)`;
    },
  };
}

/**
 * The server's V8 flags: mesh-discovery's own (compile.ts `V8_FLAGS`, as its executable and
 * `deno task mesh-discovery` run it), then `--server-v8-flags`, which V8 reads later and so win
 * (`--max-semi-space-size=0`: V8's default young generation).
 */
function serverV8Flags(o: Options): string {
  return [...(V8_FLAGS["mesh-discovery"] ?? []), ...o.serverV8Flags.split(",").filter(Boolean)]
    .join(",");
}

/** One run of the benchmark against one server. */
async function runOnce(o: Options): Promise<RunSummary | undefined> {
  const out = (s = "") => console.log(s);
  const mainDelta = o.protocol === "delta";
  const proto = mainDelta ? "delta" : "SotW";
  out(
    `## xDS benchmark (main proxies: ${proto} ADS): ${o.services} services × ${o.endpoints} ` +
      `endpoints, ${o.proxies} ${proto} proxies (+${o.delta} delta), ` +
      `${navigator.hardwareConcurrency} CPUs, Deno ${Deno.version.deno}, ${o.client} HTTP/2 client` +
      `, server V8 flags ${serverV8Flags(o) || "none"}`,
  );
  out(
    `Each sample starts once no proxy received an ADS response for ${QUIET_MS} ms and ends when ` +
      `every live proxy has the change (endpoint change, ServiceEntry edit: its EDS; full push: ` +
      `the CDS naming the new cluster, the RDS with its virtual host and its EDS).`,
  );

  const dir = await Deno.makeTempDir({ prefix: "mesh-bench-xds-" });
  let child: Deno.ChildProcess | undefined;
  const sessions: (http2.ClientHttp2Session | LeanSession)[] = [];
  const proxies: AnyProxy[] = [];
  try {
    const t0 = performance.now();
    for (let f = 0; f * PER_FILE < o.services; f++) {
      await Deno.writeTextFile(`${dir}/${bundleName(f)}`, bundle(f, o, new Map()));
    }
    out(
      `config: ${o.services} ServiceEntries written in ${Math.ceil(o.services / PER_FILE)} files ` +
        `in ${ms(performance.now() - t0)}`,
    );

    let log = "";
    child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        ...(o.serverCpuProf ? [`--cpu-prof-dir=${o.serverCpuProf}`, "--cpu-prof-md"] : []),
        ...(serverV8Flags(o) ? [`--v8-flags=${serverV8Flags(o)}`] : []),
        new URL("cli/mesh-discovery.ts", REPO).pathname,
        "discovery",
        "--registries",
        "Mock",
        "--configDir",
        dir,
        "--port",
        "0",
        "--monitoringPort",
        "0",
        "--grpcAddr",
        "127.0.0.1:0",
        "--secureGrpcAddr",
        "",
        "--ctrlz_port",
        "0",
        "--ctrlz_address",
        "127.0.0.1",
        "--log_output_level",
        "default:info,ads:error",
        // every simulated proxy connects from 127.0.0.1: no per-address cap, and a reconnect
        // storm's closed connections must not pace that one address's new ones
        "--grpcMaxConnectionsPerAddress",
        "0",
        "--grpcMaxFailedConnectionRate",
        "0",
        "--workers",
        String(o.serverWorkers),
        ...(o.serverReusedReads ? ["--grpcReusedReads"] : []),
        ...(o.profileFullPush || o.profileChanges || o.profileEdits || o.profileChurn
          ? ["--profile"]
          : []),
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const pid = child.pid;
    const serverLog = Deno.env.get("MESH_BENCH_SERVER_LOG");
    const pump = async (s: ReadableStream<Uint8Array>) => {
      const d = new TextDecoder();
      for await (const c of s) {
        const text = d.decode(c, { stream: true });
        log += text;
        // MESH_BENCH_SERVER_LOG=<file>: the server's whole output too (e.g. with --trace-gc)
        if (serverLog) Deno.writeTextFileSync(serverLog, text, { append: true });
        if (log.length > 200_000) log = log.slice(-100_000);
      }
    };
    const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
    pumps.catch(() => {});
    await until("mesh-discovery to print its addresses", () => /grpc=\S+:\d+/.test(log), 60_000)
      .catch((e) => {
        throw new Error(`${e.message}; output:\n${log.slice(-2000)}`);
      });
    const grpcPort = Number(log.match(/grpc=\S+:(\d+)/)![1]);
    const httpPort = Number(log.match(/http=\S+:(\d+)/)![1]);
    const monitoringPort = Number(log.match(/monitoring=\S+:(\d+)/)![1]);
    /** The server's `/metrics` text. */
    const metricsText = async () =>
      await (await fetch(`http://127.0.0.1:${monitoringPort}/metrics`)).text();
    /** The server's `mesh_xds_push_time` histogram: sum (s) and count. */
    const pushTimes = async () => {
      const { sum, count } = readHistogram(await metricsText(), "mesh_xds_push_time");
      return { sum, count };
    };
    await until("mesh-discovery to be ready", () => log.includes("discovery is ready"), 120_000);

    const watches = new Set<Watch>();
    let lastResponse = performance.now();
    /** Connect-to-ready (synced) times in ms of the full-scale sidecars. */
    const opened = new WeakMap<AnyProxy, number>(), readyMs: number[] = [];
    let churn: ChurnTracker | undefined;
    const onResponse = (p: AnyProxy, r: SimResponse) => {
      lastResponse = performance.now();
      if (churn && r.type === "eds" && p instanceof SimProxy) {
        churn.received(p, r.section, lastResponse);
      }
      const t0 = opened.get(p);
      if (t0 !== undefined && p.synced) {
        readyMs.push(lastResponse - t0);
        opened.delete(p);
      }
      for (const w of watches) {
        if (r.type === w.type && !w.seen.has(p) && matches(w, r.section)) {
          w.seen.set(p, performance.now() - w.since);
          w.bytes.set(p, r.bytes);
        }
      }
    };
    /** Opens one proxy; `own` gives it an HTTP/2 connection of its own (the delta extras). */
    const openProxy = async (i: number, delta: boolean, own = false) => {
      if (!sessions.length || proxies.length % o.perSession === 0 || own) {
        sessions.push(await connectSession(grpcPort, o.client));
      }
      return newProxy(i, delta, sessions[sessions.length - 1]);
    };
    /** A simulated proxy number `i` on `session` (added to `proxies`). */
    const newProxy = (
      i: number,
      delta: boolean,
      session: http2.ClientHttp2Session | LeanSession,
    ) => {
      const p = new SimProxy({
        session,
        nodeId: i < 0 ? "sidecar~10.199.0.1~probe.bench~bench.svc.cluster.local" : sidecarNodeId(i),
        delta,
        routeNames: ["8080"],
        onResponse,
      });
      if (delta) deltaSet.add(p);
      if (i >= o.baseline) opened.set(p, performance.now());
      proxies.push(p);
      return p;
    };

    // Wait for the full config to be visible to one probe proxy.
    const probe = await openProxy(-1, false);
    await until(
      `the probe proxy to see ${o.services} bench clusters`,
      () =>
        (probe.ended
          ? (() => {
            throw new Error(`probe stream ended: ${probe.ended}`);
          })()
          : true) &&
        probe.synced &&
        probe.edsNames.filter((n) => n.endsWith(".bench.example")).length >= o.services,
      120_000,
    ).catch((e) => {
      throw new Error(
        `${e.message}: received ${JSON.stringify(probe.received)}, ${probe.edsNames.length} EDS ` +
          `names; server output:\n${log.slice(-1500)}`,
      );
    });
    const edsFull = probe.bytes.eds;
    probe.close();
    proxies.pop();
    sessions.pop()?.close();
    await new Promise((r) => setTimeout(r, 2000));
    const rssIdle = rssOf(pid);
    out(
      `server idle (config loaded, no proxies): RSS ${mb(rssIdle)}; SotW initial EDS state ` +
        `${(edsFull / 1024).toFixed(1)} kB per proxy`,
    );

    const clientRss0 = process.memoryUsage().rss;
    const connectWave = async (target: number, deltaCount: number) => {
      const start = performance.now();
      const cpu0 = cpuOf(pid);
      const fresh: AnyProxy[] = [];
      while (proxies.length < target) {
        const batch = Math.min(50, target - proxies.length);
        const wave: SimProxy[] = [];
        for (let k = 0; k < batch; k++) wave.push(await openProxy(proxies.length, mainDelta));
        fresh.push(...wave);
        await until(
          "a wave of proxies to sync",
          () => wave.every((p) => p.synced || p.ended),
          300_000,
        );
      }
      for (let k = 0; k < deltaCount; k++) fresh.push(await openProxy(100_000 + k, true, true));
      await until("all proxies to sync", () => fresh.every((p) => p.synced || p.ended), 300_000);
      const bad = fresh.filter((p) => p.ended);
      if (bad.length) throw new Error(`${bad.length} proxies failed: ${bad[0].ended}`);
      return { seconds: (performance.now() - start) / 1000, cpu: cpuOf(pid) - cpu0 };
    };

    /**
     * Waits until no proxy received a response for {@link QUIET_MS}; returns how long that took
     * (ms), or Infinity when the server was still sending at the deadline.
     */
    const waitQuiet = async () => {
      const t = performance.now();
      let quiet = true;
      await until(
        "a quiet server",
        () => performance.now() - lastResponse >= QUIET_MS,
        QUIET_DEADLINE_MS,
      )
        .catch(() => (quiet = false));
      return quiet ? performance.now() - t : Infinity;
    };

    /** Why streams ended: the most frequent reasons with their counts. */
    const endedReasons = () => {
      const by = new Map<string, number>();
      for (const p of proxies) if (p.ended) by.set(p.ended, (by.get(p.ended) ?? 0) + 1);
      return [...by].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([r, n]) => `${n}× ${r}`)
        .join("; ");
    };

    /**
     * Applies `count` changes one after the other. Each sample starts once the server is quiet
     * (see {@link waitQuiet}), and is the time from just before the change until every live proxy
     * received every target `prepare` named for it (per proxy: the latest of its targets). A
     * sample that times out is recorded as Infinity and ends the series. `perType` holds, per
     * sample, when each target was complete at every proxy.
     */
    const measure = async (
      what: string,
      count: number,
      timeoutMs: number,
      prepare: (c: number) => { targets: Target[]; apply: () => Promise<void> },
    ) => {
      const perChange: number[] = [];
      const perProxy: number[] = [];
      const perType: Target[][] = [];
      const perTypeMs: number[][] = [];
      /** The same for proxyless workloads (kept apart: perChange/perProxy are sidecars'). */
      const pxChange: number[] = [], pxProxy: number[] = [];
      let sotwBytes = NaN, deltaBytes = NaN;
      for (let c = 0; c < count; c++) {
        const waited = await waitQuiet();
        const { targets, apply } = prepare(c);
        const since = performance.now();
        const ws: Watch[] = targets.map((t) => ({
          ...t,
          since,
          seen: new Map(),
          bytes: new Map(),
        }));
        for (const w of ws) watches.add(w);
        const live = () => {
          let n = 0;
          for (const p of proxies) if (!p.ended) n++;
          return n;
        };
        /** Live proxies the watch waits for (every sidecar; proxyless ones watching it). */
        const expected = (w: Watch) => {
          let n = 0;
          for (const p of proxies) {
            if (!p.ended && mix.expects(p, w.type, w.resource ?? w.name)) n++;
          }
          return n;
        };
        let timedOut = false;
        try {
          await apply();
          await until(what, () => {
            return ws.every((w) => w.seen.size >= expected(w));
          }, timeoutMs).catch(() => (timedOut = true));
        } finally {
          for (const w of ws) watches.delete(w);
        }
        const lat: number[] = [], pxLat: number[] = [];
        for (const [p, t0] of ws[0].seen) {
          let t = t0;
          for (const w of ws) t = Math.max(t, w.seen.get(p) ?? Infinity);
          if (Number.isFinite(t)) (mix.isProxyless(p) ? pxLat : lat).push(t);
        }
        perProxy.push(...lat);
        perChange.push(timedOut ? Infinity : Math.max(...lat));
        pxProxy.push(...pxLat);
        if (pxLat.length) pxChange.push(timedOut ? Infinity : Math.max(...pxLat));
        const done = ws.map((w) =>
          w.seen.size >= expected(w) ? Math.max(...w.seen.values()) : Infinity
        );
        perType.push(targets);
        perTypeMs.push(done);
        if (c === 0) {
          const sotw = proxies.find((p) => !isDelta(p) && ws[0].bytes.has(p));
          const delta = proxies.find((p) => isDelta(p) && ws[0].bytes.has(p));
          if (sotw) sotwBytes = ws[0].bytes.get(sotw)!;
          if (delta) deltaBytes = ws[0].bytes.get(delta)!;
        }
        const got = ws.length > 1 ? ` got ${ws.map((w) => w.type).join("+")}` : "";
        const types = ws.length > 1
          ? `; ${ws.map((w, k) => `${w.type} ${dur(done[k])}`).join(", ")}`
          : "";
        const quiet = Number.isFinite(waited)
          ? `started after ${dur(waited)} of waiting for quiet`
          : `started without quiet: responses still arriving after ${QUIET_DEADLINE_MS / 1000} s`;
        out(
          `  ${what} ${c + 1}/${count}: ${
            timedOut
              ? `TIMED OUT after ${timeoutMs / 1000} s, ${
                ws.map((w) => `${w.type} ${w.seen.size}/${live()}`).join(", ")
              } proxies got it`
              : `all ${lat.length} proxies${got} in ${ms(perChange[c])}${
                pxLat.length ? ` (${pxLat.length} proxyless in ${ms(pxChange.at(-1)!)})` : ""
              }`
          } (${quiet}${types})${
            proxies.length - live()
              ? ` (${proxies.length - live()} streams ended: ${endedReasons()})`
              : ""
          }`,
        );
        if (timedOut) break;
      }
      perProxy.sort((a, b) => a - b);
      perChange.sort((a, b) => a - b);
      /** p50 over the samples of the time each target type was complete at every proxy. */
      const typeP50 = (perType[0] ?? []).map((t, k) =>
        `${t.type} ${dur(pct(perTypeMs.map((d) => d[k]).sort((a, b) => a - b), 50))}`
      ).join(", ");
      pxChange.sort((a, b) => a - b);
      pxProxy.sort((a, b) => a - b);
      return { perChange, perProxy, sotwBytes, deltaBytes, typeP50, pxChange, pxProxy };
    };

    let changeSeq = 0;
    const bumps = new Map<number, number>();
    const revs = new Map<number, number>();
    /**
     * One ServiceEntry file edited: an endpoint's address and a label of the ServiceEntry (a
     * config change: the whole configuration is recomputed and pushed), or with `endpointsOnly`
     * the address alone (an endpoint change, as in Istio).
     */
    const measureSeChanges = async (label: string, count: number, endpointsOnly = false) => {
      const what = endpointsOnly ? "ServiceEntry endpoint edit" : "ServiceEntry edit";
      const r = await measure(what, count, 180_000, (c) => {
        const i = mix.seEditService(c, o.services);
        return {
          targets: [{ type: "eds", name: clusterName(i) }],
          apply: async () => {
            bumps.set(i, ++changeSeq);
            if (!endpointsOnly) revs.set(i, changeSeq);
            const f = Math.floor(i / PER_FILE);
            await writeAtomic(`${dir}/${bundleName(f)}`, bundle(f, o, bumps, revs));
          },
        };
      });
      out(
        `${label}: ${what} (${endpointsOnly ? "endpoints only" : "config change"}) → every ` +
          `proxy (${r.perChange.length} changes): p50 ${ms(pct(r.perChange, 50))}, p99 ${
            ms(pct(r.perChange, 99))
          }; per proxy p50 ${ms(pct(r.perProxy, 50))}, p99 ${ms(pct(r.perProxy, 99))}`,
      );
      return r;
    };

    /**
     * Registry endpoint change: a new instance of one bench service added through the debug
     * registry (`POST /debug/endpointz`), which takes the registries' endpoint path
     * (`onChange("endpoints")` → EDS-only push of the affected cluster). The sample runs from
     * just before the POST until every proxy received an EDS response carrying the new address.
     */
    let regSeq = 0;
    const endpointChange = (c: number) => {
      const i = mix.endpointChangeService(c, o.services);
      const n = ++regSeq;
      const address = `10.250.${n >> 8}.${n & 255}`;
      return {
        // The address as a protobuf string field payload (length + bytes): exact match.
        targets: [{
          type: "eds" as const,
          needle: lengthPrefixed(address),
          resource: clusterName(i),
        }],
        apply: async () => {
          const res = await fetch(
            `http://127.0.0.1:${httpPort}/debug/endpointz?svc=${svcName(i)}`,
            {
              method: "POST",
              body: JSON.stringify({ address, servicePort: 8080, labels: { version: "v1" } }),
            },
          );
          const body = await res.text();
          if (!res.ok) {
            throw new Error(`POST /debug/endpointz: ${res.status} ${body.slice(0, 200)}`);
          }
        },
      };
    };
    const measureChanges = async (label: string, count: number) => {
      const r = await measure("endpoint change", count, 180_000, endpointChange);
      out(
        `${label}: endpoint change (registry) → every proxy (${r.perChange.length} changes): p50 ` +
          `${ms(pct(r.perChange, 50))}, p99 ${ms(pct(r.perChange, 99))}; per proxy p50 ` +
          `${ms(pct(r.perProxy, 50))}, p99 ${ms(pct(r.perProxy, 99))}`,
      );
      return r;
    };

    /**
     * The server's own side of an endpoint push (issue 26's W = 2 ≥ 1.4× W = 1): after each
     * change this process, and with it every simulated proxy, sleeps `--pause-ms` in
     * `Atomics.wait` (no CPU), so the server has every core while it pushes; the pushes land in
     * the sockets' buffers (an EDS update is a few hundred bytes a proxy, far below the HTTP/2
     * windows). The figure is the server's `mesh_xds_push_time` for that push: from the flush of
     * the debounced change until every affected proxy was handed its update, in every isolate.
     */
    const measurePausedChanges = async (count: number) => {
      const sleeper = new Int32Array(new SharedArrayBuffer(4));
      const pushMs: number[] = [];
      let overran = 0;
      let before = await pushTimes();
      const t0 = threadCpu(pid);
      const cpu0 = cpuOf(pid);
      const samples: { sum: number; count: number }[] = [];
      await measure("endpoint change, client paused", count, 180_000, (c) => {
        const ch = endpointChange(o.changes + c);
        return {
          targets: ch.targets,
          apply: async () => {
            const at = await pushTimes();
            if (c > 0) samples.push({ sum: at.sum - before.sum, count: at.count - before.count });
            before = at;
            await ch.apply();
            Atomics.wait(sleeper, 0, 0, o.pauseMs);
          },
        };
      });
      const end = await pushTimes();
      samples.push({ sum: end.sum - before.sum, count: end.count - before.count });
      const threads = busiestThreads(t0, threadCpu(pid), samples.length);
      const cpu = (cpuOf(pid) - cpu0) / samples.length;
      for (const x of samples) {
        // One change makes one push; more than one (a split debounce) counts as their sum.
        const v = x.sum * 1000;
        if (v >= o.pauseMs * 0.8) overran++;
        pushMs.push(v);
      }
      const inOrder = pushMs.map((x) => x.toFixed(0)).join(", ");
      pushMs.sort((a, b) => a - b);
      out(
        `${proxies.length} proxies, endpoint change with this process paused ${o.pauseMs} ms ` +
          `(${samples.length} changes): server push time (mesh_xds_push_time) p50 ` +
          `${ms(pct(pushMs, 50))}, max ${
            ms(pct(pushMs, 100))
          } (in order: ${inOrder} ms); server CPU per change (its push, ` +
          `every proxy's ACK once resumed, a /metrics scrape) ${(cpu * 1000).toFixed(0)} ms; ` +
          `busiest threads per change: ${threads}` +
          (overran ? `; ${overran} pushes took 80 % of the pause or more: raise --pause-ms` : ""),
      );
      return { pushMs, threads, cpu };
    };

    let added = 0;
    const measureFullPush = async (label: string, count: number) => {
      const r = await measure("full push", count, 300_000, () => {
        const i = o.services + added++;
        return {
          // The CDS naming the new cluster, the RDS "8080" with its virtual host (named
          // `<host>:8080`, also one of its domains), and the cluster's EDS.
          targets: [
            { type: "cds", name: clusterName(i) },
            { type: "rds", needle: lengthPrefixed(`${svcName(i)}:8080`) },
            { type: "eds", name: clusterName(i) },
          ],
          apply: () => writeAtomic(`${dir}/${svcName(i)}.yaml`, serviceEntry(i, o.endpoints)),
        };
      });
      out(
        `${label}: full push (new service → every proxy received its CDS, RDS and EDS; ` +
          `${r.perChange.length} pushes): p50 ${ms(pct(r.perChange, 50))}, ` +
          `p90 ${ms(pct(r.perChange, 90))}; each type complete at every proxy, p50: ${r.typeP50}`,
      );
      return r;
    };

    const clientCpu = () => {
      const c = process.cpuUsage();
      return (c.user + c.system) / 1e6;
    };
    /** Runs `fn`, returning its result with the server's and this process's CPU seconds. */
    const withCpu = async <T>(fn: () => Promise<T>) => {
      const s0 = cpuOf(pid), c0 = clientCpu();
      const r = await fn();
      return { r, server: cpuOf(pid) - s0, client: clientCpu() - c0 };
    };
    const cpuText = (x: { server: number; client: number }) =>
      `server CPU ${x.server.toFixed(1)} s, client CPU ${x.client.toFixed(1)} s`;

    /**
     * The proxyless mix (`--proxyless-share`): connects the proxyless workloads beside the sidecars
     * (their own HTTP/2 connection each, as every gRPC process has), then repeats the endpoint
     * changes and ServiceEntry edits with both kinds connected. A proxyless workload's server CPU
     * per push is the series' CPU beyond the sidecar-only series (`before`), per workload.
     */
    const proxylessMix = async (
      before: {
        big: number;
        se: number;
        sidecars: number;
        rssBefore: number;
        rssPerSidecar: number;
      },
    ) => {
      const m = o.proxyless, seEdits = Math.min(o.changes, 5);
      const shape = { ...o, seEdits, svcName };
      const t0 = performance.now(), cpu0 = cpuOf(pid);
      const fresh: GrpcSim[] = [];
      for (let j = 0; j < m; j += 50) {
        const wave: GrpcSim[] = [];
        for (let k = j; k < Math.min(m, j + 50); k++) {
          const session = await LeanSession.connect(grpcPort);
          sessions.push(session);
          const p = new GrpcSim({ session, workload: mix.proxylessWorkload(k, shape), onResponse });
          wave.push(p);
          proxies.push(p);
        }
        fresh.push(...wave);
        await until(
          "proxyless workloads to be ready",
          () => wave.every((p) => p.ready || p.ended),
          300_000,
        )
          .catch((e) => {
            const p = wave.find((p) => !p.ready)!;
            const have = Object.fromEntries(Object.entries(p.have).map(([t, v]) => [t, [...v]]));
            throw new Error(`${e.message}: ${JSON.stringify({ names: p.names, have })}`);
          });
      }
      const bad = fresh.filter((p) => p.ended);
      if (bad.length) throw new Error(`${bad.length} proxyless workloads failed: ${bad[0].ended}`);
      const seconds = (performance.now() - t0) / 1000, cpu = cpuOf(pid) - cpu0;
      await new Promise((r) => setTimeout(r, 2000));
      const rss = rssOf(pid), pxRss = (rss - before.rssBefore) / m;
      const pxReady = fresh.map((p) => p.readyMs ?? Infinity).sort((a, b) => a - b);
      const w = fresh[0];
      out(
        `${m} proxyless gRPC workloads (each an xDS server and a client of ` +
          `${
            w.names.lds.length - 1
          } services: LDS ${w.names.lds.length}, RDS ${w.names.rds.length}, ` +
          `CDS ${w.names.cds.length}, EDS ${w.names.eds.length} names) beside ${before.sidecars} ` +
          `sidecars: ready in ${seconds.toFixed(1)} s (server CPU ${
            cpu.toFixed(1)
          } s); server RSS ` +
          `${mb(rss)}, ${(pxRss / 1024).toFixed(0)} kB per proxyless workload`,
      );
      const label = `sidecars (${before.sidecars}, mixed with ${m} proxyless)`;
      const r0 = mix.receivedByKind(proxies);
      const ch = await withCpu(() => measureChanges(label, o.changes));
      const r1 = mix.receivedByKind(proxies);
      const se = await withCpu(() => measureSeChanges(label, seEdits));
      const r2 = mix.receivedByKind(proxies);
      const pair = (xs: number[]) => `${ms(pct(xs, 50))} / ${ms(pct(xs, 99))}`;
      const perPush = (cpu: number, pushes: number, proxies: number) =>
        `${((cpu / pushes / proxies) * 1e6).toFixed(0)} µs`;
      out(
        `${m} proxyless (mixed with ${before.sidecars} sidecars): endpoint change → every ` +
          `proxyless workload p50 / p99 ${pair(ch.r.pxChange)}, ServiceEntry edit ` +
          `${pair(se.r.pxChange)} (series: ${cpuText(ch)}; ${cpuText(se)})`,
      );
      const px = (cpu: number, before: number, pushes: number) =>
        `${perPush(cpu - before, pushes, m)} (series CPU beyond the sidecars' ` +
        `${before.toFixed(2)} s: ${cpu.toFixed(2)} s mixed; a difference, noisy on a busy box)`;
      const kB = (b: number) => `${(b / 1024).toFixed(0)} kB`;
      const row = (figure: string, sidecar: string, proxyless: string) =>
        `| ${figure} | ${sidecar} | ${proxyless} |`;
      const withPerProxy = (change: number[], proxy: number[]) =>
        `${pair(change)} (per proxy ${pair(proxy)})`;
      return [
        "",
        row(
          `proxyless mix: ${before.sidecars} sidecars + ${m} proxyless gRPC workloads, same run`,
          "sidecars",
          "proxyless",
        ),
        "| --- | --- | --- |",
        row(
          "connect → ready (all subscribed resources received), p50 / p99",
          pair(readyMs.sort((a, b) => a - b)),
          pair(pxReady),
        ),
        row(
          `endpoint change → all, p50 / p99 (mixed, ${ch.r.pxChange.length} changes)`,
          withPerProxy(ch.r.perChange, ch.r.perProxy),
          withPerProxy(ch.r.pxChange, ch.r.pxProxy),
        ),
        row(
          `ServiceEntry edit → all, p50 / p99 (mixed, ${se.r.pxChange.length} edits)`,
          withPerProxy(se.r.perChange, se.r.perProxy),
          withPerProxy(se.r.pxChange, se.r.pxProxy),
        ),
        row(
          "server CPU per proxy per endpoint-change push",
          `${perPush(before.big, o.changes, before.sidecars)} (sidecars alone)`,
          px(ch.server, before.big, o.changes),
        ),
        row(
          "server CPU per proxy per config push (ServiceEntry edit)",
          `${perPush(before.se, seEdits, before.sidecars)} (sidecars alone)`,
          px(se.server, before.se, seEdits),
        ),
        row("server RSS per proxy (marginal)", kB(before.rssPerSidecar), kB(pxRss)),
        row(
          "responses per proxy per endpoint change, by type",
          mix.perPush(r0.sidecar, r1.sidecar, o.changes),
          mix.perPush(r0.proxyless, r1.proxyless, o.changes),
        ),
        row(
          "responses per proxy per ServiceEntry edit, by type",
          mix.perPush(r1.sidecar, r2.sidecar, seEdits),
          mix.perPush(r1.proxyless, r2.proxyless, seEdits),
        ),
      ];
    };
    /** Server CPU per proxy per endpoint push, µs (each sample is one push to every proxy). */
    const perProxyPush = (cpu: number, pushes: number, proxyCount: number) =>
      (cpu * 1e6) / pushes / proxyCount;

    // ---- baseline ----
    const w1 = await connectWave(o.baseline, 0);
    await new Promise((r) => setTimeout(r, 1000));
    const rssBase = rssOf(pid);
    out(
      `baseline ${o.baseline} ${proto} proxies: connected+synced in ${w1.seconds.toFixed(1)} s ` +
        `(server CPU ${w1.cpu.toFixed(1)} s); RSS ${mb(rssBase)}, ` +
        `${mb((rssBase - rssIdle) / o.baseline)} per proxy`,
    );
    const baseCh = await withCpu(() =>
      measureChanges(`baseline ${o.baseline}`, Math.min(o.changes, 10))
    );
    const baseChanges = baseCh.r;
    const basePerPush = perProxyPush(baseCh.server, baseChanges.perChange.length, o.baseline);
    out(
      `  (${baseChanges.perChange.length} endpoint changes: ${cpuText(baseCh)}; server CPU per ` +
        `proxy per endpoint push ${basePerPush.toFixed(0)} µs)`,
    );
    const baseSe = await measureSeChanges(`baseline ${o.baseline}`, Math.min(o.changes, 5));
    const baseSeEp = await measureSeChanges(`baseline ${o.baseline}`, Math.min(o.changes, 5), true);
    const baseFull = await measureFullPush(`baseline ${o.baseline}`, Math.min(o.fullPushes, 3));

    // ---- full scale ----
    const c2 = clientCpu();
    const w2 = await connectWave(o.proxies, o.delta);
    const c2d = clientCpu() - c2;
    await new Promise((r) => setTimeout(r, 2000));
    const rssN = rssOf(pid);
    const n = proxies.length;
    const perProxy = (rssN - rssIdle) / n;
    out(
      `${n} proxies (${o.proxies} ${proto} + ${o.delta} delta): connected+synced in ` +
        `${w2.seconds.toFixed(1)} s more (server CPU ${w2.cpu.toFixed(1)} s, client CPU ` +
        `${c2d.toFixed(1)} s); server RSS ${mb(rssN)}, ` +
        `${(perProxy / 1024).toFixed(0)} kB per proxy (marginal ` +
        `${((rssN - rssBase) / (n - o.baseline) / 1024).toFixed(0)} kB)`,
    );
    const clientRss = process.memoryUsage().rss;
    const responses = sectionStats.hits + sectionStats.misses;
    out(
      `client overhead (this process, ${sessions.length} HTTP/2 connections): ` +
        `RSS ${mb(clientRss)} (+${mb(clientRss - clientRss0)} for the proxies), ` +
        `CPU so far ${clientCpu().toFixed(1)} s; ${sectionStats.hits} of ${responses} ` +
        `responses carried resources already decoded for another proxy`,
    );

    const threads0 = threadCpu(pid);
    const big = await withCpu(() =>
      o.profileChanges
        ? profiled(
          o.profileChanges,
          httpPort,
          o.profileAllocs,
          () => measureChanges(`${n} proxies`, o.changes),
        )
        : measureChanges(`${n} proxies`, o.changes)
    );
    const bigThreads = busiestThreads(threads0, threadCpu(pid), big.r.perChange.length);
    const bigPerPush = perProxyPush(big.server, big.r.perChange.length, proxies.length);
    out(
      `  (${o.changes} endpoint changes: ${cpuText(big)}; server CPU per proxy per endpoint push ` +
        `${bigPerPush.toFixed(0)} µs, ${(bigPerPush / basePerPush).toFixed(2)}× the baseline's)`,
    );
    const paused = o.pausedChanges ? await measurePausedChanges(o.pausedChanges) : undefined;
    const edits = Math.min(o.changes, 5);
    const se = await withCpu(() =>
      o.profileEdits
        ? profiled(
          o.profileEdits,
          httpPort,
          o.profileAllocs,
          () => measureSeChanges(`${n} proxies`, edits),
        )
        : measureSeChanges(`${n} proxies`, edits)
    );
    out(`  (ServiceEntry edits: ${cpuText(se)})`);
    const seEp = await withCpu(() => measureSeChanges(`${n} proxies`, edits, true));
    out(`  (ServiceEntry endpoint edits: ${cpuText(seEp)})`);
    const full = await withCpu(() =>
      o.profileFullPush
        ? profiled(
          o.profileFullPush,
          httpPort,
          o.profileAllocs,
          () => measureFullPush(`${n} proxies`, o.fullPushes),
        )
        : measureFullPush(`${n} proxies`, o.fullPushes)
    );
    out(`  (full pushes: ${cpuText(full)})`);
    const pxTable = o.proxyless
      ? await proxylessMix({
        big: big.server,
        se: se.server,
        sidecars: n,
        rssBefore: rssN,
        rssPerSidecar: (rssN - rssBase) / (n - o.baseline),
      })
      : [];

    // ---- sustained churn and reconnect storm ----
    const live = () => proxies.filter((p) => !p.ended).length;
    /**
     * `/ready`, REST CDS and a new ADS stream's CDS timed by the independent C-core prober (a
     * process of its own: this one, running the simulated proxies, is too busy to time anything
     * of the server's); the function it returns stops it and tells what it saw.
     */
    const readyProbe = async () => {
      const p = await startCoreProber(
        { http: `127.0.0.1:${httpPort}`, grpc: `127.0.0.1:${grpcPort}` },
        // with MESH_BENCH_SERVER_LOG=<file>, every probe in <file>.probes (beside MESH_XDS_TRACE)
        { node: PROBE_NODE, pauseMs: 250, log: serverLog ? `${serverLog}.probes` : "" },
      );
      return () => p.end();
    };
    const readyText = (x: ProbeSummary) => {
      const failed = (k: string) => x.errors.split("\n").filter((l) => l.startsWith(`${k}:`));
      const bad = failed("ready");
      const others = failed("rest").length + failed("ads").length;
      const sorted = [...x.times.ready].sort((a, b) => a - b);
      return `/ready ${x.counts.ready - bad.length}/${x.counts.ready} probes 200 (p50 ${
        ms(pct(sorted, 50))
      }, p90 ${ms(pct(sorted, 90))}, slowest ${ms(x.slowest.ready)}${
        bad.length ? `; first failure: ${bad[0].slice(7)}` : ""
      }), slowest REST CDS ${ms(x.slowest.rest)} and new ADS stream's CDS ${ms(x.slowest.ads)}${
        others ? ` (${others} of them failed)` : ""
      }, C-core prober`;
    };
    let churnRow = "", stormRow = "";
    /** Churn is followed on the sidecars (proxyless workloads see only the services they call). */
    const sidecarsLive = () => proxies.filter((p) => p instanceof SimProxy && !p.ended).length;
    /** Closes every proxy and connection of this process, and gives the server a second. */
    const closeAll = async () => {
      for (const p of proxies) p.close();
      for (const x of sessions) x.destroy();
      proxies.length = 0;
      sessions.length = 0;
      await new Promise((r) => setTimeout(r, 1000));
    };
    /**
     * `--client-workers K`: closes this process's proxies (proxyless workloads too, which are not
     * reopened) and reopens the sidecars (as many SotW and delta ones) in K worker isolates, each
     * on sessions of its own.
     */
    const moveToShards = async () => {
      const open = proxies.filter((p) => p instanceof SimProxy && !p.ended);
      const delta = open.filter(isDelta).length, sotw = open.length - delta;
      await closeAll();
      const t0 = performance.now();
      const shards = await ChurnShards.open(o.clientWorkers, {
        port: grpcPort,
        sotw,
        delta,
        perSession: o.perSession,
        client: o.client,
      });
      out(
        `the churn's ${sotw + delta} sidecars reopened in ${o.clientWorkers} client workers in ${
          ((performance.now() - t0) / 1000).toFixed(1)
        } s`,
      );
      return { shards, sotw, delta };
    };
    /** The sidecars for the storm when the churn moved them into worker isolates. */
    let stormCount: { mains: number; deltas: number } | undefined;
    if (o.churnRate > 0) {
      const shards = o.clientWorkers > 1 ? await moveToShards() : undefined;
      if (shards) stormCount = { mains: shards.sotw, deltas: shards.delta };
      const tracker = churn = new ChurnTracker();
      const total = Math.round(o.churnRate * o.churnSeconds);
      const interval = 1000 / o.churnRate;
      const rss: string[] = [];
      const stopReady = await readyProbe();
      const s0 = cpuOf(pid), c0 = clientCpu();
      const conv0 = readHistogram(await metricsText(), "mesh_xds_convergence_time");
      const start = performance.now();
      const rssTimer = setInterval(
        () => rss.push(`${((performance.now() - start) / 1000).toFixed(0)} s ${mb(rssOf(pid))}`),
        5000,
      );
      rss.push(`0 s ${mb(rssOf(pid))}`);
      const lag = clientLag();
      const posts: Promise<void>[] = [];
      const posting = async () => {
        for (let k = 0; k < total; k++) {
          const wait = start + k * interval - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          const svc = (k * 37 + 5) % o.services;
          const seq = tracker.post(svc, performance.now());
          shards?.shards.post(svc, performance.timeOrigin + tracker.posted[seq]);
          posts.push(
            fetch(`http://127.0.0.1:${httpPort}/debug/endpointz?svc=${svcName(svc)}`, {
              method: "POST",
              body: JSON.stringify({
                address: churnAddress(seq),
                servicePort: 8080,
                labels: { version: "v1" },
              }),
            }).then(async (res) => {
              const body = await res.text();
              if (!res.ok) throw new Error(`POST /debug/endpointz: ${res.status} ${body}`);
            }),
          );
        }
        await Promise.all(posts);
        const postedIn = (performance.now() - start) / 1000;
        let complete = true;
        await until(
          "every proxy to receive every churn change",
          () =>
            shards
              ? shards.shards.delivered >= total * shards.shards.live
              : tracker.delivered >= total * sidecarsLive(),
          120_000,
        ).catch(() => (complete = false));
        return { postedIn, complete };
      };
      const { postedIn, complete } = o.profileChurn
        ? await profiled(o.profileChurn, httpPort, o.profileAllocs, posting)
        : await posting();
      clearInterval(rssTimer);
      let lagText = lag.stop();
      const sidecars = shards ? shards.shards.live : sidecarsLive();
      if (shards) {
        const results = await shards.shards.end();
        for (const r of results) tracker.absorb(r.part);
        lagText = `${lagText}; its ${results.length} client workers: p99 ${
          results.map((r) => ms(r.lagP99 * 1000)).join(", ")
        }, max ${results.map((r) => ms(r.lagMax * 1000)).join(", ")}`;
      }
      rss.push(`end ${mb(rssOf(pid))}`);
      const rd = await stopReady();
      const sCpu = cpuOf(pid) - s0, cCpu = clientCpu() - c0;
      const wall = (performance.now() - start) / 1000;
      const conv = since(conv0, readHistogram(await metricsText(), "mesh_xds_convergence_time"));
      churn = undefined;
      out(
        `sustained churn at ${sidecars} sidecars${
          shards ? ` (in ${o.clientWorkers} client workers)` : ""
        }: ${total} endpoint changes (registry) posted in ` +
          `${postedIn.toFixed(1)} s (${(total / postedIn).toFixed(1)}/s); ` +
          `${tracker.delivered} of ${total * sidecars} (change, proxy) deliveries${
            complete ? "" : " (INCOMPLETE after 120 s)"
          }; change → that proxy's update p50 ${ms(tracker.percentile(50))}, p99 ` +
          `${ms(tracker.percentile(99))}, max ${ms(tracker.percentile(100))}; server CPU ` +
          `${sCpu.toFixed(1)} s in ${wall.toFixed(0)} s (${(sCpu / wall).toFixed(2)} cores), ` +
          `client CPU ${cCpu.toFixed(1)} s; ${readyText(rd)}`,
      );
      out(`  server RSS every 5 s: ${rss.join(", ")}`);
      out(`  ${churnSplitText(tracker)}; this process (the simulated proxies): ${lagText}`);
      const server = convergenceText(conv);
      out(`  the server's side (mesh_xds_convergence_time): ${server}`);
      churnRow = `| sustained churn: ${total} endpoint changes at ${
        (total / postedIn).toFixed(1)
      }/s, ${sidecars} proxies: change → each proxy's update p50 / p99 / max | ${
        ms(tracker.percentile(50))
      } / ${ms(tracker.percentile(99))} / ${ms(tracker.percentile(100))} (${
        complete ? "all delivered" : "INCOMPLETE"
      }; server ${(sCpu / wall).toFixed(2)} cores; RSS ${rss[0].split(" s ")[1]} → ${
        rss[rss.length - 1].slice(4)
      }; ${readyText(rd)}; server's side: ${server}) | p99 ≤ 1000 ms, RSS flat |`;
    }
    if (o.stormSeconds > 0) {
      const deltas = stormCount?.deltas ?? proxies.filter((p) => !p.ended && isDelta(p)).length;
      const mains = stormCount?.mains ?? live() - deltas;
      await closeAll();
      const stopReady = await readyProbe();
      const s0 = cpuOf(pid), c0 = clientCpu();
      const start = performance.now();
      // Every proxy reconnects within --storm-seconds: batches every 50 ms, without waiting for
      // the previous ones to sync.
      const batches = Math.max(1, Math.floor((o.stormSeconds * 1000) / 50));
      const per = Math.ceil(mains / batches);
      for (let b = 0, i = 0; i < mains; b++) {
        const wait = start + b * 50 - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const count = Math.min(per, mains - i);
        const ss = await Promise.all(
          Array.from(
            { length: Math.ceil(count / o.perSession) },
            () => connectSession(grpcPort, o.client),
          ),
        );
        sessions.push(...ss);
        for (let k = 0; k < count; k++, i++) {
          newProxy(i, mainDelta, ss[Math.floor(k / o.perSession)]);
        }
      }
      for (let k = 0; k < deltas; k++) {
        const x = await connectSession(grpcPort, o.client);
        sessions.push(x);
        newProxy(100_000 + k, true, x);
      }
      const reconnectedIn = (performance.now() - start) / 1000;
      let converged = true;
      await until(
        "every reconnected proxy to sync",
        () => proxies.every((p) => p.synced || p.ended),
        120_000,
      ).catch(() => (converged = false));
      const took = (performance.now() - start) / 1000;
      const rd = await stopReady();
      const failed = proxies.filter((p) => p.ended).length;
      const sCpu = cpuOf(pid) - s0, cCpu = clientCpu() - c0;
      out(
        `reconnect storm: ${proxies.length} proxies reconnected in ${
          reconnectedIn.toFixed(1)
        } s; ` +
          `${
            converged
              ? `all synced (CDS, EDS, LDS, RDS) after ${took.toFixed(1)} s`
              : "NOT converged after 120 s"
          }` +
          `${failed ? ` (${failed} streams ended: ${endedReasons()})` : ""}; server CPU ${
            sCpu.toFixed(1)
          } s, ` +
          `client CPU ${cCpu.toFixed(1)} s; server RSS after ${mb(rssOf(pid))}; ${readyText(rd)}`,
      );
      stormRow = `| reconnect storm: ${proxies.length} proxies reconnect within ${
        reconnectedIn.toFixed(1)
      } s → all synced | ${converged ? `${took.toFixed(1)} s` : "not converged in 120 s"} (${
        readyText(rd)
      }; server CPU ${sCpu.toFixed(1)} s) | ≤ 60 s, /ready green |`;
    }
    const projected = rssIdle + perProxy * 2000;
    const pair = (xs: number[], p1: number, p2: number) =>
      `${ms(pct(xs, p1))} / ${ms(pct(xs, p2))}`;

    out();
    out(
      `| figure (${o.proxies} ${proto} proxies + ${o.delta} delta, ${o.baseline} ${proto} ` +
        `baseline) | measured (${proto} ADS) | target |`,
    );
    out("| --- | --- | --- |");
    out(`| server RSS idle (config loaded) | ${mb(rssIdle)} | |`);
    out(`| server RSS at ${o.baseline} proxies (baseline) | ${mb(rssBase)} | |`);
    out(`| server RSS at ${n} proxies | ${mb(rssN)} | |`);
    out(
      `| memory per connected proxy | ${(perProxy / 1024).toFixed(0)} kB | 2000 proxies within ` +
        `1.5 GB (projected for 2000: ${mb(projected)}${n >= 2000 ? ", measured above" : ""}) |`,
    );
    out(
      `| connect + initial sync ${o.baseline} → ${n} proxies | ${w2.seconds.toFixed(1)} s ` +
        `(server CPU ${w2.cpu.toFixed(1)} s, client CPU ${c2d.toFixed(1)} s) | |`,
    );
    out(
      `| endpoint change (registry, EDS push) → all, p50 / p99 (${o.baseline} proxies) | ` +
        `${pair(baseChanges.perChange, 50, 99)} | |`,
    );
    out(
      `| endpoint change (registry, EDS push) → all, p50 / p99 (${n} proxies) | ` +
        `${pair(big.r.perChange, 50, 99)} (per proxy p50 / p99 ${
          pair(big.r.perProxy, 50, 99)
        }) | p99 ≤ 1000 ms at 2000 |`,
    );
    out(`| CPU for ${o.changes} endpoint changes at ${n} proxies | ${cpuText(big)} | |`);
    out(
      `| server CPU per proxy per endpoint push, ${o.baseline} / ${n} proxies | ` +
        `${basePerPush.toFixed(0)} / ${bigPerPush.toFixed(0)} µs (${
          (bigPerPush / basePerPush).toFixed(2)
        }×) | ≤ 1.2× |`,
    );
    out(
      `| ServiceEntry edit (config push) → all, p50 / p99 (${o.baseline} proxies) | ` +
        `${pair(baseSe.perChange, 50, 99)} | |`,
    );
    out(
      `| ServiceEntry edit (config push) → all, p50 / p99 (${n} proxies) | ` +
        `${pair(se.r.perChange, 50, 99)} (${cpuText(se)}) | |`,
    );
    out(
      `| ServiceEntry endpoint edit (endpoints only: an EDS push) → all, p50 / p99 (${o.baseline} ` +
        `proxies) | ${pair(baseSeEp.perChange, 50, 99)} | |`,
    );
    out(
      `| ServiceEntry endpoint edit (endpoints only: an EDS push) → all, p50 / p99 (${n} proxies) | ` +
        `${pair(seEp.r.perChange, 50, 99)} (${cpuText(seEp)}) | |`,
    );
    out(
      `| full push → all (CDS, RDS and EDS at every proxy), p50 / p90 (${o.baseline} proxies) | ` +
        `${pair(baseFull.perChange, 50, 90)} (per type p50: ${baseFull.typeP50}) | |`,
    );
    out(
      `| full push → all (CDS, RDS and EDS at every proxy), p50 / p90 (${n} proxies) | ${
        pair(full.r.perChange, 50, 90)
      } (per type p50: ${full.r.typeP50}; ${cpuText(full)}) | p90 ≤ 1500 ms |`,
    );
    const ratioPush = big.r.deltaBytes / big.r.sotwBytes;
    const ratioState = big.r.deltaBytes / edsFull;
    out(
      `| bytes for a one-endpoint change: SotW push / delta push | ${
        Number.isNaN(big.r.sotwBytes)
          ? `n/a (no SotW proxy in this run) / ${big.r.deltaBytes} B`
          : `${big.r.sotwBytes} B / ${big.r.deltaBytes} B (${(100 * ratioPush).toFixed(1)}%)`
      } | delta ≤ 2% of SotW |`,
    );
    out(
      `| same, vs a full SotW EDS state (${(edsFull / 1024).toFixed(1)} kB) | ` +
        `${(100 * ratioState).toFixed(2)}% | delta ≤ 2% of SotW |`,
    );
    for (const line of pxTable) out(line);
    if (churnRow) out(churnRow);
    if (stormRow) out(stormRow);
    return {
      workers: o.serverWorkers,
      proxies: n,
      changes: big.r.perChange.length,
      changeMs: big.r.perChange,
      changeCpu: big.server,
      changeThreads: bigThreads,
      fullMs: full.r.perChange,
      fullCpu: full.server,
      fullPushes: full.r.perChange.length,
      connectSeconds: w1.seconds + w2.seconds,
      connectCpu: w1.cpu + w2.cpu,
      rss: rssN,
      paused,
    };
  } finally {
    for (const p of proxies) p.close();
    for (const s of sessions) s.destroy();
    if (child) {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      const t = setTimeout(() => {
        try {
          child?.kill("SIGKILL");
        } catch { /* gone */ }
      }, 5000);
      await child.status;
      clearTimeout(t);
    }
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/**
 * Runs `fn` while recording CPU profiles of the server (its `/debug/pprof/profile`, started with
 * `--profile`) and of this process (node:inspector); writes `server-<i>.cpuprofile`
 * (consecutive 2 s slices until `fn` is done) and `client.cpuprofile` into `dir`. With
 * `allocs`, allocation profiles instead (the server's `/debug/pprof/allocs`, V8's sampling heap
 * profiler here): `server-<i>.heapprofile`, `client.heapprofile`. Read them with
 * `deno run -A bench/cpuprofile_top.ts <files>`.
 */
async function profiled<T>(
  dir: string,
  httpPort: number,
  allocs: boolean,
  fn: () => Promise<T>,
): Promise<T> {
  const [path, ext] = allocs ? ["allocs", "heapprofile"] : ["profile", "cpuprofile"];
  const client = await (allocs ? startAllocationProfile() : startCpuProfile());
  let done = false;
  const slices: unknown[] = [];
  const server = (async () => {
    while (!done) {
      const res = await fetch(`http://127.0.0.1:${httpPort}/debug/pprof/${path}?seconds=2`);
      if (!res.ok) throw new Error(`server profile: ${res.status} ${await res.text()}`);
      slices.push(await res.json());
    }
  })();
  try {
    return await fn();
  } finally {
    done = true;
    const profile = await client.stop();
    await server;
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(`${dir}/client.${ext}`, JSON.stringify(profile));
    for (const [i, p] of slices.entries()) {
      await Deno.writeTextFile(`${dir}/server-${i}.${ext}`, JSON.stringify(p));
    }
  }
}

const deltaSet = new WeakSet<AnyProxy>();
function isDelta(p: AnyProxy): boolean {
  return deltaSet.has(p);
}

if (import.meta.main) {
  await helpIfAsked(import.meta.url);
  await main();
}

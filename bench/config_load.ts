/**
 * Loading a large configuration into a running mesh-discovery (issue 27 item 2): the real
 * program on a temporary `--configDir`, then one file of N VirtualServices (~330 bytes each, one
 * HTTP route) written atomically. Meanwhile `/ready`, REST CDS (`/v3/discovery:clusters`) and ADS
 * (a new stream asking for CDS) are probed in turn; the load ends when the `mesh_configs` gauge of
 * `/metrics` counts every document and `mesh_virt_services` (the push context in force, built in
 * slices after the store delivers the file) does too. Prints the load time, the cost per 1000
 * documents and per MB, the slowest probe of each kind, and the server's own longest event-loop
 * delay during the load (`nodejs_eventloop_lag_max_seconds`, read and reset by each scrape).
 * Target: every probe answered within 200 ms during the load.
 *
 * Two probers, alternated run by run (`--probers`): `c-core`, a process of its own
 * (`_load_prober.py`: Python's http.client and gRPC C-core, no JavaScript runtime), the figure
 * the target is judged by; and `bench`, this process, which also writes the file and reads
 * `/metrics`, so that its own pauses (GC, a busy event loop on two shared cores) count as the
 * server's — kept as the baseline the earlier figures were taken with.
 *
 * One round of probes runs before the file is written (a fresh server's first ADS stream pays for
 * loading and compiling its code, ~200 ms, which is not the load's doing), and the end is read
 * from `/metrics` rather than `/debug/configz`: parsing a 9 MB configz answer held this process's
 * event loop for 100-300 ms and the probes it was timing with it. The load time is known to ±0.2 s
 * (the gauge is read every 200 ms: a scrape costs the server ~10 ms).
 *
 * `deno task bench config_load [--documents N,N,...] [--runs N] [--probers c-core,bench]
 * [--server-cpu-prof DIR] [--server-v8-flags F]`
 * @module
 */

import { parseArgs } from "node:util";
import { wholeNumber } from "./_flags.ts";
import { waitUntil } from "../tests/harness/procs.ts";
import { NODE, probeUntil, virtualService } from "../tests/e2e/_config_load.ts";
import { http, startDiscovery } from "../tests/e2e/discovery_harness.ts";
import { startCoreProber } from "./_core_prober.ts";

const HELP = `Usage: deno task bench config_load [--documents N,N,...] [--runs N] [--probers P,...]

Starts mesh-discovery on a temporary config directory, writes one file of N VirtualServices and
probes /ready, REST CDS and ADS CDS until the configuration is in force; prints the load time,
the cost per 1000 documents and per MB, the slowest probe of each kind and the server's longest
event-loop delay (lag max: its nodejs_eventloop_lag_max_seconds, read and reset by each scrape).
  --documents N,...  file sizes in documents (default 1000,5000,12500; 12500 is ~4 MiB)
  --runs N           runs per size and prober, the median load time printed (default 3)
  --probers P,...    who times the probes (default c-core,bench; each run alternates them):
                     c-core  a process of its own: Python's http.client and gRPC C-core
                             (/usr/bin/python3 with Debian's python3-grpcio)
                     bench   this process (Deno, grpc-js), which also writes the file and
                             reads /metrics: its own pauses count as the server's
  --server-cpu-prof DIR  write a V8 CPU profile of each server into DIR (deno --cpu-prof-dir)
  --server-v8-flags F    run each server with deno --v8-flags=F (e.g. --trace-gc)

MESH_BENCH_SERVER_LOG=<file> appends each server's whole output to <file> and, with the c-core
prober, every probe to <file>.probes ("<epoch ms at its start> <kind> <ms>"); with the server's
MESH_XDS_TRACE=<file> (its event-loop stalls) they place a slow probe on one clock.`;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

interface Run {
  loadMs: number;
  bytes: number;
  ready: number;
  rest: number;
  ads: number;
  /** The server's longest event-loop delay during the load (ms, its `nodejs_eventloop_lag_max_seconds`). */
  lag: number;
}

/** Who times the probes. */
type Prober = "c-core" | "bench";
const PROBERS: readonly Prober[] = ["c-core", "bench"];

/** The pause between two rounds of probes, ms. */
const PAUSE_MS = 20;

/** How the server is run and what is kept of it. */
interface ServerOptions {
  /** `--cpu-prof-dir` for the server, or "". */
  cpuProf: string;
  /** `--v8-flags` for the server, or "". */
  v8Flags: string;
  /** A file that gets the server's whole output and (c-core) every probe, or "". */
  log: string;
}

/** One load of `documents` documents into a fresh discovery, probed throughout. */
async function loadOnce(documents: number, prober: Prober, server: ServerOptions): Promise<Run> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-bench-cfgload-" });
  const d = await startDiscovery(
    ["--configDir", dir, "--registries", "Mock"],
    {},
    [
      "-A",
      ...(server.cpuProf ? [`--cpu-prof-dir=${server.cpuProf}`] : []),
      ...(server.v8Flags ? [`--v8-flags=${server.v8Flags}`] : []),
    ],
  );
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 20_000);
    const text = Array.from({ length: documents }, (_, i) => virtualService(i)).join("---\n");
    const options = {
      pauseMs: PAUSE_MS,
      deadlineMs: 600_000,
      pollMs: 50,
      adsTimeoutMs: 60_000,
      check: false,
    };
    // stored (mesh_configs) and in force: the push context serving them (mesh_virt_services)
    let lag = 0;
    const counted = async () => {
      const metrics = (await http(`http://${d.monitoring}/metrics`)).body;
      // each scrape reads and resets the server's lag histogram: the max over the load's scrapes
      const max = Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(metrics)?.[1]);
      if (Number.isFinite(max)) lag = Math.max(lag, max * 1000);
      const stored = Number(/^mesh_configs\{type="VirtualService"\} (\d+)$/m.exec(metrics)?.[1]);
      const served = Number(/^mesh_virt_services (\d+)$/m.exec(metrics)?.[1]);
      return Math.min(stored, served);
    };
    const write = async () => {
      await http(`http://${d.monitoring}/metrics`); // resets the lag histogram: start-up is not the load
      await Deno.writeTextFile(`${dir}/.all.yaml.tmp`, text);
      await Deno.rename(`${dir}/.all.yaml.tmp`, `${dir}/all.yaml`);
      return performance.now();
    };
    const what = "the configuration in force";
    let start: number;
    let slowest: Record<"ready" | "rest" | "ads", number>;
    if (server.log) {
      await Deno.writeTextFile(
        server.log,
        `# ${documents} documents, prober ${prober}, server pid ${d.proc.pid}\n`,
        { append: true },
      );
    }
    if (prober === "c-core") {
      const p = await startCoreProber(d, {
        node: NODE,
        pauseMs: PAUSE_MS,
        log: server.log ? `${server.log}.probes` : "",
      });
      try {
        start = await write();
        await waitUntil(async () => await counted() === documents, options.deadlineMs, what, 200);
      } finally {
        slowest = await p.stop();
      }
    } else {
      await probeUntil(d, () => Promise.resolve(true), { ...options, what: "a warm-up round" });
      start = await write();
      slowest = await probeUntil(d, async () => await counted() === documents, {
        ...options,
        pollMs: 200,
        what,
      });
    }
    return {
      loadMs: performance.now() - start,
      lag,
      bytes: new TextEncoder().encode(text).length,
      ...slowest,
    };
  } finally {
    await d.proc.stop();
    if (server.log) await Deno.writeTextFile(server.log, d.proc.output(), { append: true });
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs the bench with `args` (`--help` prints the usage and returns). */
export async function main(args: string[] = []): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      help: { type: "boolean", default: false },
      documents: { type: "string", default: "1000,5000,12500" },
      runs: { type: "string", default: "3" },
      probers: { type: "string", default: PROBERS.join(",") },
      "server-cpu-prof": { type: "string", default: "" },
      "server-v8-flags": { type: "string", default: "" },
    },
    strict: false,
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const sizes = String(values.documents).split(",").map((v) => wholeNumber("documents", v));
  const runs = wholeNumber("runs", values.runs);
  const probers = String(values.probers).split(",").map((p) => {
    if (!PROBERS.includes(p as Prober)) {
      throw new Error(`--probers: "${p}" is not one of ${PROBERS.join(", ")}`);
    }
    return p as Prober;
  });
  const server: ServerOptions = {
    cpuProf: String(values["server-cpu-prof"] ?? ""),
    v8Flags: String(values["server-v8-flags"] ?? ""),
    log: Deno.env.get("MESH_BENCH_SERVER_LOG") ?? "",
  };
  console.log(
    `load average: ${(await Deno.readTextFile("/proc/loadavg").catch(() => "?")).trim()}`,
  );
  console.log(
    "documents  MB     prober  load (s)  s/1000 docs  s/MB   slowest /ready  REST CDS  ADS CDS" +
      "  lag max  (ms)  slowest probe of each run",
  );
  for (const n of sizes) {
    const byProber = new Map<Prober, Run[]>(probers.map((p) => [p, []]));
    for (let i = 0; i < runs; i++) {
      for (const p of probers) {
        byProber.get(p)!.push(await loadOnce(n, p, server));
      }
    }
    for (const [p, rs] of byProber) {
      const mb = rs[0].bytes / (1024 * 1024);
      const load = median(rs.map((r) => r.loadMs)) / 1000;
      const worst = (k: "ready" | "rest" | "ads" | "lag") =>
        Math.round(Math.max(...rs.map((r) => r[k])));
      const perRun = rs.map((r) => Math.round(Math.max(r.ready, r.rest, r.ads))).join(" ");
      console.log(
        `${String(n).padEnd(10)} ${mb.toFixed(2).padEnd(6)} ${p.padEnd(7)} ` +
          `${load.toFixed(2).padEnd(9)} ${(load / (n / 1000)).toFixed(2).padEnd(12)} ` +
          `${(load / mb).toFixed(2).padEnd(6)} ${String(worst("ready")).padEnd(15)} ` +
          `${String(worst("rest")).padEnd(9)} ${String(worst("ads")).padEnd(8)} ` +
          `${String(worst("lag")).padEnd(13)} ${perRun}`,
      );
    }
  }
  console.log(
    `target: every probe under 200 ms during the load; load average at the end: ${
      (await Deno.readTextFile("/proc/loadavg").catch(() => "?")).trim()
    }`,
  );
}

if (import.meta.main) await main(Deno.args);

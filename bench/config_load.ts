/**
 * Loading a large configuration into a running mesh-discovery (issue 27 item 2): the real
 * program on a temporary `--configDir`, then one file of N VirtualServices (~330 bytes each, one
 * HTTP route) written atomically. Meanwhile `/ready`, REST CDS (`/v3/discovery:clusters`) and ADS
 * (a new stream asking for CDS) are probed in turn; the load ends when the `mesh_configs` gauge of
 * `/metrics` counts every document and `mesh_virt_services` (the push context in force, built in
 * slices after the store delivers the file) does too. Prints the load time, the cost per 1000 documents and per MB,
 * and the slowest probe of each kind. Target: every probe answered within 200 ms during the load.
 *
 * One round of probes runs before the file is written (a fresh server's first ADS stream pays for
 * loading and compiling its code, ~200 ms, which is not the load's doing), and the end is read
 * from `/metrics` rather than `/debug/configz`: parsing a 9 MB configz answer held this process's
 * event loop for 100-300 ms and the probes it was timing with it. The load time is known to ±0.2 s
 * (the gauge is read every 200 ms: a scrape costs the server ~10 ms).
 *
 * `deno task bench config_load [--documents N,N,...] [--runs N] [--server-cpu-prof DIR]`
 * @module
 */

import { parseArgs } from "node:util";
import { wholeNumber } from "./_flags.ts";
import { waitUntil } from "../tests/harness/procs.ts";
import { probeUntil, virtualService } from "../tests/e2e/_config_load.ts";
import { http, startDiscovery } from "../tests/e2e/discovery_harness.ts";

const HELP = `Usage: deno task bench config_load [--documents N,N,...] [--runs N]

Starts mesh-discovery on a temporary config directory, writes one file of N VirtualServices and
probes /ready, REST CDS and ADS CDS until the configuration is in force; prints the load time,
the cost per 1000 documents and per MB, and the slowest probe of each kind.
  --documents N,...  file sizes in documents (default 1000,5000,12500; 12500 is ~4 MiB)
  --runs N           runs per size, the median printed (default 3)
  --server-cpu-prof DIR  write a V8 CPU profile of each server into DIR (deno --cpu-prof-dir)`;

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
}

/** One load of `documents` documents into a fresh discovery, probed throughout. */
async function loadOnce(documents: number, cpuProf: string): Promise<Run> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-bench-cfgload-" });
  const d = await startDiscovery(
    ["--configDir", dir, "--registries", "Mock"],
    {},
    cpuProf ? ["-A", `--cpu-prof-dir=${cpuProf}`] : undefined,
  );
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 20_000);
    const text = Array.from({ length: documents }, (_, i) => virtualService(i)).join("---\n");
    const options = {
      pauseMs: 20,
      deadlineMs: 600_000,
      pollMs: 50,
      adsTimeoutMs: 60_000,
      check: false,
    };
    await probeUntil(d, () => Promise.resolve(true), { ...options, what: "a warm-up round" });
    const start = performance.now();
    await Deno.writeTextFile(`${dir}/.all.yaml.tmp`, text);
    await Deno.rename(`${dir}/.all.yaml.tmp`, `${dir}/all.yaml`);
    // stored (mesh_configs) and in force: the push context serving them (mesh_virt_services)
    const counted = async () => {
      const metrics = (await http(`http://${d.monitoring}/metrics`)).body;
      const stored = Number(/^mesh_configs\{type="VirtualService"\} (\d+)$/m.exec(metrics)?.[1]);
      const served = Number(/^mesh_virt_services (\d+)$/m.exec(metrics)?.[1]);
      return Math.min(stored, served);
    };
    const slowest = await probeUntil(d, async () => await counted() === documents, {
      ...options,
      pollMs: 200,
      what: "the configuration in force",
    });
    return {
      loadMs: performance.now() - start,
      bytes: new TextEncoder().encode(text).length,
      ...slowest,
    };
  } finally {
    await d.proc.stop();
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
      "server-cpu-prof": { type: "string", default: "" },
    },
    strict: false,
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const sizes = String(values.documents).split(",").map((v) => wholeNumber("documents", v));
  const runs = wholeNumber("runs", values.runs);
  console.log(
    `load average: ${(await Deno.readTextFile("/proc/loadavg").catch(() => "?")).trim()}`,
  );
  console.log(
    "documents  MB     load (s)  s/1000 docs  s/MB   slowest /ready  REST CDS  ADS CDS (ms)",
  );
  for (const n of sizes) {
    const rs: Run[] = [];
    for (let i = 0; i < runs; i++) {
      rs.push(await loadOnce(n, String(values["server-cpu-prof"] ?? "")));
    }
    const mb = rs[0].bytes / (1024 * 1024);
    const load = median(rs.map((r) => r.loadMs)) / 1000;
    const worst = (k: "ready" | "rest" | "ads") => Math.round(Math.max(...rs.map((r) => r[k])));
    console.log(
      `${String(n).padEnd(10)} ${mb.toFixed(2).padEnd(6)} ${load.toFixed(2).padEnd(9)} ` +
        `${(load / (n / 1000)).toFixed(2).padEnd(12)} ${(load / mb).toFixed(2).padEnd(6)} ` +
        `${String(worst("ready")).padEnd(15)} ${String(worst("rest")).padEnd(9)} ${worst("ads")}`,
    );
  }
  console.log("target: every probe under 200 ms during the load");
}

if (import.meta.main) await main(Deno.args);

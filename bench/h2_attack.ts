/**
 * HTTP/2 attack benchmark: `mesh-discovery discovery --registries Mock` as a real process, then
 * each attack class of `lib/grpc/testing.ts` repeated by `--attackers` hostile clients for
 * `--duration` ms (a new connection each time the server ends one), while a normal ADS client
 * opens a stream every 20 ms on its own connection (in a Worker, `_probe_worker.ts`, so the
 * attackers' work in this process does not delay it) and times its first response. Prints, per
 * attack, the server's answer, its RSS growth (peak during the attack over the RSS before) and
 * the normal client's p99, next to a baseline p99 measured without attack in the same run.
 * Targets (issue 13): growth ≤ 64 MB and p99 ≤ 1 s for each attack.
 *
 * `deno task bench h2_attack [--duration 3000] [--attackers 2] [--only <name>]
 * [--discovery-flag --grpcMaxConcurrentStreams=10]`; `--help` prints the options. With
 * `--discovery-flag --grpcMaxFailedConnectionRate=0` the per-address budget of failed connections
 * is off (every attacker reconnect is served at once, as before it existed).
 * @module
 */
import { parseArgs } from "node:util";
import { wholeNumber } from "./_flags.ts";
import {
  ADS_PATH,
  ATTACKS,
  discoveryRequest,
  percentile,
  type Probe,
  rssOf,
  sustain,
} from "../lib/grpc/testing.ts";
import { startDiscovery } from "../tests/e2e/discovery_harness.ts";

const MB = 1024 * 1024;
const NODE = "sidecar~127.0.0.1~bench-probe.default~default.svc.cluster.local";
const USAGE = `Usage: deno task bench h2_attack [--duration <ms>] [--attackers <n>]

Runs every HTTP/2 attack class against a fresh mesh-discovery (--registries Mock) while a normal
ADS client probes on another connection; prints per attack the server's answer, its RSS growth
and the normal client's p99 response time (targets: <= 64 MB, <= 1 s), with a baseline p99
measured without attack.

  --duration <ms>   how long each attack runs (default 3000)
  --attackers <n>   hostile clients at once, each reconnecting when cut off (default 2)
  --only <text>     run only the attacks whose name contains <text>
  --discovery-flag <flag=value>
                    an extra mesh-discovery flag (repeatable), e.g.
                    --discovery-flag --grpcMaxConcurrentStreams=10
  --help            this text`;

interface Options {
  durationMs: number;
  attackers: number;
  only: string;
  discoveryFlags: string[];
}

function parse(args: string[]): Options | undefined {
  const { values } = parseArgs({
    args,
    options: {
      duration: { type: "string", default: "3000" },
      attackers: { type: "string", default: "2" },
      only: { type: "string", default: "" },
      "discovery-flag": { type: "string", multiple: true, default: [] },
      help: { type: "boolean", default: false },
    },
    strict: false,
  });
  if (values.help) return undefined;
  return {
    durationMs: wholeNumber("duration", values.duration, 100),
    attackers: wholeNumber("attackers", values.attackers, 1),
    only: String(values.only ?? ""),
    discoveryFlags: (values["discovery-flag"] ?? []) as string[],
  };
}

/** The normal ADS client, in a Worker (see `_probe_worker.ts`). */
async function startWorkerProbe(port: number, request: Uint8Array): Promise<Probe> {
  const w = new Worker(new URL("./_probe_worker.ts", import.meta.url), { type: "module" });
  const next = () => new Promise<unknown>((r) => (w.onmessage = (e) => r(e.data)));
  const started = next();
  w.postMessage({ port, path: ADS_PATH, request, everyMs: 20 });
  await started;
  return {
    async stop() {
      const done = next();
      w.postMessage("stop");
      const r = await done as Awaited<ReturnType<Probe["stop"]>>;
      w.terminate();
      return r;
    },
  };
}

const fmtMs = (x: number) => Number.isNaN(x) ? "n/a" : `${Math.round(x)} ms`;

/** Runs the benchmark (`args` as on the command line). */
export async function main(args: string[] = Deno.args): Promise<void> {
  const o = parse(args);
  if (!o) return console.log(USAGE);
  const out = (s = "") => console.log(s);
  const dir = await Deno.makeTempDir({ prefix: "mesh-bench-h2-" });
  const d = await startDiscovery([
    "--registries",
    "Mock",
    "--configDir",
    dir,
    "--log_output_level",
    "default:info,ads:error",
    ...o.discoveryFlags,
  ]);
  const child = d.proc;
  try {
    await child.waitFor(/discovery is ready/, 60_000);
    const port = Number(d.grpc.split(":")[1]);
    const request = discoveryRequest(NODE);
    out(
      `## HTTP/2 attacks on ADS: mesh-discovery --registries Mock, ${o.attackers} attacker(s) × ` +
        `${o.durationMs} ms per attack, a normal ADS client every 20 ms; ` +
        (o.discoveryFlags.length ? `flags ${o.discoveryFlags.join(" ")}; ` : "") +
        `${navigator.hardwareConcurrency} CPUs, Deno ${Deno.version.deno}`,
    );

    const probeFor = async (ms: number, during?: () => Promise<string>) => {
      const before = rssOf(child.pid);
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, rssOf(child.pid))), 50);
      const probe = await startWorkerProbe(port, request);
      let answer = "";
      try {
        answer = during ? await during() : await new Promise((r) => setTimeout(() => r(""), ms));
      } finally {
        clearInterval(sampler);
      }
      const { latencies, failures } = await probe.stop();
      return { growth: peak - before, latencies, failures, answer };
    };

    const base = await probeFor(o.durationMs);
    out(
      `baseline (no attack): normal client p50 ${fmtMs(percentile(base.latencies, 50))}, ` +
        `p99 ${fmtMs(percentile(base.latencies, 99))} over ${base.latencies.length} responses; ` +
        `server RSS ${(rssOf(child.pid) / MB).toFixed(1)} MB`,
    );
    out();
    out(
      "| attack | server's answer | attacks run | server RSS growth | normal client p99 " +
        "(baseline) | target |",
    );
    out("| --- | --- | --- | --- | --- | --- |");
    for (const attack of ATTACKS) {
      if (!attack.name.includes(o.only)) continue;
      let runs = 0;
      const r = await probeFor(o.durationMs, async () => {
        const res = await sustain(
          attack,
          port,
          { path: ADS_PATH, request },
          o.durationMs,
          o.attackers,
        );
        runs = res.runs;
        return res.answer;
      });
      const p99 = percentile(r.latencies, 99);
      const ok = r.growth <= 64 * MB && p99 <= 1000 && !r.failures.length;
      out(
        `| ${attack.name} | ${r.answer} | ${runs} | ${(r.growth / MB).toFixed(1)} MB | ` +
          `${fmtMs(p99)} (${fmtMs(percentile(base.latencies, 99))})` +
          `${
            r.failures.length ? `; ${r.failures.length} probe failures: ${r.failures[0]}` : ""
          } | ` +
          `≤ 64 MB, ≤ 1000 ms: ${ok ? "met" : "MISSED"} |`,
      );
    }
  } finally {
    await child.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) await main();

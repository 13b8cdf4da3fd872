/**
 * mesh-agent benchmark (every pod pays for its agent).
 *
 * 1. Idle cost: the real `mesh-agent proxy` supervising the stand-in proxy
 *    (tests/harness/proxy-standin) for `--seconds` (default 60): resident memory (VmRSS) at the
 *    end and CPU time used over the window (utime + stime from /proc), of the agent process
 *    alone. Baseline in the same run: an idle `deno run` of an empty script (a timer that never
 *    fires) measured the same way. Target: agent ≤ 1.5 × the baseline's RSS.
 * 2. Certificate change → new epoch: a certificate file is rewritten `--rotations` times (default
 *    5); the figure is the time from the write to the agent's `proxy epoch started` line, minus
 *    the coalescing delay (1 s). Target ≤ 1 s.
 *
 * `deno task bench agent [--seconds N] [--rotations N]`; `--help` prints this.
 * @module
 */
import { freePort, spawnProgram, withTempDir } from "../tests/harness/procs.ts";
import { STANDIN_BINARY } from "../tests/harness/proxy_standin.ts";

const HELP = `bench agent: idle RSS/CPU of mesh-agent proxy, and certificate change → new epoch.

Options:
  --seconds N     idle measurement window (default 60)
  --rotations N   certificate rewrites timed (default 5)
  --help          print this and exit`;

const COALESCE_MS = 1000;
const CLK_TCK = 100;

interface Options {
  seconds: number;
  rotations: number;
}

function parseArgs(args: string[]): Options | undefined {
  const o: Options = { seconds: 60, rotations: 5 };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--help" || a === "-h") return undefined;
    const key = a.replace(/^--/, "") as keyof Options;
    if (!(key in o)) throw new Error(`bench agent: unknown argument ${a} (see --help)`);
    const v = Number(args[++i]);
    if (!(v > 0)) throw new Error(`bench agent: ${a} needs a positive number`);
    o[key] = v;
  }
  return o;
}

/** CPU ticks (utime + stime) and RSS (KiB) of a process. */
function usage(pid: number): { ticks: number; rssKb: number } {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(f[11]) + Number(f[12]);
  const rss = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`))!;
  return { ticks, rssKb: Number(rss[1]) };
}

async function idle(pid: number, seconds: number): Promise<{ rssMb: number; cpuPct: number }> {
  const a = usage(pid);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const b = usage(pid);
  return { rssMb: b.rssKb / 1024, cpuPct: ((b.ticks - a.ticks) / CLK_TCK) / seconds * 100 };
}

const fmt = (x: number, d = 1) => x.toFixed(d);

/** Runs the bench. */
export async function main(args: string[] = []): Promise<void> {
  const o = parseArgs(args);
  if (!o) {
    console.log(HELP);
    return;
  }
  await withTempDir(async (dir) => {
    // baseline: an idle deno run
    await Deno.writeTextFile(`${dir}/idle.ts`, "setInterval(() => {}, 2 ** 30);\n");
    const base = spawnProgram(`${dir}/idle.ts`);
    await new Promise((r) => setTimeout(r, 2000));
    const floor = await idle(base.pid, o.seconds);
    await base.stop();

    await Deno.mkdir(`${dir}/certs`);
    const agent = spawnProgram("mesh-agent", [
      "proxy",
      "--configPath",
      `${dir}/proxy`,
      "--binaryPath",
      STANDIN_BINARY,
      "--proxyAdminPort",
      String(freePort()),
      "--drainDuration",
      "1s",
      "--parentShutdownDuration",
      "1s",
    ], {
      env: {
        POD_NAME: "bench",
        POD_NAMESPACE: "default",
        INSTANCE_IP: "127.0.0.1",
        MESH_CERT_DIR: `${dir}/certs`,
      },
    });
    try {
      await agent.waitFor("proxy epoch started epoch=0", 30_000);
      await new Promise((r) => setTimeout(r, 2000));
      const a = await idle(agent.pid, o.seconds);
      console.log(`idle for ${o.seconds} s (RSS at the end, CPU over the window):`);
      console.log(
        `  deno run of an empty script: RSS ${fmt(floor.rssMb)} MB, CPU ${fmt(floor.cpuPct, 2)} %`,
      );
      console.log(
        `  mesh-agent proxy:            RSS ${fmt(a.rssMb)} MB, CPU ${fmt(a.cpuPct, 2)} %`,
      );
      console.log(`  ratio RSS ${fmt(a.rssMb / floor.rssMb, 2)}x (target <= 1.5x)`);

      const lat: number[] = [];
      for (let i = 1; i <= o.rotations; i++) {
        const t0 = performance.now();
        await Deno.writeTextFile(`${dir}/certs/cert-chain.pem`, `rotation ${i}\n`);
        await agent.waitFor(`proxy epoch started epoch=${i} `, 30_000);
        lat.push(performance.now() - t0 - COALESCE_MS);
        // let the parent be shut down before the next rotation
        await new Promise((r) => setTimeout(r, 1500));
      }
      lat.sort((x, y) => x - y);
      console.log(
        `certificate change -> new epoch, minus the ${COALESCE_MS} ms coalescing delay ` +
          `(${o.rotations} rotations): median ${fmt(lat[lat.length >> 1], 0)} ms, max ${
            fmt(lat[lat.length - 1], 0)
          } ms (target <= 1000 ms)`,
      );
    } finally {
      await agent.stop();
    }
  });
}

if (import.meta.main) await main(Deno.args);

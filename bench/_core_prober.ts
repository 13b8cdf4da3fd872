/**
 * The independent prober of the benches (`_load_prober.py`: Python's http.client and gRPC C-core
 * in a process of its own, no JavaScript runtime): it times, in turn until told to stop, what a
 * kubelet and a proxy ask of mesh-discovery — GET /ready, a REST CDS request and a new ADS stream
 * asking for CDS — so that the bench's own busy event loop or garbage collection is not counted as
 * the server's.
 * @module
 */

import { SYSTEM_PYTHON } from "../tests/harness/xds_client.ts";

/** The kinds of probe, each timed in every round. */
export type ProbeKind = "ready" | "rest" | "ads";

/** What the prober saw between warm and stop. */
export interface ProbeSummary {
  /** The slowest probe of each kind, ms (a failed probe counts with its time). */
  slowest: Record<ProbeKind, number>;
  /** Probes made of each kind. */
  counts: Record<ProbeKind, number>;
  /** One `<kind>: <error>` line per failed probe ("" when none failed). */
  errors: string;
  /** Every probe's time of each kind, ms, in the order they were made. */
  times: Record<ProbeKind, number[]>;
}

/** Where and how to probe. */
export interface ProberOptions {
  /** The proxy ID of the REST and ADS requests. */
  node: string;
  /** The pause between two rounds of probes, ms. */
  pauseMs: number;
  /** A file that gets every probe after warm-up as `<epoch ms at its start> <kind> <ms>`, or "". */
  log?: string;
}

/** A running prober: `end()` stops it and tells what it saw; `stop()` also fails on failures. */
export interface CoreProber {
  end(): Promise<ProbeSummary>;
  /** The slowest probe of each kind; throws when a probe failed or a kind was never probed. */
  stop(): Promise<Record<ProbeKind, number>>;
}

/** Starts the prober against a discovery's `http` and `grpc` addresses; resolves once it is warm. */
export async function startCoreProber(
  d: { http: string; grpc: string },
  o: ProberOptions,
): Promise<CoreProber> {
  // every probe's time goes to a file: the caller's (appended to: only what follows its present
  // end is this prober's), or one of ours removed at the end
  const log = o.log || await Deno.makeTempFile({ prefix: "mesh-probes-" });
  const logStart = o.log ? await Deno.stat(log).then((s) => s.size, () => 0) : 0;
  const child = new Deno.Command(SYSTEM_PYTHON, {
    args: [
      new URL("./_load_prober.py", import.meta.url).pathname,
      d.http,
      d.grpc,
      o.node,
      String(o.pauseMs),
      log,
    ],
    env: { PYTHONUNBUFFERED: "1" },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let errors = "";
  const readErr = (async () => {
    for await (const t of child.stderr.pipeThrough(new TextDecoderStream())) errors += t;
  })();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).values();
  let buffered = "";
  const nextLine = async (): Promise<string> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.next();
      if (done) throw new Error(`the prober ended: ${JSON.stringify(await child.status)}`);
      buffered += value;
    }
    const nl = buffered.indexOf("\n");
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    return line;
  };
  try {
    const warm = await nextLine();
    if (warm !== "warm") throw new Error(`the prober said ${JSON.stringify(warm)}`);
  } catch (e) {
    child.kill();
    await child.status;
    await readErr;
    if (!o.log) await Deno.remove(log).catch(() => {});
    throw new Error(`${(e as Error).message}\n${errors}`);
  }
  const end = async (): Promise<ProbeSummary> => {
    const stdin = child.stdin.getWriter();
    await stdin.write(new TextEncoder().encode("stop\n"));
    await stdin.close();
    const { slowest, counts } = JSON.parse(await nextLine());
    await lines.return?.();
    await child.status;
    await readErr;
    const times: Record<ProbeKind, number[]> = { ready: [], rest: [], ads: [] };
    const ours = new TextDecoder().decode((await Deno.readFile(log)).subarray(logStart));
    for (const line of ours.split("\n")) {
      const [, kind, ms] = line.split(" ");
      if (kind in times) times[kind as ProbeKind].push(Number(ms));
    }
    if (!o.log) await Deno.remove(log).catch(() => {});
    return { slowest, counts, errors, times };
  };
  return {
    end,
    async stop() {
      const r = await end();
      if (r.errors) throw new Error(`the prober's probes failed:\n${r.errors}`);
      for (const [kind, n] of Object.entries(r.counts)) {
        if (n === 0) throw new Error(`the prober made no ${kind} probe during the load`);
      }
      return r.slowest;
    },
  };
}

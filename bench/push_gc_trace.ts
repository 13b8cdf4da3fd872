/**
 * Reads a push trace (`MESH_XDS_TRACE=<file>`, `lib/xds/server/push_trace.ts`) and the server's
 * `--trace-gc` output (`MESH_BENCH_SERVER_LOG=<file>` of `bench/xds.ts` with
 * `--server-v8-flags=--trace-gc`) of one `deno task bench xds --workers 2 ...` run, and prints for
 * each endpoint push of the W = 2 server: its push time, and per worker the external memory
 * (ArrayBuffer backing stores outside the V8 heap) allocated during the push and between the push
 * and the next one (the proxies' ACK wave, a `/metrics` scrape), and the worker's Mark-Compacts
 * whose marking overlapped the push. Then per worker: its Mark-Compacts and, when the server ran
 * with `--trace-incremental-marking` too, what started each marking ("external memory pressure":
 * external memory grew by V8's soft limit, 64 MiB, since the last one). External memory is sampled
 * in steps of 4 MB (`EXTERNAL_STEP`): less than that reads as 0.
 *
 * `deno run -A bench/push_gc_trace.ts <trace file> <server log> [--pushes N]` (the last N endpoint
 * pushes: the paused ones; default 9).
 * @module
 */

import { parseArgs } from "node:util";
import { helpIfAsked } from "./_help.ts";

interface Sample {
  at: number;
  ext: number;
}
interface Gc {
  /** Epoch ms of the end of the GC and of the start of its marking. */
  end: number;
  start: number;
  line: string;
}
interface Worker {
  origin: number;
  samples: Sample[];
  recv: number[];
  done: number[];
  gcs: Gc[];
  /** `--trace-incremental-marking`'s start reasons, counted. */
  starts: Map<string, number>;
}

function main(): void {
  const { positionals, values } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: { pushes: { type: "string" } },
  });
  if (positionals.length !== 2) {
    console.error("usage: push_gc_trace.ts <trace file> <server log> [--pushes N]");
    Deno.exit(2);
  }
  const last = Number(values.pushes ?? 9);
  const lines = Deno.readTextFileSync(positionals[0]).trim().split("\n")
    .map((l) => l.split(" ")).filter((p) => p.length >= 3)
    .sort((a, b) => Number(a[0]) - Number(b[0]));
  const workers = new Map<string, Worker>();
  const pushes: { send: number; ms: number }[] = [];
  let pending = 0;
  for (const p of lines) {
    const at = Number(p[0]), who = p[1], ev = p.slice(2).join(" ");
    if (who === "control") {
      if (ev.startsWith("push send eds=1")) pending = at;
      if (ev.startsWith("push done") && pending) {
        pushes.push({ send: pending, ms: parseFloat(p[4]) });
        pending = 0;
      }
      continue;
    }
    let w = workers.get(who);
    if (!w) {
      workers.set(
        who,
        w = { origin: 0, samples: [], recv: [], done: [], gcs: [], starts: new Map() },
      );
    }
    if (ev.startsWith("origin ")) w.origin = Number(p[3]);
    const m = /ext[= ]([\d.]+)/.exec(ev);
    if (m) w.samples.push({ at, ext: Number(m[1]) });
    if (ev.startsWith("push recv")) w.recv.push(at);
    if (ev.startsWith("push done")) w.done.push(at);
  }
  const names = [...workers.keys()].sort();
  assignGcs(Deno.readTextFileSync(positionals[1]), names.map((n) => workers.get(n)!));

  const chosen = pushes.slice(-last);
  console.log(
    `push time | per worker: external MB allocated during the push / until the next push; ` +
      `Mark-Compact marking overlapping the push`,
  );
  for (const push of chosen) {
    const end = push.send + push.ms;
    const cells = names.map((n) => {
      const w = workers.get(n)!;
      const recv = w.recv.find((t) => t >= push.send - 1) ?? push.send;
      const done = w.done.find((t) => t >= recv) ?? end;
      const next = w.recv.find((t) => t > done + 1) ?? Infinity;
      const marking = w.gcs.filter((g) => g.start < end && g.end > push.send);
      const mark = marking.length
        ? marking.map((g) =>
          `marking ${Math.round(Math.min(g.end, end) - Math.max(g.start, push.send))} ms`
        ).join(", ")
        : "no marking";
      return `${n} +${allocated(w.samples, recv, done).toFixed(0)} / +${
        allocated(w.samples, done, next).toFixed(0)
      } MB, ${mark}`;
    });
    console.log(`${push.ms.toFixed(0)} ms | ${cells.join(" | ")}`);
  }
  for (const n of names) {
    const w = workers.get(n)!;
    const why = [...w.starts].map(([k, v]) => `${v} ${k}`).join(", ");
    console.log(
      `${n}: ${w.gcs.length} Mark-Compacts; markings started by: ${
        why || "(run the server with --trace-incremental-marking to see)"
      }`,
    );
  }
}

/** External MB allocated in [from, to): the rise, plus what GCs freed on the way. */
function allocated(samples: Sample[], from: number, to: number): number {
  let prev = extAt(samples, from), sum = 0;
  for (const s of samples) {
    if (s.at <= from || s.at >= to) continue;
    if (s.ext > prev) sum += s.ext - prev;
    prev = s.ext;
  }
  return sum;
}

/** The external MB last sampled at or before `at`. */
function extAt(samples: Sample[], at: number): number {
  let v = samples[0]?.ext ?? 0;
  for (const s of samples) {
    if (s.at > at) break;
    v = s.ext;
  }
  return v;
}

/**
 * Gives each worker its isolate's Mark-Compacts: the `--trace-gc` lines of the server process with
 * the most isolates, the isolate matched to the worker whose external-memory drops its GCs explain
 * best (times are ms from the isolate's start, about its time origin).
 */
function assignGcs(log: string, ws: Worker[]): void {
  const byIsolate = new Map<string, { ms: number; marking: number; line: string }[]>();
  const starts = new Map<string, Map<string, number>>();
  for (const l of log.split("\n")) {
    const s = /^\[(\d+):(0x[0-9a-f]+):\d+\].*\[IncrementalMarking\] Start \(([^)]+)\)/.exec(l);
    if (s) {
      const k = `${s[1]}:${s[2]}`;
      if (!starts.has(k)) starts.set(k, new Map());
      starts.get(k)!.set(s[3], (starts.get(k)!.get(s[3]) ?? 0) + 1);
    }
    const m = /^\[(\d+):(0x[0-9a-f]+)\]\s+(\d+) ms: (.*)$/.exec(l);
    if (!m || !m[4].includes("Mark-Compact")) continue;
    const k = `${m[1]}:${m[2]}`;
    const wall = /walltime since start of marking (\d+) ms/.exec(m[4]);
    if (!byIsolate.has(k)) byIsolate.set(k, []);
    byIsolate.get(k)!.push({ ms: Number(m[3]), marking: wall ? Number(wall[1]) : 0, line: m[4] });
  }
  const pids = new Map<string, number>();
  for (const k of byIsolate.keys()) {
    const pid = k.split(":")[0];
    pids.set(pid, (pids.get(pid) ?? 0) + 1);
  }
  const pid = [...pids].sort((a, b) => b[1] - a[1])[0]?.[0];
  const isolates = [...byIsolate.keys()].filter((k) => k.startsWith(`${pid}:`));
  for (const w of ws) {
    let best: string | undefined, score = -1;
    for (const k of isolates) {
      let s = 0;
      for (const g of byIsolate.get(k)!) {
        const end = w.origin + g.ms;
        if (
          w.samples.some((x, i) => i && Math.abs(x.at - end) < 30 && x.ext < w.samples[i - 1].ext)
        ) s++;
      }
      if (s > score) [best, score] = [k, s];
    }
    if (!best) continue;
    isolates.splice(isolates.indexOf(best), 1);
    w.starts = starts.get(best) ?? new Map();
    w.gcs = byIsolate.get(best)!.map((g) => ({
      end: w.origin + g.ms,
      start: w.origin + g.ms - g.marking,
      line: g.line,
    }));
  }
}

if (import.meta.main) {
  await helpIfAsked(import.meta.url);
  await main();
}

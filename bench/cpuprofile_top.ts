/**
 * Summarizes V8 profiles (several are merged): CPU profiles (`.cpuprofile`, the functions with the
 * most self time) or sampling heap profiles (`.heapprofile`, from `/debug/pprof/allocs` or
 * `--profile-allocs`: the functions that allocated the most bytes), each function with its most
 * frequent callers. `deno run -A bench/cpuprofile_top.ts [--top N] [--depth D] <files...>`
 * @module
 */

import { parseArgs } from "node:util";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
/** A V8 CPU profile (`Profiler.stop`). */
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}
/** A node of a V8 sampling heap profile (`HeapProfiler.stopSampling`). */
interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

const USAGE = `Usage: deno run -A bench/cpuprofile_top.ts [--top N] [--depth D] <files...>

Merges V8 profiles and prints the functions with the most self time (CPU profiles, .cpuprofile)
or the most bytes allocated (sampling heap profiles, .heapprofile: /debug/pprof/allocs), each with
its two most frequent caller chains of up to D frames.
  --top N    functions to print (default 25)
  --depth D  frames per caller chain (default 4)`;

const label = (f: CallFrame) =>
  `${f.functionName || "(anonymous)"}@${f.url.split("/").pop()}:${f.lineNumber + 1}`;

/** Self weight and caller chains per function, merged over every profile. */
class Tally {
  total = 0;
  readonly self = new Map<string, number>();
  readonly callers = new Map<string, Map<string, number>>();
  add(name: string, chain: string[], weight: number): void {
    this.total += weight;
    this.self.set(name, (this.self.get(name) ?? 0) + weight);
    const key = chain.join(" < ");
    const m = this.callers.get(name) ?? new Map<string, number>();
    m.set(key, (m.get(key) ?? 0) + weight);
    this.callers.set(name, m);
  }
}

function addCpu(t: Tally, p: Profile, depth: number): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  for (const id of p.samples) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === "(idle)" || n.callFrame.functionName === "(program)") {
      continue;
    }
    const chain: string[] = [];
    for (let x = parent.get(id); x !== undefined && chain.length < depth; x = parent.get(x)) {
      chain.push(label(byId.get(x)!.callFrame));
    }
    t.add(label(n.callFrame), chain, 1);
  }
}

function addHeap(t: Tally, head: HeapNode, depth: number): void {
  const walk = (n: HeapNode, path: string[]) => {
    const name = label(n.callFrame);
    if (n.selfSize > 0) t.add(name, path.slice(-depth).reverse(), n.selfSize);
    path.push(name);
    for (const c of n.children) walk(c, path);
    path.pop();
  };
  walk(head, []);
}

/** Prints the top functions of the merged profiles and their callers. */
export async function main(args: string[] = Deno.args): Promise<void> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    return;
  }
  const { values, positionals } = parseArgs({
    args,
    options: { top: { type: "string", default: "25" }, depth: { type: "string", default: "4" } },
    allowPositionals: true,
  });
  const top = Number(values.top), depth = Number(values.depth);
  const cpu = new Tally(), heap = new Tally();
  for (const file of positionals) {
    const p = JSON.parse(await Deno.readTextFile(file));
    if (p.head) addHeap(heap, p.head as HeapNode, depth);
    else addCpu(cpu, p as Profile, depth);
  }
  const print = (t: Tally) => {
    for (const [name, n] of [...t.self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`${(100 * n / t.total).toFixed(1).padStart(5)}% ${name}`);
      const cs = [...t.callers.get(name)!].sort((a, b) => b[1] - a[1]).slice(0, 2);
      for (const [c, k] of cs) console.log(`        ${(100 * k / t.total).toFixed(1)}% < ${c}`);
    }
  };
  if (cpu.total > 0) {
    console.log(`${cpu.total} busy samples in ${positionals.length} profile(s)`);
    print(cpu);
  }
  if (heap.total > 0) {
    console.log(`${(heap.total / 1e6).toFixed(1)} MB allocated (sampled) in the profile(s)`);
    print(heap);
  }
}

if (import.meta.main) await main();

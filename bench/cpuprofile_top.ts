/**
 * Summarizes V8 `.cpuprofile` files (several are merged): the functions with the most self time,
 * each with its most frequent callers. `deno run -A bench/cpuprofile_top.ts [--top N] <files...>`
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
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

const label = (f: CallFrame) =>
  `${f.functionName || "(anonymous)"}@${f.url.split("/").pop()}:${f.lineNumber + 1}`;

/** Prints the top self-time functions of the merged profiles and their callers. */
export async function main(args: string[] = Deno.args): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    options: { top: { type: "string", default: "25" }, depth: { type: "string", default: "4" } },
    allowPositionals: true,
  });
  const top = Number(values.top), depth = Number(values.depth);
  const self = new Map<string, number>();
  const callers = new Map<string, Map<string, number>>();
  let total = 0;
  for (const file of positionals) {
    const p = JSON.parse(await Deno.readTextFile(file)) as Profile;
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    for (const id of p.samples) {
      const n = byId.get(id)!;
      const name = label(n.callFrame);
      if (n.callFrame.functionName === "(idle)" || n.callFrame.functionName === "(program)") {
        continue;
      }
      total++;
      self.set(name, (self.get(name) ?? 0) + 1);
      const chain: string[] = [];
      for (let x = parent.get(id); x !== undefined && chain.length < depth; x = parent.get(x)) {
        chain.push(label(byId.get(x)!.callFrame));
      }
      const key = chain.join(" < ");
      const m = callers.get(name) ?? new Map<string, number>();
      m.set(key, (m.get(key) ?? 0) + 1);
      callers.set(name, m);
    }
  }
  console.log(`${total} busy samples in ${positionals.length} profile(s)`);
  for (const [name, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${(100 * n / total).toFixed(1).padStart(5)}% ${name}`);
    const cs = [...callers.get(name)!].sort((a, b) => b[1] - a[1]).slice(0, 2);
    for (const [c, k] of cs) console.log(`        ${(100 * k / total).toFixed(1)}% < ${c}`);
  }
}

if (import.meta.main) await main();

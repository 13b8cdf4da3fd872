/**
 * Layout rules of the project (STYLE.md): dependencies point one way (cli → servers → lib), no
 * server imports another, third-party code comes only through the pinned files in lib/deps/,
 * and their versions match deno.json.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";

const ROOT = new URL("..", import.meta.url).pathname;
const IMPORT_RE =
  /(?:import|export)\s[^;]*?[\s}*]from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|^import\s+["']([^"']+)["']/gm;

async function* sourceFiles(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    if (e.name === "node_modules" || e.name.startsWith(".")) continue;
    const p = join(dir, e.name);
    if (e.isDirectory) yield* sourceFiles(p);
    else if (e.name.endsWith(".ts")) yield p;
  }
}

async function imports(): Promise<{ file: string; spec: string }[]> {
  const out: { file: string; spec: string }[] = [];
  for (const top of ["cli", "servers", "lib", "tests", "bench", "mod.ts", "compile.ts"]) {
    const path = join(ROOT, top);
    const info = await Deno.stat(path).catch(() => undefined);
    if (!info) continue;
    const files = info.isFile ? [path] : await Array.fromAsync(sourceFiles(path));
    for (const file of files) {
      const text = await Deno.readTextFile(file);
      for (const m of text.matchAll(IMPORT_RE)) {
        out.push({ file: relative(ROOT, file), spec: m[1] ?? m[2] ?? m[3] });
      }
    }
  }
  return out;
}

function area(path: string): string {
  return path.split("/")[0];
}

Deno.test("lib never imports servers or cli, and servers never import cli or each other", async () => {
  const bad: string[] = [];
  for (const { file, spec } of await imports()) {
    if (!spec.startsWith(".")) continue;
    const target = relative(ROOT, join(ROOT, file, "..", spec));
    const from = area(file);
    const to = area(target);
    if (from === "lib" && (to === "servers" || to === "cli")) bad.push(`${file} → ${target}`);
    if (from === "servers") {
      if (to === "cli") bad.push(`${file} → ${target}`);
      if (to === "servers" && file.split("/")[1] !== target.split("/")[1]) {
        bad.push(`${file} → ${target}`);
      }
    }
  }
  assert.deepEqual(bad, []);
});

Deno.test("third-party modules are imported only through lib/deps, with deno.json's versions", async () => {
  const bad: string[] = [];
  const pinned = new Map<string, string>();
  for (const { file, spec } of await imports()) {
    if (spec.startsWith(".") || spec.startsWith("node:")) continue;
    if (!file.startsWith("lib/deps/")) {
      bad.push(`${file}: ${spec}`);
      continue;
    }
    const m = spec.match(/^npm:(@?[^@]+)@(.+)$/);
    assert.ok(m, `${file}: ${spec} is not an exact npm: specifier`);
    pinned.set(m[1], m[2]);
  }
  assert.deepEqual(
    bad,
    [],
    "bare or remote imports outside lib/deps (URL runs cannot resolve them)",
  );
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  for (const [name, version] of pinned) {
    assert.equal(config.imports[name], `npm:${name}@${version}`, `deno.json imports["${name}"]`);
  }
});

/** Value imports (static, not `import type` / all-`type` braces) among lib/, servers/, cli/. */
async function valueImportGraph(): Promise<Map<string, Set<string>>> {
  const re =
    /^\s*(?:import|export)\s+(type\s+)?([^;]*?)\s*from\s*["']([^"']+)["']|^\s*import\s+["']([^"']+)["']/gm;
  const graph = new Map<string, Set<string>>();
  for (const top of ["lib", "servers", "cli"]) {
    for await (const file of sourceFiles(join(ROOT, top))) {
      if (file.endsWith("_test.ts")) continue;
      const edges = new Set<string>();
      graph.set(relative(ROOT, file), edges);
      for (const m of (await Deno.readTextFile(file)).matchAll(re)) {
        const spec = m[3] ?? m[4];
        if (!spec.startsWith(".") || m[1]) continue;
        const names = m[2]?.match(/^\{([^}]*)\}$/s)?.[1].split(",").map((s) => s.trim());
        if (names && names.filter(Boolean).every((n) => n.startsWith("type "))) continue;
        edges.add(relative(ROOT, join(file, "..", spec)));
      }
    }
  }
  return graph;
}

/** Strongly connected components of more than one module (Tarjan), each sorted. */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || graph.get(v)!.has(v)) out.push(scc.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

Deno.test("cycles() finds a value-import cycle and ignores an acyclic graph", () => {
  const g = (edges: [string, string][]) => {
    const m = new Map<string, Set<string>>();
    for (const [a, b] of edges) {
      if (!m.has(a)) m.set(a, new Set());
      if (!m.has(b)) m.set(b, new Set());
      m.get(a)!.add(b);
    }
    return m;
  };
  assert.deepEqual(cycles(g([["a", "b"], ["b", "c"], ["c", "a"], ["c", "d"]])), [["a", "b", "c"]]);
  assert.deepEqual(cycles(g([["a", "b"], ["b", "c"], ["a", "c"]])), []);
});

Deno.test("modules in lib, servers and cli have no value-import cycle (import type aside)", async () => {
  assert.deepEqual(cycles(await valueImportGraph()), []);
});

Deno.test("docs/ARCHITECTURE.md's 'Where things are' names existing paths and every lib area, server and program", async () => {
  const text = await Deno.readTextFile(join(ROOT, "docs/ARCHITECTURE.md"));
  const section = text.split("## Where things are")[1]?.split(/\n## /)[0] ?? "";
  const rows = section.split("\n").filter((l) => l.startsWith("|"));
  assert.ok(rows.length > 10, "the 'Where things are' table is missing");
  const paths = rows.flatMap((r) => [...r.split("|")[2].matchAll(/`([^`]+)`/g)].map((m) => m[1]));
  const missing: string[] = [];
  for (const p of paths) {
    if (!p.includes("<")) {
      if (!(await Deno.stat(join(ROOT, p)).catch(() => undefined))) missing.push(p);
    }
  }
  assert.deepEqual(missing, [], "paths in the table that do not exist");
  const named = (dir: string) => paths.some((p) => p === dir || p.startsWith(`${dir}/`));
  const absent: string[] = [];
  for (const top of ["lib", "servers"]) {
    for await (const e of Deno.readDir(join(ROOT, top))) {
      if (e.isDirectory && !named(`${top}/${e.name}`)) absent.push(`${top}/${e.name}`);
    }
  }
  for await (const e of Deno.readDir(join(ROOT, "cli"))) {
    if (e.isFile && e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) {
      if (!named(`cli/${e.name}`)) absent.push(`cli/${e.name}`);
    }
  }
  assert.deepEqual(absent, [], "areas and programs the table does not name");
});

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

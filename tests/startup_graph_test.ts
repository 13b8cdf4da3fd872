/**
 * What `deno run cli/<program>.ts version` (or `--help`) resolves before it runs: the module
 * graph of the entry file, static imports and literal `import()` alike (Deno prefetches a
 * literal dynamic import even when the branch is never taken: ~130-250 ms for the Kubernetes
 * client alone, measured on the 2-core box). Commands are loaded through computed specifiers
 * (`lazyCommand` in cli/_shared/lazy.ts), so the start-up graph holds only the command tree and
 * light packages; a heavy package reached here costs every `version` and `--help`.
 */

import assert from "node:assert/strict";
import { PROGRAMS } from "../compile.ts";

/** npm packages every program's start-up may resolve (argument parsing, logging, YAML). */
const LIGHT = new Set([
  "@commander-js/extra-typings",
  "commander",
  "@logtape/logtape",
  "@logtape/file",
]);

interface InfoModule {
  specifier: string;
  kind?: string;
  dependencies?: { code?: { specifier: string } }[];
}

/** The npm packages reachable from `entry` through code (not type-only) imports. */
export async function startupPackages(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: InfoModule[];
    redirects: Record<string, string>;
  };
  const byName = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const packages = new Set<string>();
  const stack = [...info.roots];
  while (stack.length > 0) {
    let spec = stack.pop()!;
    spec = info.redirects[spec] ?? spec;
    if (seen.has(spec)) continue;
    seen.add(spec);
    if (spec.startsWith("npm:")) {
      const name = spec.replace(/^npm:\/?/, "");
      packages.add(
        name.startsWith("@") ? name.split("@").slice(0, 2).join("@") : name.split("@")[0],
      );
      continue;
    }
    for (const d of byName.get(spec)?.dependencies ?? []) if (d.code) stack.push(d.code.specifier);
  }
  return [...packages].sort();
}

for (const program of PROGRAMS) {
  Deno.test(`cli/${program}.ts resolves no heavy package at start-up (version, --help)`, async () => {
    const heavy = (await startupPackages(new URL(`../cli/${program}.ts`, import.meta.url).pathname))
      .filter((p) => !LIGHT.has(p));
    assert.deepEqual(
      heavy,
      [],
      `cli/${program}.ts reaches ${heavy.join(", ")} before any command runs`,
    );
  });
}

/**
 * Benchmark runner: `deno task bench [<name>] [-- flags]`.
 *
 * With a bench name as the first argument (`deno task bench xds --proxies 2000`) only that bench
 * runs, with the remaining arguments. Without one, every bench runs in turn with all arguments.
 * Each bench module exports `main(args)`; add new ones to {@link BENCHES}.
 * @module
 */

import { moduleDescription } from "./_help.ts";

/** Bench modules by name, loaded on demand. */
export const BENCHES: Record<string, () => Promise<{ main(args?: string[]): Promise<void> }>> = {
  agent: () => import("./agent.ts"),
  config_load: () => import("./config_load.ts"),
  ca: () => import("./ca.ts"),
  inject: () => import("./inject.ts"),
  h2_attack: () => import("./h2_attack.ts"),
  generate: () => import("./generate.ts"),
  meshctl: () => import("./meshctl.ts"),
  protojson: () => import("./protojson.ts"),
  policy: () => import("./policy.ts"),
  xds: () => import("./xds.ts"),
};

/** `deno task bench --help`: the benches, how to run one, and where each one's flags are. */
export function helpText(): string {
  return [
    "Usage: deno task bench [<name>] [flags]",
    "",
    "Runs every benchmark in turn, or only <name> with the flags after it. Benchmarks are CPU-heavy:",
    "run them on a quiet machine. `deno task bench <name> --help` describes one (without running it).",
    "",
    "Benches:",
    ...Object.keys(BENCHES).map((n) => `  ${n}`),
    "",
  ].join("\n");
}

/** The module comment of `bench/<name>.ts` as plain text (its description and flags). */
export async function benchDescription(name: string): Promise<string> {
  const body = await moduleDescription(new URL(`./${name}.ts`, import.meta.url));
  return `bench ${name}: ${body || `see bench/${name}.ts`}\n\nRun: deno task bench ${name} [flags]`;
}

if (import.meta.main) {
  const [first, ...rest] = Deno.args;
  if (first === "--help" || first === "-h" || first === "help") {
    // answer without loading or starting anything
    console.log(helpText());
    Deno.exit(0);
  }
  if (first in BENCHES && rest.some((a) => a === "--help" || a === "-h")) {
    // a bench's own description (its module comment), without running it
    console.log(await benchDescription(first));
    Deno.exit(0);
  }
  if (first !== undefined && !first.startsWith("-") && !(first in BENCHES)) {
    console.error(
      `Error: unknown bench ${JSON.stringify(first)} (benches: ${Object.keys(BENCHES).join(", ")})`,
    );
    Deno.exit(2);
  }
  const only = first !== undefined && first in BENCHES ? first : undefined;
  for (const [name, load] of Object.entries(BENCHES)) {
    if (only && name !== only) continue;
    console.log(`# bench ${name}`);
    await (await load()).main(only ? rest : Deno.args);
  }
}

/**
 * Benchmark runner: `deno task bench [<name>] [-- flags]`.
 *
 * With a bench name as the first argument (`deno task bench xds --proxies 2000`) only that bench
 * runs, with the remaining arguments. Without one, every bench runs in turn with all arguments.
 * Each bench module exports `main(args)`; add new ones to {@link BENCHES}.
 * @module
 */

/** Bench modules by name, loaded on demand. */
export const BENCHES: Record<string, () => Promise<{ main(args?: string[]): Promise<void> }>> = {
  agent: () => import("./agent.ts"),
  ca: () => import("./ca.ts"),
  inject: () => import("./inject.ts"),
  meshctl: () => import("./meshctl.ts"),
  xds: () => import("./xds.ts"),
};

if (import.meta.main) {
  const [first, ...rest] = Deno.args;
  const only = first !== undefined && first in BENCHES ? first : undefined;
  for (const [name, load] of Object.entries(BENCHES)) {
    if (only && name !== only) continue;
    console.log(`# bench ${name}`);
    await (await load()).main(only ? rest : Deno.args);
  }
}

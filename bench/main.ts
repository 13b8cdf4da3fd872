/**
 * Runs every benchmark: each `bench/*.ts` module (except this one, `_*.ts` helpers and tests)
 * that exports `main()`, in name order. `deno task bench` (extra arguments are passed to each).
 * @module
 */

const here = new URL("./", import.meta.url);

/** The benchmark modules, sorted by file name. */
export async function benchModules(): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(here)) {
    if (!e.isFile || !e.name.endsWith(".ts")) continue;
    if (e.name === "main.ts" || e.name.startsWith("_") || e.name.endsWith("_test.ts")) continue;
    names.push(e.name);
  }
  return names.sort();
}

/** Runs each benchmark module's `main(args)` in turn; a failing one is reported, the rest run. */
export async function main(args: string[] = []): Promise<number> {
  let failed = 0;
  for (const name of await benchModules()) {
    const mod = await import(new URL(name, here).href);
    if (typeof mod.main !== "function") continue;
    console.log(`== bench/${name}`);
    try {
      await mod.main(args);
    } catch (err) {
      failed++;
      console.error(`bench/${name} failed: ${(err as Error).stack ?? err}`);
    }
  }
  return failed > 0 ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));

/**
 * Preloaded (`deno test --preload`) into every test module's isolate by the Deno test runner of
 * `deno task mutate` (`tests/mutate_runner.ts`); does nothing in an ordinary test run.
 *
 * With `MESH_MUTATE_COVERAGE_DIR` set (the dry run): records which mutants the test file reached.
 * Stryker's instrumented code counts each mutant it reaches in
 * `globalThis.__stryker__.mutantCoverage`: in `static` while `currentTestId` is unset, else in
 * `perTest[currentTestId]`. This module wraps `Deno.test` so that `currentTestId` is the test
 * file's path once its first test starts: what runs at module load stays static (Stryker runs those
 * mutants against every test file), what runs in a test is the file's own. At unload it writes
 * `{file, ms, static, perTest}` to a file of its own in that directory (`ms`: load to unload).
 *
 * With `MESH_MUTATE_HIT_LIMIT` set (a mutant run): arms Stryker's hit counter, so a mutant reached
 * more than that many times (an endless loop) throws `Stryker: Hit count limit reached`.
 * @module
 */

interface StrykerNamespace {
  currentTestId?: string;
  hitCount?: number;
  hitLimit?: number;
  mutantCoverage?: {
    static: Record<string, number>;
    perTest: Record<string, Record<string, number>>;
  };
}

const g = globalThis as unknown as { __stryker__?: StrykerNamespace };
const ns: StrykerNamespace = g.__stryker__ ??= {};
const dir = Deno.env.get("MESH_MUTATE_COVERAGE_DIR");
const hitLimit = Number(Deno.env.get("MESH_MUTATE_HIT_LIMIT") ?? "");

if (hitLimit > 0) {
  ns.hitCount = 0;
  ns.hitLimit = hitLimit;
}

if (dir) {
  const started = performance.now();
  const main = Deno.mainModule;
  const cwd = `file://${Deno.cwd()}/`;
  const file = main.startsWith(cwd) ? decodeURIComponent(main.slice(cwd.length)) : main;
  const test = Deno.test;
  // deno-lint-ignore no-explicit-any
  type AnyFn = (...args: any[]) => unknown;
  const own = (fn: AnyFn): AnyFn =>
    function (this: unknown, ...args: unknown[]) {
      ns.currentTestId = file;
      return fn.apply(this, args);
    };
  const wrapped = function (this: unknown, ...args: unknown[]) {
    const i = args.findIndex((a) => typeof a === "function");
    if (i >= 0) args[i] = own(args[i] as AnyFn);
    else if (
      args[0] && typeof args[0] === "object" &&
      typeof (args[0] as { fn?: unknown }).fn === "function"
    ) {
      const options = args[0] as { fn: AnyFn };
      args[0] = { ...options, fn: own(options.fn) };
    }
    return (test as AnyFn).apply(this, args);
  };
  Object.assign(wrapped, test);
  (Deno as { test: unknown }).test = wrapped;
  addEventListener("unload", () => {
    const cov = ns.mutantCoverage ?? { static: {}, perTest: {} };
    const record = {
      file,
      ms: Math.round(performance.now() - started),
      static: cov.static,
      perTest: cov.perTest[file] ?? {},
    };
    const name = `${dir}/${encodeURIComponent(file)}.json`;
    Deno.writeTextFileSync(`${name}.tmp`, JSON.stringify(record));
    Deno.renameSync(`${name}.tmp`, name);
  });
}

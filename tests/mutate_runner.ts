/**
 * A StrykerJS test runner plugin for `deno test` (`testRunner: "deno"`), loaded by
 * `deno task mutate` (`tests/mutate.ts`) through Stryker's `plugins` option. Options come from the
 * `denoRunner` key of the Stryker config ({@link DenoRunnerOptions}).
 *
 * A "test" for Stryker is one test FILE. The dry run runs all of them in one `deno test`
 * (each file has its own isolate) with `tests/mutate_preload.ts` preloaded, which writes per file
 * the mutants reached while its tests ran (`perTest`), those reached at module load (`static`) and
 * its time. With `coverageAnalysis: "perTest"` Stryker then reports the mutants no file reached as
 * NoCoverage without running anything, runs each covered mutant against the files that reached it
 * only (the static ones against every file), and sizes each mutant's timeout from those files'
 * times. A mutant run is `nice -n 10 deno test -A --no-check --quiet --fail-fast <files>` with
 * `__STRYKER_ACTIVE_MUTANT__` set (the instrumented code reads it at load): killed when it fails,
 * survived when it passes, a timeout when it runs out of time or a mutant is reached 100 times more
 * often than in the dry run (an endless loop).
 *
 * Stryker runs this module under Deno in its own worker process, in the sandbox directory.
 * @module
 */

/** The options of the `denoRunner` key of the Stryker config. */
export interface DenoRunnerOptions {
  /** The test files, relative to the repository (and so to the sandbox). */
  tests: string[];
  /** The preload module (`tests/mutate_preload.ts`), relative to the repository. */
  preload: string;
  /** `deno` executable (default: the one running this). */
  deno?: string;
  /**
   * A file to append one JSON line to per run: `{"dryRunMs"}` for the dry run, then
   * `{"ms", "files", "status"}` per mutant (read by `tests/mutate.ts` for its summary).
   */
  statsFile?: string;
}

// The few shapes of @stryker-mutator/api used here (its types are not a dependency of the repo).
interface Logger {
  debug(message: string, ...args: unknown[]): void;
  info(message: string, ...args: unknown[]): void;
  warn(message: string, ...args: unknown[]): void;
}
type CoverageData = Record<string, number>;
interface MutantCoverage {
  static: CoverageData;
  perTest: Record<string, CoverageData>;
}
interface TestResult {
  id: string;
  name: string;
  timeSpentMs: number;
  fileName: string;
  status: "Success";
}
type DryRunResult =
  | { status: "complete"; tests: TestResult[]; mutantCoverage?: MutantCoverage }
  | { status: "error"; errorMessage: string }
  | { status: "timeout"; reason?: string };
type MutantRunResult =
  | { status: "killed"; killedBy: string[]; failureMessage: string; nrOfTests: number }
  | { status: "survived"; nrOfTests: number }
  | { status: "timeout"; reason?: string }
  | { status: "error"; errorMessage: string };
interface DryRunOptions {
  timeout: number;
  disableBail: boolean;
  coverageAnalysis: "off" | "all" | "perTest";
}
interface MutantRunOptions {
  timeout: number;
  disableBail: boolean;
  testFilter?: string[];
  hitLimit?: number;
  activeMutant: { id: string };
}

/** The output kept of a test run (its end: where deno test prints the failures). */
const KEEP_OUTPUT = 8000;

/** The result of one `deno test` process. */
export interface DenoTestRun {
  /** Exit code; undefined when it was killed at the timeout. */
  code?: number;
  /** The last {@link KEEP_OUTPUT} characters of stdout and stderr together. */
  output: string;
  /** Wall time. */
  ms: number;
}

/**
 * Runs `nice -n 10 deno test -A --no-check --quiet [extra] <files>` in `cwd`, in a process group of
 * its own (killed as a whole at `timeoutMs`: tests that start servers leave nothing behind).
 */
export async function denoTest(
  deno: string,
  cwd: string,
  files: string[],
  { extra = [], env = {}, timeoutMs }: {
    extra?: string[];
    env?: Record<string, string>;
    timeoutMs: number;
  },
): Promise<DenoTestRun> {
  const started = performance.now();
  const child = new Deno.Command("setsid", {
    args: ["nice", "-n", "10", deno, "test", "-A", "--no-check", "--quiet", ...extra, ...files],
    cwd,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      output = (output + text).slice(-KEEP_OUTPUT);
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch { /* already gone */ }
  }, timeoutMs);
  try {
    const [status] = await Promise.all([child.status, pump(child.stdout), pump(child.stderr)]);
    return { code: timedOut ? undefined : status.code, output, ms: performance.now() - started };
  } finally {
    clearTimeout(timer);
    // Anything the tests started and left running (the group dies with its tests).
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch { /* none left */ }
  }
}

/** The test files named in deno test's failure list (`name => ./path:line:col`). */
export function failedFiles(output: string, files: string[]): string[] {
  const named = new Set(
    [...output.matchAll(/=> \.\/(\S+?):\d+:\d+/g)].map((m) => m[1]),
  );
  const hit = files.filter((f) => named.has(f));
  return hit.length ? hit : files;
}

/** The per-file record written by `tests/mutate_preload.ts`. */
interface FileRecord {
  file: string;
  ms: number;
  static: CoverageData;
  perTest: CoverageData;
}

/** Adds the counts of `from` into `into`. */
function addCounts(into: CoverageData, from: CoverageData): void {
  for (const [id, n] of Object.entries(from)) into[id] = (into[id] ?? 0) + n;
}

/** The Stryker test runner over `deno test`, one test file being one Stryker test. */
export class DenoTestRunner {
  static inject = ["options", "logger"] as const;
  readonly #log: Logger;
  readonly #opts: DenoRunnerOptions;
  readonly #deno: string;
  /** Dry-run time per test file, to run the quickest first (fail-fast kills sooner). */
  #times = new Map<string, number>();

  constructor(options: { denoRunner?: DenoRunnerOptions }, log: Logger) {
    if (!options.denoRunner?.tests?.length) throw new Error("denoRunner.tests: no test files");
    this.#opts = options.denoRunner;
    this.#deno = options.denoRunner.deno ?? Deno.execPath();
    this.#log = log;
  }

  async #stat(record: Record<string, unknown>): Promise<void> {
    if (!this.#opts.statsFile) return;
    await Deno.writeTextFile(this.#opts.statsFile, JSON.stringify(record) + "\n", { append: true });
  }

  capabilities(): { reloadEnvironment: boolean } {
    return { reloadEnvironment: true }; // every run is a new deno process
  }

  async dryRun(options: DryRunOptions): Promise<DryRunResult> {
    const dir = await Deno.makeTempDir({ prefix: "mesh-mutate-cov-" });
    try {
      const files = this.#opts.tests;
      const dryRun = () =>
        denoTest(this.#deno, Deno.cwd(), files, {
          extra: [`--preload=${this.#opts.preload}`],
          env: { MESH_MUTATE_COVERAGE_DIR: dir },
          timeoutMs: options.timeout,
        });
      let run = await dryRun();
      if (run.code !== 0 && run.code !== undefined) {
        // A test that failed under load (a latency bound) would stop everything: once more.
        this.#log.warn(
          "The dry run failed; running it once more (a failure that passes now is a flaky test, " +
            "whose failures will count as kills):\n%s",
          run.output.slice(-3000),
        );
        for await (const e of Deno.readDir(dir)) await Deno.remove(`${dir}/${e.name}`);
        run = await dryRun();
      }
      await this.#stat({ dryRunMs: Math.round(run.ms) });
      if (run.code === undefined) {
        return { status: "timeout", reason: `after ${options.timeout} ms` };
      }
      if (run.code !== 0) {
        return { status: "error", errorMessage: `deno test failed:\n${run.output}` };
      }
      const records = new Map<string, FileRecord>();
      for await (const e of Deno.readDir(dir)) {
        if (!e.name.endsWith(".json")) continue;
        const r = JSON.parse(await Deno.readTextFile(`${dir}/${e.name}`)) as FileRecord;
        records.set(r.file, r);
      }
      const coverage: MutantCoverage = { static: {}, perTest: {} };
      const tests: TestResult[] = files.map((f) => {
        const r = records.get(f);
        if (!r) this.#log.warn("%s: no coverage record (did its module load?)", f);
        const ms = r?.ms ?? run.ms / files.length;
        this.#times.set(f, ms);
        if (r) {
          addCounts(coverage.static, r.static);
          coverage.perTest[f] = { ...r.perTest };
        }
        return { id: f, name: f, fileName: f, timeSpentMs: ms, status: "Success" };
      });
      this.#log.info(
        "Dry run: %s test files in %s ms; %s mutants reached at module load, %s in tests",
        files.length,
        Math.round(run.ms),
        Object.keys(coverage.static).length,
        new Set(Object.values(coverage.perTest).flatMap((c) => Object.keys(c))).size,
      );
      return options.coverageAnalysis === "off"
        ? { status: "complete", tests }
        : { status: "complete", tests, mutantCoverage: coverage };
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }

  async mutantRun(options: MutantRunOptions): Promise<MutantRunResult> {
    const files = [...(options.testFilter ?? this.#opts.tests)]
      .sort((a, b) => (this.#times.get(a) ?? 0) - (this.#times.get(b) ?? 0));
    if (!files.length) return { status: "survived", nrOfTests: 0 };
    const env: Record<string, string> = {
      __STRYKER_ACTIVE_MUTANT__: options.activeMutant.id,
    };
    if (options.hitLimit !== undefined) env.MESH_MUTATE_HIT_LIMIT = String(options.hitLimit);
    // Give up a little before Stryker's own timer, which would restart this worker.
    const timeoutMs = Math.max(options.timeout - 1000, options.timeout * 0.9);
    const run = await denoTest(this.#deno, Deno.cwd(), files, {
      extra: [`--preload=${this.#opts.preload}`, ...(options.disableBail ? [] : ["--fail-fast"])],
      env,
      timeoutMs,
    });
    await this.#stat({ ms: Math.round(run.ms), files: files.length, code: run.code ?? null });
    if (run.code === undefined) {
      return { status: "timeout", reason: `killed after ${Math.round(timeoutMs)} ms` };
    }
    if (run.code === 0) return { status: "survived", nrOfTests: files.length };
    if (run.output.includes("Stryker: Hit count limit reached")) {
      return { status: "timeout", reason: "hit count limit reached (endless loop)" };
    }
    return {
      status: "killed",
      killedBy: failedFiles(run.output, files),
      failureMessage: run.output.slice(-2000),
      nrOfTests: files.length,
    };
  }
}

/** The plugins of this module, as Stryker's plugin loader expects them. */
export const strykerPlugins = [
  { kind: "TestRunner", name: "deno", injectableClass: DenoTestRunner },
];

/** The `denoRunner` option, merged into Stryker's config schema. */
export const strykerValidationSchema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  title: "DenoRunnerOptions",
  type: "object",
  properties: {
    denoRunner: {
      type: "object",
      properties: {
        tests: { type: "array", items: { type: "string" } },
        preload: { type: "string" },
        deno: { type: "string" },
        statsFile: { type: "string" },
      },
      required: ["tests", "preload"],
    },
  },
};

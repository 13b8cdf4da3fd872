/**
 * Mutation testing of one area: `deno task mutate <path>[:<from>-<to>] ... [--tests <file>...]`.
 *
 * Runs StrykerJS (`@stryker-mutator/core`, run by Deno from the npm registry) with our Deno test
 * runner plugin (`tests/mutate_runner.ts`): Stryker instruments the source files under `<path>`
 * (each mutant behind a switch); a dry run of the matching test files records which test file
 * reaches which mutant (`coverageAnalysis: "perTest"`, one Stryker "test" per test file); then
 * each reached mutant runs `nice -n 10 deno test -A --no-check` over the test files that reached
 * it only, and the mutants no test reaches are NoCoverage without a run. The matching test files:
 * the `*_test.ts` files next to the mutated files, plus any test file of lib/, servers/ or tests/
 * (not tests/e2e) that imports a mutated file directly. `--tests` adds files (e2e tests
 * included). `<path>:<from>-<to>` mutates only those lines of a file (sampling a large file).
 * Not part of CI. See docs/testing.md for the scores.
 *
 * Flags: `--tests <file>` (repeatable), `--tests-only` (run only the `--tests` files),
 * `--all-tests` (no coverage analysis: every mutant runs every test file, for tests that run the
 * mutated code in a subprocess, where coverage is not seen), `--concurrency N` (default 1: the
 * machine is shared), `--timeout <ms>` (extra time per mutant over the dry run; default 10000),
 * `--list` (print the files and tests, run nothing), `--help`.
 * @module
 */

import { parseArgs } from "node:util";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The StrykerJS version used (pinned; run through `deno run npm:`). */
export const STRYKER = "npm:@stryker-mutator/core@9.6.1";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const HELP = `Usage: deno task mutate <path>[:<from>-<to>] ... [--tests <file>]... [--list]

Mutation testing with StrykerJS over deno test: each mutant runs only the test files that
reached it in a first run (the others are NoCoverage). <path> is a source file or directory
(e.g. lib/store, lib/grpc/h2/connection.ts, lib/xds/server/stream.ts:440-620).
  --tests <file>     also run this test file (repeatable; e2e tests are never added otherwise)
  --tests-only       run only the --tests files (quicker when they cover the mutated lines)
  --all-tests        no coverage analysis: run every test file for every mutant (needed when
                     the tests run the mutated code in a subprocess, whose coverage is not seen)
  --concurrency N    mutants tested at once (default 1)
  --timeout <ms>     time allowed per mutant beyond the dry run (default 10000)
  --list             print the files to mutate and the tests to run, then exit`;

/** Source files under `path` (relative to the repo), without tests, fixtures or test helpers. */
export async function sourceFiles(path: string): Promise<string[]> {
  const abs = join(ROOT, path);
  const info = await Deno.stat(abs);
  const isSource = (f: string) =>
    f.endsWith(".ts") && !f.endsWith("_test.ts") && !f.endsWith(".d.ts") &&
    !f.split("/").some((p) => p === "testdata" || p.startsWith("_test"));
  if (info.isFile) return isSource(path) ? [path] : [];
  const out: string[] = [];
  for await (const e of Deno.readDir(abs)) {
    const rel = `${path.replace(/\/+$/, "")}/${e.name}`;
    if (e.isDirectory) {
      if (e.name !== "testdata") out.push(...await sourceFiles(rel));
    } else if (isSource(rel)) out.push(rel);
  }
  return out.sort();
}

async function walkTests(dir: string, out: string[]): Promise<void> {
  for await (const e of Deno.readDir(join(ROOT, dir))) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory) {
      if (!["node_modules", "e2e", "testdata"].includes(e.name)) await walkTests(rel, out);
    } else if (e.name.endsWith("_test.ts")) out.push(rel);
  }
}

/**
 * The test files that exercise `files`: those in the same directories, and those anywhere in
 * lib/, servers/ and tests/ (but tests/e2e) importing one of them by a relative path.
 */
export async function matchingTests(files: string[]): Promise<string[]> {
  const all: string[] = [];
  for (const d of ["lib", "servers", "tests"]) await walkTests(d, all);
  const dirs = new Set(files.map((f) => dirname(f)));
  const targets = new Set(files);
  const out = new Set<string>();
  for (const t of all) {
    if (dirs.has(dirname(t))) {
      out.add(t);
      continue;
    }
    const text = await Deno.readTextFile(join(ROOT, t));
    for (const m of text.matchAll(/from\s+["'](\.[^"']+)["']/g)) {
      if (targets.has(relative(ROOT, resolve(ROOT, dirname(t), m[1])))) out.add(t);
    }
  }
  return [...out].sort();
}

/** Runs the mutation test; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      tests: { type: "string", multiple: true, default: [] },
      concurrency: { type: "string", default: "1" },
      timeout: { type: "string", default: "10000" },
      "tests-only": { type: "boolean", default: false },
      "all-tests": { type: "boolean", default: false },
      list: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (!positionals.length) {
    console.error("Error: name a path to mutate (e.g. deno task mutate lib/store)");
    return 2;
  }
  const mutate: string[] = [];
  const files: string[] = [];
  for (const p of positionals) {
    const m = /^(.*?)(?::(\d+)-(\d+))?$/.exec(p)!;
    let found: string[];
    try {
      found = await sourceFiles(m[1]);
    } catch (e) {
      console.error(`Error: ${p}: ${(e as Error).message}`);
      return 2;
    }
    if (!found.length) {
      console.error(`Error: ${p}: no source files to mutate`);
      return 2;
    }
    if (m[2] && (found.length !== 1 || found[0] !== m[1])) {
      console.error(`Error: ${p}: a line range needs a single source file`);
      return 2;
    }
    files.push(...found);
    mutate.push(...found.map((f) => m[2] ? `${f}:${m[2]}-${m[3]}` : f));
  }
  const named = values.tests as string[];
  const tests = values["tests-only"]
    ? named
    : [...new Set([...await matchingTests(files), ...named])];
  console.log(`mutate: ${mutate.join(" ")}\ntests:  ${tests.join(" ")}`);
  if (values.list) return 0;
  if (!tests.length) {
    console.error("Error: no test files match; name some with --tests");
    return 2;
  }
  const tmp = await Deno.makeTempDir({ prefix: "mesh-mutate-" });
  try {
    const statsFile = join(tmp, "runs.jsonl");
    const config = {
      $schema: "https://stryker-mutator.io/schema/stryker-schema.json",
      testRunner: "deno",
      plugins: [join(ROOT, "tests", "mutate_runner.ts")],
      denoRunner: { tests, preload: "tests/mutate_preload.ts", statsFile },
      mutate,
      coverageAnalysis: values["all-tests"] ? "off" : "perTest",
      concurrency: Number(values.concurrency),
      timeoutMS: Number(values.timeout),
      dryRunTimeoutMinutes: 30,
      reporters: ["clear-text", "progress-append-only", "json"],
      jsonReporter: { fileName: join(tmp, "mutation.json") },
      clearTextReporter: { allowColor: false, logTests: false },
      tempDirName: ".stryker-tmp",
      cleanTempDir: true,
      ignorePatterns: ["/reports", "/.stryker-tmp", "/coverage"],
    };
    console.log(`survivors so far: grep '"code":0,' ${statsFile}`);
    const configFile = join(tmp, "stryker.config.json");
    await Deno.writeTextFile(configFile, JSON.stringify(config, null, 2));
    const started = performance.now();
    const status = await new Deno.Command("nice", {
      args: [
        "-n",
        "10",
        Deno.execPath(),
        "run",
        "-A",
        "--no-lock", // a dev tool: not in deno.lock
        `${STRYKER}/stryker`,
        "run",
        configFile,
      ],
      cwd: ROOT,
      stdin: "null",
    }).spawn().status;
    const elapsed = performance.now() - started;
    const report = await Deno.readTextFile(join(tmp, "mutation.json")).catch(() => "");
    if (report) {
      const runs = await Deno.readTextFile(statsFile).catch(() => "");
      console.log(summary(JSON.parse(report), parseRuns(runs), elapsed));
      const keep = join(ROOT, ".stryker-tmp", "last-mutation.json");
      await Deno.mkdir(dirname(keep), { recursive: true });
      await Deno.writeTextFile(keep, report);
      console.log(`JSON report: ${relative(ROOT, keep)}`);
    }
    return status.code;
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

/** One mutant of Stryker's JSON report (the fields used here). */
interface ReportMutant {
  mutatorName: string;
  replacement?: string;
  status: string;
  statusReason?: string;
  location: { start: { line: number; column: number } };
}

/** What the runner recorded (`denoRunner.statsFile`): the dry run and each mutant run. */
export interface RunStats {
  /** Wall time of the dry run (every test file once), ms. */
  dryRunMs: number;
  /** Mutant runs, and the test files they ran in all. */
  mutantRuns: number;
  fileRuns: number;
}

/** Reads the runner's JSON lines. */
export function parseRuns(text: string): RunStats {
  const stats: RunStats = { dryRunMs: 0, mutantRuns: 0, fileRuns: 0 };
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const r = JSON.parse(line) as { dryRunMs?: number; files?: number };
    if (r.dryRunMs !== undefined) stats.dryRunMs = r.dryRunMs;
    else {
      stats.mutantRuns++;
      stats.fileRuns += r.files ?? 0;
    }
  }
  return stats;
}

const pct = (n: number, d: number) => d ? `${(100 * n / d).toFixed(1)}%` : "n/a";

/**
 * The summary printed after a run: per file, the mutants killed, timed out (counted as killed by
 * Stryker, but under load a slow test is a false kill: they are listed to be checked), survived
 * and not covered, the score with and without the timeouts, and the time taken against the
 * estimate of a run of every test file for every mutant (Stryker's command runner).
 */
export function summary(
  report: { files: Record<string, { mutants: ReportMutant[] }> },
  runs: RunStats,
  elapsedMs: number,
): string {
  const rows: string[][] = [[
    "file",
    "mutants",
    "killed",
    "timeout",
    "survived",
    "no cov",
    "errors",
    "score",
    "score w/o timeouts",
  ]];
  const timeouts: string[] = [];
  const total = { n: 0, killed: 0, timeout: 0, survived: 0, noCov: 0, errors: 0 };
  const count = (file: string, ms: ReportMutant[]) => {
    const c = { n: ms.length, killed: 0, timeout: 0, survived: 0, noCov: 0, errors: 0 };
    for (const m of ms) {
      if (m.status === "Killed") c.killed++;
      else if (m.status === "Timeout") {
        c.timeout++;
        timeouts.push(
          `  ${file}:${m.location.start.line}:${m.location.start.column} ${m.mutatorName} ` +
            `${JSON.stringify(m.replacement ?? "")}${m.statusReason ? ` (${m.statusReason})` : ""}`,
        );
      } else if (m.status === "Survived") c.survived++;
      else if (m.status === "NoCoverage") c.noCov++;
      else c.errors++;
    }
    return c;
  };
  const row = (name: string, c: typeof total) => {
    const valid = c.killed + c.timeout + c.survived + c.noCov;
    rows.push([
      name,
      String(c.n),
      String(c.killed),
      String(c.timeout),
      String(c.survived),
      String(c.noCov),
      String(c.errors),
      pct(c.killed + c.timeout, valid),
      pct(c.killed, valid),
    ]);
  };
  for (const [file, { mutants }] of Object.entries(report.files).sort()) {
    const c = count(file, mutants);
    for (const k of Object.keys(total) as (keyof typeof total)[]) total[k] += c[k];
    row(file, c);
  }
  if (Object.keys(report.files).length > 1) row("all", total);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const lines = rows.map((r) =>
    r.map((cell, i) => i ? cell.padStart(widths[i]) : cell.padEnd(widths[i])).join("  ")
  );
  lines.unshift("", "Mutation score (timeouts count as killed in Stryker's score):");
  if (timeouts.length) {
    lines.push(`Timeouts (check they are real, not a slow test under load):`, ...timeouts);
  }
  const valid = total.killed + total.timeout + total.survived + total.noCov + total.errors;
  const minutes = (ms: number) => `${(ms / 60000).toFixed(1)} min`;
  lines.push(
    `Time: ${minutes(elapsedMs)}; ${runs.mutantRuns} mutant runs of ${
      (runs.fileRuns / Math.max(runs.mutantRuns, 1)).toFixed(1)
    } test files on average; dry run ${(runs.dryRunMs / 1000).toFixed(1)} s.`,
  );
  if (runs.dryRunMs) {
    const estimate = valid * runs.dryRunMs;
    lines.push(
      `Every test file for every mutant (the command runner; ${valid} mutants x the dry run): ` +
        `about ${minutes(estimate)}, ` +
        `${(estimate / elapsedMs).toFixed(1)}x the time taken.`,
    );
  }
  return lines.join("\n");
}

if (import.meta.main) Deno.exit(await main(Deno.args));

/**
 * Mutation testing of one area: `deno task mutate <path>[:<from>-<to>] ... [--tests <file>...]`.
 *
 * Runs StrykerJS (`@stryker-mutator/core`, run by Deno from the npm registry) with its command
 * test runner: Stryker instruments the source files under `<path>` (each mutant behind a switch),
 * then for each mutant runs `nice -n 10 deno test -A --no-check` over the matching test files
 * only: the `*_test.ts` files next to the mutated files, plus any test file of lib/, servers/ or
 * tests/ (not tests/e2e) that imports a mutated file directly. `--tests` adds files (e2e tests
 * included). `<path>:<from>-<to>` mutates only those lines of a file (sampling a large file).
 * Not part of CI: it is slow (one test run per mutant). See docs/testing.md for the scores.
 *
 * Flags: `--tests <file>` (repeatable), `--tests-only` (run only the `--tests` files: a quicker
 * run when they are known to cover the mutated lines), `--concurrency N` (default 1: the machine is shared),
 * `--timeout <ms>` (extra time per mutant over the dry run; default 10000), `--list` (print the
 * files and tests, run nothing), `--help`.
 * @module
 */

import { parseArgs } from "node:util";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The StrykerJS version used (pinned; run through `deno run npm:`). */
export const STRYKER = "npm:@stryker-mutator/core@9.6.1";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const HELP = `Usage: deno task mutate <path>[:<from>-<to>] ... [--tests <file>]... [--list]

Mutation testing with StrykerJS over deno test. <path> is a source file or directory
(e.g. lib/store, lib/grpc/server.ts, lib/xds/server/stream.ts:440-620).
  --tests <file>     also run this test file (repeatable; e2e tests are never added otherwise)
  --tests-only       run only the --tests files (quicker when they cover the mutated lines)
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
    const config = {
      $schema: "https://stryker-mutator.io/schema/stryker-schema.json",
      testRunner: "command",
      commandRunner: {
        command: `nice -n 10 deno test -A --no-check --quiet ${tests.join(" ")}`,
      },
      mutate,
      coverageAnalysis: "off",
      concurrency: Number(values.concurrency),
      timeoutMS: Number(values.timeout),
      reporters: ["clear-text", "progress-append-only", "json"],
      jsonReporter: { fileName: join(tmp, "mutation.json") },
      clearTextReporter: { allowColor: false, logTests: false },
      tempDirName: ".stryker-tmp",
      cleanTempDir: true,
      ignorePatterns: ["/reports", "/.stryker-tmp", "/coverage"],
      plugins: [],
    };
    const configFile = join(tmp, "stryker.config.json");
    await Deno.writeTextFile(configFile, JSON.stringify(config, null, 2));
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
    const report = await Deno.readTextFile(join(tmp, "mutation.json")).catch(() => "");
    if (report) {
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

if (import.meta.main) Deno.exit(await main(Deno.args));

/**
 * Targeted re-tests of the mutants a `deno task mutate` run did not kill:
 * `deno run -A tests/mutate_retest.ts <report.json> <id>... --test <file> [--filter <text>]`.
 *
 * For each mutant id of Stryker's JSON report (`.stryker-tmp/last-mutation.json` after a run),
 * applies that one mutant to a copy of the worktree (the tracked files, `node_modules` linked),
 * runs `deno test -A --no-check --fail-fast` over the named test files there (in a process group
 * of its own, so that a test's child processes, such as `lib/grpc/_attack_server.ts`, end with
 * it), and prints one line:
 * `killed` (a test failed), `survived` (all passed) or `timeout` (still running after `--timeout`
 * seconds, default 60: the process group is killed and the mutant counted as detected, as Stryker
 * does). `--status` picks the mutants by status instead of ids (`--status Survived --status
 * NoCoverage`), `--lines <from>-<to>` restricts them to those lines. The copy is removed at the end.
 * Not part of CI; see docs/testing.md.
 * @module
 */

import { parseArgs } from "node:util";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** A mutant of Stryker's JSON report (the fields used here). */
export interface Mutant {
  id: string;
  mutatorName: string;
  replacement?: string;
  status: string;
  location: { start: { line: number; column: number }; end: { line: number; column: number } };
}

/** `source` with `m` applied (Stryker's locations: lines and columns from 1, end exclusive). */
export function applyMutant(source: string, m: Mutant): string {
  const lines = source.split("\n");
  const offset = (p: { line: number; column: number }) => {
    let at = 0;
    for (let i = 0; i < p.line - 1; i++) at += lines[i].length + 1;
    return at + p.column - 1;
  };
  const from = offset(m.location.start), to = offset(m.location.end);
  return source.slice(0, from) + (m.replacement ?? "") + source.slice(to);
}

async function run(cmd: string[], cwd: string, seconds: number): Promise<[string, string]> {
  const child = new Deno.Command("setsid", {
    args: cmd,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      Deno.kill(-child.pid, "SIGKILL"); // the whole group: deno test and what it started
    } catch { /* already gone */ }
  }, seconds * 1000);
  const out = await child.output();
  clearTimeout(timer);
  try {
    Deno.kill(-child.pid, "SIGKILL"); // children a passing test left behind, if any
  } catch { /* none */ }
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (timedOut) return ["timeout", ""];
  if (out.code === 0) return ["survived", ""];
  const failed = [...new Set([...text.matchAll(/^(.+?) => \S+:\d+:\d+$/gm)].map((m) => m[1]))];
  return ["killed", failed.slice(0, 3).join(" | ") || text.trim().split("\n").slice(-3).join(" ")];
}

/** Runs the re-tests; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      test: { type: "string", multiple: true, default: [] },
      filter: { type: "string" },
      status: { type: "string", multiple: true, default: [] },
      lines: { type: "string" },
      timeout: { type: "string", default: "60" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help || positionals.length < 1 || !(values.test as string[]).length) {
    console.log(
      "Usage: deno run -A tests/mutate_retest.ts <report.json> [<id>...] [--status S]... " +
        "[--lines A-B] --test <file>... [--filter <text>] [--timeout <s>]",
    );
    return values.help ? 0 : 2;
  }
  const [reportPath, ...ids] = positionals;
  const report = JSON.parse(await Deno.readTextFile(reportPath)) as {
    files: Record<string, { mutants: Mutant[]; source: string }>;
  };
  const range = values.lines?.split("-").map(Number);
  const picked: [string, Mutant][] = [];
  for (const [file, { mutants }] of Object.entries(report.files)) {
    for (const m of mutants) {
      const line = m.location.start.line;
      if (range && (line < range[0] || line > range[1])) continue;
      if (ids.includes(m.id) || (values.status as string[]).includes(m.status)) {
        picked.push([file, m]);
      }
    }
  }
  const tmp = await Deno.makeTempDir({ prefix: "mesh-retest-" });
  try {
    const files = new TextDecoder().decode(
      (await new Deno.Command("git", { args: ["ls-files", "-z"], cwd: ROOT }).output()).stdout,
    ).split("\0").filter(Boolean);
    for (const f of files) {
      await Deno.mkdir(dirname(join(tmp, f)), { recursive: true });
      await Deno.copyFile(join(ROOT, f), join(tmp, f)).catch(() => {}); // deleted, not committed
    }
    await Deno.symlink(join(ROOT, "node_modules"), join(tmp, "node_modules"));
    const cmd = [
      Deno.execPath(),
      "test",
      "-A",
      "--no-check",
      "--fail-fast",
      ...values.test as string[],
    ];
    if (values.filter) cmd.push("--filter", values.filter);
    for (const [file, m] of picked) {
      const original = await Deno.readTextFile(join(ROOT, file));
      if (original !== report.files[file].source) {
        console.error(`Error: ${file} changed since the report; its line numbers no longer hold`);
        return 1;
      }
      await Deno.writeTextFile(join(tmp, file), applyMutant(original, m));
      const t0 = performance.now();
      const [result, why] = await run(cmd, tmp, Number(values.timeout));
      await Deno.writeTextFile(join(tmp, file), original);
      const { line, column } = m.location.start;
      console.log(
        `${m.id}\t${result}\t${((performance.now() - t0) / 1000).toFixed(0)}s\t${file}:${line}:` +
          `${column} ${m.mutatorName} ${JSON.stringify(m.replacement ?? "").slice(0, 60)}` +
          `${why ? `\t${why}` : ""}`,
      );
    }
    return 0;
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));

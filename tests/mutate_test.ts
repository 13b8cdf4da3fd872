/**
 * The Deno test runner plugin of `deno task mutate` (tests/mutate_runner.ts, with
 * tests/mutate_preload.ts) over a small fake project whose "instrumented" module mirrors the
 * switch and coverage code Stryker adds, and the summary printed after a run.
 */
import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { DenoTestRunner, failedFiles } from "./mutate_runner.ts";
import { parseRuns, summary } from "./mutate.ts";

const PRELOAD = resolve(import.meta.dirname!, "mutate_preload.ts");

// What Stryker's instrumenter puts at the top of a mutated file (util/syntax-helpers.js), in short.
const HEADER = `
const g = globalThis as any;
const ns = g.__stryker__ ??= {};
if (ns.activeMutant === undefined && Deno.env.get("__STRYKER_ACTIVE_MUTANT__")) {
  ns.activeMutant = Deno.env.get("__STRYKER_ACTIVE_MUTANT__");
}
function cover(...ids: string[]) {
  const cov = ns.mutantCoverage ??= { static: {}, perTest: {} };
  const c = ns.currentTestId ? (cov.perTest[ns.currentTestId] ??= {}) : cov.static;
  for (const id of ids) c[id] = (c[id] ?? 0) + 1;
}
function active(id: string) {
  if (ns.activeMutant !== id) return false;
  if (ns.hitCount !== undefined && ++ns.hitCount > ns.hitLimit) {
    throw new Error("Stryker: Hit count limit reached (" + ns.hitCount + ")");
  }
  return true;
}
`;

const PROJECT: Record<string, string> = {
  "src/mod.ts": `${HEADER}
cover("0");
export const NAME = active("0") ? "" : "mesh";
export function add(a: number, b: number): number {
  cover("1", "2");
  if (active("2")) console.log("a log line only");
  return active("1") ? a - b : a + b;
}
export function spin(): number {
  cover("3");
  let n = 0;
  while (active("3") || n < 3) n++;
  return n;
}
export async function hang(pidFile: string): Promise<void> {
  cover("4");
  if (!active("4")) return;
  const child = new Deno.Command("sleep", { args: ["300"] }).spawn();
  await Deno.writeTextFile(pidFile, String(child.pid));
  await child.status;
}
export function unreached(): number {
  cover("5");
  return active("5") ? 1 : 2;
}
`,
  "src/add_test.ts": `import { add, spin, hang } from "./mod.ts";
Deno.test("add", () => { if (add(2, 3) !== 5) throw new Error("2 + 3 is not 5"); });
Deno.test({ name: "spin", fn: () => { if (spin() !== 3) throw new Error("spin"); } });
Deno.test("hang", async () => { await hang(Deno.env.get("PID_FILE")!); });
`,
  "src/name_test.ts": `import { NAME } from "./mod.ts";
Deno.test("name", () => { if (NAME !== "mesh") throw new Error("name is " + NAME); });
`,
};

async function project(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-mutate-test-" });
  await Deno.mkdir(join(dir, "src"));
  for (const [f, text] of Object.entries(PROJECT)) await Deno.writeTextFile(join(dir, f), text);
  return dir;
}

const silent = { debug() {}, info() {}, warn() {} };
const TESTS = ["src/add_test.ts", "src/name_test.ts"];

/** Runs `fn` with the runner in the fake project as its working directory (as in Stryker). */
async function withRunner(
  fn: (runner: DenoTestRunner, dir: string, stats: string) => Promise<void>,
): Promise<void> {
  const dir = await project();
  const cwd = Deno.cwd();
  const stats = join(dir, "stats.jsonl");
  Deno.chdir(dir);
  try {
    const runner = new DenoTestRunner(
      { denoRunner: { tests: TESTS, preload: PRELOAD, statsFile: stats } },
      silent,
    );
    await fn(runner, dir, stats);
  } finally {
    Deno.chdir(cwd);
    await Deno.remove(dir, { recursive: true });
  }
}

/** Whether `pid` is a live process (a zombie left to init is not). */
async function running(pid: number): Promise<boolean> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => "");
  return stat !== "" && !/^\d+ \(.*\) Z/.test(stat);
}

const mutant = (id: string, testFilter?: string[], extra: { hitLimit?: number } = {}) => ({
  activeMutant: { id },
  testFilter,
  timeout: 20_000,
  disableBail: false,
  ...extra,
});

Deno.test("mutate runner: the dry run tells module-load coverage from each file's tests", async () => {
  await withRunner(async (runner, _dir, stats) => {
    const result = await runner.dryRun({
      timeout: 60_000,
      disableBail: false,
      coverageAnalysis: "perTest",
    });
    assert(result.status === "complete", JSON.stringify(result));
    assert.deepEqual(result.tests.map((t) => t.id), TESTS);
    assert(result.tests.every((t) => t.timeSpentMs > 0));
    const cov = result.mutantCoverage!;
    // "0" runs at module load in both files: static, so Stryker runs it against every file.
    assert.deepEqual(cov.static, { "0": 2 });
    // Only add_test.ts reaches add/spin/hang; nobody reaches "5" (NoCoverage, never run).
    assert.deepEqual(cov.perTest["src/add_test.ts"], { "1": 1, "2": 1, "3": 1, "4": 1 });
    assert.deepEqual(cov.perTest["src/name_test.ts"], {});
    assert.deepEqual(parseRuns(await Deno.readTextFile(stats)).mutantRuns, 0);
    assert(parseRuns(await Deno.readTextFile(stats)).dryRunMs > 0);
  });
});

Deno.test("mutate runner: mutant runs are killed, survive, or time out (endless loop, hang)", async () => {
  await withRunner(async (runner, dir, stats) => {
    await runner.dryRun({ timeout: 60_000, disableBail: false, coverageAnalysis: "perTest" });

    const killed = await runner.mutantRun(mutant("1", ["src/add_test.ts"]));
    assert(killed.status === "killed", JSON.stringify(killed));
    assert.deepEqual(killed.killedBy, ["src/add_test.ts"]);
    assert.ok(killed.failureMessage.includes("2 + 3 is not 5"), killed.failureMessage);

    // A static mutant gets no filter: every file runs, and the one that fails is named.
    const staticKill = await runner.mutantRun(mutant("0"));
    assert(staticKill.status === "killed", JSON.stringify(staticKill));
    assert.deepEqual(staticKill.killedBy, ["src/name_test.ts"]);

    assert.deepEqual(await runner.mutantRun(mutant("2", ["src/add_test.ts"])), {
      status: "survived",
      nrOfTests: 1,
    });

    const loop = await runner.mutantRun(mutant("3", ["src/add_test.ts"], { hitLimit: 100 }));
    assert.deepEqual(loop, { status: "timeout", reason: "hit count limit reached (endless loop)" });

    const pidFile = join(dir, "sleep.pid");
    Deno.env.set("PID_FILE", pidFile);
    try {
      const hang = await runner.mutantRun({ ...mutant("4", ["src/add_test.ts"]), timeout: 4000 });
      assert(hang.status === "timeout", JSON.stringify(hang));
      assert.match(hang.reason!, /^killed after \d+ ms$/);
    } finally {
      Deno.env.delete("PID_FILE");
    }
    // The process the test started went with it (its whole process group is killed).
    const pid = Number(await Deno.readTextFile(pidFile));
    assert(!await running(pid), `sleep ${pid} is still running`);

    const runs = parseRuns(await Deno.readTextFile(stats));
    assert.deepEqual(runs.mutantRuns, 5);
    assert.deepEqual(runs.fileRuns, 6);
  });
});

Deno.test("mutate runner: the failing file is read from deno test's failure list", () => {
  const output = "ERRORS\n\nadd => ./src/add_test.ts:2:6\nerror: Error: no\n\nFAILURES\n";
  assert.deepEqual(failedFiles(output, ["src/name_test.ts", "src/add_test.ts"]), [
    "src/add_test.ts",
  ]);
  // A failure deno does not attribute (a module that does not load): every file run.
  assert.deepEqual(failedFiles("error: Module not found", ["a_test.ts", "b_test.ts"]), [
    "a_test.ts",
    "b_test.ts",
  ]);
});

Deno.test("mutate summary: timeouts are counted and listed apart from kills", () => {
  const at = (line: number) => ({ start: { line, column: 3 } });
  const report = {
    files: {
      "lib/a.ts": {
        mutants: [
          {
            mutatorName: "BooleanLiteral",
            replacement: "false",
            status: "Killed",
            location: at(1),
          },
          {
            mutatorName: "BooleanLiteral",
            replacement: "true",
            status: "Timeout",
            location: at(2),
          },
          { mutatorName: "StringLiteral", replacement: '""', status: "Survived", location: at(3) },
          {
            mutatorName: "BlockStatement",
            replacement: "{}",
            status: "NoCoverage",
            location: at(4),
          },
        ],
      },
    },
  };
  const text = summary(report, { dryRunMs: 6000, mutantRuns: 3, fileRuns: 6 }, 60_000);
  assert.match(text, /lib\/a\.ts\s+4\s+1\s+1\s+1\s+1\s+0\s+50\.0%\s+25\.0%/);
  assert.ok(text.includes('lib/a.ts:2:3 BooleanLiteral "true"'), text);
  assert.ok(text.includes("3 mutant runs of 2.0 test files on average; dry run 6.0 s"), text);
  assert.ok(text.includes("about 0.4 min"), text);
});

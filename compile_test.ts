import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type Build,
  compileAll,
  explainCompileFailure,
  formatCommand,
  gitRevision,
  INCLUDES,
  main,
  outputName,
  planBuilds,
  PROGRAMS,
  ROOT,
  runtimeProblem,
  TARGETS,
  v8FlagsArgs,
  writeStampFiles,
} from "./compile.ts";

/** Runs compile.ts's command line in-process, capturing its output. */
async function run(...args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await main(args, {
    stdout: (s) => stdout += s,
    stderr: (s) => stderr += s,
  });
  return { code, stdout, stderr };
}

/** stderr of `deno compile --target aarch64-unknown-linux-gnu` on a network without dl.deno.land. */
const DOWNLOAD_FAILED = `Check a.ts
Compile a.ts to a
Download https://dl.deno.land/release/v2.7.14/denort-aarch64-unknown-linux-gnu.zip
error: Writing deno compile executable to temporary file '/tmp/ctry/a.tmp-a70f82cb6d4c7277'

Caused by:
    0: Setting up base binary.
    1: error sending request for url (https://dl.deno.land/release/v2.7.14/denort-aarch64-unknown-linux-gnu.zip): client error (Connect): dns error: failed to lookup address information: Name or service not known
    2: client error (Connect)
    3: dns error
    4: failed to lookup address information: Name or service not known
`;

Deno.test("outputName() is <program>-<target>, with .exe only for Windows", () => {
  assert.equal(
    outputName("mesh_ca", "x86_64-unknown-linux-gnu"),
    "mesh_ca-x86_64-unknown-linux-gnu",
  );
  assert.equal(outputName("meshctl", "aarch64-apple-darwin"), "meshctl-aarch64-apple-darwin");
  assert.equal(
    outputName("meshctl", "x86_64-pc-windows-msvc"),
    "meshctl-x86_64-pc-windows-msvc.exe",
  );
});

Deno.test("planBuilds() builds every program for every target by default", () => {
  const plan = planBuilds();
  assert.equal(plan.length, 30);
  assert.deepEqual(
    plan.map((b) => `${b.program} ${b.target}`),
    PROGRAMS.flatMap((p) => TARGETS.map((t) => `${p} ${t}`)),
  );
  for (const b of plan) {
    assert.equal(b.entry, `cli/${b.program}.ts`);
    assert.equal(b.output, `dist/${outputName(b.program, b.target)}`);
  }
});

Deno.test("planBuilds() gives the exact deno compile arguments", () => {
  const [b] = planBuilds({ programs: ["meshctl"], targets: ["x86_64-pc-windows-msvc"] });
  assert.deepEqual(b.args, [
    "compile",
    "-A",
    "--target",
    "x86_64-pc-windows-msvc",
    "--output",
    "dist/meshctl-x86_64-pc-windows-msvc.exe",
    "--import-map",
    "dist/.stamp/import_map.json",
    ...INCLUDES.meshctl.flatMap((f) => ["--include", f]),
    "cli/meshctl.ts",
  ]);
});

Deno.test("INCLUDES lists every command module a program loads through a computed specifier", () => {
  for (const program of PROGRAMS) {
    const lazy = new Set<string>();
    for (
      const [file, dir] of [[`cli/${program}.ts`, "cli"], ["cli/_shared/groups.ts", "cli/_shared"]]
    ) {
      const text = Deno.readTextFileSync(new URL(`./${file}`, import.meta.url));
      for (const m of text.matchAll(/lazyCommand<typeof import\("\.\/([^"]+)"\)>/g)) {
        lazy.add(`${dir}/${m[1]}`);
      }
    }
    assert.ok(lazy.size > 0, program);
    for (const f of lazy) {
      assert.ok(INCLUDES[program].includes(f), `${program}: ${f} not in INCLUDES`);
    }
    for (const f of INCLUDES[program]) {
      assert.ok(Deno.statSync(new URL(`./${f}`, import.meta.url)).isFile, f);
    }
  }
});

Deno.test("planBuilds() includes the modules mesh-policy imports through a computed specifier, and its worker module", () => {
  const [b] = planBuilds({ programs: ["mesh-policy"], targets: ["x86_64-unknown-linux-gnu"] });
  assert.ok(b.args.join(" ").includes("--include lib/deps/otel.ts"));
  assert.ok(b.args.join(" ").includes("--include servers/policy/worker_main.ts"));
  assert.equal(b.args.at(-1), "cli/mesh-policy.ts");
  assert.ok(Deno.statSync(new URL("./lib/deps/otel.ts", import.meta.url)).isFile);
});

Deno.test("planBuilds() builds mesh-policy and mesh-discovery with their young generations, and the other programs with no V8 flags", () => {
  const [policy] = planBuilds({ programs: ["mesh-policy"], targets: ["x86_64-unknown-linux-gnu"] });
  assert.equal(policy.args.at(-2), "--v8-flags=--max-semi-space-size=1");
  const [discovery] = planBuilds({
    programs: ["mesh-discovery"],
    targets: ["x86_64-unknown-linux-gnu"],
  });
  assert.equal(discovery.args.at(-2), "--v8-flags=--max-semi-space-size=1");
  for (const b of planBuilds({ targets: ["x86_64-unknown-linux-gnu"] })) {
    if (b.program === "mesh-policy" || b.program === "mesh-discovery") continue;
    assert.ok(!b.args.some((a) => a.startsWith("--v8-flags")), b.program);
  }
});

Deno.test("deno task <program> runs each program with the V8 flags it is built with", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("./deno.json", import.meta.url)));
  for (const program of PROGRAMS) {
    const task: string = config.tasks[program];
    assert.ok(task, program);
    const flags = v8FlagsArgs(program);
    assert.equal(task, ["deno run -A", ...flags, `cli/${program}.ts`].join(" "), program);
  }
});

Deno.test("planBuilds() puts outputs outside the checkout at absolute paths", () => {
  const [b] = planBuilds({
    programs: ["mesh-agent"],
    targets: ["aarch64-apple-darwin"],
    out: "/x/y",
  });
  assert.equal(b.output, "/x/y/mesh-agent-aarch64-apple-darwin");
  assert.ok(b.args.includes("/x/y/.stamp/import_map.json"));
});

Deno.test("formatCommand() quotes only arguments that need it", () => {
  assert.equal(
    formatCommand(["compile", "-A", "cli/meshctl.ts"]),
    "deno compile -A cli/meshctl.ts",
  );
  assert.equal(formatCommand(["--output", "my dir/it's"]), `deno --output 'my dir/it'\\''s'`);
});

Deno.test("compile.ts --dry-run prints the stamp values, then one exact deno command per build", async () => {
  const r = await run(
    "--dry-run",
    "--version",
    "1.2.3",
    "--programs",
    "mesh-discovery,mesh_ca",
    "--targets",
    "x86_64-unknown-linux-gnu,x86_64-pc-windows-msvc",
    "--out",
    "out",
  );
  assert.equal(r.stderr, "");
  assert.equal(r.code, 0);
  const common = "--import-map out/.stamp/import_map.json";
  const inc = (p: "mesh-discovery" | "mesh_ca") =>
    INCLUDES[p].map((f) => `--include ${f}`).join(" ");
  const lines = r.stdout.split("\n");
  const revision = await gitRevision();
  assert.match(revision, /^[0-9a-f]{40}(-dirty)?$/);
  assert.equal(lines[0], "# version: 1.2.3");
  assert.equal(lines[1], `# git revision: ${revision}`);
  assert.match(lines[2], /^# build time: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.ok(Math.abs(Date.parse(lines[2].slice("# build time: ".length)) - Date.now()) < 60_000);
  assert.equal(
    lines.slice(3).join("\n"),
    [
      `deno compile -A --target x86_64-unknown-linux-gnu --output out/mesh-discovery-x86_64-unknown-linux-gnu ${common} ${
        inc("mesh-discovery")
      } --unstable-net --v8-flags=--max-semi-space-size=1 cli/mesh-discovery.ts`,
      `deno compile -A --target x86_64-pc-windows-msvc --output out/mesh-discovery-x86_64-pc-windows-msvc.exe ${common} ${
        inc("mesh-discovery")
      } --unstable-net --v8-flags=--max-semi-space-size=1 cli/mesh-discovery.ts`,
      `deno compile -A --target x86_64-unknown-linux-gnu --output out/mesh_ca-x86_64-unknown-linux-gnu ${common} ${
        inc("mesh_ca")
      } cli/mesh_ca.ts`,
      `deno compile -A --target x86_64-pc-windows-msvc --output out/mesh_ca-x86_64-pc-windows-msvc.exe ${common} ${
        inc("mesh_ca")
      } cli/mesh_ca.ts`,
      "",
    ].join("\n"),
  );
});

Deno.test("compile.ts --dry-run plans all 30 builds without flags", async () => {
  const r = await run("--dry-run");
  assert.equal(r.code, 0);
  const lines = r.stdout.trimEnd().split("\n").filter((l) => !l.startsWith("# "));
  assert.equal(lines.length, 30);
  assert.ok(lines.every((l) => l.startsWith("deno compile -A --target ")));
});

Deno.test("compile.ts --help prints usage listing programs and targets", async () => {
  const r = await run("--help");
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^Usage: compile\.ts \[flags\]/);
  for (const name of [...PROGRAMS, ...TARGETS]) assert.ok(r.stdout.includes(name), name);
  for (const flag of ["--programs", "--targets", "--out", "--version", "--dry-run"]) {
    assert.ok(r.stdout.includes(flag), flag);
  }
});

Deno.test("compile.ts exits 2 with a one-line error when a flag is unknown", async () => {
  const r = await run("--bogus");
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.equal(
    r.stderr,
    "Error: Unknown option '--bogus'\nRun 'deno run -A compile.ts --help' for usage.\n",
  );
});

Deno.test("compile.ts exits 2 naming the value when a target is unknown", async () => {
  const r = await run("--dry-run", "--targets", "x86_64-unknown-linux-gnu,riscv64");
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.match(
    r.stderr,
    /^Error: Invalid --targets "x86_64-unknown-linux-gnu,riscv64": unknown value "riscv64" \(one of: x86_64-unknown-linux-gnu, /,
  );
});

Deno.test("compile.ts exits 2 when a program is unknown or a list item is empty", async () => {
  const bad = await run("--dry-run", "--programs", "pilot");
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^Error: Invalid --programs "pilot": unknown value "pilot"/);
  const empty = await run("--dry-run", "--programs", "meshctl,");
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /^Error: Invalid --programs "meshctl,": empty item/);
});

Deno.test("compile.ts exits 2 when --version is not a semantic version", async () => {
  const r = await run("--dry-run", "--version", "v1.2");
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^Error: Invalid --version "v1\.2": expected a semantic version/);
  assert.equal((await run("--dry-run", "--version", "1.2.3-rc.1")).code, 0);
});

Deno.test("compile.ts exits 2 when given a positional argument", async () => {
  const r = await run("meshctl");
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^Error: Too many arguments/);
});

Deno.test("runtimeProblem() refuses any Deno but 2.7.14 unless --allow-any-deno", () => {
  assert.equal(runtimeProblem("2.7.14", false), null);
  assert.equal(
    runtimeProblem("2.9.6", false),
    'compile.ts requires Deno 2.7.14 exactly, but this is Deno 2.9.6 (install it with "npm i -g deno@2.7.14", or pass --allow-any-deno)',
  );
  assert.notEqual(runtimeProblem("2.7.13", false), null);
  assert.equal(runtimeProblem("2.9.6", true), null);
});

Deno.test("explainCompileFailure() names the denort download when it fails", () => {
  assert.equal(
    explainCompileFailure(DOWNLOAD_FAILED, "aarch64-unknown-linux-gnu"),
    "the download of the denort runtime for aarch64-unknown-linux-gnu failed: no network " +
      "access to Deno's download host (dl.deno.land); set DENORT_BIN or place " +
      `denort-aarch64-unknown-linux-gnu.zip in $DENO_DIR/dl/release/v${Deno.version.deno}/`,
  );
  // With colours, as a terminal shows them.
  const colored = DOWNLOAD_FAILED.replace("error:", "\x1b[1m\x1b[31merror\x1b[0m:");
  assert.notEqual(explainCompileFailure(colored, "aarch64-unknown-linux-gnu"), null);
});

Deno.test("explainCompileFailure() is null for other failures", () => {
  assert.equal(
    explainCompileFailure(
      'error: Module not found "file:///work/main/cli/nope.ts".\n',
      "x86_64-unknown-linux-gnu",
    ),
    null,
  );
  assert.equal(
    explainCompileFailure("TS2322 [ERROR]: Type 'string' is not assignable", "x86_64-apple-darwin"),
    null,
  );
});

Deno.test("writeStampFiles() makes lib/version see the stamp through the import map", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const stamp = { version: "7.8.9", gitRevision: "abc1234", buildTime: "2025-01-02T03:04:05Z" };
    await writeStampFiles(join(dir, ".stamp"), stamp);
    const script = join(dir, "print.ts");
    await Deno.writeTextFile(
      script,
      `import { STAMP } from ${JSON.stringify(`${ROOT}/lib/version/stamp.ts`)};\n` +
        `console.log(JSON.stringify(STAMP));\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "--import-map", join(dir, ".stamp", "import_map.json"), script],
      cwd: ROOT,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), stamp);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("compileAll() fails with one clear message when the denort download fails", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const entry = join(dir, "hello.ts");
    await Deno.writeTextFile(entry, 'console.log("hello");\n');
    const output = join(dir, "out", "hello");
    const build: Build = {
      program: "meshctl",
      target: "aarch64-apple-darwin",
      entry,
      output,
      args: ["compile", "--target", "aarch64-apple-darwin", "--output", output, entry],
    };
    // An unreachable proxy makes the download fail fast on any network; without DENORT_BIN
    // and with an empty DENO_DIR (no cached denort zip) deno compile must download.
    const env = Deno.env.toObject();
    delete env.DENORT_BIN;
    env.HTTPS_PROXY = env.https_proxy = "http://127.0.0.1:9";
    env.DENO_DIR = join(dir, "deno_dir");
    const log: string[] = [];
    await assert.rejects(
      compileAll([build], { out: join(dir, "out"), stamp: STAMP, log: (l) => log.push(l), env }),
      {
        name: "CompileError",
        message: "the download of the denort runtime for aarch64-apple-darwin failed: no " +
          "network access to Deno's download host (dl.deno.land); set DENORT_BIN or place " +
          `denort-aarch64-apple-darwin.zip in $DENO_DIR/dl/release/v${Deno.version.deno}/`,
      },
    );
    assert.deepEqual(log, []);
    // Neither the stamp directory nor deno's partial output is left behind.
    assert.equal(await Deno.stat(join(dir, "out")).then(() => true, () => false), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const STAMP = { version: "1.0.0", gitRevision: "unknown", buildTime: "2025-01-01T00:00:00Z" };

Deno.test("INCLUDES lists every module a program starts as a Worker", () => {
  const owners: Record<string, typeof PROGRAMS[number]> = {
    "servers/agent/bootstrap.ts": "mesh-agent",
    "servers/ca/workers.ts": "mesh_ca",
    "servers/policy/workers.ts": "mesh-policy",
  };
  for (const [file, program] of Object.entries(owners)) {
    const text = Deno.readTextFileSync(new URL(`./${file}`, import.meta.url));
    // `new Worker(new URL(...))`, or a pool's `url: new URL(...)`.
    const urls = [
      ...text.matchAll(/(?:new Worker\(|url: )new URL\("\.\/([^"]+\.ts)", import\.meta\.url\)/g),
    ];
    assert.ok(urls.length > 0, file);
    for (const [, rel] of urls) {
      const module = `${file.slice(0, file.lastIndexOf("/"))}/${rel}`;
      assert.ok(INCLUDES[program].includes(module), `${program}: ${module} not in INCLUDES`);
    }
  }
});

/**
 * Compiles mesh's six programs into self-contained executables with `deno compile`.
 *
 * ```sh
 * deno run -A compile.ts                       # 6 programs x 5 targets into dist/
 * deno run -A compile.ts --programs meshctl --targets x86_64-unknown-linux-gnu
 * deno run -A compile.ts --dry-run             # print the stamp and one deno command per build
 * ```
 *
 * Each build runs `deno compile -A --target <target> --output <out>/<program>-<target>[.exe]
 * --import-map <out>/.stamp/import_map.json cli/<program>.ts` from the repository root.
 *
 * Version stamping: the import map (generated into `<out>/.stamp/`, removed afterwards, even on
 * failure) is deno.json's `imports` plus one entry that redirects `lib/version/stamp.ts` to a
 * stamped copy written with `renderStamp` (version from `--version` or `VERSION`, the git
 * revision of `HEAD`, the build time). The checkout itself is never modified, so an interrupted
 * build cannot leave a stamped `stamp.ts` behind.
 *
 * Builds require Deno {@linkcode PINNED_DENO} exactly (see docs/release.md); `--allow-any-deno`
 * overrides the check.
 *
 * @module
 */

import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Command, CommanderError, Option } from "./lib/deps/commander.ts";
import { isPinnedDeno, PINNED_DENO } from "./lib/runtime/mod.ts";
import { checkoutRevision, renderStamp, type Stamp, VERSION } from "./lib/version/mod.ts";

/** The programs, each built from `cli/<program>.ts`. */
export const PROGRAMS = [
  "mesh-discovery",
  "sidecar-injector",
  "mesh-agent",
  "mesh-policy",
  "meshctl",
  "mesh_ca",
] as const;

/** One of {@linkcode PROGRAMS}. */
export type Program = typeof PROGRAMS[number];

/** The `deno compile --target` values mesh is released for. */
export const TARGETS = [
  "x86_64-unknown-linux-gnu",
  "aarch64-unknown-linux-gnu",
  "x86_64-apple-darwin",
  "aarch64-apple-darwin",
  "x86_64-pc-windows-msvc",
] as const;

/** One of {@linkcode TARGETS}. */
export type Target = typeof TARGETS[number];

/**
 * Modules a program imports through a computed specifier (so that `deno run` does not resolve
 * them at every start), and the modules of its worker isolates (`--workers`, the agent's
 * readiness check), which `deno compile` must be told to include.
 */
export const INCLUDES: Readonly<Record<Program, readonly string[]>> = (() => {
  // Every program's commands are loaded through cli/_shared/lazy.ts (computed specifiers).
  const shared = ["cli/_shared/version_cmd.ts", "cli/_shared/probe_cmd.ts"];
  const commands = (dir: string, names: string[]) => names.map((n) => `cli/${dir}/${n}.ts`);
  return {
    "mesh-discovery": [...shared, ...commands("mesh-discovery", ["debug", "discovery"])],
    "mesh-policy": [
      ...shared,
      ...commands("mesh-policy", ["crd", "server"]),
      "lib/deps/otel.ts",
      "servers/policy/worker_main.ts",
    ],
    "sidecar-injector": [...shared, ...commands("sidecar-injector", ["server"])],
    "mesh_ca": [...shared, ...commands("mesh_ca", ["server"]), "servers/ca/worker_main.ts"],
    "meshctl": [
      ...shared,
      ...commands("meshctl", [
        "context_create",
        "convert",
        "create",
        "delete",
        "deregister",
        "gen_deploy",
        "get",
        "kube_inject",
        "metrics",
        "proxy_config",
        "rbac_can",
        "register",
        "replace",
        "workload",
      ]),
    ],
    "mesh-agent": [
      ...shared,
      ...commands("mesh-agent", ["debug", "proxy"]),
      "servers/agent/check_worker.ts",
    ],
  };
})();

/**
 * V8 flags a program is built with (`deno compile --v8-flags`, applied at every start of the
 * executable), and which its `deno task`, its benchmark and the tests' `spawnProgram` run it with;
 * run from source otherwise, pass them as `deno run --v8-flags=<flags>`. Both set a small young
 * generation (V8's default grows to 16 MiB; measured with `--trace-gc`, see docs/benchmarks.md):
 * - mesh-policy, 1 MiB: each scavenge (the garbage collection of short-lived objects, which stops
 *   the Check in progress) takes about 0.25 ms instead of 1 to 3 ms.
 * - mesh-discovery, 1 MiB: the buffers `node:net` allocates for each read (every proxy's ACK) die
 *   young and are freed by the next scavenge, before they add up to the 64 MB of external memory
 *   at which V8 starts a full mark-compact of the heap. With the default, an endpoint push to
 *   10,010 proxies and their ACKs cost 1.2-1.3 s of CPU, half of it on V8's marking threads; with
 *   1 MiB 0.5 s.
 */
export const V8_FLAGS: Readonly<Partial<Record<Program, readonly string[]>>> = {
  "mesh-discovery": ["--max-semi-space-size=1"],
  "mesh-policy": ["--max-semi-space-size=1"],
};

/**
 * Unstable Deno APIs a program uses: with `--grpcReusedReads`, mesh-discovery's ADS workers share a
 * port with `Deno.listen({ reusePort })` (`lib/grpc` `nativeReads`; without it they read through
 * node:net).
 */
const UNSTABLE: Partial<Record<Program, string[]>> = { "mesh-discovery": ["net"] };

/** `--unstable-<feature>` for each unstable API `program` uses. */
export function unstableArgs(program: Program): string[] {
  return (UNSTABLE[program] ?? []).map((f) => `--unstable-${f}`);
}

/** `--v8-flags=...` for `program`, or nothing. */
export function v8FlagsArgs(program: Program): string[] {
  const flags = V8_FLAGS[program];
  return flags?.length ? [`--v8-flags=${flags.join(",")}`] : [];
}

/** The repository root (this file's directory); builds run here. */
export const ROOT: string = dirname(fileURLToPath(import.meta.url));

/** Name of the directory under the output directory that holds the stamp and import map. */
export const STAMP_DIR = ".stamp";

/** What to build and where. */
export interface PlanOptions {
  /** Programs to build (default: all). */
  programs?: readonly Program[];
  /** Targets to build for (default: all). */
  targets?: readonly Target[];
  /** Output directory, absolute or relative to {@linkcode ROOT} (default `dist`). */
  out?: string;
}

/** One `deno compile` invocation. */
export interface Build {
  /** Program built. */
  program: Program;
  /** Target platform. */
  target: Target;
  /** Entry module, relative to {@linkcode ROOT}. */
  entry: string;
  /** Output executable, relative to {@linkcode ROOT} when inside it. */
  output: string;
  /** Arguments after `deno` (run from {@linkcode ROOT}). */
  args: string[];
}

/** A user error: printed as `Error: <message>` with a usage hint, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Returns the executable's file name: `<program>-<target>`, plus `.exe` for Windows targets. */
export function outputName(program: Program, target: Target): string {
  return `${program}-${target}${target.includes("windows") ? ".exe" : ""}`;
}

/** Shows a path relative to {@linkcode ROOT} when it lies inside it, else absolute. */
function displayPath(path: string): string {
  const abs = resolve(ROOT, path);
  const rel = relative(ROOT, abs);
  return rel === "" ? "." : rel.startsWith("..") || isAbsolute(rel) ? abs : rel;
}

/** The output directory as shown in commands (relative to {@linkcode ROOT} when inside it). */
export function outDir(out = "dist"): string {
  return displayPath(out);
}

/** Path of the generated import map for an output directory. */
export function importMapPath(out = "dist"): string {
  return join(outDir(out), STAMP_DIR, "import_map.json");
}

/**
 * Lists the builds, programs major, targets minor, each with its exact `deno` arguments.
 *
 * @example
 * ```ts
 * import { planBuilds } from "./compile.ts";
 * import assert from "node:assert/strict";
 *
 * const [b] = planBuilds({ programs: ["meshctl"], targets: ["x86_64-pc-windows-msvc"] });
 * assert.equal(b.output, "dist/meshctl-x86_64-pc-windows-msvc.exe");
 * ```
 */
export function planBuilds(options: PlanOptions = {}): Build[] {
  const programs = options.programs ?? PROGRAMS;
  const targets = options.targets ?? TARGETS;
  const dir = outDir(options.out);
  const importMap = importMapPath(options.out);
  const builds: Build[] = [];
  for (const program of programs) {
    for (const target of targets) {
      const entry = `cli/${program}.ts`;
      const output = join(dir, outputName(program, target));
      builds.push({
        program,
        target,
        entry,
        output,
        args: [
          "compile",
          "-A",
          "--target",
          target,
          "--output",
          output,
          "--import-map",
          importMap,
          ...INCLUDES[program].flatMap((f) => ["--include", f]),
          ...unstableArgs(program),
          ...v8FlagsArgs(program),
          entry,
        ],
      });
    }
  }
  return builds;
}

/**
 * The stamp as `--dry-run` prints it before the commands: shell comment lines, so the plan
 * stays a runnable script.
 */
export function formatStamp(stamp: Stamp): string {
  return `# version: ${stamp.version}\n# git revision: ${stamp.gitRevision}\n` +
    `# build time: ${stamp.buildTime}\n`;
}

/** Formats `deno <args>` for a shell, quoting arguments that need it. */
export function formatCommand(args: readonly string[]): string {
  const quote = (a: string) => /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`;
  return ["deno", ...args].map(quote).join(" ");
}

/**
 * Parses a comma-separated list against the allowed values.
 * @throws {UsageError} Naming the flag, the unknown value and the allowed ones.
 */
export function parseList<T extends string>(
  flag: string,
  text: string,
  allowed: readonly T[],
): T[] {
  const items = text.split(",").map((s) => s.trim());
  if (items.some((s) => s === "")) {
    throw new UsageError(`Invalid ${flag} "${text}": empty item in the comma-separated list`);
  }
  for (const item of items) {
    if (!(allowed as readonly string[]).includes(item)) {
      throw new UsageError(
        `Invalid ${flag} "${text}": unknown value "${item}" (one of: ${allowed.join(", ")})`,
      );
    }
  }
  return [...new Set(items)] as T[];
}

const SEMVER_RE = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/**
 * Checks a release version such as `1.2.3` or `1.2.3-rc.1`.
 * @throws {UsageError} When it is not a semantic version.
 */
export function parseVersion(text: string): string {
  if (!SEMVER_RE.test(text)) {
    throw new UsageError(
      `Invalid --version "${text}": expected a semantic version such as 1.2.3 (no "v" prefix)`,
    );
  }
  return text;
}

/**
 * Returns why a Deno version may not build releases, or null when it may.
 *
 * @param version The running Deno version.
 * @param allowAny `--allow-any-deno`: accept any version.
 */
export function runtimeProblem(version: string, allowAny: boolean): string | null {
  if (allowAny || isPinnedDeno(version)) return null;
  return `compile.ts requires Deno ${PINNED_DENO} exactly, but this is Deno ${version} ` +
    `(install it with "npm i -g deno@${PINNED_DENO}", or pass --allow-any-deno)`;
}

/**
 * Explains a failed `deno compile` when the cause is known: the download of the denort runtime
 * for the target failed (no network access to Deno's download host).
 *
 * @param stderr What `deno compile` wrote to stderr.
 * @param target The target being built.
 * @returns A one-line message, or null when the failure has another cause.
 */
export function explainCompileFailure(stderr: string, target: string): string | null {
  // deno compile: "error sending request for url (https://dl.deno.land/release/v2.7.14/
  // denort-<target>.zip): client error (Connect): dns error: ..."
  // Strip terminal colours (ESC [ ... m).
  const text = stderr.replaceAll(new RegExp(String.fromCharCode(27) + "\\[[0-9;]*m", "g"), "");
  const download = /(?:error sending request for url|Download)[^\n]*denort-[\w-]+\.zip/.test(text);
  const network =
    /client error|dns error|failed to lookup|Connect|connection (?:refused|reset)|timed out|certificate|tls/i
      .test(text);
  if (!download || !network) return null;
  return `the download of the denort runtime for ${target} failed: no network access to ` +
    `Deno's download host (dl.deno.land); set DENORT_BIN or place denort-${target}.zip in ` +
    `$DENO_DIR/dl/release/v${Deno.version.deno}/`;
}

/** The import map used for stamped builds: deno.json's mappings plus the stamp redirect. */
export async function stampImportMap(stampDir: string): Promise<string> {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))) as {
    imports?: Record<string, string>;
    scopes?: Record<string, Record<string, string>>;
  };
  const versionDir = pathToFileURL(join(ROOT, "lib", "version") + "/").href;
  const stampUrl = pathToFileURL(join(stampDir, "stamp.ts")).href;
  const map = {
    imports: {
      ...config.imports,
      // lib/version/stamp.ts -> the stamped copy; the copy's own relative imports
      // (./types.ts) resolve back into lib/version/.
      [new URL("stamp.ts", versionDir).href]: stampUrl,
      [pathToFileURL(stampDir + "/").href]: versionDir,
    },
    ...(config.scopes ? { scopes: config.scopes } : {}),
  };
  return JSON.stringify(map, null, 2) + "\n";
}

/**
 * Writes `stamp.ts` (rendered by `renderStamp`) and `import_map.json` (see
 * {@linkcode stampImportMap}) into `stampDir`, creating it. With
 * `--import-map <stampDir>/import_map.json`, `deno run` and `deno compile` see the stamp.
 */
export async function writeStampFiles(stampDir: string, stamp: Stamp): Promise<void> {
  await Deno.mkdir(stampDir, { recursive: true });
  await Deno.writeTextFile(join(stampDir, "stamp.ts"), renderStamp(stamp));
  await Deno.writeTextFile(join(stampDir, "import_map.json"), await stampImportMap(stampDir));
}

/**
 * Returns the git revision of `HEAD` in {@linkcode ROOT} (with `-dirty` when the checkout has
 * uncommitted changes), or `unknown`.
 */
export function gitRevision(): Promise<string> {
  return Promise.resolve(checkoutRevision(ROOT));
}

/** Build time in RFC 3339 UTC, to the second. */
function buildTime(now = new Date()): string {
  return now.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Options of {@linkcode compileAll}. */
export interface CompileOptions {
  /** Output directory (as in {@linkcode PlanOptions}). */
  out?: string;
  /** The stamp to embed. */
  stamp: Stamp;
  /** Progress lines (one per finished build). */
  log: (line: string) => void;
  /** Environment of `deno compile` (default: this process's, e.g. DENORT_BIN, DENO_DIR). */
  env?: Record<string, string>;
}

/** Removes the `<output>.tmp-<hash>` file deno compile leaves behind when it fails. */
async function removePartialOutput(output: string): Promise<void> {
  const abs = resolve(ROOT, output);
  const name = basename(abs);
  try {
    for await (const entry of Deno.readDir(dirname(abs))) {
      if (entry.isFile && entry.name.startsWith(`${name}.tmp-`)) {
        await Deno.remove(join(dirname(abs), entry.name));
      }
    }
  } catch { /* nothing to clean */ }
}

/** A failed build. */
export class CompileError extends Error {
  override name = "CompileError";
}

/**
 * Runs the builds one after the other, stopping at the first failure. The stamp directory is
 * created before and removed after, whatever happens.
 *
 * @throws {CompileError} With a one-line explanation when `deno compile` fails.
 */
export async function compileAll(builds: readonly Build[], options: CompileOptions): Promise<void> {
  const out = resolve(ROOT, outDir(options.out));
  const stampDir = join(out, STAMP_DIR);
  const outExisted = await Deno.stat(out).then(() => true, () => false);
  try {
    await writeStampFiles(stampDir, options.stamp);
    for (const build of builds) {
      const env = options.env ?? Deno.env.toObject();
      const result = await new Deno.Command(Deno.execPath(), {
        args: build.args,
        cwd: ROOT,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        clearEnv: true,
        env: {
          ...env,
          NO_COLOR: "1",
          RUST_BACKTRACE: "0",
          // Deno 2.7.14's compile overflows the 2 MiB stack of its worker threads while
          // embedding prom-client@15.1.3 ("thread 'tokio-runtime-worker' has overflowed its
          // stack"); 8 MiB is enough, 64 MiB leaves a margin.
          RUST_MIN_STACK: env.RUST_MIN_STACK ?? String(64 * 1024 * 1024),
        },
      }).output();
      if (!result.success) {
        await removePartialOutput(build.output);
        const stderr = new TextDecoder().decode(result.stderr);
        const known = explainCompileFailure(stderr, build.target);
        if (known !== null) throw new CompileError(known);
        throw new CompileError(
          `deno compile of ${build.entry} for ${build.target} failed (exit code ${result.code}):\n` +
            stderr.trimEnd(),
        );
      }
      options.log(`Compiled ${build.output}`);
    }
  } finally {
    await Deno.remove(stampDir, { recursive: true }).catch(() => {});
    // Don't leave an empty output directory behind when nothing was built.
    if (!outExisted) await Deno.remove(out).catch(() => {});
  }
}

const USAGE_HINT = "Run 'deno run -A compile.ts --help' for usage.";

/**
 * The command line: parses `args`, prints to `stdout`/`stderr` and returns the exit code
 * (0 success, 1 failure, 2 usage error). Exposed for tests.
 */
export async function main(
  args: readonly string[],
  io: { stdout: (s: string) => void; stderr: (s: string) => void },
): Promise<number> {
  const cmd = new Command()
    .name("compile.ts")
    .usage("[flags]")
    .description(
      `Compiles mesh's programs with deno compile (Deno ${PINNED_DENO} required).\n` +
        `Programs: ${PROGRAMS.join(", ")}\nTargets: ${TARGETS.join(", ")}`,
    )
    .addOption(new Option("--programs <list>", "comma-separated programs to build (default: all)"))
    .addOption(new Option("--targets <list>", "comma-separated targets (default: all)"))
    .option("--out <dir>", "output directory", "dist")
    .option("--version <version>", "version to stamp (default: VERSION of lib/version)")
    .option(
      "--dry-run",
      "print the plan (the stamp values, then one deno command per build) and exit",
    )
    .option("--allow-any-deno", `build with a Deno other than ${PINNED_DENO}`)
    .helpOption("-h, --help", "show this help")
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: () => {} });

  let opts;
  try {
    opts = cmd.parse([...args], { from: "user" }).opts();
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return 0; // --help
      const message = err.message.replace(/^error: /, "");
      io.stderr(`Error: ${message[0].toUpperCase()}${message.slice(1)}\n${USAGE_HINT}\n`);
      return 2;
    }
    throw err;
  }

  let plan: Build[];
  let version: string;
  try {
    const programs = opts.programs === undefined
      ? undefined
      : parseList("--programs", opts.programs, PROGRAMS);
    const targets = opts.targets === undefined
      ? undefined
      : parseList("--targets", opts.targets, TARGETS);
    if (opts.out.trim() === "") throw new UsageError(`Invalid --out "": must not be empty`);
    version = parseVersion(opts.version ?? VERSION);
    plan = planBuilds({ programs, targets, out: opts.out });
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`Error: ${err.message}\n${USAGE_HINT}\n`);
      return 2;
    }
    throw err;
  }

  const problem = runtimeProblem(Deno.version.deno, opts.allowAnyDeno === true);
  if (problem !== null) {
    io.stderr(`Error: ${problem}\n`);
    return 1;
  }

  const stamp: Stamp = { version, gitRevision: await gitRevision(), buildTime: buildTime() };
  if (opts.dryRun) {
    io.stdout(formatStamp(stamp) + plan.map((b) => formatCommand(b.args) + "\n").join(""));
    return 0;
  }

  try {
    await compileAll(plan, { out: opts.out, stamp, log: (line) => io.stdout(line + "\n") });
  } catch (err) {
    if (err instanceof CompileError) {
      io.stderr(`Error: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  return 0;
}

/** Writes all of `text` to a file synchronously (keeps output ordered). */
function writeAllSync(file: { writeSync(p: Uint8Array): number }, text: string): void {
  let bytes = new TextEncoder().encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(file.writeSync(bytes));
}

if (import.meta.main) {
  Deno.exitCode = await main(Deno.args, {
    stdout: (s) => writeAllSync(Deno.stdout, s),
    stderr: (s) => writeAllSync(Deno.stderr, s),
  });
}

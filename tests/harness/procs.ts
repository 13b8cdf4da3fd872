/**
 * Process helpers for end-to-end tests: run a mesh program (`deno run -A cli/<program>.ts`) with
 * its output collected, wait for output with a deadline, stop it (SIGTERM, then SIGKILL), pick a
 * free port, and use a temp directory that is always removed.
 *
 * @example
 * ```ts
 * import { spawnProgram } from "./procs.ts";
 *
 * await using proc = spawnProgram("mesh-discovery", ["--port", "0"]);
 * await proc.waitFor(/listening on/, 10_000);
 * const status = await proc.stop();
 * ```
 *
 * @module
 */

import { freeServerPort } from "../../lib/net/mod.ts";
import { PROGRAMS, v8FlagsArgs } from "../../compile.ts";

const REPO_ROOT = new URL("../../", import.meta.url);

/** Options for {@linkcode spawnProgram} and {@linkcode runProgram}. */
export interface SpawnOptions {
  /** Extra environment variables (merged over the current environment unless `clearEnv`). */
  env?: Record<string, string>;
  /** Start from an empty environment (plus `env`, `PATH`, `HOME` and `DENO_*`). */
  clearEnv?: boolean;
  /** Working directory (default: the repository root). */
  cwd?: string;
  /**
   * Arguments for `deno run` before the script (default `["-A"]`, and for a program of `cli/` the
   * V8 flags it is built with: compile.ts `V8_FLAGS`).
   */
  denoArgs?: string[];
  /** Text written to the program's standard input, which is then closed (default: no stdin). */
  stdin?: string;
  /** The program's open-file limit (`ulimit -n`, through `/bin/sh`; default: this process's). */
  fileLimit?: number;
}

/** Which output a {@linkcode ProgramProcess.waitFor} looks at. */
export type OutputStream = "stdout" | "stderr" | "both";

/** A running program started by {@linkcode spawnProgram}. */
export interface ProgramProcess {
  /** The program name or script path it was started with. */
  readonly program: string;
  /** Process id. */
  readonly pid: number;
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** stdout and stderr interleaved in arrival order. */
  output(): string;
  /**
   * Resolves once the output matches: a RegExp (resolves with the match), a substring (resolves
   * with it) or a predicate over the output text (resolves with the whole text). Rejects when the
   * deadline passes or the program exits first; the error quotes the output's tail.
   */
  waitFor(
    match: RegExp | string | ((output: string) => boolean),
    timeoutMs?: number,
    stream?: OutputStream,
  ): Promise<string>;
  /** Settles when the program has exited and its output has been read to the end. */
  readonly status: Promise<Deno.CommandStatus>;
  /** True once the program has exited. */
  readonly exited: boolean;
  /** Sends a signal (default SIGTERM) unless the program already exited. */
  kill(signal?: Deno.Signal): void;
  /**
   * Sends SIGTERM, waits up to `graceMs` (default 5000) for the exit, then SIGKILL; resolves
   * with the exit status. Safe to call after the program exited or more than once.
   */
  stop(graceMs?: number): Promise<Deno.CommandStatus>;
  /** Same as `stop()`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Result of {@linkcode runProgram}. */
export interface ProgramResult {
  /** Exit code. */
  code: number;
  /** Signal that ended the program, or null. */
  signal: Deno.Signal | null;
  /** Collected stdout. */
  stdout: string;
  /** Collected stderr. */
  stderr: string;
}

/**
 * Resolves a program name to its script: a bare name such as `meshctl` means
 * `<repo>/cli/meshctl.ts`; anything containing `/` or ending in `.ts` is used as given
 * (a path relative to the working directory, an absolute path or a URL).
 */
export function programScript(program: string): string {
  if (program === "") throw new TypeError('spawnProgram: "program" must not be empty');
  if (program.includes("/") || program.endsWith(".ts")) return program;
  return new URL(`cli/${program}.ts`, REPO_ROOT).pathname;
}

/**
 * `deno run`'s arguments before `script` when the caller gives none: `-A`, and when the script is
 * one of the programs (`<repo>/cli/<program>.ts`) the V8 flags its executable is built with, so
 * that tests run it as users do.
 */
export function defaultDenoArgs(script: string): string[] {
  const cli = new URL("cli/", REPO_ROOT).pathname;
  const name = script.startsWith(cli) ? script.slice(cli.length, -".ts".length) : "";
  const program = PROGRAMS.find((p) => p === name);
  return ["-A", ...(program ? v8FlagsArgs(program) : [])];
}

function environment(opts: SpawnOptions): Record<string, string> | undefined {
  if (!opts.clearEnv) return opts.env;
  const keep: Record<string, string> = {};
  for (const [k, v] of Object.entries(Deno.env.toObject())) {
    if (k === "PATH" || k === "HOME" || k.startsWith("DENO_")) keep[k] = v;
  }
  return { ...keep, ...opts.env };
}

function tail(text: string, max = 2000): string {
  return text.length <= max ? text : `...${text.slice(-max)}`;
}

/**
 * Starts `deno run -A <script> ...args` for a mesh program with stdout and stderr piped into
 * buffers. Always end it with `stop()` (or `await using`) so no process outlives the test.
 */
export function spawnProgram(
  program: string,
  args: string[] = [],
  opts: SpawnOptions = {},
): ProgramProcess {
  const script = programScript(program);
  const run = ["run", ...(opts.denoArgs ?? defaultDenoArgs(script)), script, ...args];
  const limited = opts.fileLimit !== undefined;
  const child = new Deno.Command(limited ? "/bin/sh" : Deno.execPath(), {
    args: limited
      ? ["-c", `ulimit -n ${opts.fileLimit} && exec "$0" "$@"`, Deno.execPath(), ...run]
      : run,
    cwd: opts.cwd ?? REPO_ROOT.pathname,
    env: environment(opts),
    clearEnv: opts.clearEnv ?? false,
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();

  let out = "";
  let err = "";
  let both = "";
  let exited = false;
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const l of [...listeners]) l();
  };

  const pump = async (stream: ReadableStream<Uint8Array>, which: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      const text = decoder.decode(chunk, { stream: true });
      if (which === "stdout") out += text;
      else err += text;
      both += text;
      notify();
    }
    const rest = decoder.decode();
    if (which === "stdout") out += rest;
    else err += rest;
    both += rest;
  };

  if (opts.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    writer.write(new TextEncoder().encode(opts.stdin)).then(() => writer.close()).catch(() => {});
  }

  const status = Promise.all([
    child.status,
    pump(child.stdout, "stdout"),
    pump(child.stderr, "stderr"),
  ])
    .then(([s]) => {
      exited = true;
      notify();
      return s;
    });

  const textOf = (
    stream: OutputStream,
  ) => (stream === "stdout" ? out : stream === "stderr" ? err : both);

  const proc: ProgramProcess = {
    program,
    pid: child.pid,
    stdout: () => out,
    stderr: () => err,
    output: () => both,
    status,
    get exited() {
      return exited;
    },
    waitFor(match, timeoutMs = 10_000, stream = "both") {
      const test = (): string | undefined => {
        const text = textOf(stream);
        if (typeof match === "string") return text.includes(match) ? match : undefined;
        if (match instanceof RegExp) return text.match(match)?.[0];
        return match(text) ? text : undefined;
      };
      return new Promise<string>((resolve, reject) => {
        const finish = (fn: () => void) => {
          listeners.delete(check);
          clearTimeout(timer);
          fn();
        };
        const check = () => {
          const hit = test();
          if (hit !== undefined) return finish(() => resolve(hit));
          if (exited) {
            finish(() =>
              reject(
                new Error(
                  `${program} exited before its ${stream} matched ${String(match)}; output:\n${
                    tail(both)
                  }`,
                ),
              )
            );
          }
        };
        const timer = setTimeout(() =>
          finish(() =>
            reject(
              new Error(
                `${program}: ${stream} did not match ${
                  String(match)
                } within ${timeoutMs} ms; output:\n${tail(both)}`,
              ),
            )
          ), timeoutMs);
        listeners.add(check);
        check();
      });
    },
    kill(signal = "SIGTERM") {
      if (exited) return;
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    },
    async stop(graceMs = 5000) {
      if (!exited) {
        proc.kill("SIGTERM");
        let timer: number | undefined;
        const timedOut = await Promise.race([
          status.then(() => false),
          new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
        ]);
        clearTimeout(timer);
        if (timedOut) proc.kill("SIGKILL");
      }
      return await status;
    },
    async [Symbol.asyncDispose]() {
      await proc.stop();
    },
  };
  return proc;
}

/**
 * Runs a mesh program to completion (e.g. a `meshctl` command) and returns its exit code and
 * output. Kills it and throws when it runs longer than `timeoutMs` (default 30000).
 */
export async function runProgram(
  program: string,
  args: string[] = [],
  opts: SpawnOptions & { timeoutMs?: number } = {},
): Promise<ProgramResult> {
  const proc = spawnProgram(program, args, opts);
  const timeoutMs = opts.timeoutMs ?? 30_000;
  let timer: number | undefined;
  const timedOut = await Promise.race([
    proc.status.then(() => false),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(true), timeoutMs))),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    await proc.stop(1000);
    throw new Error(
      `${program} ${args.join(" ")} did not exit within ${timeoutMs} ms; output:\n${
        tail(proc.output())
      }`,
    );
  }
  const s = await proc.status;
  return { code: s.code, signal: s.signal, stdout: proc.stdout(), stderr: proc.stderr() };
}

export { freeServerPort };

/**
 * Returns a TCP port that was free on every address a moment ago, below the ephemeral range (see
 * {@link freeServerPort}: no outgoing connection can take it meanwhile). Prefer letting servers
 * bind port 0 themselves; use this only for programs that need a port number up front.
 */
export function freePort(): number {
  return freeServerPort();
}

/**
 * Holds a free port of 127.0.0.1 with a listener that allows sharing it (SO_REUSEPORT), as another
 * program's workers would, until `close()`: a server that must not share it has to refuse it.
 */
export async function holdSharablePort(): Promise<{ port: number; close(): Promise<void> }> {
  const net = await import("node:net");
  const held = net.createServer();
  await new Promise<void>((r) =>
    held.listen({ port: 0, host: "127.0.0.1", reusePort: true } as { port: number }, () => r())
  );
  return {
    port: (held.address() as { port: number }).port,
    close: () => new Promise<void>((r) => held.close(() => r())),
  };
}

/** Runs `fn` with a fresh temp directory that is removed afterwards, even when `fn` throws. */
export async function withTempDir<T>(
  fn: (dir: string) => T | Promise<T>,
  prefix = "mesh-test-",
): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/**
 * Polls `predicate` every `intervalMs` (default 20) until it returns true; throws an Error naming
 * `what` when `timeoutMs` (default 10000) passes first. Errors thrown by the predicate count as
 * "not yet" and the last one is reported.
 */
export async function waitUntil(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = "condition",
  intervalMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (true) {
    try {
      if (await predicate()) return;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline) {
      const why = last instanceof Error ? `: last error: ${last.message}` : "";
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

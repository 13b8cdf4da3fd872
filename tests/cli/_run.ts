/**
 * Test helpers: run a program in-process through runCli with captured output, or as a real
 * subprocess (`deno run -A cli/<program>.ts ...`).
 * @module
 */

import type { ProgramSpec } from "../../cli/_shared/command.ts";
import { runCli } from "../../cli/_shared/command.ts";
import type { CliContext } from "../../cli/_shared/context.ts";
import { program as meshAgent } from "../../cli/mesh-agent.ts";
import { program as meshDiscovery } from "../../cli/mesh-discovery.ts";
import { program as meshPolicy } from "../../cli/mesh-policy.ts";
import { program as meshCa } from "../../cli/mesh_ca.ts";
import { program as meshctl } from "../../cli/meshctl.ts";
import { program as sidecarInjector } from "../../cli/sidecar-injector.ts";

/** The six programs by name. */
export const PROGRAMS: Record<string, ProgramSpec> = {
  "mesh-discovery": meshDiscovery,
  "sidecar-injector": sidecarInjector,
  "mesh-agent": meshAgent,
  "mesh-policy": meshPolicy,
  meshctl,
  mesh_ca: meshCa,
};

/** Outcome of one run. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A context with captured output, a fixed environment and empty stdin. */
export function fakeContext(env: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const ctx: CliContext = {
    stdout: { write: (t) => Promise.resolve(void (stdout += t)) },
    stderr: { write: (t) => Promise.resolve(void (stderr += t)) },
    stdin: new ReadableStream({ start: (c) => c.close() }),
    env,
    cwd: "/",
    commandPath: [],
    waitForShutdown: () => new Promise(() => {}),
  };
  return { ctx, output: () => ({ stdout, stderr }) };
}

/** Runs `program` in-process with `args`. */
export async function runInProcess(
  program: ProgramSpec | string,
  args: string[],
  env: Record<string, string> = {},
): Promise<RunResult> {
  const spec = typeof program === "string" ? PROGRAMS[program] : program;
  const { ctx, output } = fakeContext(env);
  const code = await runCli(spec, args, ctx);
  return { code, ...output() };
}

const ROOT = new URL("../../", import.meta.url);

/** Runs `deno run -A cli/<program>.ts ...args` as a subprocess. */
export async function runProgram(
  program: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<RunResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `cli/${program}.ts`, ...args],
    cwd: ROOT,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * The demo's way of running the mesh's own programs (`deno run -A cli/<program>.ts`): long-running
 * ones with their output collected and a deadline-bound wait for a line, one-shot ones (meshctl)
 * with their exit code and output.
 * @module
 */

const REPO = new URL("../../", import.meta.url);

/** Path of a program's entry point (`meshctl` → `<repo>/cli/meshctl.ts`). */
export function programPath(program: string): string {
  return new URL(`cli/${program}.ts`, REPO).pathname;
}

/** A long-running program. */
export interface Running {
  readonly program: string;
  /** stdout and stderr so far, in arrival order. */
  output(): string;
  /** Resolves with the first match of `re` in the output; rejects at the deadline or exit. */
  waitFor(re: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  /** SIGTERM, then SIGKILL after 5 s; resolves once it exited. */
  stop(): Promise<void>;
}

/** Starts `program` with `args` (and extra environment). */
export function start(program: string, args: string[], env: Record<string, string> = {}): Running {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", programPath(program), ...args],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  let exited = false;
  const waiters = new Set<() => void>();
  const wake = () => waiters.forEach((w) => w());
  const pump = async (s: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder();
    for await (const chunk of s) {
      text += dec.decode(chunk, { stream: true });
      wake();
    }
  };
  const done = Promise.all([child.status, pump(child.stdout), pump(child.stderr)]).then(() => {
    exited = true;
    wake();
  });
  return {
    program,
    output: () => text,
    waitFor(re, timeoutMs) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(), timeoutMs);
        const tail = () => text.split("\n").slice(-8).join("\n");
        const finish = () => {
          const m = re.exec(text);
          if (!m && !exited && Date.now() < deadline) return;
          clearTimeout(timer);
          waiters.delete(finish);
          if (m) resolve(m);
          else {
            reject(
              new Error(
                `${program} ${exited ? "exited" : `printed no ${re} within ${timeoutMs} ms`}; ` +
                  `its output ends:\n${tail()}`,
              ),
            );
          }
        };
        const deadline = Date.now() + timeoutMs;
        waiters.add(finish);
        finish();
      });
    },
    async stop() {
      if (!exited) {
        try {
          child.kill("SIGTERM");
        } catch { /* already gone */ }
        const t = setTimeout(() => {
          try {
            child.kill("SIGKILL");
          } catch { /* already gone */ }
        }, 5000);
        await done;
        clearTimeout(t);
      }
      await done;
    },
  };
}

/** The outcome of a one-shot program. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `program` to its end, with `stdin` as standard input when given. */
export async function run(program: string, args: string[], stdin?: string): Promise<RunResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", programPath(program), ...args],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** A port free on a host now (for programs whose port 0 means "off"). */
export { freePort } from "../../lib/net/mod.ts";

/**
 * What a command action gets besides its options: output writers, standard input, the
 * environment (read once), and a way to wait for SIGINT/SIGTERM. Tests pass fakes.
 * @module
 */

/** A text output (stdout or stderr). */
export interface TextSink {
  /** Writes all of `text`. */
  write(text: string): Promise<void>;
}

/** Everything a command action may touch outside its options. */
export interface CliContext {
  /** Results only. */
  readonly stdout: TextSink;
  /** Diagnostics and errors. */
  readonly stderr: TextSink;
  /** Standard input (for `-f -`). */
  readonly stdin: ReadableStream<Uint8Array>;
  /** Environment variables, read once at start-up (`POD_NAMESPACE`, `KUBECONFIG`...). */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory at start-up. */
  readonly cwd: string;
  /** Command path being run, e.g. `["meshctl", "experimental", "rbac", "can"]` (set by the runner). */
  readonly commandPath: readonly string[];
  /**
   * The program's arguments exactly as given, without the program name (`Deno.args` for the
   * real process), e.g. `["--log_output_level", "debug", "discovery", "--port", "0"]`. Set by
   * the runner, so always present inside a command's `run`.
   */
  readonly args?: readonly string[];
  /**
   * Resolves with the signal name at the first SIGINT or SIGTERM received after the call
   * (servers: `await ctx.waitForShutdown(); await handle.shutdown();`). Listeners are removed
   * once it resolves.
   */
  waitForShutdown(): Promise<string>;
}

/** A user error (bad flag, bad value, wrong arguments): `Error: <message>`, usage hint, exit 2. */
export class UsageError extends Error {
  /** Creates a usage error; `commandPath` selects the `Run '<path> --help'` hint (the runner fills it). */
  constructor(message: string, readonly commandPath?: readonly string[]) {
    super(message);
    this.name = "UsageError";
  }
}

/** Writes all bytes to a Deno writer (stdout/stderr). */
async function writeAll(w: { write(p: Uint8Array): Promise<number> }, text: string) {
  let bytes = new TextEncoder().encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(await w.write(bytes));
}

/** The real context: process stdio, `Deno.env` (read now, once), the current directory, signals. */
export function processContext(): CliContext {
  return {
    stdout: { write: (t) => writeAll(Deno.stdout, t) },
    stderr: { write: (t) => writeAll(Deno.stderr, t) },
    stdin: Deno.stdin.readable,
    env: Object.freeze(Deno.env.toObject()),
    cwd: Deno.cwd(),
    commandPath: [],
    args: Object.freeze([...Deno.args]),
    waitForShutdown() {
      return new Promise((resolve) => {
        const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
        const handlers = signals.map((sig) => {
          const h = () => {
            for (const [s, fn] of handlers) Deno.removeSignalListener(s, fn);
            resolve(sig);
          };
          Deno.addSignalListener(sig, h);
          return [sig, h] as const;
        });
      });
    },
  };
}

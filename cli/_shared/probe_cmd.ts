/**
 * The `probe` subcommand (sidecar-injector, mesh-policy, mesh_ca): checks that the probe file
 * of a locally running server was updated recently, through lib/probe. Exit 0 when available,
 * 1 with `Error: <reason>` when not.
 * @module
 */

import { type CliContext, UsageError } from "./context.ts";

/** Checks `--probe-path` against `--interval`. */
export async function run(
  opts: { readonly probePath: string; readonly interval: number },
  _args: string[],
  _ctx: CliContext,
) {
  if (opts.probePath === "") throw new UsageError("Flag --probe-path is required");
  if (opts.interval < 0) throw new UsageError("Invalid value for --interval: must not be negative");
  const { checkProbe } = await import("../../lib/probe/mod.ts");
  const result = await checkProbe(opts.probePath, opts.interval);
  if (!result.ok) throw new Error(result.reason);
  return 0;
}

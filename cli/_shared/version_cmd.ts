/**
 * The `version` subcommand of every program: prints build version information (`--short`/`-s`
 * for the short form) through lib/version.
 * @module
 */

import type { CliContext } from "./context.ts";

/** Prints the version (long or short form) on stdout. */
export async function run(opts: { readonly short: boolean }, _args: string[], ctx: CliContext) {
  const { formatVersion, versionInfo } = await import("../../lib/version/mod.ts");
  const text = formatVersion(await versionInfo(), opts.short);
  await ctx.stdout.write(text.endsWith("\n") ? text : text + "\n");
  return 0;
}

/**
 * `mesh-policy server [flags]`: validates the flags, starts the policy server (servers/policy)
 * and runs until SIGINT/SIGTERM, then shuts down and exits 0.
 * @module
 */

import type { CliContext } from "../_shared/context.ts";
import { UsageError } from "../_shared/context.ts";
import type { ServerOptions } from "./flags.ts";

/** Runs the server. */
export async function run(opts: ServerOptions, _args: string[], _ctx: CliContext) {
  const policy = await import("../../servers/policy/mod.ts");
  const { runUntilSignal } = await import("../../lib/process/mod.ts");
  const { formatVersion, versionInfo } = await import("../../lib/version/mod.ts");
  let config;
  try {
    config = policy.toConfig(opts);
  } catch (e) {
    if (e instanceof policy.ConfigError) throw new UsageError(e.message);
    throw e;
  }
  return await runUntilSignal(
    policy.start(config, { versionText: formatVersion(versionInfo(), false) }),
  );
}

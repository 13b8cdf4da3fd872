/**
 * `sidecar-injector [flags]`: validates the flags, starts the webhook server
 * (servers/injector) and runs until SIGINT/SIGTERM, then shuts down and exits 0.
 * @module
 */

import type { CliContext } from "../_shared/context.ts";
import { UsageError } from "../_shared/context.ts";
import type { ServerOptions } from "./flags.ts";

/** Runs the webhook server. */
export async function run(opts: ServerOptions, _args: string[], ctx: CliContext) {
  const injector = await import("../../servers/injector/mod.ts");
  const { runUntilSignal } = await import("../../lib/process/mod.ts");
  let config;
  try {
    config = injector.toConfig(opts, { KUBERNETES_SERVICE_HOST: ctx.env.KUBERNETES_SERVICE_HOST });
  } catch (e) {
    if (e instanceof injector.ConfigError) throw new UsageError(e.message);
    throw e;
  }
  return await runUntilSignal(injector.start(config));
}

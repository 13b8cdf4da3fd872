/**
 * `mesh-agent proxy [sidecar|router|ingress]`: validates the flags and the environment, writes
 * the proxy bootstrap and runs the proxy (servers/agent) until SIGINT/SIGTERM (drain, then exit
 * 0) or until the proxy keeps failing (exit 1). With `--proxyless` no proxy runs: the agent
 * writes the gRPC xDS bootstrap, keeps the certificate fresh and removes the bootstrap on
 * SIGINT/SIGTERM (exit 0).
 * @module
 */

import type { CliContext } from "../_shared/context.ts";
import { UsageError } from "../_shared/context.ts";
import type { ProxyOptions } from "./flags.ts";

/** Runs the proxy agent. */
export async function run(opts: ProxyOptions, args: string[], ctx: CliContext) {
  const agent = await import("../../servers/agent/mod.ts");
  const { runUntilSignal } = await import("../../lib/process/mod.ts");
  let config;
  try {
    config = agent.toConfig(opts, args[0], ctx.env);
  } catch (e) {
    if (e instanceof agent.ConfigError) throw new UsageError(e.message);
    throw e;
  }
  const handle = config.proxyless ? await agent.startProxyless(config) : await agent.start(config);
  return await Promise.race([runUntilSignal(handle), handle.failed]);
}

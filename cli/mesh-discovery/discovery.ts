/**
 * `mesh-discovery discovery`: validates the flags, starts the discovery server
 * (servers/discovery) and runs until SIGINT/SIGTERM, then shuts down and exits 0.
 * @module
 */

import type { CliContext } from "../_shared/context.ts";
import { UsageError } from "../_shared/context.ts";
import type { DiscoveryOptions } from "./flags.ts";

function hostname(): string {
  try {
    return Deno.hostname();
  } catch {
    return "";
  }
}

/** Runs the discovery server. */
export async function run(opts: DiscoveryOptions, _args: string[], ctx: CliContext) {
  const { goawayWarning } = await import("../../lib/runtime/mod.ts");
  const warning = goawayWarning();
  if (warning) await ctx.stderr.write(warning + "\n");
  const discovery = await import("../../servers/discovery/mod.ts");
  const { runUntilSignal } = await import("../../lib/process/mod.ts");
  let config;
  try {
    config = discovery.toConfig(opts, {
      POD_NAMESPACE: ctx.env.POD_NAMESPACE,
      POD_NAME: ctx.env.POD_NAME,
      HOSTNAME: ctx.env.HOSTNAME || hostname(),
      MESH_CERT_DIR: ctx.env.MESH_CERT_DIR,
      KUBERNETES_SERVICE_HOST: ctx.env.KUBERNETES_SERVICE_HOST,
      KUBERNETES_SERVICE_PORT: ctx.env.KUBERNETES_SERVICE_PORT,
      MESH_MOCK_PORT_OFFSET: ctx.env.MESH_MOCK_PORT_OFFSET,
    });
  } catch (e) {
    if (e instanceof discovery.ConfigError) throw new UsageError(e.message);
    throw e;
  }
  const { certs, reason } = config.secureGrpcAddr
    ? await discovery.readMeshCerts(config.certDir)
    : { certs: null, reason: "" };
  // Signals are handled from before start() so one that arrives while it starts still ends in
  // a clean shutdown.
  return await runUntilSignal(discovery.start(config, {
    certs,
    certsMissingReason: reason,
    args: [...(ctx.args ?? [])],
  }));
}

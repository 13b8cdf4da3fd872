/**
 * `mesh_ca [flags]`: validates the flags, starts the certificate authority (servers/ca) and runs
 * until SIGINT/SIGTERM, then shuts down and exits 0.
 * @module
 */

import type { CliContext } from "../_shared/context.ts";
import { UsageError } from "../_shared/context.ts";
import type { ServerOptions } from "./flags.ts";

/** Runs the CA. */
export async function run(opts: ServerOptions, _args: string[], ctx: CliContext) {
  const ca = await import("../../servers/ca/mod.ts");
  const { runUntilSignal } = await import("../../lib/process/mod.ts");
  const { formatVersion, versionInfo } = await import("../../lib/version/mod.ts");
  let config;
  try {
    config = ca.toConfig(opts, {
      NAMESPACE: ctx.env.NAMESPACE,
      KUBERNETES_SERVICE_HOST: ctx.env.KUBERNETES_SERVICE_HOST,
      MESH_CA_UPSTREAM_TOKEN_FILE: ctx.env.MESH_CA_UPSTREAM_TOKEN_FILE,
      MESH_CA_LIBCRYPTO: ctx.env.MESH_CA_LIBCRYPTO,
    });
  } catch (e) {
    if (e instanceof ca.ConfigError) throw new UsageError(e.message);
    throw e;
  }
  return await runUntilSignal(
    ca.start(config, { versionText: formatVersion(versionInfo(), false) }),
  );
}

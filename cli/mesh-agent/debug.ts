/**
 * `mesh-agent debug <configuration-type>`: prints one kind of the local proxy's configuration
 * from its admin port (`$MESH_AGENT_ADMIN_ADDRESS`, default `127.0.0.1:15000`) or, for
 * `static`, the files in `$MESH_AGENT_CONFIG_PATH` (default `/etc/mesh/proxy`).
 * @module
 */

import { type CliContext, UsageError } from "../_shared/context.ts";
import type { CommonOptions } from "./flags.ts";

/** Admin address used unless `MESH_AGENT_ADMIN_ADDRESS` is set. */
export const DEFAULT_ADMIN_ADDRESS = "127.0.0.1:15000";
/** Generated-configuration directory used unless `MESH_AGENT_CONFIG_PATH` is set. */
export const DEFAULT_CONFIG_PATH = "/etc/mesh/proxy";

/** Runs `debug`. */
export async function run(_opts: CommonOptions, args: string[], ctx: CliContext) {
  const admin = await import("../../lib/proxyadmin/mod.ts");
  let type;
  try {
    type = admin.checkProxyConfigType(args[0]);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const addr = ctx.env.MESH_AGENT_ADMIN_ADDRESS || DEFAULT_ADMIN_ADDRESS;
  const dir = ctx.env.MESH_AGENT_CONFIG_PATH || DEFAULT_CONFIG_PATH;
  let sections;
  try {
    sections = await admin.proxyConfig(addr, type, { staticDir: dir });
  } catch (e) {
    // a proxyless agent runs no proxy: say so instead of "cannot reach the admin port"
    const { GRPC_BOOTSTRAP_FILE } = await import("../../lib/xds/grpc_bootstrap.ts");
    const bootstrap = `${dir}/${GRPC_BOOTSTRAP_FILE}`;
    const proxyless = await Deno.stat(bootstrap).then(() => true, () => false);
    if (!proxyless || type === "static") throw e;
    throw new Error(
      `${(e as Error).message} (the agent in ${dir} runs --proxyless: there is no proxy; ` +
        `"mesh-agent debug static" prints its gRPC bootstrap ${bootstrap})`,
    );
  }
  // the test stand-in's canned answers are not a proxy's state: say so
  const warning = admin.standinWarning(addr, sections);
  if (warning) await ctx.stderr.write(warning);
  await ctx.stdout.write(admin.formatSections(sections));
  return 0;
}

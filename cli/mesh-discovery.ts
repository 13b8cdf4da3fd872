/**
 * mesh-discovery: fleet-wide traffic management. Discovers services from platform registries
 * and serves proxy discovery data over HTTP and gRPC.
 *
 * `deno run -A cli/mesh-discovery.ts <command> [flags]`
 * @module
 */

import { command, type ProgramSpec, runCli } from "./_shared/command.ts";
import { processContext } from "./_shared/context.ts";
import { LOG_SCOPES, versionCommand } from "./_shared/groups.ts";
import { common, discoveryFlags } from "./mesh-discovery/flags.ts";

/** The command tree of mesh-discovery. */
export const program: ProgramSpec = {
  name: "mesh-discovery",
  logScopes: LOG_SCOPES["mesh-discovery"],
  root: command({
    name: "mesh-discovery",
    summary: "Mesh discovery: fleet-wide traffic management.",
    groups: common,
    subcommands: [
      command({
        name: "debug",
        summary: "Retrieves the configuration of the specified proxy.",
        args: ["<proxyID>", "<configuration-type>"],
        groups: common,
        load: () => import("./mesh-discovery/debug.ts"),
      }),
      command({
        name: "discovery",
        summary: "Starts the proxy discovery service.",
        flags: discoveryFlags,
        groups: common,
        load: () => import("./mesh-discovery/discovery.ts"),
      }),
      versionCommand(...common),
    ],
  }),
};

if (import.meta.main) Deno.exit(await runCli(program, Deno.args, processContext()));

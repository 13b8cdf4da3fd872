/**
 * mesh-discovery: fleet-wide traffic management. Discovers services from platform registries
 * and serves proxy discovery data over HTTP and gRPC.
 *
 * `deno run -A cli/mesh-discovery.ts <command> [flags]`
 * @module
 */

import { lazyCommand } from "./_shared/lazy.ts";
import { command, type ProgramSpec, runCli } from "./_shared/command.ts";
import { processContext } from "./_shared/context.ts";
import { LOG_SCOPES, versionCommand } from "./_shared/groups.ts";
import { common, debugFlags, discoveryFlags } from "./mesh-discovery/flags.ts";
import {
  DEBUG_TYPE_HELP,
  DEFAULT_DISCOVERY_ADDR,
  DISCOVERY_ADDR_ENV,
} from "./mesh-discovery/debug.ts";

/** What `debug --help` adds: the configuration types and the address it reads. */
const DEBUG_HELP = [
  "",
  "Arguments:",
  "  <proxyID>             a proxy's node id (sidecar~<ip>~<pod>.<ns>~<ns>.svc.cluster.local),",
  "                        or all for every proxy",
  "  <configuration-type>  one of:",
  ...Object.entries(DEBUG_TYPE_HELP).map(([t, h]) => `    ${t.padEnd(6)} ${h}`),
  "",
  `Reads the monitoring port of a discovery instance: --discoveryAddress <host>:<port>, else`,
  `the environment variable ${DISCOVERY_ADDR_ENV}, else ${DEFAULT_DISCOVERY_ADDR}.`,
  "",
  "Example: mesh-discovery debug all ads",
].join("\n");

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
        flags: debugFlags,
        groups: common,
        helpAfter: DEBUG_HELP,
        load: lazyCommand<typeof import("./mesh-discovery/debug.ts")>(
          "./mesh-discovery/debug.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "discovery",
        summary: "Starts the proxy discovery service.",
        flags: discoveryFlags,
        groups: common,
        load: lazyCommand<typeof import("./mesh-discovery/discovery.ts")>(
          "./mesh-discovery/discovery.ts",
          import.meta.url,
        ),
      }),
      versionCommand(...common),
    ],
  }),
};

if (import.meta.main) Deno.exit(await runCli(program, Deno.args, processContext()));

/**
 * mesh-agent: runs in the sidecar or gateway container and bootstraps the proxy.
 *
 * `deno run -A cli/mesh-agent.ts <command> [flags]`
 * @module
 */

import { lazyCommand } from "./_shared/lazy.ts";
import { command, type ProgramSpec, runCli } from "./_shared/command.ts";
import { processContext } from "./_shared/context.ts";
import { LOG_SCOPES, versionCommand } from "./_shared/groups.ts";
import { logging, proxyFlags } from "./mesh-agent/flags.ts";

/** The command tree of mesh-agent. */
export const program: ProgramSpec = {
  name: "mesh-agent",
  logScopes: LOG_SCOPES["mesh-agent"],
  root: command({
    name: "mesh-agent",
    summary: "Mesh agent: bootstraps the proxy in the sidecar or gateway container.",
    groups: [logging],
    subcommands: [
      command({
        name: "debug",
        summary: "Debugs the local proxy: prints one kind of its configuration.",
        args: ["<configuration-type>"],
        groups: [logging],
        helpAfter: [
          "Types: clusters, listeners, routes, config_dump, static, all.",
          "The admin port is $MESH_AGENT_ADMIN_ADDRESS (default 127.0.0.1:15000); static prints",
          "the files in $MESH_AGENT_CONFIG_PATH (default /etc/mesh/proxy).",
        ].join("\n"),
        load: lazyCommand<typeof import("./mesh-agent/debug.ts")>(
          "./mesh-agent/debug.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "proxy",
        summary: "Proxy agent: generates the proxy bootstrap and runs the proxy.",
        // The role (sidecar, ingress, router) is an optional positional argument, default sidecar.
        args: ["[role]"],
        flags: proxyFlags,
        groups: [logging],
        load: lazyCommand<typeof import("./mesh-agent/proxy.ts")>(
          "./mesh-agent/proxy.ts",
          import.meta.url,
        ),
      }),
      versionCommand(logging),
    ],
  }),
};

if (import.meta.main) Deno.exit(await runCli(program, Deno.args, processContext()));

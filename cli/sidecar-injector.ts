/**
 * sidecar-injector: admission webhook of the orchestrator that injects the proxy sidecar.
 *
 * `deno run -A cli/sidecar-injector.ts [flags]` runs the webhook server.
 * @module
 */

import { lazyCommand } from "./_shared/lazy.ts";
import { command, type ProgramSpec, runCli } from "./_shared/command.ts";
import { processContext } from "./_shared/context.ts";
import { LOG_SCOPES, probeCommand, versionCommand } from "./_shared/groups.ts";
import { logging, serverFlags, serverGroup } from "./sidecar-injector/flags.ts";

/** The command tree of sidecar-injector. */
export const program: ProgramSpec = {
  name: "sidecar-injector",
  logScopes: LOG_SCOPES["sidecar-injector"],
  root: command({
    name: "sidecar-injector",
    summary: "Runs the sidecar injection webhook server.",
    flags: serverFlags,
    groups: [logging],
    load: lazyCommand<typeof import("./sidecar-injector/server.ts")>(
      "./sidecar-injector/server.ts",
      import.meta.url,
    ),
    subcommands: [
      probeCommand(serverGroup, logging),
      versionCommand(serverGroup, logging),
    ],
  }),
};

if (import.meta.main) Deno.exit(await runCli(program, Deno.args, processContext()));

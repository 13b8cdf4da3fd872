/**
 * sidecar-injector: admission webhook of the orchestrator that injects the proxy sidecar.
 *
 * `deno run -A cli/sidecar-injector.ts [flags]` runs the webhook server.
 * @module
 */

import { command, type ProgramSpec, runCli } from "./_shared/command.ts";
import { processContext } from "./_shared/context.ts";
import { LOG_SCOPES, probeGroup, versionGroup } from "./_shared/groups.ts";
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
    subcommands: [
      command({
        name: "probe",
        summary: "Checks the liveness or readiness of a locally running server.",
        groups: [probeGroup, serverGroup, logging],
        load: () => import("./_shared/probe_cmd.ts"),
      }),
      command({
        name: "version",
        summary: "Prints build version information.",
        groups: [versionGroup, serverGroup, logging],
        load: () => import("./_shared/version_cmd.ts"),
      }),
    ],
  }),
};

if (import.meta.main) Deno.exit(await runCli(program, Deno.args, processContext()));

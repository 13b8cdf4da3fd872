/**
 * mesh_ca: certificate authority that issues and rotates workload certificates.
 *
 * `deno run -A cli/mesh_ca.ts [flags]` runs the CA.
 * @module
 */

import { command, type ProgramSpec, runCli } from "./_shared/command.ts";
import { processContext } from "./_shared/context.ts";
import { LOG_SCOPES, probeGroup, versionGroup } from "./_shared/groups.ts";
import { logging, serverFlags } from "./mesh_ca/flags.ts";

/** The command tree of mesh_ca. */
export const program: ProgramSpec = {
  name: "mesh_ca",
  logScopes: LOG_SCOPES.mesh_ca,
  root: command({
    name: "mesh_ca",
    summary: "Runs the certificate authority.",
    flags: serverFlags,
    groups: [logging],
    subcommands: [
      command({
        name: "probe",
        summary: "Checks the liveness or readiness of a locally running server.",
        groups: [probeGroup, logging],
        load: () => import("./_shared/probe_cmd.ts"),
      }),
      command({
        name: "version",
        summary: "Prints build version information.",
        groups: [versionGroup, logging],
        load: () => import("./_shared/version_cmd.ts"),
      }),
    ],
  }),
};

if (import.meta.main) Deno.exit(await runCli(program, Deno.args, processContext()));

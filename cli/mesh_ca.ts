/**
 * mesh_ca: certificate authority that issues and rotates workload certificates.
 *
 * `deno run -A cli/mesh_ca.ts [flags]` runs the CA.
 * @module
 */

import { lazyCommand } from "./_shared/lazy.ts";
import { command, type ProgramSpec, runCli } from "./_shared/command.ts";
import { processContext } from "./_shared/context.ts";
import { LOG_SCOPES, probeCommand, versionCommand } from "./_shared/groups.ts";
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
    load: lazyCommand<typeof import("./mesh_ca/server.ts")>("./mesh_ca/server.ts", import.meta.url),
    subcommands: [
      probeCommand(logging),
      versionCommand(logging),
    ],
  }),
};

if (import.meta.main) Deno.exit(await runCli(program, Deno.args, processContext()));

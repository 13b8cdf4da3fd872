/**
 * mesh-policy: policy evaluation and telemetry reporting server, plus CRD listings.
 *
 * `deno run -A cli/mesh-policy.ts <command> [flags]`
 * @module
 */

import { command, type ProgramSpec, runCli } from "./_shared/command.ts";
import { processContext } from "./_shared/context.ts";
import { introspectionGroup, LOG_SCOPES, probeCommand, versionCommand } from "./_shared/groups.ts";
import { logging, serverFlags } from "./mesh-policy/flags.ts";

/** The command tree of mesh-policy. */
export const program: ProgramSpec = {
  name: "mesh-policy",
  logScopes: LOG_SCOPES["mesh-policy"],
  root: command({
    name: "mesh-policy",
    summary: "Mesh policy: policy evaluation and telemetry reporting.",
    groups: [logging],
    subcommands: [
      command({
        name: "crd",
        summary: "Lists custom resource definitions.",
        groups: [logging],
        subcommands: [
          command({
            name: "adapter",
            summary: "Lists CRDs for available adapters.",
            groups: [logging],
            load: () => import("./mesh-policy/crd.ts").then((m) => m.adapter),
          }),
          command({
            name: "all",
            summary: "Lists all CRDs.",
            groups: [logging],
            load: () => import("./mesh-policy/crd.ts").then((m) => m.all),
          }),
          command({
            name: "instance",
            summary: "Lists CRDs for instance kinds (mesh functions).",
            groups: [logging],
            load: () => import("./mesh-policy/crd.ts").then((m) => m.instance),
          }),
        ],
      }),
      probeCommand(logging),
      command({
        name: "server",
        summary: "Starts the policy server.",
        flags: serverFlags,
        groups: [logging, introspectionGroup],
        load: () => import("./mesh-policy/server.ts"),
      }),
      versionCommand(),
    ],
  }),
};

if (import.meta.main) Deno.exit(await runCli(program, Deno.args, processContext()));

/**
 * mesh-policy: policy evaluation and telemetry reporting server, plus CRD listings.
 *
 * `deno run -A cli/mesh-policy.ts <command> [flags]`
 * @module
 */

import { lazyCommand } from "./_shared/lazy.ts";
import { command, type ProgramSpec, runCli } from "./_shared/command.ts";
import { processContext } from "./_shared/context.ts";
import { introspectionGroup, LOG_SCOPES, probeCommand, versionCommand } from "./_shared/groups.ts";
import { logging, serverFlags } from "./mesh-policy/flags.ts";

/** The `crd` commands' module (a computed specifier: see cli/_shared/lazy.ts). */
const loadCrd = lazyCommand<typeof import("./mesh-policy/crd.ts")>(
  "./mesh-policy/crd.ts",
  import.meta.url,
);

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
            load: () => loadCrd().then((m) => m.adapter),
          }),
          command({
            name: "all",
            summary: "Lists all CRDs.",
            groups: [logging],
            load: () => loadCrd().then((m) => m.all),
          }),
          command({
            name: "instance",
            summary: "Lists CRDs for instance kinds (mesh functions).",
            groups: [logging],
            load: () => loadCrd().then((m) => m.instance),
          }),
        ],
      }),
      probeCommand(logging),
      command({
        name: "server",
        summary: "Starts the policy server.",
        flags: serverFlags,
        groups: [logging, introspectionGroup],
        load: lazyCommand<typeof import("./mesh-policy/server.ts")>(
          "./mesh-policy/server.ts",
          import.meta.url,
        ),
      }),
      versionCommand(),
    ],
  }),
};

if (import.meta.main) Deno.exit(await runCli(program, Deno.args, processContext()));

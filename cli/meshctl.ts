/**
 * meshctl: create, list, modify and delete mesh configuration; inject sidecars; register
 * service instances; query proxy configuration and metrics; check RBAC policies.
 *
 * `deno run -A cli/meshctl.ts <command> [flags]`
 * @module
 */

import { lazyCommand } from "./_shared/lazy.ts";
import { command, type ProgramSpec, runCli } from "./_shared/command.ts";
import { processContext } from "./_shared/context.ts";
import { LOG_SCOPES, versionCommand } from "./_shared/groups.ts";
import { DELETE_HELP, GET_HELP, KUBE_INJECT_HELP, writeHelp } from "./meshctl/_help.ts";
import type { MeshctlContext } from "./meshctl/_config_io.ts";
import {
  common,
  contextCreateFlags,
  convertFlags,
  createFlags,
  deleteFlags,
  genDeployFlags,
  getFlags,
  kubeInjectFlags,
  metricsFlags,
  orchconfigDefault,
  proxyConfigFlags,
  rbacCanFlags,
  registerFlags,
  replaceFlags,
  workloadBootstrapFlags,
} from "./meshctl/flags.ts";

/** What `register --help` adds: the port forms. */
const REGISTER_HELP = [
  "",
  "Ports: port (named http for 80 and 8080, https for 443, mysql for 3306, else the number),",
  "name:port, or name:port:targetPort when the instance listens on another port than the",
  "service port (http:80:8081).",
].join("\n");

/** The command tree of meshctl. */
export const program: ProgramSpec = {
  name: "meshctl",
  logScopes: LOG_SCOPES.meshctl,
  envDefaults: orchconfigDefault,
  root: command({
    name: "meshctl",
    summary: "Mesh configuration command line utility.",
    groups: common,
    subcommands: [
      command({
        name: "context-create",
        summary: "Creates an orchestrator-style config file for use in a non-orchestrator " +
          "environment.",
        flags: contextCreateFlags,
        groups: common,
        load: lazyCommand<typeof import("./meshctl/context_create.ts")>(
          "./meshctl/context_create.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "create",
        summary: "Creates resources from a file (standard input when no file is given).",
        flags: createFlags,
        groups: common,
        helpAfter: writeHelp("create"),
        load: lazyCommand<typeof import("./meshctl/create.ts")>(
          "./meshctl/create.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "replace",
        summary: "Replaces existing resources from a file (standard input when no file).",
        flags: replaceFlags,
        groups: common,
        helpAfter: writeHelp("replace"),
        load: lazyCommand<typeof import("./meshctl/replace.ts")>(
          "./meshctl/replace.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "delete",
        summary: "Deletes resources by type and names, or by file contents.",
        args: ["[type]", "[names...]"],
        flags: deleteFlags,
        groups: common,
        helpAfter: DELETE_HELP,
        load: lazyCommand<typeof import("./meshctl/delete.ts")>(
          "./meshctl/delete.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "get",
        summary: "Lists all resources of a type, or the named ones.",
        args: ["[type]", "[names...]"],
        flags: getFlags,
        groups: common,
        helpAfter: GET_HELP,
        load: lazyCommand<typeof import("./meshctl/get.ts")>("./meshctl/get.ts", import.meta.url),
      }),
      command({
        name: "register",
        summary: "Registers a service instance (for example a VM) joining the mesh.",
        args: ["<svcname>", "<ip>", "<ports...>"],
        helpAfter: REGISTER_HELP,
        flags: registerFlags,
        groups: common,
        load: lazyCommand<typeof import("./meshctl/register.ts")>(
          "./meshctl/register.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "deregister",
        summary: "De-registers a service instance.",
        args: ["<svcname>", "<ip>"],
        groups: common,
        load: lazyCommand<typeof import("./meshctl/deregister.ts")>(
          "./meshctl/deregister.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "kube-inject",
        summary: "Injects the proxy sidecar into workloads.",
        flags: kubeInjectFlags,
        groups: common,
        helpAfter: KUBE_INJECT_HELP,
        load: lazyCommand<typeof import("./meshctl/kube_inject.ts")>(
          "./meshctl/kube_inject.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "proxy-config",
        aliases: ["pc"],
        summary: "Retrieves proxy configuration from the endpoint proxy or the discovery service.",
        args: ["<endpoint|discovery>", "<pod-name|mesh>", "[configuration-type]"],
        flags: proxyConfigFlags,
        groups: common,
        load: lazyCommand<typeof import("./meshctl/proxy_config.ts")>(
          "./meshctl/proxy_config.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "gen-deploy",
        summary: "Produces deployment files to run the mesh.",
        flags: genDeployFlags,
        groups: common,
        load: lazyCommand<typeof import("./meshctl/gen_deploy.ts")>(
          "./meshctl/gen_deploy.ts",
          import.meta.url,
        ),
      }),
      command({
        name: "experimental",
        summary: "Experimental commands that may be modified or deprecated.",
        groups: common,
        subcommands: [
          command({
            name: "convert-networking-config",
            summary: "Converts a set of v1alpha1 configs to v1alpha3 equivalents, best effort.",
            flags: convertFlags,
            groups: common,
            load: lazyCommand<typeof import("./meshctl/convert.ts")>(
              "./meshctl/convert.ts",
              import.meta.url,
            ),
          }),
          command({
            name: "metrics",
            aliases: ["m"],
            summary: "Prints metrics per requested service.",
            args: ["<service...>"],
            flags: metricsFlags,
            groups: common,
            load: lazyCommand<typeof import("./meshctl/metrics.ts")>(
              "./meshctl/metrics.ts",
              import.meta.url,
            ),
          }),
          command({
            name: "rbac",
            summary: "Interacts with RBAC policies.",
            groups: common,
            subcommands: [
              command({
                name: "can",
                summary: "Evaluates whether a request is allowed (METHOD SERVICE PATH).",
                args: ["<METHOD>", "<SERVICE>", "<PATH>"],
                flags: rbacCanFlags,
                groups: common,
                load: lazyCommand<typeof import("./meshctl/rbac_can.ts")>(
                  "./meshctl/rbac_can.ts",
                  import.meta.url,
                ),
              }),
            ],
          }),
          command({
            name: "workload",
            summary:
              "Gives a workload outside the orchestrator (a VM, a laptop) its mesh identity.",
            groups: common,
            subcommands: [
              command({
                name: "bootstrap",
                summary:
                  "Writes the root certificate, a token mesh_ca accepts and the mesh-agent environment for a service account.",
                args: ["<service-account>"],
                flags: workloadBootstrapFlags,
                groups: common,
                load: lazyCommand<typeof import("./meshctl/workload.ts")>(
                  "./meshctl/workload.ts",
                  import.meta.url,
                ),
              }),
            ],
          }),
        ],
      }),
      versionCommand(...common),
    ],
  }),
};

if (import.meta.main) {
  const ctx: MeshctlContext = { ...processContext(), stdinIsTerminal: Deno.stdin.isTerminal() };
  Deno.exit(await runCli(program, Deno.args, ctx));
}

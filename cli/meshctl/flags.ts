/**
 * Flag tables of meshctl (spec: "meshctl"): global flags accepted by every subcommand, and the
 * flags of each subcommand.
 * @module
 */

import {
  bool,
  duration,
  flag,
  int,
  type OptionsOf,
  string,
  stringArray,
  stringSlice,
  uint16,
} from "../../lib/flags/mod.ts";
import { type FlagGroup, LOG_SCOPES, loggingGroup, versionGroup } from "../_shared/groups.ts";

/** Group L (scope default). */
export const logging = loggingGroup(LOG_SCOPES.meshctl);

/** Environment variable naming the orchestrator configuration file (default of `--orchconfig`). */
export const ORCHCONFIG_ENV = "KUBECONFIG";

const globalFlags = [
  flag({
    name: "meshNamespace",
    short: "i",
    type: string,
    default: "mesh-system",
    help: "Mesh system namespace.",
  }),
  flag({
    name: "orchconfig",
    short: "c",
    type: string,
    default: "",
    defaultText: `$${ORCHCONFIG_ENV} else $HOME/.kube/config`,
    help: "Orchestrator configuration file.",
  }),
  flag({ name: "namespace", short: "n", type: string, default: "", help: "Config namespace." }),
  flag({
    name: "platform",
    short: "p",
    type: string,
    default: "orch",
    help: "Mesh host platform: orch (a cluster) or fs (a local directory, with --configDir).",
  }),
  flag({
    name: "configDir",
    type: string,
    default: "",
    help: "Directory of config YAML files used as the store when --platform is fs.",
  }),
] as const;

/** Global flags of meshctl: every subcommand accepts them. */
export const globalGroup: FlagGroup<typeof globalFlags> = {
  id: "meshctl-global",
  title: "meshctl global flags",
  heading: "Global flags:",
  flags: globalFlags,
};

/** Groups every meshctl command accepts. */
export const common = [globalGroup, logging] as const;

/**
 * Fills `orchconfig` when not given: `$KUBECONFIG`, else `$HOME/.kube/config` (read from the
 * environment the CLI read once at start-up).
 */
export function orchconfigDefault(
  opts: Record<string, unknown>,
  env: Readonly<Record<string, string>>,
): Record<string, unknown> {
  if (opts.orchconfig === "") {
    const home = env.HOME ?? env.USERPROFILE ?? "";
    opts.orchconfig = env[ORCHCONFIG_ENV] || (home ? `${home}/.kube/config` : ".kube/config");
  }
  return opts;
}

/** `proxy-config` flags. */
export const proxyConfigFlags = [
  flag({
    name: "admin-address",
    type: string,
    default: "",
    help:
      "host:port of the proxy admin port `endpoint` reads on the fs platform (default 127.0.0.1:15000).",
  }),
  flag({
    name: "discovery-address",
    type: string,
    default: "",
    help: "host:port of the discovery monitoring port `discovery` reads on the fs platform " +
      "(default $MESH_DISCOVERY_ADDR, else 127.0.0.1:9093).",
  }),
] as const;

/** `context-create` flags. */
export const contextCreateFlags = [
  flag({
    name: "api-server",
    type: string,
    default: "",
    help: "URL of the orchestrator API server, http://<ip>:<port> (required).",
  }),
  flag({ name: "context", type: string, default: "mesh", help: "Name of the context." }),
] as const;

const fileFlag = (help: string) =>
  flag({ name: "file", short: "f", type: string, default: "", help });

/** `create` flags. */
export const createFlags = [
  fileFlag(
    "Input file with resources to create; - for standard input (also read when unset " +
      "and piped).",
  ),
  flag({
    name: "all-or-nothing",
    type: bool,
    default: false,
    help: "Write nothing unless every document is a valid mesh object (orchestrator kinds " +
      "such as Deployment are then refused, not skipped).",
  }),
] as const;
/** `replace` flags. */
export const replaceFlags = [
  fileFlag(
    "Input file with resources to replace; - for standard input (also read when unset " +
      "and piped).",
  ),
] as const;
/** `delete` flags. */
export const deleteFlags = [
  fileFlag(
    "Input file with resources to delete; - for standard input (also read when " +
      "neither a file nor names are given and input is piped).",
  ),
] as const;

/** `get` flags. */
export const getFlags = [
  flag({
    name: "output",
    short: "o",
    type: string,
    default: "short",
    help: "Output format: yaml or short.",
  }),
  flag({
    name: "all-namespaces",
    short: "A",
    type: bool,
    default: false,
    help: "List the objects of every namespace, even when -n is given (without -n, get " +
      "lists every namespace anyway).",
  }),
] as const;

/** `register` flags. */
export const registerFlags = [
  flag({
    name: "annotations",
    short: "a",
    type: stringSlice,
    default: [],
    help: "Annotations key=value (or bare key) applied if a service or endpoint is created.",
  }),
  flag({
    name: "labels",
    short: "l",
    type: stringSlice,
    default: [],
    help: "Labels key=value applied if a service or endpoint is created.",
  }),
  flag({
    name: "serviceaccount",
    short: "s",
    type: string,
    default: "default",
    help: "Service account to link to the service.",
  }),
] as const;

const deprecated = "Deprecated: use --injectConfigMapName or --injectConfigFile instead.";

/** `kube-inject` flags (the last ones are deprecated template parameters, mostly hidden). */
export const kubeInjectFlags = [
  flag({
    name: "filename",
    short: "f",
    type: string,
    default: "",
    help: "Input orchestrator resource file; - denotes standard input.",
  }),
  flag({
    name: "output",
    short: "o",
    type: string,
    default: "",
    help: "Output file for the modified resources.",
  }),
  flag({
    name: "injectConfigFile",
    type: string,
    default: "",
    help: "Injection configuration file. Cannot be combined with --injectConfigMapName.",
  }),
  flag({
    name: "injectConfigMapName",
    type: string,
    default: "mesh-sidecar-injector",
    help: "Configuration map for injection, key config.",
  }),
  flag({
    name: "meshConfigFile",
    type: string,
    default: "",
    help: "Mesh configuration file; takes precedence over --meshConfigMapName.",
  }),
  flag({
    name: "meshConfigMapName",
    type: string,
    default: "mesh",
    help: "Configuration map for mesh configuration, key mesh.",
  }),
  flag({
    name: "includeIPRanges",
    type: string,
    default: "*",
    help: "Comma-separated IP ranges (CIDR) whose outbound traffic is redirected to the " +
      "sidecar; * for all.",
  }),
  flag({
    name: "excludeIPRanges",
    type: string,
    default: "",
    help: "Comma-separated IP ranges (CIDR) excluded from redirection.",
  }),
  flag({
    name: "includeInboundPorts",
    type: string,
    default: "*",
    help: "Comma-separated inbound ports redirected to the sidecar; * for all.",
  }),
  flag({
    name: "excludeInboundPorts",
    type: string,
    default: "",
    help: "Comma-separated inbound ports excluded from redirection.",
  }),
  flag({ name: "hub", type: string, default: "", hidden: true, help: deprecated }),
  flag({ name: "tag", type: string, default: "", hidden: true, help: deprecated }),
  flag({ name: "verbosity", type: int, default: 2, hidden: true, help: deprecated }),
  flag({ name: "sidecarProxyUID", type: int, default: 1337, hidden: true, help: deprecated }),
  flag({ name: "setVersionString", type: string, default: "", hidden: true, help: deprecated }),
  flag({ name: "coreDump", type: bool, default: true, hidden: true, help: deprecated }),
  flag({
    name: "imagePullPolicy",
    type: string,
    default: "IfNotPresent",
    hidden: true,
    help: deprecated,
  }),
  flag({ name: "debug", type: bool, default: false, hidden: true, help: deprecated }),
  flag({
    name: "emitTemplate",
    type: bool,
    default: false,
    hidden: true,
    help: "Print the injection template instead of injecting.",
  }),
] as const;

/** `gen-deploy` flags. */
export const genDeployFlags = [
  flag({
    name: "debug",
    type: bool,
    default: false,
    help: "Use debug images instead of release images.",
  }),
  flag({
    name: "chart-dir",
    type: string,
    default: ".",
    help: "Directory of the charts used to render deployments locally.",
  }),
  flag({
    name: "hyperkube-hub",
    type: string,
    default: "quay.io/coreos/hyperkube",
    help: "Registry for the orchestrator distribution image.",
  }),
  flag({
    name: "hyperkube-tag",
    type: string,
    default: "v1.7.6_coreos.0",
    help: "Tag of that image.",
  }),
  flag({
    name: "ingress-node-port",
    type: uint16,
    default: 0,
    help: "When provided, ingress proxies run as a node-port service on this port; ignored " +
      "unless the ingress feature flag is also provided.",
  }),
  flag({
    name: "values",
    type: string,
    default: "",
    help: "Values file used to render YAML deployments locally; flag values are ignored in " +
      "favour of the file.",
  }),
] as const;

/** `experimental convert-networking-config` flags. */
export const convertFlags = [
  flag({
    name: "filenames",
    short: "f",
    type: stringSlice,
    default: [],
    help: "Input files with v1alpha1 configs (repeatable; - for standard input).",
  }),
  flag({
    name: "output",
    short: "o",
    type: string,
    default: "-",
    help: "Output file; - for standard output.",
  }),
] as const;

/** `experimental metrics` flags. */
export const metricsFlags = [
  flag({
    name: "prometheus",
    type: string,
    default: "",
    help: "Prometheus base URL (http://host:port); found in the mesh namespace when empty.",
  }),
] as const;

/** `experimental rbac can` flags. */
export const rbacCanFlags = [
  flag({ name: "user", short: "u", type: string, default: "", help: "Subject user name or ID." }),
  flag({
    name: "groups",
    short: "g",
    type: string,
    default: "",
    help: "Subject group name or ID.",
  }),
  flag({
    name: "subject-properties",
    short: "s",
    type: stringArray,
    default: [],
    help: "Additional subject data name1=value1,name2=value2,...",
  }),
  flag({
    name: "action-properties",
    short: "a",
    type: stringArray,
    default: [],
    help: "Additional action data name1=value1,name2=value2,...",
  }),
] as const;

/** `experimental workload bootstrap` flags. */
export const workloadBootstrapFlags = [
  flag({
    name: "output",
    short: "o",
    type: string,
    default: "",
    help: "Directory the workload's files are written to (created when missing).",
  }),
  flag({
    name: "ca-address",
    type: string,
    default: "127.0.0.1:8060",
    help: "host:port of mesh_ca's gRPC API, written into the agent's environment file.",
  }),
  flag({
    name: "ca-root",
    type: string,
    default: "",
    help: "PEM file of mesh_ca's root certificate (on orch, read from Secret mesh-ca-secret " +
      "of the mesh namespace when unset; on fs, root-cert.pem is not written without it).",
  }),
  flag({
    name: "issuer-key",
    type: string,
    default: "",
    defaultText: "$HOME/.mesh/workload-issuer-key.json",
    help: "-p fs: the local token signing key (JWK, created when missing).",
  }),
  flag({
    name: "token-ttl",
    type: duration,
    default: 720 * 3_600_000,
    help: "Lifetime of the token.",
  }),
  flag({
    name: "ip",
    type: string,
    default: "127.0.0.1",
    help: "IP address of the workload (INSTANCE_IP of the agent).",
  }),
] as const;

/** Options every meshctl command gets (global flags and L); `orchconfig` is always filled. */
export type CommonOptions = OptionsOf<typeof common[number]["flags"][number]>;
/** Options of `meshctl proxy-config`. */
export type ProxyConfigOptions = OptionsOf<typeof proxyConfigFlags[number]> & CommonOptions;
/** Options of `meshctl context-create`. */
export type ContextCreateOptions = OptionsOf<typeof contextCreateFlags[number]> & CommonOptions;
/** Options of `meshctl create`. */
export type CreateOptions = OptionsOf<typeof createFlags[number]> & CommonOptions;
/** Options of `meshctl replace`. */
export type ReplaceOptions = OptionsOf<typeof replaceFlags[number]> & CommonOptions;
/** Options of `meshctl delete`. */
export type DeleteOptions = OptionsOf<typeof deleteFlags[number]> & CommonOptions;
/** Options of `meshctl get`. */
export type GetOptions = OptionsOf<typeof getFlags[number]> & CommonOptions;
/** Options of `meshctl register`. */
export type RegisterOptions = OptionsOf<typeof registerFlags[number]> & CommonOptions;
/** Options of `meshctl kube-inject`. */
export type KubeInjectOptions = OptionsOf<typeof kubeInjectFlags[number]> & CommonOptions;
/** Options of `meshctl gen-deploy`. */
export type GenDeployOptions = OptionsOf<typeof genDeployFlags[number]> & CommonOptions;
/** Options of `meshctl experimental convert-networking-config`. */
export type ConvertOptions = OptionsOf<typeof convertFlags[number]> & CommonOptions;
/** Options of `meshctl experimental metrics`. */
export type MetricsOptions = OptionsOf<typeof metricsFlags[number]> & CommonOptions;
/** Options of `meshctl experimental rbac can`. */
export type RbacCanOptions = OptionsOf<typeof rbacCanFlags[number]> & CommonOptions;
/** Options of `meshctl experimental workload bootstrap`. */
export type WorkloadBootstrapOptions =
  & OptionsOf<typeof workloadBootstrapFlags[number]>
  & CommonOptions;
/** Options of `meshctl version`. */
export type VersionOptions = OptionsOf<typeof versionGroup.flags[number]> & CommonOptions;

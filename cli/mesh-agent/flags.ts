/**
 * Flag tables of mesh-agent (spec: "mesh-agent").
 * @module
 */

import { bool, duration, flag, int, type OptionsOf, string } from "../../lib/flags/mod.ts";
import { LOG_SCOPES, loggingGroup, versionGroup } from "../_shared/groups.ts";

/** Group L (scope default). */
export const logging = loggingGroup(LOG_SCOPES["mesh-agent"]);

/** Flags of `mesh-agent proxy`. */
export const proxyFlags = [
  flag({ name: "availabilityZone", type: string, default: "", help: "Availability zone." }),
  flag({
    name: "binaryPath",
    type: string,
    default: "/usr/local/bin/proxy-binary",
    help: "Path to the proxy binary.",
  }),
  flag({ name: "bootstrapv2", type: bool, default: false, help: "Use bootstrap v2." }),
  flag({ name: "concurrency", type: int, default: 0, help: "Number of worker threads." }),
  flag({
    name: "configPath",
    type: string,
    default: "/etc/mesh/proxy",
    help: "Directory of the generated configuration.",
  }),
  flag({
    name: "connectTimeout",
    type: duration,
    default: 1000,
    help: "Connection timeout used by the proxy for supporting services.",
  }),
  flag({
    name: "controlPlaneAuthPolicy",
    type: string,
    default: "NONE",
    help: "Control plane authentication policy.",
  }),
  flag({
    name: "customConfigFile",
    type: string,
    default: "",
    help: "Path to a custom configuration file.",
  }),
  flag({
    name: "disableInternalTelemetry",
    type: bool,
    default: false,
    help: "Disable internal telemetry.",
  }),
  flag({
    name: "discoveryAddress",
    type: string,
    default: "mesh-discovery:15007",
    help: "Address of the discovery service exposing xDS, form <host>:<port>.",
  }),
  flag({
    name: "discoveryRefreshDelay",
    type: duration,
    default: 1000,
    help: "Polling interval for service discovery (EDS, CDS, LDS; not RDS).",
  }),
  flag({
    name: "domain",
    type: string,
    default: "",
    help: "DNS domain suffix; when empty, ${POD_NAMESPACE}.svc.cluster.local is used.",
  }),
  flag({
    name: "drainDuration",
    type: duration,
    default: 2000,
    help: "Time the proxy drains connections during a hot restart.",
  }),
  flag({
    name: "id",
    type: string,
    default: "",
    help: "Proxy unique ID; when empty, ${POD_NAME}.${POD_NAMESPACE} from the environment.",
  }),
  flag({
    name: "ip",
    type: string,
    default: "",
    help: "Proxy IP; when empty, environment variable INSTANCE_IP.",
  }),
  flag({
    name: "parentShutdownDuration",
    type: duration,
    default: 3000,
    help: "Time waited before shutting down the parent process during a hot restart.",
  }),
  flag({
    name: "proxyAdminPort",
    type: int,
    default: 15000,
    help: "Port for proxy administrative commands.",
  }),
  flag({
    name: "proxyLogLevel",
    type: string,
    default: "warn",
    help: "Proxy log level: trace, debug, info, warn, err, critical, off.",
  }),
  flag({
    name: "proxyless",
    type: bool,
    default: false,
    help:
      "Proxyless gRPC workload (role sidecar): start no proxy, write <configPath>/grpc-bootstrap.json for GRPC_XDS_BOOTSTRAP.",
  }),
  flag({ name: "serviceCluster", type: string, default: "mesh-proxy", help: "Service cluster." }),
  flag({
    name: "serviceregistry",
    type: string,
    default: "Orchestrator",
    help: "Registry platform: Orchestrator, RegistryA, RegistryB, PlatformC, Mock.",
  }),
  flag({
    name: "statsdUdpAddress",
    type: string,
    default: "",
    help: "<ip>:<port> of a metrics UDP listener.",
  }),
  flag({ name: "templateFile", type: string, default: "", help: "Template bootstrap config." }),
  flag({
    name: "tracerBAddress",
    type: string,
    default: "",
    help: "<host>:<port> of the tracerb service.",
  }),
] as const;

/** Options of `mesh-agent debug` (group L). */
export type CommonOptions = OptionsOf<typeof logging.flags[number]>;
/** Options of `mesh-agent proxy`. */
export type ProxyOptions = OptionsOf<typeof proxyFlags[number]> & CommonOptions;
/** Options of `mesh-agent version`. */
export type VersionOptions = OptionsOf<typeof versionGroup.flags[number]> & CommonOptions;

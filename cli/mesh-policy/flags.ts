/**
 * Flag tables of mesh-policy (spec: "mesh-policy").
 * @module
 */

import {
  bool,
  duration,
  flag,
  int,
  type OptionsOf,
  string,
  uint,
  uint16,
} from "../../lib/flags/mod.ts";
import {
  introspectionGroup,
  LOG_SCOPES,
  loggingGroup,
  probeGroup,
  versionGroup,
} from "../_shared/groups.ts";

/** Group L with mesh-policy's scopes (adapters, api, attributes, default). */
export const logging = loggingGroup(LOG_SCOPES["mesh-policy"]);

/** Flags of `mesh-policy server` (plus L and I). */
export const serverFlags = [
  flag({
    name: "adapterWorkerPoolSize",
    type: int,
    default: 1024,
    help: "Max concurrent workers in the adapter pool.",
  }),
  flag({
    name: "address",
    type: string,
    default: "",
    help: "gRPC API address, tcp://<host>:<port> or unix://<path>.",
  }),
  flag({
    name: "apiWorkerPoolSize",
    type: int,
    default: 1024,
    help: "Max concurrent workers in the API pool.",
  }),
  flag({
    name: "configDefaultNamespace",
    type: string,
    default: "mesh-system",
    help: "Namespace storing mesh-wide configuration.",
  }),
  flag({
    name: "configStoreURL",
    type: string,
    default: "",
    help: "Config store URL: orch://<path_to_orchconfig> (in-cluster configuration if the path " +
      "is empty) or fs:// for the file system.",
  }),
  flag({
    name: "livenessProbeInterval",
    type: duration,
    default: 0,
    help: "Interval of updating the liveness probe file.",
  }),
  flag({
    name: "livenessProbePath",
    type: string,
    default: "",
    help: "Liveness probe file path.",
  }),
  flag({
    name: "maxConcurrentStreams",
    type: uint,
    default: 1024,
    help: "Max outstanding RPCs per connection.",
  }),
  flag({
    name: "maxMessageSize",
    type: uint,
    default: 1048576,
    help: "Max size of an individual gRPC message.",
  }),
  flag({
    name: "monitoringPort",
    type: uint16,
    default: 9093,
    help: "HTTP port of self-monitoring information.",
  }),
  flag({
    name: "port",
    short: "p",
    type: uint16,
    default: 9091,
    help: "TCP port of the gRPC API when --address is unset.",
  }),
  flag({
    name: "profile",
    type: bool,
    default: false,
    help: "Profiling at {host}:<port>/debug/pprof.",
  }),
  flag({
    name: "readinessProbeInterval",
    type: duration,
    default: 0,
    help: "Interval of updating the readiness probe file.",
  }),
  flag({
    name: "readinessProbePath",
    type: string,
    default: "",
    help: "Readiness probe file path.",
  }),
  flag({
    name: "singleThreaded",
    type: bool,
    default: false,
    help: "Each request executes in a single worker (for debugging).",
  }),
  flag({
    name: "trace_tracera_url",
    type: string,
    default: "",
    help: "URL of a tracera HTTP collector.",
  }),
  flag({ name: "trace_log_spans", type: bool, default: false, help: "Log trace spans." }),
  flag({
    name: "trace_tracerb_url",
    type: string,
    default: "",
    help: "URL of a tracerb collector.",
  }),
  flag({
    name: "workers",
    type: int,
    default: 0,
    help: "Isolates serving the API on its one port (SO_REUSEPORT, Linux): 0 = one per core, " +
      "1 = the main isolate alone (also with --singleThreaded or a unix:// --address).",
  }),
] as const;

/** Options of the `crd` subcommands (group L). */
export type CrdOptions = OptionsOf<typeof logging.flags[number]>;
/** Options of `mesh-policy server`. */
export type ServerOptions =
  & OptionsOf<typeof serverFlags[number]>
  & CrdOptions
  & OptionsOf<typeof introspectionGroup.flags[number]>;
/** Options of `mesh-policy probe`. */
export type ProbeOptions = OptionsOf<typeof probeGroup.flags[number]> & CrdOptions;
/** Options of `mesh-policy version` (`--short` only). */
export type VersionOptions = OptionsOf<typeof versionGroup.flags[number]>;

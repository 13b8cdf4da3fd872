/**
 * Flag tables of mesh-discovery (spec: "mesh-discovery"). Declared once; help, parsing, the
 * options types and the README tables come from here.
 * @module
 */

import {
  bool,
  duration,
  flag,
  int,
  listenHost,
  type OptionsOf,
  refine,
  string,
  stringSlice,
} from "../../lib/flags/mod.ts";
import { parseRegistries } from "../../lib/registry/aggregate.ts";
import { introspectionGroup, LOG_SCOPES, loggingGroup, versionGroup } from "../_shared/groups.ts";

/** Group L with mesh-discovery's scopes (ads, default). */
export const logging = loggingGroup(LOG_SCOPES["mesh-discovery"]);

/** Groups every mesh-discovery command accepts. */
export const common = [logging, introspectionGroup] as const;

/** Flags of `mesh-discovery debug`. */
export const debugFlags = [
  flag({
    name: "discoveryAddress",
    type: string,
    default: "",
    help: "host:port of the discovery monitoring port to read (default $MESH_DISCOVERY_ADDR, " +
      "else 127.0.0.1:9093).",
  }),
] as const;

/** Flags of `mesh-discovery discovery`. */
export const discoveryFlags = [
  flag({
    name: "appNamespace",
    short: "a",
    type: string,
    default: "",
    help: "Restrict the application namespace managed; when unset, all namespaces are watched.",
  }),
  flag({ name: "platformcConfig", type: string, default: "", help: "PlatformC config file." }),
  flag({
    name: "clusterRegistriesConfigMap",
    type: string,
    default: "",
    help: "Configuration map for the cluster configuration store.",
  }),
  flag({
    name: "clusterRegistriesNamespace",
    type: string,
    default: "mesh-system",
    help: "Namespace of that configuration map.",
  }),
  flag({
    name: "configDir",
    type: string,
    default: "",
    help: "Directory watched for config YAML files; when set, files are the config source " +
      "instead of the CRD client.",
  }),
  flag({
    name: "regaserverInterval",
    type: duration,
    default: 2000,
    help: "Polling interval of RegistryA.",
  }),
  flag({ name: "regaserverURL", type: string, default: "", help: "URL of RegistryA server." }),
  flag({
    name: "regbserverInterval",
    type: duration,
    default: 2000,
    help: "Polling interval of RegistryB.",
  }),
  flag({ name: "regbserverURL", type: string, default: "", help: "URL of RegistryB server." }),
  flag({
    name: "discovery_cache",
    type: bool,
    default: false,
    help: "Enable caching of discovery responses.",
  }),
  flag({ name: "domain", type: string, default: "cluster.local", help: "DNS domain suffix." }),
  flag({
    name: "grpcAddr",
    type: string,
    default: ":15010",
    help: "gRPC address of the discovery service.",
  }),
  flag({
    name: "secureGrpcAddr",
    type: string,
    default: ":15012",
    help: "gRPC address with TLS.",
  }),
  flag({
    name: "grpcMaxConcurrentStreams",
    type: int,
    default: 100,
    help: "Concurrent streams per gRPC connection (SETTINGS_MAX_CONCURRENT_STREAMS; more are " +
      "refused with REFUSED_STREAM).",
  }),
  flag({
    name: "grpcMaxConnections",
    type: int,
    default: 0,
    help: "Open gRPC connections per listener at most (--grpcAddr's port is one listener " +
      "whatever --workers is); more are closed at once (0: no cap).",
  }),
  flag({
    name: "grpcMaxConnectionsPerAddress",
    type: int,
    default: 4096,
    help: "Open gRPC connections one source address may hold per listener (--grpcAddr's port " +
      "is one listener whatever --workers is); more are closed at once (0: no bound of its own; " +
      "an address never holds more than half of the file descriptors left for connections " +
      "either).",
  }),
  flag({
    name: "grpcMaxFailedConnectionRate",
    type: int,
    default: 20,
    help: "Connections per second from one address that may end in an HTTP/2 connection error " +
      "before its new connections are paced to this rate (0: off).",
  }),
  flag({
    name: "grpcReusedReads",
    type: bool,
    default: false,
    help: "Read each --grpcAddr connection (in the main isolate or the --workers isolates) " +
      "into one reused buffer through Deno.Conn instead of node:net: less garbage per ACK, " +
      "slower writes (an async op each). Needs --unstable-net with --workers.",
  }),
  flag({
    name: "keepaliveInterval",
    type: duration,
    default: 30_000,
    help: "Ping a gRPC client that sent nothing for this long (0s: never).",
  }),
  flag({
    name: "keepaliveTimeout",
    type: duration,
    default: 10_000,
    help: "Close a gRPC connection whose keepalive ping is not answered within this.",
  }),
  flag({
    name: "keepaliveMinTime",
    type: duration,
    default: 15_000,
    help: "Clients pinging more often than this get GOAWAY ENHANCE_YOUR_CALM too_many_pings.",
  }),
  flag({
    name: "keepaliveMaxServerConnectionAge",
    type: duration,
    default: 0,
    help: "Send a gRPC connection a graceful GOAWAY after this age, ±10% (0s: no limit); " +
      "calls still open 10s later end UNAVAILABLE.",
  }),
  flag({
    name: "orchconfig",
    type: string,
    default: "",
    help: "Orchestrator configuration file instead of in-cluster configuration.",
  }),
  flag({
    name: "meshConfig",
    type: string,
    default: "/etc/mesh/config/mesh",
    help: "Mesh configuration file; a default mesh is used if unspecified.",
  }),
  flag({
    name: "httpAddress",
    type: listenHost,
    default: "0.0.0.0",
    help: "Local address of the HTTP listeners (--port, --monitoringPort); 127.0.0.1 keeps them " +
      "on loopback.",
  }),
  flag({
    name: "monitoringPort",
    type: int,
    default: 9093,
    help: "HTTP port of self-monitoring information.",
  }),
  flag({
    name: "namespace",
    short: "n",
    type: string,
    default: "",
    help: "Namespace where the controller resides; when unset, the environment variable " +
      "POD_NAMESPACE is used.",
  }),
  flag({
    name: "ingressStatus",
    type: bool,
    default: false,
    help: "Set status.loadBalancer of the Ingresses of the mesh class from the ingress gateway " +
      "service (mesh config ingressService, in --namespace).",
  }),
  flag({
    name: "leaseName",
    type: string,
    default: "mesh-discovery-leader",
    help: "Lease (coordination.k8s.io/v1) that elects the replica writing shared state " +
      "(--ingressStatus).",
  }),
  flag({
    name: "leaseNamespace",
    type: string,
    default: "",
    help: "Namespace of --leaseName; when unset, --namespace (else mesh-system).",
  }),
  flag({
    name: "leaseDuration",
    type: duration,
    default: 15_000,
    help: "How long the leader's Lease lasts unrenewed before another replica takes over.",
  }),
  flag({
    name: "leaderIdentity",
    type: string,
    default: "",
    help: "This replica's identity in the Lease; when unset, POD_NAME, else the host name.",
  }),
  flag({ name: "port", type: int, default: 8080, help: "Discovery service port." }),
  flag({
    name: "profile",
    type: bool,
    default: false,
    help: "Enable profiling via web interface at {host}:<port>/debug/pprof.",
  }),
  flag({
    name: "registries",
    // An unknown name is a usage error naming the flag (duplicates are warned about at start).
    type: refine(stringSlice, (v) => void parseRegistries(v)),
    default: ["Orchestrator"],
    help: "Platform registries to read from; one or more of Orchestrator, RegistryA, RegistryB, " +
      "PlatformC, Mock (the demo services hello and world), ServiceEntry (none: only the " +
      "ServiceEntries of the config store, which are always read).",
  }),
  flag({ name: "resync", type: duration, default: 60_000, help: "Controller resync interval." }),
  flag({
    name: "webhookEndpoint",
    type: string,
    default: "",
    help: "Webhook API endpoint; forms http://<sockethost> and unix:///<absolute_socket_path>.",
  }),
  flag({
    name: "workers",
    type: int,
    default: 1,
    help: "Isolates owning the ADS connections of --grpcAddr and --secureGrpcAddr, each port " +
      "shared by all (SO_REUSEPORT, Linux): 0 = one per core, 1 = the main isolate alone.",
  }),
] as const;

/** Options of `mesh-discovery debug` (and the root): groups L and I. */
export type CommonOptions = OptionsOf<typeof common[number]["flags"][number]>;
/** Options of `mesh-discovery debug`. */
export type DebugOptions = OptionsOf<typeof debugFlags[number]> & CommonOptions;
/** Options of `mesh-discovery discovery`. */
export type DiscoveryOptions = OptionsOf<typeof discoveryFlags[number]> & CommonOptions;
/** Options of `mesh-discovery version`. */
export type VersionOptions = OptionsOf<typeof versionGroup.flags[number]> & CommonOptions;

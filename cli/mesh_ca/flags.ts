/**
 * Flag tables of mesh_ca (spec: "mesh_ca").
 * @module
 */

import {
  bool,
  duration,
  flag,
  float32,
  int,
  listenHost,
  type OptionsOf,
  string,
} from "../../lib/flags/mod.ts";
import { LOG_SCOPES, loggingGroup, probeGroup, versionGroup } from "../_shared/groups.ts";

/** Group L (scope default). */
export const logging = loggingGroup(LOG_SCOPES.mesh_ca);

const HOUR = 3_600_000;

/** Flags of the certificate authority (the root command). */
export const serverFlags = [
  flag({
    name: "append-dns-names",
    type: bool,
    default: false,
    help: "Append DNS names to certificates for webhook services.",
  }),
  flag({ name: "cert-chain", type: string, default: "", help: "Certificate chain file." }),
  flag({
    name: "ca-storage-namespace",
    type: string,
    default: "mesh-system",
    help: "Namespace of the CA pod; unused when a file or other storage is specified.",
  }),
  flag({
    name: "custom-dns-names",
    type: string,
    default: "",
    help: "Comma-separated account.namespace:customdns names.",
  }),
  flag({
    name: "enable-profiling",
    type: bool,
    default: false,
    help: "Profiling while monitoring the CA.",
  }),
  flag({
    name: "grpc-host-identities",
    type: string,
    default: "mesh-ca,mesh-citadel",
    help: "Comma-separated hostnames of the CA server.",
  }),
  flag({
    name: "grpc-hostname",
    type: string,
    default: "mesh-ca",
    help: "Deprecated; use --grpc-host-identities.",
  }),
  flag({
    name: "grpc-port",
    type: int,
    default: 8060,
    help: "gRPC port; if unspecified the CA does not serve gRPC.",
  }),
  flag({ name: "key-size", type: int, default: 2048, help: "Size of generated private keys." }),
  flag({
    name: "orch-config",
    type: string,
    default: "",
    help: "Orchestrator config file; required outside the orchestrator.",
  }),
  flag({
    name: "listened-namespace",
    type: string,
    default: "",
    help: "Namespace the CA listens to; if unspecified, environment variable NAMESPACE; if " +
      "neither, all namespaces.",
  }),
  flag({
    name: "liveness-probe-interval",
    type: duration,
    default: 0,
    help: "Interval of updating the liveness file.",
  }),
  flag({ name: "liveness-probe-path", type: string, default: "", help: "Liveness file path." }),
  flag({
    name: "local-storage-dir",
    type: string,
    default: "",
    help: "Directory keeping the CA's key material when running without an orchestrator.",
  }),
  flag({
    name: "max-workload-cert-ttl",
    type: duration,
    default: 2160 * HOUR,
    help: "Max TTL of issued workload certificates.",
  }),
  flag({
    name: "monitoring-address",
    type: listenHost,
    default: "0.0.0.0",
    help: "Local address of the monitoring listener; 127.0.0.1 keeps it on loopback.",
  }),
  flag({
    name: "monitoring-port",
    type: int,
    default: 9093,
    help: "Monitoring port; if unspecified, monitoring is disabled.",
  }),
  flag({ name: "org", type: string, default: "", help: "Organization for the certificate." }),
  flag({
    name: "probe-check-interval",
    type: duration,
    default: 30_000,
    help: "Interval of checking CA liveness.",
  }),
  flag({
    name: "requested-ca-cert-ttl",
    type: duration,
    default: 8760 * HOUR,
    help: "Requested TTL for the workload.",
  }),
  flag({ name: "root-cert", type: string, default: "", help: "Root certificate file." }),
  flag({
    name: "self-signed-ca",
    type: bool,
    default: false,
    help: "Use an auto-generated self-signed CA certificate; when true, --signing-cert and " +
      "--signing-key are ignored.",
  }),
  flag({
    name: "self-signed-ca-cert-ttl",
    type: duration,
    default: 8760 * HOUR,
    help: "TTL of the self-signed root certificate.",
  }),
  flag({
    name: "self-signed-ca-org",
    type: string,
    default: "orch.cluster.local",
    help: "Issuer organization of the self-signed certificate (<orchestrator>.cluster.local).",
  }),
  flag({
    name: "sign-ca-certs",
    type: bool,
    default: false,
    help: "Whether the CA signs certificates for other CAs.",
  }),
  flag({
    name: "signing-backend",
    type: string,
    default: "auto",
    help: "Who signs workload certificates and verifies CSRs: auto (OpenSSL's libcrypto through " +
      "FFI when it loads, else WebCrypto), openssl, or webcrypto.",
  }),
  flag({ name: "signing-cert", type: string, default: "", help: "CA signing certificate file." }),
  flag({ name: "signing-key", type: string, default: "", help: "CA signing key file." }),
  flag({
    name: "trusted-jwks",
    type: string,
    default: "",
    help:
      "JWKS file whose keys verify bearer JWTs of callers when running without an orchestrator.",
  }),
  flag({
    name: "upstream-ca-address",
    type: string,
    default: "",
    help: "<ip>:<port> of an upstream CA; when set, this CA gets its own certificate from it.",
  }),
  flag({
    name: "workers",
    type: int,
    default: 0,
    help: "Isolates serving the signing API on its one port (SO_REUSEPORT, Linux): 0 = one per " +
      "core, 1 = the main isolate alone.",
  }),
  flag({
    name: "workload-cert-grace-period-ratio",
    type: float32,
    default: 0.5,
    help: "Rotation grace period as a ratio of the workload certificate TTL.",
  }),
  flag({
    name: "workload-cert-min-grace-period",
    type: duration,
    default: 600_000,
    help: "Minimum rotation grace period.",
  }),
  flag({
    name: "workload-cert-ttl",
    type: duration,
    default: 2160 * HOUR,
    help: "TTL of issued workload certificates.",
  }),
] as const;

/** Options of the certificate authority (root command). */
export type ServerOptions =
  & OptionsOf<typeof serverFlags[number]>
  & OptionsOf<typeof logging.flags[number]>;
/** Options of `mesh_ca probe`. */
export type ProbeOptions =
  & OptionsOf<typeof probeGroup.flags[number]>
  & OptionsOf<typeof logging.flags[number]>;
/** Options of `mesh_ca version`. */
export type VersionOptions =
  & OptionsOf<typeof versionGroup.flags[number]>
  & OptionsOf<typeof logging.flags[number]>;

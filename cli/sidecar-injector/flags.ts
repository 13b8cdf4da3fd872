/**
 * Flag tables of sidecar-injector (spec: "sidecar-injector"). `probe` and `version` accept all
 * server flags too.
 * @module
 */

import { duration, flag, int, type OptionsOf, string } from "../../lib/flags/mod.ts";
import type { FlagGroup } from "../_shared/groups.ts";
import { LOG_SCOPES, loggingGroup, probeGroup, versionGroup } from "../_shared/groups.ts";

/** Group L (scope default). */
export const logging = loggingGroup(LOG_SCOPES["sidecar-injector"]);

/** Flags of the webhook server (the root command). */
export const serverFlags = [
  flag({
    name: "caCertFile",
    type: string,
    default: "/etc/mesh/certs/root-cert.pem",
    help: "x509 certificate file for HTTPS.",
  }),
  flag({
    name: "healthCheckFile",
    type: string,
    default: "",
    help: "File periodically updated when health checking is enabled.",
  }),
  flag({
    name: "healthCheckInterval",
    type: duration,
    default: 0,
    help: "How often that file is updated.",
  }),
  flag({
    name: "injectConfig",
    type: string,
    default: "/etc/mesh/inject/config",
    help: "File with injection configuration and template.",
  }),
  flag({
    name: "orchconfig",
    type: string,
    default: "",
    help: "Orchestrator config file; required when not running inside the orchestrator.",
  }),
  flag({
    name: "meshConfig",
    type: string,
    default: "/etc/mesh/config/mesh",
    help: "Mesh configuration file.",
  }),
  flag({ name: "port", type: int, default: 443, help: "Webhook port." }),
  flag({
    name: "tlsCertFile",
    type: string,
    default: "/etc/mesh/certs/cert-chain.pem",
    help: "x509 certificate file for HTTPS.",
  }),
  flag({
    name: "tlsKeyFile",
    type: string,
    default: "/etc/mesh/certs/key.pem",
    help: "Private key matching --tlsCertFile.",
  }),
  flag({
    name: "webhookConfigName",
    type: string,
    default: "mesh-sidecar-injector",
    help: "Name of the mutating webhook configuration resource.",
  }),
  flag({
    name: "webhookName",
    type: string,
    default: "sidecar-injector.mesh.io",
    help: "Name of the webhook entry in that configuration (sidecar-injector.<mesh_domain>).",
  }),
] as const;

/** The server flags as a group, for `probe` and `version`. */
export const serverGroup: FlagGroup<typeof serverFlags> = {
  id: "sidecar-injector",
  title: "sidecar-injector server flags",
  heading: "Server flags:",
  flags: serverFlags,
};

/** Options of the webhook server. */
export type ServerOptions =
  & OptionsOf<typeof serverFlags[number]>
  & OptionsOf<typeof logging.flags[number]>;
/** Options of `sidecar-injector probe`. */
export type ProbeOptions = ServerOptions & OptionsOf<typeof probeGroup.flags[number]>;
/** Options of `sidecar-injector version`. */
export type VersionOptions = ServerOptions & OptionsOf<typeof versionGroup.flags[number]>;

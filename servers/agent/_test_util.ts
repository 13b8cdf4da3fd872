/**
 * Shared pieces of the agent's tests: flags with the spec's defaults.
 * @module
 */

import type { ProxyFlags } from "./config.ts";

/** The flags of `mesh-agent proxy` at their defaults, with `over` applied. */
export function proxyFlags(over: Partial<ProxyFlags> = {}): ProxyFlags {
  return {
    availabilityZone: "",
    binaryPath: "/usr/local/bin/proxy-binary",
    bootstrapv2: false,
    concurrency: 0,
    configPath: "/etc/mesh/proxy",
    connectTimeout: 1000,
    controlPlaneAuthPolicy: "NONE",
    customConfigFile: "",
    disableInternalTelemetry: false,
    discoveryAddress: "mesh-discovery:15007",
    discoveryRefreshDelay: 1000,
    domain: "",
    drainDuration: 2000,
    id: "",
    ip: "",
    parentShutdownDuration: 3000,
    proxyAdminPort: 15000,
    proxyLogLevel: "warn",
    serviceCluster: "mesh-proxy",
    serviceregistry: "Orchestrator",
    statsdUdpAddress: "",
    templateFile: "",
    tracerBAddress: "",
    ...over,
  };
}

/** A pod's environment as the injected sidecar sees it. */
export const POD_ENV = Object.freeze({
  POD_NAME: "web-1",
  POD_NAMESPACE: "shop",
  INSTANCE_IP: "10.1.2.3",
});

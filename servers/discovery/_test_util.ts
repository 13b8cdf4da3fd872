/** Test helpers for the discovery model tests (not exported from mod.ts). @module */

import type { Logger } from "../../lib/log/mod.ts";
import { type ConfigObject, defaultMeshConfig, type MeshConfig } from "../../lib/model/mod.ts";
import type { ConfigStore } from "../../lib/store/mod.ts";
import { ResourceCache } from "../../lib/xds/server/mod.ts";
import type { DiscoveryFlags } from "./config.ts";
import { ConfigSnapshot, DiscoveryModel, type DiscoveryRegistry } from "./model.ts";
import { quietLogger as quiet } from "../../lib/log/testing.ts";

/** A logger that drops every line. */
export { quiet };

/** A logger that keeps the warnings in `warnings` and drops the rest. */
export function warningsLogger(warnings: string[]): Logger {
  return { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} };
}

/** A config snapshot opened on a store that holds `objects` (and never changes). */
export async function snapshotOf(objects: ConfigObject[] = []): Promise<ConfigSnapshot> {
  const store = {
    schemas: [{ type: "all" }],
    watch: () => ({ close() {} }),
    list: () => Promise.resolve(objects),
  } as unknown as ConfigStore;
  const configs = new ConfigSnapshot();
  await configs.open(store, () => {});
  return configs;
}

/**
 * A DiscoveryModel over `registry` and a config store holding `objects`, for the domain
 * `cluster.local`; the mesh configuration, cache and logger default to the code default, a new
 * cache and {@link quiet}.
 */
export async function testModel(opts: {
  registry: DiscoveryRegistry;
  objects?: ConfigObject[];
  meshConfig?: MeshConfig;
  cache?: ResourceCache;
  logger?: Logger;
}): Promise<DiscoveryModel> {
  return new DiscoveryModel({
    registry: opts.registry,
    configs: await snapshotOf(opts.objects),
    meshConfig: opts.meshConfig ?? defaultMeshConfig(),
    domain: "cluster.local",
    cache: opts.cache ?? new ResourceCache(),
    logger: opts.logger ?? quiet,
  });
}

/** mesh-discovery's flags with the spec's defaults (an in-cluster orchestrator), then `over`. */
export function discoveryFlags(over: Partial<DiscoveryFlags> = {}): DiscoveryFlags {
  return {
    appNamespace: "",
    platformcConfig: "",
    clusterRegistriesConfigMap: "",
    clusterRegistriesNamespace: "mesh-system",
    configDir: "",
    regaserverInterval: 2000,
    regaserverURL: "",
    regbserverInterval: 2000,
    regbserverURL: "",
    discovery_cache: false,
    domain: "cluster.local",
    grpcAddr: ":15010",
    secureGrpcAddr: ":15012",
    grpcMaxConcurrentStreams: 100,
    grpcMaxConnections: 0,
    grpcMaxConnectionsPerAddress: 4096,
    grpcMaxFailedConnectionRate: 20,
    keepaliveInterval: 30_000,
    keepaliveTimeout: 10_000,
    keepaliveMinTime: 15_000,
    keepaliveMaxServerConnectionAge: 0,
    orchconfig: "",
    meshConfig: "/etc/mesh/config/mesh",
    monitoringPort: 9093,
    namespace: "",
    port: 8080,
    profile: false,
    ingressStatus: false,
    registries: ["Orchestrator"],
    resync: 60_000,
    webhookEndpoint: "",
    ctrlz_address: "127.0.0.1",
    ctrlz_port: 9876,
    ...over,
  };
}

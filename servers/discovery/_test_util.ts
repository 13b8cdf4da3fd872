/** Test helpers for the discovery model tests (not exported from mod.ts). @module */

import type { Logger } from "../../lib/log/mod.ts";
import { type ConfigObject, defaultMeshConfig, type MeshConfig } from "../../lib/model/mod.ts";
import type { ConfigStore } from "../../lib/store/mod.ts";
import { ResourceCache } from "../../lib/xds/server/mod.ts";
import { ConfigSnapshot, DiscoveryModel, type DiscoveryRegistry } from "./model.ts";

/** A logger that drops every line. */
export const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

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

/**
 * mesh-discovery's inputs: the config store (`--configDir` or the orchestrator), the service
 * registries in `--registries` order, and the Ingress sources, opened by `start`'s first steps.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";
import {
  type ConfigObject,
  defaultMeshConfig,
  ingressClassMatches,
  ingressSchema,
  type MeshConfig,
  meshctlSchemas,
  normalizeIngress,
  parseMeshConfig,
  securitySchemas,
  type ServiceRegistry,
  workloadSchemas,
} from "../../lib/model/mod.ts";
import type { Cleanups } from "../../lib/process/mod.ts";
import {
  aggregateRegistries,
  createConsulRegistry,
  createEurekaRegistry,
  createMockRegistry,
  createPlatformCRegistry,
  createServiceEntryRegistry,
  parsePlatformCConfig,
  workloadEntryInstances,
} from "../../lib/registry/mod.ts";
import type { IngressWatcher } from "../../lib/registry/ingress.ts";
import { type ConfigStore, createFileStore, openKubeStore } from "../../lib/store/mod.ts";
import type { DiscoveryConfig } from "./config.ts";
import { DebugRegistry } from "./debug_registry.ts";
import { ConfigSnapshot, type DiscoveryRegistry } from "./model.ts";

/** Reads the mesh configuration: a missing file gives the defaults (logged once). */
export async function loadMeshConfig(file: string, log: Logger): Promise<MeshConfig> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      log.info(`Mesh configuration ${file} not found; using the default mesh configuration`);
      return defaultMeshConfig();
    }
    throw new Error(`Cannot read mesh configuration ${file}: ${(e as Error).message}`);
  }
  return parseMeshConfig(text, file);
}

/** Opens the config store: the `--configDir` files, else the orchestrator's custom resources. */
export async function openConfigStore(config: DiscoveryConfig): Promise<ConfigStore> {
  if (config.configDir) {
    // Ingress objects too (meshctl -p fs stores them): they feed the gateway config
    return await createFileStore({
      dir: config.configDir,
      schemas: [...meshctlSchemas, ...securitySchemas, ...workloadSchemas, ingressSchema],
    });
  }
  return await openKubeStore({
    kubeconfigPath: config.orchconfig,
    inCluster: config.inCluster,
    schemas: [...meshctlSchemas, ...securitySchemas, ...workloadSchemas],
    resyncMs: config.resyncMs,
    namespace: config.appNamespace,
  });
}

/** The opened registries and the config snapshot that {@link openSources} returns. */
export interface Sources {
  /** Every registry in order; `start()`/`stop()`/`onChange()` for all of them. */
  aggregate: ReturnType<typeof aggregateRegistries>;
  /** The orchestrator's Ingress watcher (Orchestrator registry only). */
  ingressWatcher?: IngressWatcher;
  /** The registry `/debug/registryz` writes to. */
  debugRegistry: DebugRegistry;
  /** The config store's objects, kept current once opened. */
  configs: ConfigSnapshot;
  /** The merged view the model reads: services, instances and Ingresses of every source. */
  registry: DiscoveryRegistry;
}

/**
 * Creates the registries, in `--registries` order (the remote clusters of
 * `--clusterRegistriesConfigMap` right after Orchestrator, else after the listed ones), then
 * ServiceEntry (from `store`), then the debug registry; and the config snapshot (closed by
 * `cleanups`). Nothing is started yet: `aggregate.start()` does that.
 */
export async function openSources(
  config: DiscoveryConfig,
  store: ConfigStore,
  meshConfig: MeshConfig,
  cleanups: Cleanups,
): Promise<Sources> {
  const { members, ingressWatcher } = await createRegistries(config, meshConfig);
  members.push(createServiceEntryRegistry(store, config.domain));
  const debugRegistry = new DebugRegistry();
  members.push(debugRegistry);
  const aggregate = aggregateRegistries(members);
  const configs = new ConfigSnapshot();
  cleanups.push(() => configs.close());
  const fileIngresses = config.configDir
    ? await fileIngressSource(() => configs.byKind("Ingress"), meshConfig)
    : undefined;
  const registry: DiscoveryRegistry = {
    services: () => aggregate.services(),
    // orchestrator Services also select WorkloadEntries (VMs), as in Istio
    instances: () => {
      const own = aggregate.instances();
      const entries = configs.byKind("WorkloadEntry");
      if (!entries.length) return own;
      return [...own, ...workloadEntryInstances(aggregate.services(), entries, config.domain)];
    },
    instancesOf: (hosts) => {
      const own = aggregate.instancesOf!(hosts);
      const entries = configs.byKind("WorkloadEntry");
      if (!entries.length) return own;
      const theirs = workloadEntryInstances(aggregate.services(), entries, config.domain);
      return [...own, ...theirs.filter((i) => hosts.has(i.hostname))];
    },
    ingresses: (): ConfigObject[] => [
      ...(ingressWatcher?.ingresses() ?? []),
      ...(fileIngresses?.() ?? []),
    ],
  };
  return { aggregate, ingressWatcher, debugRegistry, configs, registry };
}

/** The `--registries` (and `--clusterRegistriesConfigMap`) members, in order. */
async function createRegistries(
  config: DiscoveryConfig,
  meshConfig: MeshConfig,
): Promise<{ members: ServiceRegistry[]; ingressWatcher?: IngressWatcher }> {
  const members: ServiceRegistry[] = [];
  let ingressWatcher: IngressWatcher | undefined;
  let multicluster: ServiceRegistry | undefined;
  // what every orchestrator reader is given: where the API server is, what to watch, how often
  const kube = {
    kubeconfigPath: config.orchconfig,
    inCluster: config.inCluster,
    appNamespace: config.appNamespace,
    resyncMs: config.resyncMs,
  };
  if (config.clusterRegistriesConfigMap) {
    const { createClusterRegistries } = await import("../../lib/registry/multicluster.ts");
    multicluster = await createClusterRegistries({
      ...kube,
      configMapName: config.clusterRegistriesConfigMap,
      namespace: config.clusterRegistriesNamespace,
      domain: config.domain,
    });
  }
  for (const name of config.registries) {
    switch (name) {
      case "Orchestrator": {
        const { createOrchestratorRegistry } = await import(
          "../../lib/registry/orchestrator.ts"
        );
        members.push(
          await createOrchestratorRegistry({ ...kube, domain: config.domain }),
        );
        if (multicluster) members.push(multicluster);
        const { createIngressWatcher } = await import("../../lib/registry/ingress.ts");
        ingressWatcher = await createIngressWatcher({ ...kube, meshConfig });
        break;
      }
      case "RegistryA":
        members.push(createConsulRegistry(config.regaserverURL, config.regaserverIntervalMs));
        break;
      case "RegistryB":
        members.push(createEurekaRegistry(config.regbserverURL, config.regbserverIntervalMs));
        break;
      case "PlatformC":
        members.push(await platformCRegistry(config.platformcConfig));
        break;
      case "Mock":
        members.push(createMockRegistry(config.domain, config.mockPortOffset));
        break;
      case "ServiceEntry": // always read (after these): no platform registry
        break;
    }
  }
  if (multicluster && !members.includes(multicluster)) members.push(multicluster);
  return { members, ingressWatcher };
}

/** The PlatformC registry of the `--platformcConfig` file. */
async function platformCRegistry(file: string): Promise<ServiceRegistry> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    throw new Error(`Cannot read --platformcConfig ${file}: ${(e as Error).message}`);
  }
  return await createPlatformCRegistry(parsePlatformCConfig(text, file));
}

/**
 * The Ingress objects of the file store (`--configDir`) in the gateway generator's form: those of
 * the mesh ingress class (`ingressControllerMode`), converted as the orchestrator watcher does.
 */
async function fileIngressSource(
  stored: () => ConfigObject[],
  meshConfig: MeshConfig,
): Promise<() => ConfigObject[]> {
  const { ingressConfigObject } = await import("../../lib/registry/ingress.ts");
  return () =>
    stored().flatMap((o) => {
      const { ingress } = normalizeIngress(o, o.metadata.name, o.metadata.namespace);
      return ingress && ingressClassMatches(ingress, meshConfig)
        ? [ingressConfigObject(ingress)]
        : [];
    });
}

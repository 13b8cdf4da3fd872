/**
 * Service registries for mesh-discovery: Mock, ServiceEntry, RegistryA (Consul catalog),
 * RegistryB (Eureka), PlatformC (Copilot-style routes) and their aggregation. The orchestrator
 * registry lives in `orchestrator.ts` and is loaded on demand (it needs the Kubernetes client).
 * @module
 */
export { aggregateRegistries, parseRegistries, REGISTRY_NAMES } from "./aggregate.ts";
export type { RegistryName } from "./aggregate.ts";
export {
  createMockRegistry,
  MAX_MOCK_PORT_OFFSET,
  MOCK_PORT_OFFSET,
  MOCK_PORTS,
  mockEndpointAddress,
  mockEndpointPort,
} from "./mock.ts";
export { annotatedServiceAccounts, SERVICE_ACCOUNT_ANNOTATION, spiffeId } from "./accounts.ts";
export {
  convertServiceEntries,
  createServiceEntryRegistry,
  instancesOnlyChange,
} from "./serviceentry.ts";
export { workloadEntryInstances } from "./workload_entries.ts";
export { convertConsulService, createConsulRegistry } from "./consul.ts";
export { convertEurekaApps, createEurekaRegistry } from "./eureka.ts";
export { convertPlatformC, createPlatformCRegistry, parsePlatformCConfig } from "./platformc.ts";
export type { PlatformCConfig } from "./platformc.ts";
export { isHttpProtocol, parseProtocolName, protocolFromPortName } from "./protocol.ts";

/**
 * mesh as a library: the configuration model (types, schemas, validation), config stores,
 * service registries, xDS generation, and small parsers shared by the programs. Importing this
 * module has no side effects and loads no heavy dependency (gRPC, the Kubernetes client and
 * the protobuf loader are loaded on first use).
 *
 * @example
 * ```ts ignore
 * import { normalizeObject, parseDuration } from "./mod.ts";
 * const { object, issues } = normalizeObject(yamlDoc, "vs.yaml document 1");
 * parseDuration("1m30s"); // 90000
 * ```
 * @module
 */
export * from "./lib/model/mod.ts";
export type {
  ConfigObject,
  ObjectMeta,
  Protocol,
  Resolution,
  Service,
  ServiceInstance,
  ServicePort,
  ServiceRegistry,
  TypeSchema,
  ValidationIssue,
} from "./lib/model/types.ts";
export {
  ConflictError,
  createFileStore,
  createMemoryStore,
  NotFoundError,
  openKubeStore,
  openStoreFromURL,
  ValidationError,
} from "./lib/store/mod.ts";
export type { ConfigStore, StoreEvent } from "./lib/store/mod.ts";
export * as registry from "./lib/registry/mod.ts";
export * as xds from "./lib/xds/mod.ts";
export { formatDuration, parseDuration } from "./lib/flags/duration.ts";
export { formatVersion, versionInfo } from "./lib/version/mod.ts";
export type { VersionInfo } from "./lib/version/mod.ts";

/**
 * The xDS (ADS) server of mesh-discovery, in three separate parts (after go-control-plane):
 *
 * - {@link ResourceCache}: shared, pre-serialized resources per type URL, versioned by content.
 * - {@link XdsServer}: the transport-independent stream state machine (SotW and delta ADS,
 *   ACK/NACK, debounced pushes, per-client send queues, introspection, metrics hooks).
 * - {@link startAdsServer}: the gRPC transport (plaintext or TLS), loaded lazily.
 *
 * {@link MemoryStream} drives the state machine in tests. See docs/ads.md.
 *
 * @example
 * ```ts ignore
 * import { ResourceCache, startAdsServer, XDS_TYPES, XdsServer } from "./mod.ts";
 * const cache = new ResourceCache();
 * const server = new XdsServer({
 *   parseNode: (node) => node.id,
 *   resourcesFor: (_proxy, typeUrl, names) => cache.select(typeUrl, names),
 * });
 * const ads = await startAdsServer({ address: "127.0.0.1:0", server });
 * ```
 * @module
 */

export { type CachedResource, contentVersion, ResourceCache } from "./cache.ts";
export {
  type DebounceOptions,
  Debouncer,
  DEFAULT_DEBOUNCE_AFTER_MS,
  DEFAULT_DEBOUNCE_MAX_MS,
  type MergedPush,
  mergePush,
} from "./debounce.ts";
export { typeShortName, XdsCounters } from "./metrics.ts";
export { MemoryStream } from "./memory.ts";
export {
  type ConnectionStatus,
  DEFAULT_SEND_TIMEOUT_MS,
  type StreamInfo,
  type TypeStatus,
  XdsServer,
  type XdsServerOptions,
  type XdsStreamHandle,
} from "./stream.ts";
export * from "./types.ts";
export {
  decodeDeltaDiscoveryRequest,
  decodeDiscoveryRequest,
  encodedAny,
  encodeDeltaDiscoveryResponse,
  encodeDiscoveryResponse,
  markShared,
  sameBytes,
} from "./wire.ts";
export {
  ADS_SERVICE,
  type AdsServerHandle,
  type AdsServerOptions,
  SDS_SERVICE,
  startAdsServer,
  structToJson,
} from "./grpc.ts";

/**
 * xDS v3 generation for mesh-discovery: Envoy protos (lazy), node ids, and pure builders from a
 * {@link PushContext} and a {@link Proxy} to Listener, RouteConfiguration, Cluster and
 * ClusterLoadAssignment objects (proto field names). See docs/xds.md.
 *
 * @example
 * ```ts ignore
 * import { buildClusters, encodeAny, loadXdsProtos, parseNodeId, TYPE_URLS } from "./mod.ts";
 * await loadXdsProtos();
 * const proxy = parseNodeId("sidecar~10.1.1.1~a.default~default.svc.cluster.local");
 * const anys = buildClusters(ctx, proxy).map((c) => encodeAny(TYPE_URLS.cluster, c));
 * ```
 * @module
 */

export {
  type AnyMessage,
  decodeAny,
  decodeMessage,
  encodeAny,
  encodeMessage,
  EXT_TYPE_URLS,
  LOADER_OPTIONS,
  loadXdsProtos,
  TYPE_URLS,
  xdsDescriptors,
  xdsIncludeDirs,
  xdsProtoRoot,
} from "./protos.ts";
export {
  clientOf,
  GENERATOR_METADATA_KEY,
  GRPC_GENERATOR,
  headerMatcherForm,
  isIp,
  isProxylessGrpc,
  type NodeIdentity,
  parseNodeId,
  proxyFromNode,
  proxyLabels,
  ringHashCrashes,
} from "./node.ts";
export {
  DEFAULT_XDS_MESH_CONFIG,
  emptyPushConfigs,
  type Proxy,
  type ProxyType,
  type PushConfigs,
  type PushContext,
  type XdsClientInfo,
  type XdsMeshConfig,
  type XdsResource,
} from "./types.ts";
export { BLACKHOLE_CLUSTER, buildClusters, PASSTHROUGH_CLUSTER } from "./generate/clusters.ts";
export { buildEndpoints, isKnownCluster, loadAssignment } from "./generate/endpoints.ts";
export { buildApiListener, buildListeners } from "./generate/listeners.ts";
export { buildRoutes } from "./generate/routes.ts";
export { resolveTarget } from "./generate/route_translate.ts";
export {
  buildServerListener,
  isServerListenerName,
  parseListeningAddress,
} from "./generate/grpc_server.ts";
export { isProxyless } from "./generate/grpc_tls.ts";
export { parseClusterName, serviceDomains } from "./generate/util.ts";
export { ingressesToConfigs } from "./generate/ingress.ts";
export { deriveIndex, indexOf, prepareIndex } from "./generate/context.ts";
export {
  buildScoped,
  hasIngress,
  ingressInstances,
  type ProxyContexts,
  proxyContexts,
  type ProxyScope,
  scopedContext,
  scopeFor,
  selectSidecar,
  withIngressEndpoints,
} from "./generate/sidecar_scope.ts";
export { unselectedGatewayReason } from "./generate/gateway_selection.ts";
export {
  describeConflict,
  type OutboundListenerConflict,
  outboundListenerConflicts,
} from "./generate/listener_conflicts.ts";
export {
  CERT_DIR_METADATA_KEY,
  certDirOf,
  DEFAULT_WORKLOAD_CERT_DIR,
  withCertDir,
} from "./generate/cert_dir.ts";
export {
  DEFAULT_CERT_REFRESH_MS,
  GRPC_BOOTSTRAP_FILE,
  GRPC_CERT_FILES,
  GRPC_CERT_PROVIDER,
  GRPC_SERVER_LISTENER_PREFIX,
  GRPC_SERVER_LISTENER_TEMPLATE,
  grpcBootstrap,
  type GrpcBootstrapOptions,
  type GrpcLocality,
} from "./grpc_bootstrap.ts";

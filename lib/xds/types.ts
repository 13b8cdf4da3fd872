/**
 * Inputs of the xDS generators: the push context (everything discovery knows) and the proxy.
 * @module
 */

import type { ConfigObject, Service, ServiceInstance } from "../model/types.ts";

/** Mesh-wide settings used by the generators (a subset of MeshConfig, already validated). */
export interface XdsMeshConfig {
  /** Mesh-wide peer authentication default. */
  authPolicy: "NONE" | "MUTUAL_TLS";
  /** Cluster connect timeout in milliseconds (mesh `connectTimeout`, default 1000). */
  connectTimeoutMs: number;
  /** Port of the capture listener `virtualOutbound` (default 15001). */
  proxyListenPort: number;
  /** Ingress class handled by the mesh (default `mesh`). */
  ingressClass: string;
  /** Which Ingress objects are handled (see docs/xds.md). */
  ingressControllerMode: "OFF" | "DEFAULT" | "STRICT";
  /** Access log path for HTTP connection managers; empty = no access log. */
  accessLogFile: string;
  /** What the capture listener does with traffic to unknown destinations. */
  outboundTrafficPolicy?: "REGISTRY_ONLY" | "ALLOW_ANY";
  /** Hostnames that never get mesh mTLS on the client side. */
  mtlsExcludedServices?: string[];
}

/** The configuration objects that shape the generated resources (plain ConfigObject arrays). */
export interface PushConfigs {
  virtualServices: ConfigObject[];
  destinationRules: ConfigObject[];
  gateways: ConfigObject[];
  /** Already converted into services by the ServiceEntry registry; not read by the generators. */
  serviceEntries?: ConfigObject[];
  /** authentication `Policy` objects. */
  policies: ConfigObject[];
  serviceRoles: ConfigObject[];
  serviceRoleBindings: ConfigObject[];
  /** PeerAuthentication objects (security.mesh.io); absent: none. */
  peerAuthentications?: ConfigObject[];
  /** AuthorizationPolicy objects (security.mesh.io); absent: none. */
  authorizationPolicies?: ConfigObject[];
  /** RequestAuthentication objects (security.mesh.io); absent: none. */
  requestAuthentications?: ConfigObject[];
  /** Kubernetes-style Ingress objects (extensions/v1beta1 or networking/v1 spec shape). */
  ingresses: ConfigObject[];
  /** Sidecar objects (networking.mesh.io): what proxies see (generate/sidecar_scope.ts). */
  sidecars?: ConfigObject[];
}

/** Push configs without any object: the base a context spreads its own objects over. */
export function emptyPushConfigs(): PushConfigs {
  return {
    virtualServices: [],
    destinationRules: [],
    gateways: [],
    policies: [],
    serviceRoles: [],
    serviceRoleBindings: [],
    ingresses: [],
  };
}

/** Everything a push is computed from. Treat as immutable: indexes are cached per object. */
export interface PushContext {
  services: Service[];
  instances: ServiceInstance[];
  configs: PushConfigs;
  meshConfig: XdsMeshConfig;
  /** Trust/DNS domain (`cluster.local`). */
  domain: string;
}

/** Proxy kinds of the node id. */
export type ProxyType = "sidecar" | "router" | "ingress";

/** A connected proxy, parsed from its node id `<type>~<ip>~<id>~<domain>` plus node metadata. */
export interface Proxy {
  type: ProxyType;
  ip: string;
  id: string;
  domain: string;
  /** Node metadata; `labels` (an object) or string entries give the workload labels. */
  metadata: Record<string, unknown>;
  /**
   * Which xDS client this is, from the node's user agent and build version
   * (`proxyFromNode`); absent when unknown (REST callers, tests), which gets the forms every
   * client reads.
   */
  client?: XdsClientInfo;
}

/** An xDS client implementation and version, as told by its `Node`. */
export interface XdsClientInfo {
  /** `envoy`, a gRPC library (`grpc-core` for C-core and its wrappers, `grpc-js`, `grpc-go`,
   * `grpc-java`), or `other`. */
  kind: "envoy" | "grpc-core" | "grpc-js" | "grpc-go" | "grpc-java" | "other";
  /** The `user_agent_name` as sent (`envoy`, `gRPC C-core linux Python`, ...). */
  name: string;
  /** `[major, minor, patch]` when known. */
  version?: [number, number, number];
}

/** Default mesh settings (MeshConfig code defaults of the reference). */
export const DEFAULT_XDS_MESH_CONFIG: XdsMeshConfig = Object.freeze({
  authPolicy: "NONE",
  connectTimeoutMs: 1000,
  proxyListenPort: 15001,
  ingressClass: "mesh",
  ingressControllerMode: "STRICT",
  accessLogFile: "/dev/stdout",
  outboundTrafficPolicy: "REGISTRY_ONLY",
  mtlsExcludedServices: [],
});

/** A plain xDS resource object (proto field names). */
// deno-lint-ignore no-explicit-any
export type XdsResource = Record<string, any>;

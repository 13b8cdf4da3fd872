/**
 * Core types of the configuration model and of the service model. CONTRACT shared by the
 * stores, meshctl, mesh-discovery and mesh-policy. Pure types: no I/O.
 * @module
 */

/** Kubernetes-style object metadata of a configuration object. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  uid?: string;
  creationTimestamp?: string;
  generation?: number;
}

/** One configuration object as stored: `apiVersion` is always our group (`networking.mesh.io/v1alpha3`...). */
export interface ConfigObject<S = Record<string, unknown>> {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: S;
}

/** One validation problem: which object, which field path (`spec.http[0].route[1].weight`), why. */
export interface ValidationIssue {
  /** `<Kind>/<namespace>/<name>` or, before the name is known, `document <n>`. */
  object: string;
  path: string;
  reason: string;
}

/** Description of a configuration type (virtualservice, rule, ...). */
export interface TypeSchema {
  /** Singular lowercase name used by meshctl: `virtualservice`, `serviceentry`. */
  type: string;
  /** Lowercase plural, also the CRD plural: `virtualservices`, `serviceentries`. */
  plural: string;
  /** Hyphenated internal name printed by meshctl messages: `virtual-service`. */
  internalType: string;
  /** CamelCase kind: `VirtualService`, `HTTPAPISpec`, or lowercase for policy-server kinds (`rule`). */
  kind: string;
  /** Our group: `networking.mesh.io`, `config.mesh.io`, `authentication.mesh.io`. */
  group: string;
  /** `v1alpha3`, `v1alpha2`, `v1alpha1`. */
  version: string;
  /** Legacy v1alpha1 routing types (routerule, egressrule, destinationpolicy). */
  legacy: boolean;
  /** One of the 14 meshctl types (false for policy-server kinds such as `rule`, `handler`). */
  meshctl: boolean;
  /** Validates a spec; returns every problem found (empty = valid). `path` starts with `spec`. */
  validate(spec: unknown): { path: string; reason: string }[];
}

// ---- Service model (registries → discovery) -------------------------------------------------

/** Port protocols, from the port-name prefix (`http-foo` → HTTP) or a registry's metadata. */
export type Protocol =
  | "HTTP"
  | "HTTP2"
  | "GRPC"
  | "HTTPS"
  | "MONGO"
  | "REDIS"
  | "TCP"
  | "TLS"
  | "UDP";

/** One port of a service. */
export interface ServicePort {
  name: string;
  port: number;
  protocol: Protocol;
}

/** How endpoints of a service are resolved by the proxy. */
export type Resolution = "ClientSideLB" | "DNSLB" | "Passthrough";

/** A service known to a registry. `hostname` is the FQDN (`hello.default.svc.cluster.local`). */
export interface Service {
  hostname: string;
  /** Virtual IP or `0.0.0.0` when none. */
  address: string;
  ports: ServicePort[];
  /** Namespace (orchestrator) or empty. */
  namespace: string;
  /** Mesh-external (ServiceEntry MESH_EXTERNAL, ExternalName, Consul external). */
  meshExternal: boolean;
  resolution: Resolution;
  /** SPIFFE identities of the workloads behind the service. */
  serviceAccounts: string[];
  /** Registry name that produced it (`Orchestrator`, `RegistryA`, `ServiceEntry`, `Mock`...). */
  registry: string;
  /** Extra attributes (e.g. per-port auth annotations). */
  attributes?: Record<string, string>;
}

/** One endpoint (instance) of a service port. */
export interface ServiceInstance {
  /** Hostname of the owning service. */
  hostname: string;
  /** The service port this endpoint serves. */
  servicePort: ServicePort;
  /** Endpoint address (IP or DNS name) and port (the target port). */
  address: string;
  port: number;
  labels: Record<string, string>;
  /** `region/zone` or `zone`; empty when unknown. */
  locality: string;
  /** SPIFFE identity of the workload (`spiffe://cluster.local/ns/default/sa/default`) or empty. */
  serviceAccount: string;
  /** Load-balancing weight among the endpoints of its locality (ServiceEntry `weight`); unset: 1. */
  weight?: number;
}

/**
 * Told of a registry's change: `kind` says whether services changed or only instances. With
 * `endpoints`, `hosts` (when given) names every service hostname whose instances changed, so that a
 * listener need not compare the others; without it any instance may have changed.
 */
export type RegistryChangeHandler = (
  kind: "services" | "endpoints",
  hosts?: ReadonlySet<string>,
) => void;

/** A service registry as seen by discovery. */
export interface ServiceRegistry {
  readonly name: string;
  services(): Service[];
  instances(): ServiceInstance[];
  /**
   * The instances of the services named `hosts` (each host's in the order of {@link instances}),
   * found without a pass over every instance; absent: callers filter {@link instances}.
   */
  instancesOf?(hosts: ReadonlySet<string>): ServiceInstance[];
  /** Called after any change of services or instances (`kind` tells which). */
  onChange(handler: RegistryChangeHandler): void;
  /** Begins watching/polling; resolves when the first full view is loaded (or fails). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

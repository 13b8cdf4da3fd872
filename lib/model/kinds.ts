/**
 * Kinds mesh does not store, and what to say about them: kinds of the reference system it does
 * not serve (`Telemetry`, `EnvoyFilter`, Gateway API `Gateway`...), orchestrator workload kinds
 * that Istio samples bundle with their mesh objects (`Deployment`, `Service`...), and the legacy
 * `config.istio.io/v1alpha2` networking kinds, stored but not turned into proxy configuration.
 * @module
 */

/** Kinds of the reference system (and the Gateway API) that mesh does not serve, by group. */
const UNSUPPORTED: Readonly<Record<string, readonly string[]>> = {
  "networking.istio.io": [
    "EnvoyFilter",
    "ProxyConfig",
  ],
  "telemetry.istio.io": ["Telemetry"],
  "extensions.istio.io": ["WasmPlugin"],
  "gateway.networking.k8s.io": [
    "Gateway",
    "GatewayClass",
    "HTTPRoute",
    "GRPCRoute",
    "TCPRoute",
    "TLSRoute",
    "UDPRoute",
    "ReferenceGrant",
    "BackendTLSPolicy",
  ],
  "gateway.networking.x-k8s.io": ["XListenerSet", "XBackendTrafficPolicy"],
};

/** What to do instead, for some unsupported kinds. */
const HINTS: Readonly<Record<string, string>> = {
  Gateway: " (write an Istio Gateway and VirtualService, networking.istio.io)",
  HTTPRoute: " (write an Istio Gateway and VirtualService, networking.istio.io)",
};

/** The group of an apiVersion (`networking.istio.io/v1` → `networking.istio.io`; `v1` → ``). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

/**
 * For a kind mesh does not serve, the reason to give (`kind Telemetry (telemetry.istio.io/v1)
 * is not supported by mesh`); undefined for any other kind. The Gateway API's `Gateway` is named
 * as such, so it is not mistaken for the Istio `Gateway` with a wrong apiVersion.
 */
export function unsupportedKindReason(apiVersion: unknown, kind: unknown): string | undefined {
  if (typeof apiVersion !== "string" || typeof kind !== "string") return undefined;
  const group = groupOf(apiVersion);
  const ours = group.endsWith(".mesh.io")
    ? group.slice(0, -".mesh.io".length) + ".istio.io"
    : group;
  if (!UNSUPPORTED[ours]?.includes(kind)) return undefined;
  const what = group.startsWith("gateway.networking.")
    ? `Gateway API kind ${kind}`
    : `kind ${kind}`;
  const hint = HINTS[kind] && !(kind === "Gateway" && !group.startsWith("gateway."))
    ? HINTS[kind]
    : "";
  return `${what} (${apiVersion}) is not supported by mesh${hint}`;
}

/**
 * The orchestrator's own API groups (core `v1`, `apps`, `batch`, ...): documents of these kinds,
 * bundled with mesh objects in Istio's samples, are workload definitions, not mesh objects.
 */
const ORCHESTRATOR_GROUPS = new Set([
  "",
  "apps",
  "batch",
  "extensions",
  "autoscaling",
  "policy",
  "rbac.authorization.k8s.io",
  "apiextensions.k8s.io",
  "admissionregistration.k8s.io",
  "storage.k8s.io",
  "scheduling.k8s.io",
  "coordination.k8s.io",
  "discovery.k8s.io",
  "certificates.k8s.io",
  "node.k8s.io",
]);

/**
 * True for a document of an orchestrator workload kind (`v1` Service, `apps/v1` Deployment,
 * `rbac.authorization.k8s.io/v1` Role...), which `meshctl create` skips. Ingress
 * (`extensions/v1beta1`, `networking.k8s.io/*`) is a mesh object, not a workload kind.
 */
export function isOrchestratorKind(apiVersion: unknown, kind: unknown): boolean {
  if (typeof apiVersion !== "string" || typeof kind !== "string" || kind === "Ingress") {
    return false;
  }
  return ORCHESTRATOR_GROUPS.has(groupOf(apiVersion)) ||
    (groupOf(apiVersion).endsWith(".k8s.io") && !groupOf(apiVersion).startsWith("gateway."));
}

/** The legacy networking kinds of `config.istio.io/v1alpha2`. */
export const LEGACY_NETWORKING_KINDS: readonly string[] = Object.freeze([
  "RouteRule",
  "EgressRule",
  "DestinationPolicy",
]);

/** Kinds stored as given but not turned into proxy configuration, and why. */
const STORED_ONLY: Readonly<Record<string, string>> = {
  WorkloadGroup: "WorkloadGroup is stored as a template but not served: mesh does not " +
    "auto-register workloads from it; write a WorkloadEntry per VM, selected by a " +
    "ServiceEntry's workloadSelector (or register it with `meshctl register`)",
  RbacConfig: "RbacConfig is stored but not served: ServiceRoles and ServiceRoleBindings are " +
    "enforced wherever they apply, as with Istio 0.8 (its mode, inclusion and exclusion do not " +
    "switch them)",
  ClusterRbacConfig: "ClusterRbacConfig is stored but not served: ServiceRoles and " +
    "ServiceRoleBindings are enforced wherever they apply, as with Istio 0.8 (its mode, " +
    "inclusion and exclusion do not switch them)",
};

/**
 * For a kind that is stored but not turned into proxy configuration, what to tell the user: the
 * legacy networking kinds (`RouteRule`, `EgressRule`, `DestinationPolicy`, with the command that
 * converts them), `WorkloadGroup` (a template) and `RbacConfig`/`ClusterRbacConfig`; undefined
 * for any other kind.
 */
export function legacyNotServedReason(kind: string): string | undefined {
  if (Object.hasOwn(STORED_ONLY, kind)) return STORED_ONLY[kind];
  if (!LEGACY_NETWORKING_KINDS.includes(kind)) return undefined;
  return `${kind} is stored but not served (no proxy configuration is generated from it): ` +
    "convert it with `meshctl experimental convert-networking-config -f <file>` " +
    "and create the VirtualService, DestinationRule and ServiceEntry objects it prints";
}

/**
 * A DestinationRule traffic-policy field wherever a traffic policy is: top level, per port, per
 * subset and per port of a subset.
 */
function trafficPolicyFields(
  fields: readonly (readonly [string, string])[],
): (readonly [string, string])[] {
  return fields.flatMap(([f, why]) =>
    [
      "trafficPolicy",
      "trafficPolicy.portLevelSettings[]",
      "subsets[].trafficPolicy",
      "subsets[].trafficPolicy.portLevelSettings[]",
    ].map((at) => [`${at}.${f}`, why] as const)
  );
}

/**
 * Fields mesh accepts and stores but does not yet turn into proxy configuration, by kind: each
 * entry is a path (`[]` steps into every list item) and what is said about it.
 */
const UNSERVED_FIELDS: Readonly<
  Record<string, readonly (readonly [string, string, ((v: unknown) => boolean)?])[]>
> = {
  VirtualService: [
    [
      "tls[]",
      "TLS routes by SNI are served on Gateways' passthrough servers only; sidecars do not " +
      "route by SNI (use tcp routes)",
    ],
    ["tls[].match[].destinationSubnets", "TLS routes match by SNI and port only"],
    ["tls[].match[].sourceLabels", "TLS routes match by SNI and port only"],
  ],
  DestinationRule: [
    ...trafficPolicyFields([
      ["tls.insecureSkipVerify", "the server certificate is verified as configured"],
      ["loadBalancer.localityLbSetting", "locality load balancing is not generated"],
      ["loadBalancer.warmupDurationSecs", "no slow-start warm-up"],
      ["connectionPool.http.useClientProtocol", "the port's protocol is used"],
    ]),
  ],
  Gateway: [
    ["servers[].port.targetPort", "the listener uses port.number"],
    ["servers[].name", "not used (listeners are named by port)"],
    ["servers[].bind", "listeners bind 0.0.0.0"],
    ["servers[].tls.minProtocolVersion", "Envoy's default TLS versions"],
    ["servers[].tls.maxProtocolVersion", "Envoy's default TLS versions"],
    ["servers[].tls.cipherSuites", "Envoy's default cipher suites"],
  ],
  ServiceEntry: [
    [
      "endpoints[].locality",
      "the subzone is dropped (region and zone are kept)",
      (v) => typeof v === "string" && v.split("/").length > 2,
    ],
    ["endpoints[].network", "all endpoints are taken as reachable"],
    ["subjectAltNames", "the service accounts of the ServiceEntry's annotation apply"],
  ],
  Sidecar: [
    ["ingress[].bind", "inbound listeners bind as without a Sidecar"],
    ["ingress[].captureMode", "traffic is captured as without a Sidecar"],
    ["ingress[].tls", "inbound TLS follows PeerAuthentication and Policy"],
    ["ingress[].connectionPool", "no inbound connection limits"],
    ["inboundConnectionPool", "no inbound connection limits"],
    ["egress[].bind", "outbound listeners bind as without a Sidecar"],
    ["egress[].captureMode", "traffic is captured as without a Sidecar"],
    ["outboundTrafficPolicy.egressProxy", "unknown destinations go out directly (ALLOW_ANY)"],
  ],
  WorkloadEntry: [
    ["network", "the endpoint is taken as reachable"],
  ],
};

function present(v: unknown, steps: readonly string[], test?: (v: unknown) => boolean): boolean {
  if (v === undefined || v === null) return false;
  if (steps.length === 0) return test ? test(v) : !(Array.isArray(v) && v.length === 0);
  const [step, ...rest] = steps;
  if (step === "[]") return Array.isArray(v) && v.some((x) => present(x, rest, test));
  if (typeof v !== "object" || Array.isArray(v)) return false;
  return present((v as Record<string, unknown>)[step], rest, test);
}

/**
 * For a stored object, one line per field it sets that mesh accepts but does not turn into
 * proxy configuration (`spec.http[].mirrorPercentage: accepted, not yet served: ...`).
 */
export function unservedFields(o: { kind: string; spec?: unknown }): string[] {
  const out: string[] = [];
  for (const [path, why, test] of UNSERVED_FIELDS[o.kind] ?? []) {
    const steps = path.split(".").flatMap((p) => p.endsWith("[]") ? [p.slice(0, -2), "[]"] : [p]);
    if (present(o.spec, steps, test)) out.push(`spec.${path}: accepted, not yet served: ${why}`);
  }
  return out;
}

/** What `/debug/configz` adds to an object that is not (fully) turned into proxy configuration. */
export interface ServingStatus {
  /** False for a legacy kind: stored, nothing generated from it. */
  served: boolean;
  /** Why, and what to run (legacy kinds). */
  message?: string;
  /** Fields accepted but not yet turned into proxy configuration (see {@link unservedFields}). */
  unservedFields?: string[];
}

/**
 * The object as `/debug/configz` shows it: with a `status` saying it is not served (legacy
 * kinds) or which of its fields are not yet served; the object itself when it is served fully.
 */
export function withServingStatus<T extends { kind: string; spec?: unknown }>(
  o: T,
): T | (T & { status: ServingStatus }) {
  const message = legacyNotServedReason(o.kind);
  if (message) return { ...o, status: { served: false, message } };
  const fields = unservedFields(o);
  return fields.length ? { ...o, status: { served: true, unservedFields: fields } } : o;
}

/**
 * The table of configuration types: the 14 meshctl types and the policy-server kinds, with
 * lookups by type name and by apiVersion/kind.
 * @module
 */
import type { TypeSchema } from "./types.ts";
import { any, type Schema, validate } from "./dsl.ts";
import { INGRESS_API_VERSIONS, normalizeIngress } from "./ingress.ts";
import * as specs from "./specs.ts";
import * as security from "./security_specs.ts";
import * as workload from "./workload_specs.ts";
import { pluralize } from "./values.ts";

/** Policy-server kind categories (`mesh-policy crd` prints core, adapter, instance). */
export type PolicyCategory = "core" | "meta" | "adapter" | "instance";

/** A TypeSchema with what the CRD generator and normalizer need. */
export interface ModelSchema extends TypeSchema {
  /** The declarative spec schema (DSL). */
  readonly specSchema: Schema;
  /** The reference system's group (`networking.istio.io`), accepted on input. */
  readonly referenceGroup: string;
  /** `<Kind>List`. */
  readonly listKind: string;
  /** CRD categories: `mesh-io` plus the group with dots as dashes. */
  readonly categories: readonly string[];
  /** Short names, as kubectl users type them (`vs`, `dr`, `gw`, `se`); CRD `shortNames`. */
  readonly shortNames: readonly string[];
  /**
   * Every version accepted on input (`version` first): one schema under all of them, stored
   * as `version`. Served by the CRD too (`version` is the storage version).
   */
  readonly versions: readonly string[];
  /** Only for policy-server kinds. */
  readonly policyCategory?: PolicyCategory;
  /** Only for policy-server kinds: implementing package (CRD label `package`). */
  readonly package?: string;
  /**
   * Only for orchestrator built-in kinds (Ingress): the apiVersions accepted on input and kept
   * as given (no group rewriting); `group`/`version` name the one the orchestrator API serves.
   */
  readonly apiVersions?: readonly string[];
}

/** Short names of the networking types (the reference system's later CRDs use the same). */
const SHORT_NAMES: Record<string, readonly string[]> = {
  virtualservice: ["vs"],
  destinationrule: ["dr"],
  gateway: ["gw"],
  serviceentry: ["se"],
  peerauthentication: ["pa"],
  requestauthentication: ["ra"],
  authorizationpolicy: ["ap"],
  workloadentry: ["we"],
  workloadgroup: ["wg"],
};

/** Our API groups. */
export const GROUPS = {
  networking: "networking.mesh.io",
  config: "config.mesh.io",
  authentication: "authentication.mesh.io",
  security: "security.mesh.io",
} as const;

/** Maps a reference-system group (`*.istio.io`) to ours (`*.mesh.io`); other groups unchanged. */
export function toOurGroup(group: string): string {
  return group.endsWith(".istio.io") ? group.slice(0, -".istio.io".length) + ".mesh.io" : group;
}

function toReferenceGroup(group: string): string {
  return group.endsWith(".mesh.io") ? group.slice(0, -".mesh.io".length) + ".istio.io" : group;
}

function define(
  opts: {
    type: string;
    plural?: string;
    internalType: string;
    kind: string;
    group: string;
    version: string;
    legacy?: boolean;
    /** Versions accepted besides `version` (one schema under all of them). */
    alsoVersions?: readonly string[];
    meshctl: boolean;
    spec: Schema;
    policyCategory?: PolicyCategory;
    package?: string;
  },
): ModelSchema {
  const spec = opts.spec;
  const categories = ["mesh-io", opts.group.replaceAll(".", "-")];
  if (opts.policyCategory) categories.push("policy-mesh-io");
  return Object.freeze({
    type: opts.type,
    plural: opts.plural ?? pluralize(opts.type),
    internalType: opts.internalType,
    kind: opts.kind,
    group: opts.group,
    version: opts.version,
    versions: Object.freeze([opts.version, ...(opts.alsoVersions ?? [])]),
    legacy: opts.legacy ?? false,
    meshctl: opts.meshctl,
    specSchema: spec,
    referenceGroup: toReferenceGroup(opts.group),
    listKind: `${opts.kind}List`,
    categories: Object.freeze(categories),
    shortNames: Object.freeze([...(SHORT_NAMES[opts.type] ?? [])]),
    ...(opts.policyCategory ? { policyCategory: opts.policyCategory, package: opts.package } : {}),
    validate: (value: unknown) => validate(spec, value ?? {}, "spec"),
  });
}

/**
 * The later versions of the networking API (the reference system serves one schema under
 * `v1alpha3`, `v1beta1` and `v1`); accepted for VirtualService, DestinationRule, Gateway and
 * ServiceEntry, stored as `v1alpha3`.
 */
export const NETWORKING_VERSIONS: readonly string[] = Object.freeze(["v1beta1", "v1"]);

const N = GROUPS.networking;
const C = GROUPS.config;
const A = GROUPS.authentication;

/**
 * The 14 meshctl types, in the reference system's descriptor order (which is also the order
 * of `typeListText()`).
 */
export const meshctlSchemas: readonly ModelSchema[] = Object.freeze([
  define({
    type: "routerule",
    internalType: "route-rule",
    kind: "RouteRule",
    group: C,
    version: "v1alpha2",
    legacy: true,
    meshctl: true,
    spec: specs.routeRuleSpec,
  }),
  define({
    type: "virtualservice",
    internalType: "virtual-service",
    kind: "VirtualService",
    group: N,
    version: "v1alpha3",
    alsoVersions: NETWORKING_VERSIONS,
    meshctl: true,
    spec: specs.virtualServiceSpec,
  }),
  define({
    type: "gateway",
    internalType: "gateway",
    kind: "Gateway",
    group: N,
    version: "v1alpha3",
    alsoVersions: NETWORKING_VERSIONS,
    meshctl: true,
    spec: specs.gatewaySpec,
  }),
  define({
    type: "egressrule",
    internalType: "egress-rule",
    kind: "EgressRule",
    group: C,
    version: "v1alpha2",
    legacy: true,
    meshctl: true,
    spec: specs.egressRuleSpec,
  }),
  define({
    type: "serviceentry",
    internalType: "service-entry",
    kind: "ServiceEntry",
    group: N,
    version: "v1alpha3",
    alsoVersions: NETWORKING_VERSIONS,
    meshctl: true,
    spec: specs.serviceEntrySpec,
  }),
  define({
    type: "destinationpolicy",
    internalType: "destination-policy",
    kind: "DestinationPolicy",
    group: C,
    version: "v1alpha2",
    legacy: true,
    meshctl: true,
    spec: specs.destinationPolicySpec,
  }),
  define({
    type: "destinationrule",
    internalType: "destination-rule",
    kind: "DestinationRule",
    group: N,
    version: "v1alpha3",
    alsoVersions: NETWORKING_VERSIONS,
    meshctl: true,
    spec: specs.destinationRuleSpec,
  }),
  define({
    type: "httpapispec",
    internalType: "http-api-spec",
    kind: "HTTPAPISpec",
    group: C,
    version: "v1alpha2",
    meshctl: true,
    spec: specs.httpApiSpecSpec,
  }),
  define({
    type: "httpapispecbinding",
    internalType: "http-api-spec-binding",
    kind: "HTTPAPISpecBinding",
    group: C,
    version: "v1alpha2",
    meshctl: true,
    spec: specs.httpApiSpecBindingSpec,
  }),
  define({
    type: "quotaspec",
    internalType: "quota-spec",
    kind: "QuotaSpec",
    group: C,
    version: "v1alpha2",
    meshctl: true,
    spec: specs.quotaSpecSpec,
  }),
  define({
    type: "quotaspecbinding",
    internalType: "quota-spec-binding",
    kind: "QuotaSpecBinding",
    group: C,
    version: "v1alpha2",
    meshctl: true,
    spec: specs.quotaSpecBindingSpec,
  }),
  define({
    type: "policy",
    plural: "policies",
    internalType: "policy",
    kind: "Policy",
    group: A,
    version: "v1alpha1",
    meshctl: true,
    spec: specs.authPolicySpec,
  }),
  define({
    type: "servicerole",
    internalType: "service-role",
    kind: "ServiceRole",
    group: C,
    version: "v1alpha2",
    meshctl: true,
    spec: specs.serviceRoleSpec,
  }),
  define({
    type: "servicerolebinding",
    internalType: "service-role-binding",
    kind: "ServiceRoleBinding",
    group: C,
    version: "v1alpha2",
    meshctl: true,
    spec: specs.serviceRoleBindingSpec,
  }),
]);

/**
 * Today's security API (`security.istio.io` `v1beta1` and `v1`, stored as `v1beta1`):
 * PeerAuthentication, AuthorizationPolicy, RequestAuthentication. meshctl reads and writes them
 * (`meshctl get peerauthentication`), but they are not among the 14 types its messages list.
 */
export const securitySchemas: readonly ModelSchema[] = Object.freeze(
  ([
    ["peerauthentication", "PeerAuthentication", security.peerAuthenticationSpec],
    ["authorizationpolicy", "AuthorizationPolicy", security.authorizationPolicySpec],
    ["requestauthentication", "RequestAuthentication", security.requestAuthenticationSpec],
  ] as const).map(([type, kind, spec]) =>
    define({
      type,
      plural: type === "authorizationpolicy" ? "authorizationpolicies" : undefined,
      internalType: type,
      kind,
      group: GROUPS.security,
      version: "v1beta1",
      alsoVersions: ["v1"],
      meshctl: true,
      spec,
    })
  ),
);

/**
 * Networking kinds that scope proxies and describe VMs (`Sidecar`, `WorkloadEntry`,
 * `WorkloadGroup`: networking `v1alpha3`, `v1beta1` and `v1`, stored as `v1alpha3`), and Istio's
 * `RbacConfig`/`ClusterRbacConfig` (`rbac.istio.io/v1alpha1`, also `config.istio.io/v1alpha2`,
 * stored as `config.mesh.io/v1alpha2`). meshctl reads and writes them by name; they are not among
 * the 14 types its messages list.
 */
export const workloadSchemas: readonly ModelSchema[] = Object.freeze([
  ...([
    ["sidecar", "Sidecar", workload.sidecarSpec],
    ["workloadentry", "WorkloadEntry", workload.workloadEntrySpec],
    ["workloadgroup", "WorkloadGroup", workload.workloadGroupSpec],
  ] as const).map(([type, kind, spec]) =>
    define({
      type,
      internalType: type,
      kind,
      group: N,
      version: "v1alpha3",
      alsoVersions: NETWORKING_VERSIONS,
      meshctl: true,
      spec,
    })
  ),
  ...([
    ["rbacconfig", "RbacConfig"],
    ["clusterrbacconfig", "ClusterRbacConfig"],
  ] as const).map(([type, kind]) =>
    define({
      type,
      internalType: type,
      kind,
      group: C,
      version: "v1alpha2",
      meshctl: true,
      spec: workload.rbacConfigSpec,
    })
  ),
]);

/** Adapter (handler) kinds of the policy server, in `mesh-policy crd adapter` order. */
export const ADAPTER_KINDS: readonly string[] = Object.freeze([
  "circonus",
  "cloudwatch",
  "denier",
  "dogstatsd",
  "fluentd",
  "kubernetesenv",
  "listchecker",
  "memquota",
  "noop",
  "opa",
  "prometheus",
  "rbac",
  "servicecontrol",
  "solarwinds",
  "stackdriver",
  "statsd",
  "stdio",
  "zipkin",
]);

/** Template (instance) kinds of the policy server, sorted by name. */
export const INSTANCE_KINDS: readonly string[] = Object.freeze([
  "apikey",
  "authorization",
  "checknothing",
  "kubernetes",
  "listentry",
  "logentry",
  "metric",
  "quota",
  "reportnothing",
  "servicecontrolreport",
  "tracespan",
]);

function policyKind(
  kind: string,
  category: PolicyCategory,
  pkg: string,
  spec: Schema,
): ModelSchema {
  return define({
    type: kind,
    internalType: kind,
    kind,
    group: C,
    version: "v1alpha2",
    meshctl: false,
    spec,
    policyCategory: category,
    package: pkg,
  });
}

/** Policy-server kinds: rule, attributemanifest, adapter, template, then handlers and instances. */
export const policySchemas: readonly ModelSchema[] = Object.freeze([
  policyKind("rule", "core", "mesh.io.mixer", specs.ruleSpec),
  policyKind("attributemanifest", "core", "mesh.io.mixer", specs.attributeManifestSpec),
  policyKind("adapter", "meta", "adapter", specs.freeformSpec),
  policyKind("template", "meta", "template", specs.freeformSpec),
  ...ADAPTER_KINDS.map((k) => policyKind(k, "adapter", k, specs.freeformSpec)),
  ...INSTANCE_KINDS.map((k) =>
    policyKind(
      k,
      "instance",
      k === "kubernetes" ? "adapter.template.kubernetes" : k,
      specs.freeformSpec,
    )
  ),
]);

/** Every storable type: the 14 meshctl types, the security kinds, then the policy-server kinds. */
export const allSchemas: readonly ModelSchema[] = Object.freeze([
  ...meshctlSchemas,
  ...securitySchemas,
  ...workloadSchemas,
  ...policySchemas,
]);

/**
 * The orchestrator's Ingress (not a custom resource: no CRD, not in {@link allSchemas}).
 * Storable in the file store and through meshctl (`get ingress`), in any apiVersion that
 * `normalizeIngress` reads, kept as given; the orchestrator API is `networking.k8s.io/v1`.
 * Its spec is validated by `normalizeIngress`.
 */
export const ingressSchema: ModelSchema = Object.freeze({
  type: "ingress",
  plural: "ingresses",
  internalType: "ingress",
  kind: "Ingress",
  group: "networking.k8s.io",
  version: "v1",
  versions: Object.freeze(["v1"]),
  legacy: false,
  meshctl: false,
  specSchema: any({ object: true }),
  referenceGroup: "networking.k8s.io",
  listKind: "IngressList",
  categories: Object.freeze([]),
  shortNames: Object.freeze(["ing"]),
  apiVersions: INGRESS_API_VERSIONS,
  validate(spec: unknown) {
    // without the apiVersion: read v1 when the spec uses a v1-only field, else extensions/v1beta1
    const text = JSON.stringify(spec ?? {});
    const v1 = /"(service|defaultBackend|pathType)":/.test(text);
    const { issues } = normalizeIngress(
      {
        apiVersion: v1 ? "networking.k8s.io/v1" : "extensions/v1beta1",
        kind: "Ingress",
        metadata: { name: "x" },
        spec,
      },
      "",
    );
    return issues.map((i) => ({ path: i.path, reason: i.reason }));
  },
});

const byTypeName = new Map<string, ModelSchema>();
for (const s of [...allSchemas, ingressSchema]) {
  byTypeName.set(s.type, s);
  byTypeName.set(s.plural, s);
  for (const short of s.shortNames) byTypeName.set(short, s);
}

/**
 * Finds a type by its singular, plural or short name, case-insensitively (`virtualservice`,
 * `VirtualServices`, `vs`, `policies`, `rule`). Hyphenated names are not accepted (see
 * `hyphenatedTypeError`).
 */
export function schemaByType(name: string): ModelSchema | undefined {
  return byTypeName.get(name.toLowerCase());
}

/** Kinds also accepted as `rbac.istio.io/v1alpha1` (and `rbac.mesh.io/v1alpha1`). */
const RBAC_V1ALPHA1_KINDS: readonly string[] = [
  "ServiceRole",
  "ServiceRoleBinding",
  "RbacConfig",
  "ClusterRbacConfig",
];

/**
 * Finds a type by apiVersion (`<group>/<version>`) and kind. Accepts our groups
 * (`networking.mesh.io/v1alpha3`) and the reference groups (`networking.istio.io/v1alpha3`); ServiceRole
 * and ServiceRoleBinding also as `rbac.istio.io/v1alpha1` (Istio 1.0–1.3).
 */
export function schemaByKind(apiVersion: string, kind: string): ModelSchema | undefined {
  if (kind === ingressSchema.kind) {
    return ingressSchema.apiVersions!.includes(apiVersion) ? ingressSchema : undefined;
  }
  const slash = apiVersion.indexOf("/");
  if (slash < 0) return undefined;
  let group = toOurGroup(apiVersion.slice(0, slash));
  let version = apiVersion.slice(slash + 1);
  // Istio 1.0–1.3 served the 0.8 RBAC kinds under rbac.istio.io/v1alpha1: one schema, stored as ours
  if (group === "rbac.mesh.io" && version === "v1alpha1" && RBAC_V1ALPHA1_KINDS.includes(kind)) {
    [group, version] = [GROUPS.config, "v1alpha2"];
  }
  return allSchemas.find((s) =>
    s.kind === kind && s.group === group && s.versions.includes(version)
  );
}

/** Finds the types with a given kind, whatever the apiVersion (used when apiVersion is absent). */
export function schemasByKindOnly(kind: string): ModelSchema[] {
  if (kind === ingressSchema.kind) return [ingressSchema];
  return allSchemas.filter((s) => s.kind === kind);
}

/** Comma-separated singular names of the 14 meshctl types, for error messages. */
export function typeListText(): string {
  return meshctlSchemas.map((s) => s.type).join(", ");
}

/**
 * For a hyphenated legacy name of a meshctl type (`route-rule`, `virtual-services`), the error
 * message `"route-rule" not recognized. Please use non-hyphenated resource name "routerule"`;
 * undefined for any other name.
 */
export function hyphenatedTypeError(name: string): string | undefined {
  const lower = name.toLowerCase();
  if (!lower.includes("-")) return undefined;
  const known = meshctlSchemas.some((s) =>
    s.internalType === lower || pluralize(s.internalType) === lower
  );
  if (!known) return undefined;
  return `${JSON.stringify(name)} not recognized. Please use non-hyphenated resource name ${
    JSON.stringify(name.replaceAll("-", ""))
  }`;
}

/**
 * Resolves a meshctl type argument: the schema, or the exact error message (hyphenated name,
 * or `configuration type <t> not found, the types are <list>`). The 14 meshctl types, and
 * `ingress` (`ingresses`, `ing`), which the list does not name.
 */
export function resolveMeshctlType(name: string): { schema: ModelSchema } | { error: string } {
  const s = schemaByType(name);
  if (s?.meshctl || s === ingressSchema) return { schema: s };
  const hyphen = hyphenatedTypeError(name);
  if (hyphen) return { error: hyphen };
  return { error: `configuration type ${name} not found, the types are ${typeListText()}` };
}

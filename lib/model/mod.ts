/**
 * The configuration model: types of configuration objects, their schemas and validation,
 * mesh and injection configuration, Ingress parsing, CRD manifests. Pure (no I/O).
 *
 * @example
 * ```ts
 * import { normalizeObject, formatIssues } from "./mod.ts";
 * const { object, issues } = normalizeObject(doc, "file.yaml document 1");
 * if (issues.length) throw new Error(formatIssues(issues));
 * ```
 * @module
 */
export type * from "./types.ts";
export {
  ADAPTER_KINDS,
  allSchemas,
  GROUPS,
  hyphenatedTypeError,
  ingressSchema,
  INSTANCE_KINDS,
  meshctlSchemas,
  type ModelSchema,
  type PolicyCategory,
  policySchemas,
  resolveMeshctlType,
  schemaByKind,
  schemaByType,
  schemasByKindOnly,
  securitySchemas,
  toOurGroup,
  typeListText,
  workloadSchemas,
} from "./registry.ts";
export {
  deepEqual,
  formatIssue,
  formatIssues,
  groupBy,
  normalizeObject,
  type NormalizeOptions,
  type NormalizeResult,
  objectLabel,
} from "./object.ts";
export {
  type AuthPolicy,
  type ControlPlaneAuthPolicy,
  defaultInjectConfig,
  defaultMeshConfig,
  defaultProxyConfig,
  type IngressControllerMode,
  type InjectConfig,
  type InjectionPolicy,
  type InterceptionMode,
  type MeshConfig,
  type OutboundTrafficPolicyMode,
  parseInjectConfig,
  parseMeshConfig,
  type ProxyConfig,
  validateMeshConfig,
} from "./meshconfig.ts";
export {
  type Ingress,
  INGRESS_API_VERSIONS,
  INGRESS_CLASS_ANNOTATION,
  INGRESS_GATEWAY_CERTS,
  INGRESS_GATEWAY_SELECTOR,
  type IngressBackend,
  ingressClassMatches,
  type IngressPath,
  type IngressRule,
  ingressToV1,
  normalizeIngress,
  type PathType,
} from "./ingress.ts";
export { crdManifest, crdManifests, crdsYaml } from "./crds.ts";
export {
  checkDuration,
  checkHost,
  checkHostPort,
  escapeControl,
  formatDuration,
  isDns1123Label,
  isDns1123Subdomain,
  isIp,
  parseDurationMs,
  pluralize,
  printable,
  quote,
  QUOTE_MAX,
} from "./values.ts";
export { firstErrorLine } from "./errors.ts";
export { instanceSignature, SIGNED_FIELDS } from "./instance.ts";
export { documentsOf, type ParsedDocument, parseDocuments } from "./documents.ts";
export {
  capIssues,
  MAX_ALIASES,
  MAX_DEPTH,
  MAX_ISSUES,
  MAX_VALUES,
  type ShapeProblem,
  shapeProblem,
} from "./limits.ts";
export {
  groupOf,
  isOrchestratorKind,
  LEGACY_NETWORKING_KINDS,
  legacyNotServedReason,
  type ServingStatus,
  unservedFields,
  unsupportedKindReason,
  withServingStatus,
} from "./kinds.ts";
export { camelCase, knownField, protoField, spellings } from "./proto_names.ts";

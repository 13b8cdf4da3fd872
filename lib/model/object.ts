/**
 * Normalization of configuration objects read from files, meshctl input or the orchestrator:
 * apiVersion/kind lookup (reference groups rewritten to ours), metadata checks and spec
 * validation, every problem reported.
 * @module
 */
import type { ConfigObject, ObjectMeta, ValidationIssue } from "./types.ts";
import { canonicalize, clean, describe, keyPath } from "./dsl.ts";
import { type ModelSchema, schemaByKind, schemasByKindOnly } from "./registry.ts";
import { normalizeIngress } from "./ingress.ts";
import { unsupportedKindReason } from "./kinds.ts";
import { capIssues, shapeProblem } from "./limits.ts";
import {
  checkLabelKey,
  checkLabelValue,
  checkNamespace,
  checkObjectName,
  printable,
  quote,
} from "./values.ts";

/** Result of `normalizeObject`. `object` is set only when there are no issues. */
export interface NormalizeResult {
  object?: ConfigObject;
  issues: ValidationIssue[];
  /** The type of the object when its apiVersion/kind are known (even if invalid). */
  schema?: ModelSchema;
}

/** Options of `normalizeObject`. */
export interface NormalizeOptions {
  /** Namespace given to objects without `metadata.namespace`. */
  defaultNamespace?: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `<Kind>/<namespace>/<name>` (or `<Kind>/<name>` without namespace). */
export function objectLabel(kind: string, name: string, namespace?: string): string {
  return namespace ? `${kind}/${namespace}/${name}` : `${kind}/${name}`;
}

// long: field-by-field validation of a config object, problems reported in path order
/**
 * Checks and normalizes one decoded object `{apiVersion, kind, metadata, spec}`:
 * - `kind` must name a known type; `apiVersion` (when present) must be that type's
 *   group/version, in our group (`networking.mesh.io/v1alpha3`) or the reference group
 *   (`networking.istio.io/v1alpha3`); absent apiVersion is taken from the kind;
 * - `metadata.name` must be a DNS-1123 subdomain, `metadata.namespace` a DNS-1123 label;
 *   labels and annotations must be string maps;
 * - `spec` is validated against the type's schema.
 *
 * The returned object is in our group, with null fields removed from the spec. Issues name
 * the object as `<Kind>/<namespace>/<name>`, or `label` while the name is unknown
 * (e.g. `file.yaml document 2`).
 */
export function normalizeObject(
  raw: unknown,
  label: string,
  options: NormalizeOptions = {},
): NormalizeResult {
  const issues: ValidationIssue[] = [];
  if (!isRecord(raw)) {
    return {
      issues: [{ object: label, path: "", reason: `must be an object, got ${describe(raw)}` }],
    };
  }
  const shape = shapeProblem(raw);
  if (shape) {
    // name the object when its identity reads plainly (it is not validated further)
    const m = isRecord(raw.metadata) ? raw.metadata : {};
    const plain = (v: unknown) => typeof v === "string" && /^[\w.-]{1,253}$/.test(v);
    const ns = plain(m.namespace) ? m.namespace as string : options.defaultNamespace;
    const object = plain(raw.kind) && plain(m.name)
      ? objectLabel(raw.kind as string, m.name as string, ns)
      : label;
    return { issues: [{ object, path: shape.path, reason: shape.reason }] };
  }
  const at = (path: string, reason: string) => ({ object: label, path, reason });

  // metadata first, so that later issues can name the object
  const meta: ObjectMeta = { name: "" };
  const rawMeta = raw.metadata;
  let metaOk = true;
  if (rawMeta === undefined || rawMeta === null) {
    issues.push(at("metadata.name", "is required"));
    metaOk = false;
  } else if (!isRecord(rawMeta)) {
    issues.push(at("metadata", `must be an object, got ${describe(rawMeta)}`));
    metaOk = false;
  }
  const m = isRecord(rawMeta) ? rawMeta : {};
  const metaIssues: ValidationIssue[] = [];
  if (metaOk) {
    if (m.name === undefined || m.name === null || m.name === "") {
      metaIssues.push(at("metadata.name", "is required"));
    } else if (typeof m.name !== "string") {
      metaIssues.push(at("metadata.name", `must be a string, got ${describe(m.name)}`));
    } else {
      const bad = checkObjectName(m.name);
      if (bad) metaIssues.push(at("metadata.name", bad));
      meta.name = m.name;
    }
  }
  if (m.namespace !== undefined && m.namespace !== null && m.namespace !== "") {
    if (typeof m.namespace !== "string") {
      metaIssues.push(at("metadata.namespace", `must be a string, got ${describe(m.namespace)}`));
    } else {
      const bad = checkNamespace(m.namespace);
      if (bad) metaIssues.push(at("metadata.namespace", bad));
      meta.namespace = m.namespace;
    }
  } else if (options.defaultNamespace) {
    meta.namespace = options.defaultNamespace;
  }
  for (const field of ["labels", "annotations"] as const) {
    const v = m[field];
    if (v === undefined || v === null) continue;
    if (!isRecord(v)) {
      metaIssues.push(at(`metadata.${field}`, `must be a map of strings, got ${describe(v)}`));
      continue;
    }
    const out: Record<string, string> = {};
    for (const [k, val] of Object.entries(v)) {
      const p = keyPath(`metadata.${field}`, k);
      if (typeof val !== "string") {
        metaIssues.push(at(p, `must be a string, got ${describe(val)}`));
        continue;
      }
      if (field === "labels") {
        const bad = checkLabelKey(k) ?? checkLabelValue(val);
        if (bad) metaIssues.push(at(p, bad));
      }
      out[k] = val;
    }
    meta[field] = out;
  }
  if (typeof m.resourceVersion === "string" && m.resourceVersion) {
    meta.resourceVersion = m.resourceVersion;
  }
  if (typeof m.uid === "string" && m.uid) meta.uid = m.uid;
  if (typeof m.creationTimestamp === "string") meta.creationTimestamp = m.creationTimestamp;
  if (typeof m.generation === "number") meta.generation = m.generation;

  // type
  let schema: ModelSchema | undefined;
  const kind = raw.kind;
  const apiVersion = raw.apiVersion;
  if (kind === undefined || kind === null || kind === "") {
    issues.push(at("kind", "is required"));
  } else if (typeof kind !== "string") {
    issues.push(at("kind", `must be a string, got ${describe(kind)}`));
  } else if (apiVersion !== undefined && apiVersion !== null && apiVersion !== "") {
    if (typeof apiVersion !== "string") {
      issues.push(at("apiVersion", `must be a string, got ${describe(apiVersion)}`));
    } else if (unsupportedKindReason(apiVersion, kind)) {
      issues.push(at("kind", unsupportedKindReason(apiVersion, kind)!));
    } else {
      schema = schemaByKind(apiVersion, kind);
      if (!schema) {
        const candidates = schemasByKindOnly(kind);
        if (candidates.length && candidates[0].apiVersions) {
          issues.push(at(
            "apiVersion",
            `kind ${kind} must be one of ${candidates[0].apiVersions.join(", ")}, got ${
              quote(apiVersion)
            }`,
          ));
        } else if (candidates.length) {
          const c = candidates[0];
          issues.push(at(
            "apiVersion",
            `kind ${kind} belongs to ${c.group}/${c.versions.join("|")} (or ${c.referenceGroup}/${
              c.versions.join("|")
            }), got ${quote(apiVersion)}`,
          ));
        } else issues.push(at("kind", unknownKindReason(kind)));
      }
    }
  } else {
    const candidates = schemasByKindOnly(kind);
    if (candidates.length === 1 && candidates[0].apiVersions) {
      issues.push(at(
        "apiVersion",
        `is required for kind ${kind} (one of ${candidates[0].apiVersions.join(", ")})`,
      ));
    } else if (candidates.length === 1) schema = candidates[0];
    else issues.push(at("kind", unknownKindReason(kind)));
  }

  // from here on, name the object by kind/namespace/name when possible
  // (parts with spaces, control characters or beyond 253 characters are quoted: input must not
  // forge lines)
  const part = (t: string) => t.length <= 253 && /^[\w.-]+$/.test(t) ? t : printable(t);
  const objectName = meta.name && typeof kind === "string" && kind
    ? objectLabel(part(kind), part(meta.name), meta.namespace && part(meta.namespace))
    : label;
  const rename = (i: ValidationIssue) => ({ ...i, object: objectName });
  const all = [...issues.map(rename), ...metaIssues.map(rename)];

  if (schema?.apiVersions) {
    return normalizeBuiltin(raw, schema, meta, objectName, all);
  }

  // proto JSON spellings (snake_case names, quoted integers, enum numbers) → canonical form
  const spec = schema ? canonicalize(schema.specSchema, raw.spec ?? {}, "spec", []) : undefined;
  if (schema) {
    for (const i of schema.validate(raw.spec ?? {})) {
      all.push({ object: objectName, path: i.path, reason: i.reason });
    }
  }
  if (all.length || !schema) return { issues: capIssues(all), schema };

  const object: ConfigObject = {
    apiVersion: `${schema.group}/${schema.version}`,
    kind: schema.kind,
    metadata: meta,
    spec: (clean(schema.specSchema, spec ?? {}) ?? {}) as Record<string, unknown>,
  };
  return { object, issues: [], schema };
}

/** An orchestrator built-in kind (Ingress): validated by `normalizeIngress`, apiVersion kept. */
function normalizeBuiltin(
  raw: Record<string, unknown>,
  schema: ModelSchema,
  meta: ObjectMeta,
  objectName: string,
  issues: ValidationIssue[],
): NormalizeResult {
  const { issues: specIssues } = normalizeIngress(
    { ...raw, metadata: { ...meta } },
    objectName,
    meta.namespace || "default",
  );
  // metadata was checked above
  for (const i of specIssues) if (!i.path.startsWith("metadata")) issues.push(i);
  if (issues.length) return { issues: capIssues(issues), schema };
  const spec = dropNulls(raw.spec ?? {}) as Record<string, unknown>;
  return {
    object: { apiVersion: raw.apiVersion as string, kind: schema.kind, metadata: meta, spec },
    issues: [],
    schema,
  };
}

function dropNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropNulls);
  if (!isRecord(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = dropNulls(x);
  return out;
}

function unknownKindReason(kind: string): string {
  return `unknown kind ${quote(kind)}`;
}

/** One line per issue: `<object>: <path>: <reason>` (path omitted when empty). */
export function formatIssues(issues: readonly ValidationIssue[]): string {
  return issues.map(formatIssue).join("\n");
}

/** `<object>: <path>: <reason>`. */
export function formatIssue(i: ValidationIssue): string {
  return i.path ? `${i.object}: ${i.path}: ${i.reason}` : `${i.object}: ${i.reason}`;
}

/**
 * Structural equality of JSON-like values (object key order is ignored; an undefined field is an
 * absent one). Allocates nothing: a registry compares every instance it holds on each change.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let fields = 0;
  for (const k in ao) {
    if (!Object.hasOwn(ao, k) || ao[k] === undefined) continue;
    if (!deepEqual(ao[k], bo[k])) return false;
    fields++;
  }
  for (const k in bo) {
    if (Object.hasOwn(bo, k) && bo[k] !== undefined && --fields < 0) return false;
  }
  return fields === 0;
}

/** `items` grouped by `key`, each group in the items' order, the groups in first-seen order. */
export function groupBy<T>(items: Iterable<T>, key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const l = out.get(k);
    if (l) l.push(item);
    else out.set(k, [item]);
  }
  return out;
}

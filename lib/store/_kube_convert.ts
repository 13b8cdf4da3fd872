/**
 * Orchestrator objects ↔ config objects for the orchestrator store: validation of what the API
 * serves, and the custom resource written for an object.
 * @module
 */
import { ingressToV1 } from "../model/mod.ts";
import type { ConfigObject, ObjectMeta, TypeSchema } from "../model/types.ts";
import { checkObject, issuesText, nsName, type SchemaSet } from "./_common.ts";

const META_KEYS: (keyof ObjectMeta)[] = [
  "name",
  "namespace",
  "resourceVersion",
  "labels",
  "annotations",
  "uid",
  "creationTimestamp",
  "generation",
];

/** An object of the API converted for a store: valid (`object`) or not (`problem`). */
export interface ConvertedObject {
  /** `namespace/name`. */
  key: string;
  object?: ConfigObject;
  /** Why the object is left out (validation issues, without the object's name). */
  problem?: string;
}

/**
 * Converts one object as the API serves it (`raw`) into a validated {@link ConfigObject} of
 * `schema` (metadata reduced to the fields the model keeps); undefined when `raw` is no object.
 */
export function convertApiObject(
  schema: TypeSchema,
  set: SchemaSet,
  raw: unknown,
  defaultNamespace: string,
): ConvertedObject | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const r = raw as { metadata?: Record<string, unknown>; [k: string]: unknown };
  const meta: Record<string, unknown> = {};
  for (const k of META_KEYS) if (r.metadata?.[k] !== undefined) meta[k] = r.metadata[k];
  const name = String(meta.name ?? "");
  const ns = String(meta.namespace ?? "");
  const key = nsName(ns, name);
  const label = `${schema.kind}/${ns}/${name}`;
  const res = checkObject(
    { apiVersion: r.apiVersion, kind: r.kind, metadata: meta, spec: r.spec ?? {} },
    set,
    label,
    defaultNamespace,
  );
  // the problem without the object's name: errors() gives the name separately
  if (!res.ok) return { key, problem: issuesText(res.issues, label) };
  res.object.metadata.resourceVersion = String(meta.resourceVersion ?? "");
  return { key, object: res.object };
}

/** The group, version and plural of `s`, as the custom objects API takes them. */
export const apiGroup = (s: TypeSchema): { group: string; version: string; plural: string } => ({
  group: s.group,
  version: s.version,
  plural: s.plural,
});

/** The custom resource written for `given` (metadata reduced to what the store writes). */
export function toApi(schema: TypeSchema, given: ConfigObject): Record<string, unknown> {
  // Ingress: the API serves networking.k8s.io/v1 only; older forms are converted
  const obj = given.kind === "Ingress" && given.apiVersion !== `${schema.group}/${schema.version}`
    ? ingressToV1(given)
    : given;
  const { name, namespace, labels, annotations, resourceVersion } = obj.metadata;
  const metadata: Record<string, unknown> = { name, namespace };
  if (labels) metadata.labels = labels;
  if (annotations) metadata.annotations = annotations;
  if (resourceVersion) metadata.resourceVersion = resourceVersion;
  return {
    apiVersion: `${schema.group}/${schema.version}`,
    kind: schema.kind,
    metadata,
    spec: obj.spec,
  };
}

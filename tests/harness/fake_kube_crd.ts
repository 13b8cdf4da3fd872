/**
 * CustomResourceDefinitions in the fake Kubernetes API server: the types a CRD defines, its
 * validation and the status the real server writes.
 * @module
 */
import { clone, isObject, type JsonObject } from "./_patch.ts";
import {
  DNS1123_LABEL,
  invalid,
  jsonPathValue,
  type KubeObject,
  nowTimestamp,
  type PrinterColumn,
  type ResourceType,
  str,
} from "./fake_kube_common.ts";
import type { KubeState } from "./fake_kube_state.ts";

export function crdTypes(crd: KubeObject): ResourceType[] {
  const spec = isObject(crd.spec) ? crd.spec : {};
  const names = isObject(spec.names) ? spec.names : {};
  const group = str(spec.group);
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isObject) : [];
  const name = str(crd.metadata.name);
  return versions.filter((v) => v.served !== false).map((v) => {
    const columns: PrinterColumn[] =
      (Array.isArray(v.additionalPrinterColumns) ? v.additionalPrinterColumns.filter(isObject) : [])
        .filter((c) => str(c.jsonPath) !== ".metadata.creationTimestamp")
        .map((c) => ({
          name: str(c.name),
          type: str(c.type) || "string",
          cell: (o: KubeObject) => jsonPathValue(o, str(c.jsonPath)),
        }));
    return {
      group,
      version: str(v.name),
      resource: str(names.plural),
      singular: str(names.singular) || str(names.kind).toLowerCase(),
      kind: str(names.kind),
      listKind: str(names.listKind) || `${str(names.kind)}List`,
      namespaced: spec.scope !== "Cluster",
      shortNames: Array.isArray(names.shortNames) ? names.shortNames.map(str) : [],
      hasStatus: isObject(v.subresources) && isObject(v.subresources.status),
      columns,
      crd: name,
    };
  });
}

export function validateCrd(s: KubeState, crd: KubeObject) {
  const t = s.findType("customresourcedefinitions.apiextensions.k8s.io")!;
  const name = str(crd.metadata.name);
  const spec = isObject(crd.spec) ? crd.spec : undefined;
  if (!spec) throw invalid(t, name, "spec", "FieldValueRequired", "Required value");
  const names = isObject(spec.names) ? spec.names : {};
  const check = (ok: boolean, field: string, msg: string) => {
    if (!ok) throw invalid(t, name, field, "FieldValueInvalid", msg);
  };
  check(str(spec.group) !== "", "spec.group", "Required value");
  check(DNS1123_LABEL.test(str(names.plural)), "spec.names.plural", "Required value");
  check(str(names.kind) !== "", "spec.names.kind", "Required value");
  check(
    name === `${str(names.plural)}.${str(spec.group)}`,
    "metadata.name",
    `Invalid value: "${name}": must be spec.names.plural+"."+spec.group`,
  );
  check(
    spec.scope === "Namespaced" || spec.scope === "Cluster",
    "spec.scope",
    `Unsupported value: "${str(spec.scope)}": supported values: "Cluster", "Namespaced"`,
  );
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isObject) : [];
  check(
    versions.length > 0,
    "spec.versions",
    "Invalid value: must have exactly one version marked as storage version",
  );
  check(
    versions.filter((v) => v.storage === true).length === 1,
    "spec.versions",
    "Invalid value: must have exactly one version marked as storage version",
  );
  for (const [i, v] of versions.entries()) {
    check(DNS1123_LABEL.test(str(v.name)), `spec.versions[${i}].name`, "Required value");
  }
}

export function crdStatus(crd: KubeObject): JsonObject {
  const spec = isObject(crd.spec) ? crd.spec : {};
  const time = nowTimestamp();
  const cond = (type: string, reason: string, message: string): JsonObject => ({
    type,
    status: "True",
    lastTransitionTime: time,
    reason,
    message,
  });
  return {
    conditions: [
      cond("NamesAccepted", "NoConflicts", "no conflicts found"),
      cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
    ],
    acceptedNames: clone(isObject(spec.names) ? spec.names : {}),
    storedVersions: (Array.isArray(spec.versions) ? spec.versions.filter(isObject) : [])
      .filter((v) => v.storage === true).map((v) => str(v.name)),
  };
}

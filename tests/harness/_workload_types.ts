/**
 * Resource types of the fake API server beyond the core ones: workloads (`apps/v1` Deployments,
 * DaemonSets, ReplicaSets, StatefulSets; `batch/v1` Jobs; `policy/v1` PodDisruptionBudgets) and RBAC (`rbac.authorization.k8s.io/v1`
 * roles and bindings), so that manifests such as `meshctl gen-deploy`'s can be applied (also with
 * `--dry-run=server`). Stored as given: no controllers, no schema validation.
 * @module
 */
import type { ResourceType } from "./fake_kube.ts";

function type(
  group: string,
  resource: string,
  kind: string,
  namespaced: boolean,
  shortNames: string[] = [],
  hasStatus = false,
): ResourceType {
  return {
    group,
    version: "v1",
    resource,
    singular: kind.toLowerCase(),
    kind,
    listKind: `${kind}List`,
    namespaced,
    shortNames,
    hasStatus,
    columns: [],
  };
}

/** The workload and RBAC types, registered by `startFakeKube` after the built-in ones. */
export function workloadTypes(): ResourceType[] {
  const rbac = "rbac.authorization.k8s.io";
  return [
    type("apps", "deployments", "Deployment", true, ["deploy"], true),
    type("apps", "daemonsets", "DaemonSet", true, ["ds"], true),
    type("apps", "replicasets", "ReplicaSet", true, ["rs"], true),
    type("apps", "statefulsets", "StatefulSet", true, ["sts"], true),
    type("batch", "jobs", "Job", true, [], true),
    type("policy", "poddisruptionbudgets", "PodDisruptionBudget", true, ["pdb"], true),
    type(rbac, "clusterroles", "ClusterRole", false),
    type(rbac, "clusterrolebindings", "ClusterRoleBinding", false),
    type(rbac, "roles", "Role", true),
    type(rbac, "rolebindings", "RoleBinding", true),
  ];
}

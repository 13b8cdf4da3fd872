/**
 * The built-in resource types of the fake Kubernetes API server (core, apps, RBAC, CRDs...).
 * @module
 */
import { isObject } from "./_patch.ts";
import { type KubeObject, type PrinterColumn, type ResourceType, str } from "./fake_kube_common.ts";

function servicePorts(obj: KubeObject): string {
  const spec = isObject(obj.spec) ? obj.spec : {};
  const ports = Array.isArray(spec.ports) ? spec.ports.filter(isObject) : [];
  if (ports.length === 0) return "<none>";
  return ports.map((p) => {
    const node = p.nodePort ? `:${p.nodePort}` : "";
    return `${p.port}${node}/${p.protocol ?? "TCP"}`;
  }).join(",");
}

function serviceColumns(): PrinterColumn[] {
  const spec = (o: KubeObject) => (isObject(o.spec) ? o.spec : {});
  return [
    { name: "Type", type: "string", cell: (o) => str(spec(o).type) || "ClusterIP" },
    { name: "Cluster-IP", type: "string", cell: (o) => str(spec(o).clusterIP) || "<none>" },
    {
      name: "External-IP",
      type: "string",
      cell: (o) => {
        const ips = spec(o).externalIPs;
        return Array.isArray(ips) && ips.length > 0 ? ips.join(",") : "<none>";
      },
    },
    { name: "Port(s)", type: "string", cell: servicePorts },
  ];
}

function builtin(
  group: string,
  version: string,
  resource: string,
  kind: string,
  namespaced: boolean,
  shortNames: string[] = [],
  extra: Partial<ResourceType> = {},
): ResourceType {
  return {
    group,
    version,
    resource,
    singular: kind.toLowerCase(),
    kind,
    listKind: `${kind}List`,
    namespaced,
    shortNames,
    hasStatus: false,
    columns: [],
    ...extra,
  };
}

export function builtinTypes(): ResourceType[] {
  const status = { hasStatus: true };
  return [
    builtin("", "v1", "namespaces", "Namespace", false, ["ns"], {
      hasStatus: true,
      columns: [{
        name: "Status",
        type: "string",
        cell: (o) => str(isObject(o.status) ? o.status.phase : "") || "Active",
      }],
    }),
    builtin("", "v1", "nodes", "Node", false, ["no"], status),
    builtin("", "v1", "services", "Service", true, ["svc"], {
      hasStatus: true,
      columns: serviceColumns(),
    }),
    builtin("", "v1", "endpoints", "Endpoints", true, ["ep"]),
    builtin("", "v1", "pods", "Pod", true, ["po"], {
      hasStatus: true,
      columns: [{
        name: "Status",
        type: "string",
        cell: (o) => str(isObject(o.status) ? o.status.phase : "") || "Pending",
      }],
    }),
    builtin("", "v1", "serviceaccounts", "ServiceAccount", true, ["sa"]),
    builtin("", "v1", "secrets", "Secret", true, [], {
      columns: [
        { name: "Type", type: "string", cell: (o) => str(o.type) || "Opaque" },
        {
          name: "Data",
          type: "integer",
          cell: (o) => Object.keys(isObject(o.data) ? o.data : {}).length,
        },
      ],
    }),
    builtin("", "v1", "configmaps", "ConfigMap", true, ["cm"], {
      columns: [{
        name: "Data",
        type: "integer",
        cell: (o) =>
          Object.keys(isObject(o.data) ? o.data : {}).length +
          Object.keys(isObject(o.binaryData) ? o.binaryData : {}).length,
      }],
    }),
    builtin(
      "admissionregistration.k8s.io",
      "v1",
      "mutatingwebhookconfigurations",
      "MutatingWebhookConfiguration",
      false,
      [],
      {
        columns: [{
          name: "Webhooks",
          type: "integer",
          cell: (o) => (Array.isArray(o.webhooks) ? o.webhooks.length : 0),
        }],
      },
    ),
    builtin("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true),
    // Leader election (lib/kube/leader.ts): writes conditional on resourceVersion, 409 on conflict.
    builtin("coordination.k8s.io", "v1", "leases", "Lease", true, [], {
      columns: [{
        name: "Holder",
        type: "string",
        cell: (o) => str(isObject(o.spec) ? o.spec.holderIdentity : ""),
      }],
    }),
    builtin("networking.k8s.io", "v1", "ingresses", "Ingress", true, ["ing"], { hasStatus: true }),
    builtin(
      "apiextensions.k8s.io",
      "v1",
      "customresourcedefinitions",
      "CustomResourceDefinition",
      false,
      ["crd", "crds"],
      { hasStatus: true },
    ),
  ];
}

/**
 * The built-in `grpc-agent` template: injection for proxyless gRPC workloads, selected per pod by
 * the annotation `inject.mesh.io/templates: grpc-agent` (Istio's `inject.istio.io/templates` is
 * read too). The pod gets mesh-agent running `proxy sidecar --proxyless` (no proxy, no init
 * container, no traffic redirection); every application container gets `GRPC_XDS_BOOTSTRAP`
 * pointing at the bootstrap the agent writes, the agent's configuration volume (where its xDS
 * relay socket lives with MUTUAL_TLS: connecting needs write access) and the certificate volume
 * read-only (`appContainers` of the template output).
 * @module
 */

import {
  MESH_VOLUMES,
  POD_ENV,
  PROXY_NAME_IMAGE,
  type TemplateParams,
} from "./default_template.ts";

/** Name of the built-in proxyless template. */
export const GRPC_AGENT_TEMPLATE = "grpc-agent";
/** Name of the default template (the sidecar proxy). */
export const SIDECAR_TEMPLATE = "sidecar";

// `{{ name }}` is a parameter (baked in once); `[[ ... ]]` is evaluated per pod.
const SOURCE = `{
  "containers": [
    {
${PROXY_NAME_IMAGE}      "args": [
        "proxy",
        "sidecar",
        "--proxyless",
        "--configPath", [[ .ProxyConfig.ConfigPath | toJson ]],
        "--serviceCluster", [[ valueOrDefault (index .ObjectMeta.Labels "app") .ProxyConfig.ServiceCluster | toJson ]],
        "--discoveryAddress", [[ .ProxyConfig.DiscoveryAddress | toJson ]],
        "--controlPlaneAuthPolicy", [[ .ProxyConfig.ControlPlaneAuthPolicy | toJson ]]
      ],
      "env": [
${POD_ENV}        { "name": "MESH_META_NAMESPACE", "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } }
      ],
      "imagePullPolicy": {{ imagePullPolicy }},
      "resources": { "requests": { "cpu": "10m", "memory": "32Mi" } },
      "securityContext": {
        "privileged": false,
        "readOnlyRootFilesystem": true,
        "runAsUser": {{ uid }}
      },
      "volumeMounts": [
        { "mountPath": [[ .ProxyConfig.ConfigPath | toJson ]], "name": "mesh-envoy" },
        { "mountPath": "/etc/certs/", "name": "mesh-certs", "readOnly": true }
      ]
    }
  ],
${MESH_VOLUMES},
  "appContainers": {
    "env": [
      { "name": "GRPC_XDS_BOOTSTRAP", "value": [[ printf "%s/grpc-bootstrap.json" .ProxyConfig.ConfigPath | toJson ]] }
    ],
    "volumeMounts": [
      { "mountPath": [[ .ProxyConfig.ConfigPath | toJson ]], "name": "mesh-envoy" },
      { "mountPath": "/etc/certs/", "name": "mesh-certs", "readOnly": true }
    ]
  }
}
`;

/**
 * The built-in `grpc-agent` template with `params` baked in (the agent image is the proxy image
 * `<hub>/proxy:<tag>`, which carries mesh-agent; the UID is `sidecarProxyUID`).
 */
export function builtinGrpcAgentTemplate(params: TemplateParams): string {
  const q = (s: string) => JSON.stringify(s);
  const values: Record<string, string> = {
    proxyImage: q(
      `${params.hub}/${params.proxyImage ?? "proxy"}${params.debug ? "_debug" : ""}:${params.tag}`,
    ),
    uid: String(params.sidecarProxyUID),
    imagePullPolicy: q(params.imagePullPolicy),
  };
  return SOURCE.replace(/\{\{ (\w+) \}\}/g, (_, k: string) => values[k]);
}

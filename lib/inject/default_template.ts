/**
 * The built-in sidecar template and its parameters (kube-inject's `--hub`, `--tag`,
 * `--includeIPRanges`...). The parameters are baked into the template text once (`{{ name }}`
 * placeholders, replaced by quoted values), so the result is a plain `[[ ]]` template that
 * sidecar-injector can load from its `--injectConfig` file (`meshctl kube-inject --emitTemplate`).
 * @module
 */

import { VERSION } from "../version/mod.ts";

/** Parameters of the built-in template. */
export interface TemplateParams {
  /** Image registry, e.g. `docker.io/mesh`. */
  hub: string;
  /** Image tag. */
  tag: string;
  /** `-i` default: outbound CIDRs redirected (`*` = all). */
  includeIPRanges: string;
  /** `-x` default: outbound CIDRs not redirected. */
  excludeIPRanges: string;
  /** `-b` default: inbound ports redirected (`*` = all). */
  includeInboundPorts: string;
  /** `-d` default: inbound ports not redirected. */
  excludeInboundPorts: string;
  /** `-u`: UID of the proxy, whose traffic is not redirected. */
  sidecarProxyUID: number;
  /** Pull policy of both images. */
  imagePullPolicy: string;
  /** Debug images (`proxy_debug`), privileged proxy with a writable root file system. */
  debug: boolean;
  /** Adds the `enable-core-dump` init container. */
  coreDump: boolean;
  /** Proxy log verbosity (kept for compatibility; passed as `--v`). */
  verbosity: number;
  /** Image name of the proxy under `hub` (default `proxy`; `<name>_debug` with `debug`). */
  proxyImage?: string;
  /** Image name of the init container under `hub` (default `proxy_init`). */
  proxyInitImage?: string;
}

/** The default parameters (kube-inject's flag defaults; hub `docker.io/mesh`, tag = the build version). */
export function defaultTemplateParams(): TemplateParams {
  return {
    hub: "docker.io/mesh",
    tag: VERSION,
    includeIPRanges: "*",
    excludeIPRanges: "",
    includeInboundPorts: "*",
    excludeInboundPorts: "",
    sidecarProxyUID: 1337,
    imagePullPolicy: "IfNotPresent",
    debug: false,
    coreDump: true,
    verbosity: 2,
  };
}

/** Names of what the built-in template injects (also the legacy names removed on re-injection). */
export const INJECTED_NAMES = {
  initContainers: ["mesh-init", "enable-core-dump"],
  containers: ["mesh-proxy"],
  volumes: ["mesh-envoy", "mesh-certs"],
} as const;

/**
 * Template text both built-in templates share: the name of the container they add and its image
 * (the proxy image, or the pod's `sidecar.mesh.io/proxyImage` annotation).
 */
export const PROXY_NAME_IMAGE = `      "name": "mesh-proxy",
      "image": [[ annotation .ObjectMeta "sidecar.mesh.io/proxyImage" {{ proxyImage }} | toJson ]],
`;

/**
 * Template text both built-in templates share: the pod's identity in the environment of the
 * container they add (three entries of `env`, each line ending with a comma).
 */
export const POD_ENV =
  `        { "name": "POD_NAME", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
        { "name": "POD_NAMESPACE", "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } },
        { "name": "INSTANCE_IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } },
`;

/**
 * Template text both built-in templates share: the pod's `volumes`, the proxy's configuration
 * (in memory) and the workload certificates (the service account's Secret, optional).
 */
export const MESH_VOLUMES = `  "volumes": [
    { "name": "mesh-envoy", "emptyDir": { "medium": "Memory" } },
    {
      "name": "mesh-certs",
      "secret": {
        "secretName": [[ printf "mesh.%s" (valueOrDefault .Spec.ServiceAccountName "default") | toJson ]],
        "optional": true
      }
    }
  ]`;

// `{{ name }}` is a parameter (baked in once); `[[ ... ]]` is evaluated per pod. The output is
// JSON (which is YAML too): the injector parses JSON output much faster than YAML.
const SOURCE = `{
  "initContainers": [
    {
      "name": "mesh-init",
      "image": {{ initImage }},
      "args": [
        "-p", "[[ .MeshConfig.ProxyListenPort ]]",
        "-u", {{ uidArg }},
        "-m", [[ annotation .ObjectMeta "sidecar.mesh.io/interceptionMode" .ProxyConfig.InterceptionMode | toJson ]],
        "-i", [[ annotation .ObjectMeta "traffic.sidecar.mesh.io/includeOutboundIPRanges" {{ includeIPRanges }} | toJson ]],
        "-x", [[ annotation .ObjectMeta "traffic.sidecar.mesh.io/excludeOutboundIPRanges" {{ excludeIPRanges }} | toJson ]],
        "-b", [[ annotation .ObjectMeta "traffic.sidecar.mesh.io/includeInboundPorts" {{ includeInboundPorts }} | toJson ]],
        "-d", [[ annotation .ObjectMeta "traffic.sidecar.mesh.io/excludeInboundPorts" {{ excludeInboundPorts }} | toJson ]]
      ],
      "imagePullPolicy": {{ imagePullPolicy }},
      "securityContext": {
        "capabilities": { "add": ["NET_ADMIN"] },
        "privileged": true
      }
    }{{ coreDumpContainer }}
  ],
  "containers": [
    {
${PROXY_NAME_IMAGE}      "args": [
        "proxy",
        "sidecar",
        "--configPath", [[ .ProxyConfig.ConfigPath | toJson ]],
        "--binaryPath", [[ .ProxyConfig.BinaryPath | toJson ]],
        "--serviceCluster", [[ valueOrDefault (index .ObjectMeta.Labels "app") .ProxyConfig.ServiceCluster | toJson ]],
        "--drainDuration", [[ formatDuration .ProxyConfig.DrainDuration | toJson ]],
        "--parentShutdownDuration", [[ formatDuration .ProxyConfig.ParentShutdownDuration | toJson ]],
        "--discoveryAddress", [[ .ProxyConfig.DiscoveryAddress | toJson ]],
        "--discoveryRefreshDelay", [[ formatDuration .ProxyConfig.DiscoveryRefreshDelay | toJson ]],
        "--connectTimeout", [[ formatDuration .ProxyConfig.ConnectTimeout | toJson ]],
[[- if .ProxyConfig.StatsdUdpAddress ]]
        "--statsdUdpAddress", [[ .ProxyConfig.StatsdUdpAddress | toJson ]],
[[- end ]]
        "--proxyAdminPort", "[[ .ProxyConfig.ProxyAdminPort ]]",
        "--controlPlaneAuthPolicy", [[ .ProxyConfig.ControlPlaneAuthPolicy | toJson ]]
      ],
      "env": [
${POD_ENV}        {
          "name": "MESH_META_INTERCEPTION_MODE",
          "value": [[ annotation .ObjectMeta "sidecar.mesh.io/interceptionMode" .ProxyConfig.InterceptionMode | toJson ]]
        }
      ],
      "imagePullPolicy": {{ imagePullPolicy }},
      "resources": { "requests": { "cpu": "100m", "memory": "128Mi" } },
      "securityContext": {
        "privileged": {{ debug }},
        "readOnlyRootFilesystem": {{ readOnly }},
[[- if eq (annotation .ObjectMeta "sidecar.mesh.io/interceptionMode" .ProxyConfig.InterceptionMode) "TPROXY" ]]
        "capabilities": { "add": ["NET_ADMIN"] },
        "runAsGroup": {{ uid }}
[[- else ]]
        "runAsUser": {{ uid }}
[[- end ]]
      },
      "volumeMounts": [
        { "mountPath": "/etc/mesh/proxy", "name": "mesh-envoy" },
        { "mountPath": "/etc/certs/", "name": "mesh-certs", "readOnly": true }
      ]
    }
  ],
${MESH_VOLUMES}
}
`;

const CORE_DUMP = `,
    {
      "name": "enable-core-dump",
      "image": {{ initImage }},
      "command": ["/bin/sh"],
      "args": [
        "-c",
        "sysctl -w kernel.core_pattern=/etc/mesh/proxy/core.%e.%p.%t && ulimit -c unlimited"
      ],
      "imagePullPolicy": {{ imagePullPolicy }},
      "securityContext": { "privileged": true }
    }`;

/**
 * The built-in template with `params` baked in: a `[[ ]]` template whose defaults for the
 * traffic annotations are the parameters, and whose images are `<hub>/proxy_init:<tag>` and
 * `<hub>/proxy:<tag>` (`proxy_debug` with `debug`; other names with `proxyInitImage` and
 * `proxyImage`).
 */
export function builtinTemplate(params: TemplateParams): string {
  const q = (s: string) => JSON.stringify(s);
  const proxy = params.proxyImage ?? "proxy";
  const values: Record<string, string> = {
    initImage: q(`${params.hub}/${params.proxyInitImage ?? "proxy_init"}:${params.tag}`),
    proxyImage: q(`${params.hub}/${proxy}${params.debug ? "_debug" : ""}:${params.tag}`),
    uid: String(params.sidecarProxyUID),
    uidArg: q(String(params.sidecarProxyUID)),
    includeIPRanges: q(params.includeIPRanges),
    excludeIPRanges: q(params.excludeIPRanges),
    includeInboundPorts: q(params.includeInboundPorts),
    excludeInboundPorts: q(params.excludeInboundPorts),
    imagePullPolicy: q(params.imagePullPolicy),
    debug: String(params.debug),
    readOnly: String(!params.debug),
  };
  const fill = (s: string) => s.replace(/\{\{ (\w+) \}\}/g, (_, k: string) => values[k]);
  values.coreDumpContainer = params.coreDump ? fill(CORE_DUMP) : "";
  return fill(SOURCE);
}

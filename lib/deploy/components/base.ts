/**
 * The chart's namespace, CRDs and mesh configuration map: what every component needs first.
 * @module
 */
import { LABELS } from "./_shared.ts";

/** `templates/00-namespace.yaml`: the release namespace. */
export const NAMESPACE = `apiVersion: v1
kind: Namespace
metadata:
  name: {{ .Release.Namespace }}
${LABELS("mesh")}
    mesh-injection: disabled
`;

/** `templates/01-crds.yaml`: the mesh's CustomResourceDefinitions. */
export const CRDS = `{{ meshCrds }}
`;

/** `templates/03-configmap-mesh.yaml`: the mesh configuration every program reads. */
export const MESH_CONFIG = `apiVersion: v1
kind: ConfigMap
metadata:
  name: mesh
  namespace: {{ .Release.Namespace }}
${LABELS("mesh")}
data:
  mesh: |-
    {{- if .Values.mtls.enabled }}
    # Mutual TLS between proxies is on; comment out to turn it off.
    authPolicy: MUTUAL_TLS
    mtlsExcludedServices: ["kubernetes.default.svc.{{ .Values.global.domain }}"]
    {{- else }}
    # Uncomment the following line to enable mutual TLS between proxies.
    # authPolicy: MUTUAL_TLS
    {{- end }}
    {{- if .Values.policy.enabled }}
    mixerCheckServer: mesh-policy.{{ .Release.Namespace }}.svc.{{ .Values.global.domain }}:9091
    disablePolicyChecks: false
    {{- else }}
    disablePolicyChecks: true
    {{- end }}
    {{- if .Values.telemetry.enabled }}
    mixerReportServer: mesh-telemetry.{{ .Release.Namespace }}.svc.{{ .Values.global.domain }}:9091
    {{- end }}
    ingressClass: mesh
    {{- if .Values.ingress.enabled }}
    ingressService: mesh-ingressgateway
    ingressControllerMode: STRICT
    {{- else }}
    ingressControllerMode: "OFF"
    {{- end }}
    rdsRefreshDelay: {{ .Values.global.refreshInterval }}
    enableTracing: true
    accessLogFile: /dev/stdout
    defaultConfig:
      configPath: /etc/mesh/proxy
      binaryPath: /usr/local/bin/proxy-binary
      serviceCluster: mesh-proxy
      drainDuration: 45s
      parentShutdownDuration: 1m0s
      discoveryAddress: mesh-discovery.{{ .Release.Namespace }}:15007
      discoveryRefreshDelay: {{ .Values.global.refreshInterval }}
      connectTimeout: 10s
      proxyAdminPort: 15000
      controlPlaneAuthPolicy: NONE
`;

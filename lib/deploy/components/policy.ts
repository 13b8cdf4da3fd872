/**
 * The chart's mesh-policy components (`mesh-policy` for checks, `mesh-telemetry` for reports), their
 * RBAC, and the job that applies their default configuration.
 * @module
 */
import { deployment, LABELS, NO_INJECT, POD_ENV, rbac } from "./_shared.ts";

/** `templates/02-rbac-policy.yaml`. */
export const RBAC_POLICY = `{{- if or .Values.policy.enabled .Values.telemetry.enabled }}
${
  rbac(
    "policy",
    `  - apiGroups: ["config.mesh.io"]
    resources: ["*"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["apiextensions.k8s.io"]
    resources: ["customresourcedefinitions"]
    verbs: ["get", "list", "watch"]
  - apiGroups: [""]
    resources: ["configmaps", "endpoints", "namespaces", "pods", "services"]
    verbs: ["get", "list", "watch"]`,
  )
}---
${
  rbac(
    "policy-post-install",
    `  - apiGroups: ["config.mesh.io"]
    resources: ["*"]
    verbs: ["create", "get", "list", "watch", "patch", "update"]
  - apiGroups: ["apiextensions.k8s.io"]
    resources: ["customresourcedefinitions"]
    verbs: ["get", "list", "watch"]`,
  )
}{{- end }}
`;

/** mesh-policy server as `mesh-policy` (checks) or `mesh-telemetry` (reports). */
export const policyServer = (name: string, role: "policy" | "telemetry") =>
  `{{- if .Values.${role}.enabled }}
${
    deployment({
      name,
      values: role,
      serviceAccount: "mesh-policy-service-account",
      container: role,
      labels: { mesh: "policy", "mesh-policy-type": role },
    })
  }
          args:
            - server
            - --port=9091
            - --monitoringPort=9093
            - --configStoreURL=orch://
            - --configDefaultNamespace={{ .Release.Namespace }}
            - --livenessProbePath=/tmp/mesh-policy-live
            - --livenessProbeInterval=5s
            {{- if .Values.global.debug }}
            - --log_output_level=default:debug
            {{- end }}
          ports:
            - name: grpc-policy
              containerPort: 9091
            - name: http-monitoring
              containerPort: 9093
          livenessProbe:
            exec:
              command:
                - /usr/local/bin/mesh-policy
                - probe
                - --probe-path=/tmp/mesh-policy-live
                - --interval=10s
            initialDelaySeconds: 5
            periodSeconds: 10
${POD_ENV}
---
apiVersion: v1
kind: Service
metadata:
  name: ${name}
  namespace: {{ .Release.Namespace }}
${LABELS(name)}
spec:
  selector:
    app: ${name}
  ports:
    - name: grpc-policy
      port: 9091
    - name: http-monitoring
      port: 9093
{{- end }}
`;

/** Default policy-server configuration applied by the post-install job. */
export const POLICY_RESOURCES = `{{- if .Values.telemetry.enabled }}
apiVersion: config.mesh.io/v1alpha2
kind: metric
metadata:
  name: requestcount
  namespace: {{ .Release.Namespace }}
spec:
  value: "1"
  dimensions:
    source_service: source.service | "unknown"
    destination_service: destination.service | "unknown"
    response_code: response.code | 200
  monitored_resource_type: '"UNSPECIFIED"'
---
apiVersion: config.mesh.io/v1alpha2
kind: prometheus
metadata:
  name: handler
  namespace: {{ .Release.Namespace }}
spec:
  metrics:
    - name: request_count
      instance_name: requestcount.metric.{{ .Release.Namespace }}
      kind: COUNTER
      label_names: [source_service, destination_service, response_code]
---
apiVersion: config.mesh.io/v1alpha2
kind: rule
metadata:
  name: promhttp
  namespace: {{ .Release.Namespace }}
spec:
  match: context.protocol == "http"
  actions:
    - handler: handler.prometheus
      instances: [requestcount.metric]
{{- end }}
{{- if and .Values.policy.enabled .Values.telemetry.enabled }}
---
{{- end }}
{{- if .Values.policy.enabled }}
apiVersion: config.mesh.io/v1alpha2
kind: kubernetesenv
metadata:
  name: handler
  namespace: {{ .Release.Namespace }}
spec: {}
{{- end }}`;

/** `templates/13-policy-custom-resources.yaml`: the post-install job applying {@link POLICY_RESOURCES}. */
export const POLICY_JOB = `{{- if or .Values.policy.enabled .Values.telemetry.enabled }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: mesh-policy-custom-resources
  namespace: {{ .Release.Namespace }}
${LABELS("mesh-policy")}
data:
  custom-resources.yaml: |-
${POLICY_RESOURCES.split("\n").map((l) => (l.startsWith("{{") ? l : "    " + l)).join("\n")}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: mesh-policy-create-custom-resources
  namespace: {{ .Release.Namespace }}
${LABELS("mesh-policy")}
spec:
  template:
    metadata:
      labels:
        app: mesh-policy-create-custom-resources
${NO_INJECT}
    spec:
      serviceAccountName: mesh-policy-post-install-service-account
      restartPolicy: OnFailure
      containers:
        - name: hyperkube
          image: "{{ .Values.global.hyperkube.hub }}:{{ .Values.global.hyperkube.tag }}"
          command:
            - ./kubectl
            - apply
            - -f
            - /tmp/mesh-policy/custom-resources.yaml
          volumeMounts:
            - name: tmp-configmap-policy
              mountPath: /tmp/mesh-policy
      volumes:
        - name: tmp-configmap-policy
          configMap:
            name: mesh-policy-custom-resources
{{- end }}
`;

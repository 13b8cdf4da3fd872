/**
 * The chart's sidecar-injector component: its RBAC, configuration map, Deployment, Service and
 * webhook configuration.
 * @module
 */
import { deployment, LABELS, rbac } from "./_shared.ts";

/** `templates/02-rbac-sidecar-injector.yaml`. */
export const RBAC_INJECTOR = `{{- if .Values.sidecarInjector.enabled }}
${
  rbac(
    "sidecar-injector",
    `  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["admissionregistration.k8s.io"]
    resources: ["mutatingwebhookconfigurations"]
    verbs: ["get", "list", "watch", "patch", "update"]`,
  )
}{{- end }}
`;

/** `templates/03-configmap-sidecar-injector.yaml`: the injection policy and sidecar template. */
export const INJECTOR_CONFIG = `{{- if .Values.sidecarInjector.enabled }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: mesh-sidecar-injector
  namespace: {{ .Release.Namespace }}
${LABELS("mesh-sidecar-injector")}
data:
  config: |-
    policy: {{ .Values.sidecarInjector.policy }}
    template: |-
{{ sidecarTemplate .Values | indent 6 }}
{{- end }}
`;

/** The injector's liveness and readiness probe: its health file, fresh within 4 s. */
export const INJECTOR_PROBE = `            exec:
              command:
                - /usr/local/bin/sidecar-injector
                - probe
                - --probe-path=/health
                - --interval=4s
            initialDelaySeconds: 4
            periodSeconds: 4`;

/** `templates/15-sidecar-injector.yaml`: the injector's Deployment, Service and webhook configuration. */
export const INJECTOR = `{{- if .Values.sidecarInjector.enabled }}
${
  deployment({
    name: "mesh-sidecar-injector",
    values: "sidecarInjector",
    serviceAccount: "mesh-sidecar-injector-service-account",
    container: "sidecar-injector-webhook",
    labels: { mesh: "sidecar-injector" },
  })
}
          args:
            - --caCertFile=/etc/mesh/certs/root-cert.pem
            - --tlsCertFile=/etc/mesh/certs/cert-chain.pem
            - --tlsKeyFile=/etc/mesh/certs/key.pem
            - --injectConfig=/etc/mesh/inject/config
            - --meshConfig=/etc/mesh/config/mesh
            - --port={{ .Values.sidecarInjector.port }}
            - --healthCheckInterval=2s
            - --healthCheckFile=/health
            - --webhookConfigName=mesh-sidecar-injector
            - --webhookName=sidecar-injector.mesh.io
            {{- if .Values.global.debug }}
            - --log_output_level=debug
            {{- end }}
          ports:
            - name: https-webhook
              containerPort: {{ .Values.sidecarInjector.port }}
          livenessProbe:
${INJECTOR_PROBE}
          readinessProbe:
${INJECTOR_PROBE}
          volumeMounts:
            - name: config-volume
              mountPath: /etc/mesh/config
              readOnly: true
            - name: certs
              mountPath: /etc/mesh/certs
              readOnly: true
            - name: inject-config
              mountPath: /etc/mesh/inject
              readOnly: true
      volumes:
        - name: config-volume
          configMap:
            name: mesh
        - name: certs
          secret:
            secretName: mesh.mesh-sidecar-injector-service-account
        - name: inject-config
          configMap:
            name: mesh-sidecar-injector
            items:
              - key: config
                path: config
---
apiVersion: v1
kind: Service
metadata:
  name: mesh-sidecar-injector
  namespace: {{ .Release.Namespace }}
${LABELS("mesh-sidecar-injector")}
spec:
  selector:
    app: mesh-sidecar-injector
  ports:
    - name: https-webhook
      port: 443
      targetPort: {{ .Values.sidecarInjector.port }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mesh-sidecar-injector
${LABELS("mesh-sidecar-injector")}
webhooks:
  - name: sidecar-injector.mesh.io
    clientConfig:
      service:
        name: mesh-sidecar-injector
        namespace: {{ .Release.Namespace }}
        path: /inject
    rules:
      - operations: ["CREATE"]
        apiGroups: [""]
        apiVersions: ["v1"]
        resources: ["pods"]
    failurePolicy: Fail
    sideEffects: None
    admissionReviewVersions: ["v1", "v1beta1"]
    namespaceSelector:
      matchLabels:
        mesh-injection: enabled
{{- end }}
`;

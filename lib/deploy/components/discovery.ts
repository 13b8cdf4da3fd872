/**
 * The chart's mesh-discovery component: its RBAC, Deployment, Service and disruption budget.
 * @module
 */
import { deployment, LABELS, MESH_GROUPS, POD_ENV, rbac } from "./_shared.ts";

/** `templates/02-rbac-discovery.yaml`. */
export const RBAC_DISCOVERY = rbac(
  "discovery",
  `  - apiGroups: ${MESH_GROUPS}
    resources: ["*"]
    verbs: ["*"]
  - apiGroups: ["apiextensions.k8s.io"]
    resources: ["customresourcedefinitions"]
    verbs: ["get", "list", "watch"]
  - apiGroups: [""]
    resources: ["configmaps", "endpoints", "namespaces", "nodes", "pods", "services", "secrets"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["discovery.k8s.io"]
    resources: ["endpointslices"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["networking.k8s.io", "extensions"]
    resources: ["ingresses"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["networking.k8s.io", "extensions"]
    resources: ["ingresses/status"]
    verbs: ["update"]
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["get", "create", "update"]`,
);

/** `templates/10-discovery.yaml`: mesh-discovery's Deployment, Service and PodDisruptionBudget. */
export const DISCOVERY = `${
  deployment({
    name: "mesh-discovery",
    values: "discovery",
    serviceAccount: "mesh-discovery-service-account",
    container: "discovery",
    labels: { mesh: "discovery" },
  })
}
          args:
            - discovery
            - --domain={{ .Values.global.domain }}
            - --meshConfig=/etc/mesh/config/mesh
            - --port=8080
            - --grpcAddr=:15010
            {{- if .Values.mtls.enabled }}
            - --secureGrpcAddr=:15012
            {{- else }}
            - --secureGrpcAddr=
            {{- end }}
            - --monitoringPort=9093
            {{- if .Values.global.debug }}
            - --log_output_level=default:debug
            {{- end }}
          ports:
            - name: http
              containerPort: 8080
            - name: grpc-xds
              containerPort: 15010
            {{- if .Values.mtls.enabled }}
            - name: https-xds
              containerPort: 15012
            {{- end }}
            - name: http-monitoring
              containerPort: 9093
          readinessProbe:
            httpGet:
              path: /ready
              port: 8080
            initialDelaySeconds: 5
            periodSeconds: 10
            # saturated by pushes, /ready can take seconds: the 1 s default would drop a serving pod
            timeoutSeconds: 5
${POD_ENV}
          volumeMounts:
            - name: config-volume
              mountPath: /etc/mesh/config
            - name: mesh-certs
              mountPath: /etc/certs
              readOnly: true
      volumes:
        - name: config-volume
          configMap:
            name: mesh
        - name: mesh-certs
          secret:
            secretName: mesh.mesh-discovery-service-account
            optional: true
---
apiVersion: v1
kind: Service
metadata:
  name: mesh-discovery
  namespace: {{ .Release.Namespace }}
${LABELS("mesh-discovery")}
spec:
  selector:
    app: mesh-discovery
  ports:
    - name: http-legacy-discovery
      port: 15007
      targetPort: 8080
    - name: grpc-xds
      port: 15010
    {{- if .Values.mtls.enabled }}
    - name: https-xds
      port: 15012
    {{- end }}
    - name: http-discovery
      port: 8080
    - name: http-monitoring
      port: 9093
---
# Replicas are independent (each watches the API server; singleton writers elect a leader
# through a Lease): a voluntary disruption takes down one at a time.
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: mesh-discovery
  namespace: {{ .Release.Namespace }}
${LABELS("mesh-discovery")}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app: mesh-discovery
`;

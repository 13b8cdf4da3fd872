/**
 * The chart's mesh_ca component: its RBAC, Deployment and Service.
 * @module
 */
import { deployment, LABELS, rbac } from "./_shared.ts";

/** `templates/02-rbac-ca.yaml`. */
export const RBAC_CA = rbac(
  "ca",
  `  - apiGroups: [""]
    resources: ["secrets"]
    verbs: ["create", "get", "list", "watch", "update", "delete"]
  - apiGroups: [""]
    resources: ["serviceaccounts", "services"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["authentication.k8s.io"]
    resources: ["tokenreviews"]
    verbs: ["create"]`,
);

/** `templates/14-ca.yaml`: mesh_ca's Deployment and Service. */
export const CA = `${
  deployment({
    name: "mesh-ca",
    values: "ca",
    serviceAccount: "mesh-ca-service-account",
    container: "ca",
    labels: { mesh: "ca" },
  })
}
          args:
            - --append-dns-names=true
            - --grpc-port=8060
            - --grpc-host-identities=mesh-ca,mesh-citadel
            - --ca-storage-namespace={{ .Release.Namespace }}
            - --self-signed-ca=true
            - --monitoring-port=9093
            - --liveness-probe-path=/tmp/ca.liveness
            - --liveness-probe-interval=60s
            - --probe-check-interval=15s
            {{- if .Values.global.debug }}
            - --log_output_level=debug
            {{- end }}
          ports:
            - name: grpc-ca
              containerPort: 8060
            - name: http-monitoring
              containerPort: 9093
          livenessProbe:
            exec:
              command:
                - /usr/local/bin/mesh_ca
                - probe
                - --probe-path=/tmp/ca.liveness
                - --interval=125s
            initialDelaySeconds: 60
            periodSeconds: 60
---
apiVersion: v1
kind: Service
metadata:
  name: mesh-ca
  namespace: {{ .Release.Namespace }}
${LABELS("mesh-ca")}
spec:
  selector:
    app: mesh-ca
  ports:
    - name: grpc-ca
      port: 8060
    - name: http-monitoring
      port: 9093
`;

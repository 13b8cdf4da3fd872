/**
 * The chart's ingress gateway component: its service account, Deployment and Service.
 * @module
 */
import { INGRESS_GATEWAY_CERTS, INGRESS_GATEWAY_SELECTOR } from "../../model/ingress.ts";
import { deployment, LABELS, POD_ENV } from "./_shared.ts";

/** `templates/02-rbac-ingressgateway.yaml`. */
export const RBAC_INGRESS = `{{- if .Values.ingress.enabled }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: mesh-ingressgateway-service-account
  namespace: {{ .Release.Namespace }}
${LABELS("mesh-ingressgateway")}
{{- end }}
`;

/** `templates/16-ingressgateway.yaml`: the ingress gateway's Deployment and Service. */
export const INGRESS = `{{- if .Values.ingress.enabled }}
${
  deployment({
    name: "mesh-ingressgateway",
    values: "ingress",
    serviceAccount: "mesh-ingressgateway-service-account",
    container: "ingressgateway",
    labels: INGRESS_GATEWAY_SELECTOR,
  })
}
          args:
            - proxy
            - ingress
            - --serviceCluster=mesh-ingressgateway
            - --discoveryAddress=mesh-discovery.{{ .Release.Namespace }}:15007
            - --discoveryRefreshDelay={{ .Values.global.refreshInterval }}
            - --drainDuration=45s
            - --parentShutdownDuration=1m0s
            - --connectTimeout=10s
            - --proxyAdminPort=15000
            - --controlPlaneAuthPolicy=NONE
            {{- if .Values.global.debug }}
            - --proxyLogLevel=debug
            {{- end }}
          ports:
            - name: http
              containerPort: 80
            - name: https
              containerPort: 443
${POD_ENV}
            - name: INSTANCE_IP
              valueFrom:
                fieldRef:
                  apiVersion: v1
                  fieldPath: status.podIP
          volumeMounts:
            - name: mesh-certs
              mountPath: /etc/certs
              readOnly: true
            - name: ingressgateway-certs
              mountPath: ${INGRESS_GATEWAY_CERTS.mountPath}
              readOnly: true
      volumes:
        - name: mesh-certs
          secret:
            secretName: mesh.mesh-ingressgateway-service-account
            optional: true
        - name: ingressgateway-certs
          secret:
            secretName: ${INGRESS_GATEWAY_CERTS.secretName}
            optional: true
---
apiVersion: v1
kind: Service
metadata:
  name: mesh-ingressgateway
  namespace: {{ .Release.Namespace }}
${LABELS("mesh-ingressgateway")}
spec:
  type: {{ if .Values.ingress.nodePort }}NodePort{{ else }}{{ .Values.ingress.serviceType }}{{ end }}
  selector:
    app: mesh-ingressgateway
  ports:
    - name: http
      port: 80
      {{- if .Values.ingress.nodePort }}
      nodePort: {{ .Values.ingress.nodePort }}
      {{- end }}
    - name: https
      port: 443
{{- end }}
`;

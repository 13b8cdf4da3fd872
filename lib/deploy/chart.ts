/**
 * The built-in deployment chart of `meshctl gen-deploy`: default values and one template per
 * file, in the template language of ./template.ts (a subset of Helm's). Files render in name
 * order, so the namespace and the CRDs come before what uses them.
 * @module
 */
import { builtinTemplate, defaultTemplateParams } from "../inject/default_template.ts";
import { INGRESS_GATEWAY_CERTS, INGRESS_GATEWAY_SELECTOR } from "../model/ingress.ts";
import { STAMP } from "../version/stamp.ts";
import { VERSION } from "../version/mod.ts";

/** Default image registry (`global.hub`). */
export const DEFAULT_HUB = "ghcr.io/mesh-project";
/** Default image of the orchestrator distribution (`--hyperkube-hub`, `--hyperkube-tag`). */
export const DEFAULT_HYPERKUBE = { hub: "quay.io/coreos/hyperkube", tag: "v1.7.6_coreos.0" };

/** The default values: every feature but mtls on, images of this build. */
export function defaultValues(): Record<string, unknown> {
  return {
    global: {
      hub: DEFAULT_HUB,
      tag: STAMP?.version ?? VERSION,
      imagePullPolicy: "IfNotPresent",
      debug: false,
      domain: "cluster.local",
      refreshInterval: "1s",
      hyperkube: { ...DEFAULT_HYPERKUBE },
    },
    mtls: { enabled: false },
    discovery: { replicas: 2, image: "mesh-discovery" },
    ca: { replicas: 1, image: "mesh_ca" },
    policy: { enabled: true, replicas: 1, image: "mesh-policy" },
    telemetry: { enabled: true, replicas: 1, image: "mesh-policy" },
    ingress: {
      enabled: true,
      replicas: 1,
      image: "proxy",
      serviceType: "LoadBalancer",
      nodePort: 0,
    },
    sidecarInjector: {
      enabled: true,
      replicas: 1,
      image: "sidecar-injector",
      port: 443,
      policy: "enabled",
      proxyImage: "proxy",
      proxyInitImage: "proxy_init",
    },
  };
}

/**
 * The sidecar template of the `mesh-sidecar-injector` config map (`{{ sidecarTemplate .Values }}`):
 * lib/inject's built-in template (the one `meshctl kube-inject` uses, so there is one template)
 * with the chart's hub, tag, pull policy, debug and image names. Values not set keep
 * lib/inject's defaults.
 */
export function sidecarTemplate(values: unknown): string {
  const v = (isRecord(values) ? values : {}) as Record<string, unknown>;
  const global = isRecord(v.global) ? v.global : {};
  const injector = isRecord(v.sidecarInjector) ? v.sidecarInjector : {};
  const str = (x: unknown, d: string) => (typeof x === "string" && x !== "" ? x : d);
  const d = defaultTemplateParams();
  return builtinTemplate({
    ...d,
    hub: str(global.hub, d.hub),
    tag: str(global.tag, d.tag),
    imagePullPolicy: str(global.imagePullPolicy, d.imagePullPolicy),
    debug: global.debug === true,
    proxyImage: str(injector.proxyImage, "proxy"),
    proxyInitImage: str(injector.proxyInitImage, "proxy_init"),
  }).replace(/\n$/, "");
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const LABELS = (app: string) =>
  `  labels:
    app: ${app}
    release: mesh`;

/** An image reference: `<hub>/<name>[_debug]:<tag>`. */
const IMAGE = (name: string) =>
  `"{{ .Values.global.hub }}/${name}{{ if .Values.global.debug }}_debug{{ end }}:{{ .Values.global.tag }}"`;

const POD_ENV = `          env:
            - name: POD_NAME
              valueFrom:
                fieldRef:
                  apiVersion: v1
                  fieldPath: metadata.name
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  apiVersion: v1
                  fieldPath: metadata.namespace`;

const NO_INJECT = `      annotations:
        sidecar.mesh.io/inject: "false"`;

/**
 * The head of a one-container Deployment, up to the container's `imagePullPolicy`: metadata with
 * `app: <name>`, `release: mesh` and `labels`, `replicas` and `image` from `.Values.<values>`, a
 * pod labelled `app: <name>` and `labels` that the injector leaves alone, and its service account.
 * The container's args, ports and probes and the pod's volumes follow it in each template.
 */
function deployment(o: {
  name: string;
  values: string;
  serviceAccount: string;
  container: string;
  labels: Readonly<Record<string, string>>;
}): string {
  const labels = (indent: number) =>
    Object.entries(o.labels).map(([k, v]) => `${" ".repeat(indent)}${k}: ${v}`).join("\n");
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${o.name}
  namespace: {{ .Release.Namespace }}
${LABELS(o.name)}
${labels(4)}
spec:
  replicas: {{ .Values.${o.values}.replicas }}
  selector:
    matchLabels:
      app: ${o.name}
  template:
    metadata:
      labels:
        app: ${o.name}
${labels(8)}
${NO_INJECT}
    spec:
      serviceAccountName: ${o.serviceAccount}
      containers:
        - name: ${o.container}
          image: ${IMAGE(`{{ .Values.${o.values}.image }}`)}
          imagePullPolicy: {{ .Values.global.imagePullPolicy }}`;
}

const NAMESPACE = `apiVersion: v1
kind: Namespace
metadata:
  name: {{ .Release.Namespace }}
${LABELS("mesh")}
    mesh-injection: disabled
`;

const CRDS = `{{ meshCrds }}
`;

/** A service account, a cluster role and its binding; `rules` in YAML, indented by 2. */
const rbac = (component: string, rules: string) =>
  `apiVersion: v1
kind: ServiceAccount
metadata:
  name: mesh-${component}-service-account
  namespace: {{ .Release.Namespace }}
${LABELS(`mesh-${component}`)}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: mesh-${component}-{{ .Release.Namespace }}
${LABELS(`mesh-${component}`)}
rules:
${rules}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: mesh-${component}-{{ .Release.Namespace }}
${LABELS(`mesh-${component}`)}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: mesh-${component}-{{ .Release.Namespace }}
subjects:
  - kind: ServiceAccount
    name: mesh-${component}-service-account
    namespace: {{ .Release.Namespace }}
`;

const MESH_GROUPS =
  `["config.mesh.io", "networking.mesh.io", "authentication.mesh.io", "security.mesh.io"]`;

const RBAC_DISCOVERY = rbac(
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

const RBAC_POLICY = `{{- if or .Values.policy.enabled .Values.telemetry.enabled }}
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

const RBAC_CA = rbac(
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

const RBAC_INJECTOR = `{{- if .Values.sidecarInjector.enabled }}
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

const RBAC_INGRESS = `{{- if .Values.ingress.enabled }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: mesh-ingressgateway-service-account
  namespace: {{ .Release.Namespace }}
${LABELS("mesh-ingressgateway")}
{{- end }}
`;

const MESH_CONFIG = `apiVersion: v1
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

const INJECTOR_CONFIG = `{{- if .Values.sidecarInjector.enabled }}
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

const DISCOVERY = `${
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

/** mesh-policy server as `mesh-policy` (checks) or `mesh-telemetry` (reports). */
const policyServer = (name: string, role: "policy" | "telemetry") =>
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
const POLICY_RESOURCES = `{{- if .Values.telemetry.enabled }}
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

const POLICY_JOB = `{{- if or .Values.policy.enabled .Values.telemetry.enabled }}
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

const CA = `${
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

/** The injector's liveness and readiness probe: its health file, fresh within 4 s. */
const INJECTOR_PROBE = `            exec:
              command:
                - /usr/local/bin/sidecar-injector
                - probe
                - --probe-path=/health
                - --interval=4s
            initialDelaySeconds: 4
            periodSeconds: 4`;

const INJECTOR = `{{- if .Values.sidecarInjector.enabled }}
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

const INGRESS = `{{- if .Values.ingress.enabled }}
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

/** The built-in templates by file name (rendered in this order). */
export const CHART_TEMPLATES: Readonly<Record<string, string>> = Object.freeze({
  "templates/00-namespace.yaml": NAMESPACE,
  "templates/01-crds.yaml": CRDS,
  "templates/02-rbac-discovery.yaml": RBAC_DISCOVERY,
  "templates/02-rbac-policy.yaml": RBAC_POLICY,
  "templates/02-rbac-ca.yaml": RBAC_CA,
  "templates/02-rbac-sidecar-injector.yaml": RBAC_INJECTOR,
  "templates/02-rbac-ingressgateway.yaml": RBAC_INGRESS,
  "templates/03-configmap-mesh.yaml": MESH_CONFIG,
  "templates/03-configmap-sidecar-injector.yaml": INJECTOR_CONFIG,
  "templates/10-discovery.yaml": DISCOVERY,
  "templates/11-policy.yaml": policyServer("mesh-policy", "policy"),
  "templates/12-telemetry.yaml": policyServer("mesh-telemetry", "telemetry"),
  "templates/13-policy-custom-resources.yaml": POLICY_JOB,
  "templates/14-ca.yaml": CA,
  "templates/15-sidecar-injector.yaml": INJECTOR,
  "templates/16-ingressgateway.yaml": INGRESS,
});

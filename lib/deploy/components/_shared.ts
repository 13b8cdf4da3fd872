/**
 * Pieces every component template of the chart shares: labels, images, the pod environment, the
 * one-container Deployment skeleton ({@link deployment}) and the RBAC triple ({@link rbac}).
 * @module
 */

/** The `app: <app>` and `release: mesh` labels of a metadata block (indented by 2). */
export const LABELS = (app: string) =>
  `  labels:
    app: ${app}
    release: mesh`;

/** An image reference: `<hub>/<name>[_debug]:<tag>`. */
export const IMAGE = (name: string) =>
  `"{{ .Values.global.hub }}/${name}{{ if .Values.global.debug }}_debug{{ end }}:{{ .Values.global.tag }}"`;

/** The POD_NAME and POD_NAMESPACE variables of a container (from the downward API). */
export const POD_ENV = `          env:
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

/** The pod annotation that keeps the injector away from the control plane's own pods. */
export const NO_INJECT = `      annotations:
        sidecar.mesh.io/inject: "false"`;

/**
 * The head of a one-container Deployment, up to the container's `imagePullPolicy`: metadata with
 * `app: <name>`, `release: mesh` and `labels`, `replicas` and `image` from `.Values.<values>`, a
 * pod labelled `app: <name>` and `labels` that the injector leaves alone, and its service account.
 * The container's args, ports and probes and the pod's volumes follow it in each template.
 */
export function deployment(o: {
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

/** A service account, a cluster role and its binding; `rules` in YAML, indented by 2. */
export const rbac = (component: string, rules: string) =>
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

/** The API groups of the mesh's configuration kinds (a YAML flow list). */
export const MESH_GROUPS =
  `["config.mesh.io", "networking.mesh.io", "authentication.mesh.io", "security.mesh.io"]`;

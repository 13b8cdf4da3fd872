/**
 * The built-in deployment chart of `meshctl gen-deploy`: default values and one template per
 * file, in the template language of ./template.ts (a subset of Helm's), each component's templates
 * in its own file under ./components/. Files render in name order, so the namespace and the CRDs
 * come before what uses them.
 * @module
 */
import { builtinTemplate, defaultTemplateParams } from "../inject/default_template.ts";
import { STAMP } from "../version/stamp.ts";
import { VERSION } from "../version/mod.ts";
import { CRDS, MESH_CONFIG, NAMESPACE } from "./components/base.ts";
import { CA, RBAC_CA } from "./components/ca.ts";
import { DISCOVERY, RBAC_DISCOVERY } from "./components/discovery.ts";
import { INGRESS, RBAC_INGRESS } from "./components/ingressgateway.ts";
import { POLICY_JOB, policyServer, RBAC_POLICY } from "./components/policy.ts";
import { INJECTOR, INJECTOR_CONFIG, RBAC_INJECTOR } from "./components/sidecar_injector.ts";

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

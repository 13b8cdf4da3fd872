/**
 * Orchestrator Ingress objects (`extensions/v1beta1`, `networking.k8s.io/v1beta1` and
 * `networking.k8s.io/v1`) parsed into one normalized form, and ingress-class selection.
 * @module
 */
import type { ConfigObject, ValidationIssue } from "./types.ts";
import { describe } from "./dsl.ts";
import type { MeshConfig } from "./meshconfig.ts";
import { checkNamespace, checkObjectName, quote } from "./values.ts";

/** The annotation selecting the ingress controller. */
export const INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class";

/**
 * Workload labels of the mesh's ingress gateway (the `mesh-ingressgateway` Deployment of
 * `meshctl gen-deploy`), selected by the Gateway mesh-discovery makes of Ingress objects and by
 * the one `convert-networking-config` writes (Istio's `istio: ingressgateway`; this mesh deploys
 * one ingress proxy, the gateway, so Ingress objects are served by it too).
 */
export const INGRESS_GATEWAY_SELECTOR: Readonly<Record<string, string>> = Object.freeze({
  mesh: "ingressgateway",
});

/** Where the ingress gateway's TLS server certificate is: the secret and its mount in the gateway. */
export const INGRESS_GATEWAY_CERTS = Object.freeze({
  secretName: "mesh-ingressgateway-certs",
  mountPath: "/etc/mesh/ingressgateway-certs",
  serverCertificate: "/etc/mesh/ingressgateway-certs/tls.crt",
  privateKey: "/etc/mesh/ingressgateway-certs/tls.key",
});

/**
 * The `servers` of the ingress gateway's Gateway made of Ingress objects: plain HTTP on 80 for
 * every host and, when some Ingress has `tls`, HTTPS on 443 for `tlsHosts` with the gateway's
 * mounted certificate ({@link INGRESS_GATEWAY_CERTS}).
 */
export function ingressGatewayServers(
  tlsHosts: readonly string[] | undefined,
): Record<string, unknown>[] {
  const servers: Record<string, unknown>[] = [{
    port: { number: 80, protocol: "HTTP", name: "http-ingress-80" },
    hosts: ["*"],
  }];
  if (tlsHosts) {
    servers.push({
      port: { number: 443, protocol: "HTTPS", name: "https-ingress-443" },
      hosts: [...tlsHosts],
      tls: {
        mode: "SIMPLE",
        serverCertificate: INGRESS_GATEWAY_CERTS.serverCertificate,
        privateKey: INGRESS_GATEWAY_CERTS.privateKey,
      },
    });
  }
  return servers;
}

/** Path match type (`networking.k8s.io/v1`); v1beta1 paths are `ImplementationSpecific`. */
export type PathType = "Exact" | "Prefix" | "ImplementationSpecific";

/** A backend: a service name and a port number or port name. */
export interface IngressBackend {
  serviceName: string;
  servicePort: number | string;
}

/** One path of a rule. */
export interface IngressPath extends IngressBackend {
  /** Empty when not given. */
  path: string;
  pathType: PathType;
}

/** One host rule; `host` empty means every host. */
export interface IngressRule {
  host: string;
  paths: IngressPath[];
}

/** Normalized Ingress. */
export interface Ingress {
  apiVersion: string;
  name: string;
  namespace: string;
  annotations: Record<string, string>;
  /** `spec.ingressClassName` (networking.k8s.io/v1 only). */
  ingressClassName?: string;
  rules: IngressRule[];
  tls: { hosts: string[]; secretName: string }[];
  defaultBackend?: IngressBackend;
}

/** The Ingress apiVersions read by {@link normalizeIngress}, oldest first. */
export const INGRESS_API_VERSIONS: readonly string[] = Object.freeze([
  "extensions/v1beta1",
  "networking.k8s.io/v1beta1",
  "networking.k8s.io/v1",
]);
const API_VERSIONS = INGRESS_API_VERSIONS;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// long: field-by-field validation of an Ingress, problems reported in path order
/**
 * Parses an Ingress object of any supported apiVersion into the normalized form. Every problem
 * is reported (`<label>: spec.rules[0].http.paths[1].backend.servicePort: ...`); `ingress` is
 * set only when there are none. `defaultNamespace` applies when metadata.namespace is absent.
 */
export function normalizeIngress(
  raw: unknown,
  label: string,
  defaultNamespace = "default",
): { ingress?: Ingress; issues: ValidationIssue[] } {
  const issues: ValidationIssue[] = [];
  const bad = (path: string, reason: string): void => {
    issues.push({ object: label, path, reason });
  };
  if (!isRecord(raw)) {
    bad("", `must be an object, got ${describe(raw)}`);
    return { issues };
  }
  const apiVersion = String(raw.apiVersion ?? "");
  if (raw.kind !== "Ingress") bad("kind", `must be "Ingress", got ${describe(raw.kind)}`);
  if (!API_VERSIONS.includes(apiVersion)) {
    bad("apiVersion", `must be one of ${API_VERSIONS.join(", ")}, got ${describe(raw.apiVersion)}`);
    return { issues };
  }
  const v1 = apiVersion === "networking.k8s.io/v1";
  const meta = isRecord(raw.metadata) ? raw.metadata : {};
  const name = typeof meta.name === "string" ? meta.name : "";
  if (!name) bad("metadata.name", "is required");
  else {
    const r = checkObjectName(name);
    if (r) bad("metadata.name", r);
  }
  const namespace = typeof meta.namespace === "string" && meta.namespace
    ? meta.namespace
    : defaultNamespace;
  const nsBad = checkNamespace(namespace);
  if (nsBad) bad("metadata.namespace", nsBad);
  const annotations: Record<string, string> = {};
  if (meta.annotations !== undefined && meta.annotations !== null) {
    if (!isRecord(meta.annotations)) {
      bad("metadata.annotations", `must be a map of strings, got ${describe(meta.annotations)}`);
    } else {
      for (const [k, val] of Object.entries(meta.annotations)) {
        if (typeof val === "string") annotations[k] = val;
        else {bad(
            `metadata.annotations[${quote(k)}]`,
            `must be a string, got ${describe(val)}`,
          );}
      }
    }
  }
  const spec = raw.spec ?? {};
  if (!isRecord(spec)) {
    bad("spec", `must be an object, got ${describe(spec)}`);
    return { issues };
  }

  const backend = (b: unknown, path: string): IngressBackend | undefined => {
    if (!isRecord(b)) {
      bad(
        path,
        b === undefined || b === null ? "is required" : `must be an object, got ${describe(b)}`,
      );
      return undefined;
    }
    if (!v1) {
      const serviceName = b.serviceName;
      const servicePort = b.servicePort;
      let ok = true;
      if (typeof serviceName !== "string" || !serviceName) {
        bad(
          `${path}.serviceName`,
          serviceName === undefined
            ? "is required"
            : `must be a non-empty string, got ${describe(serviceName)}`,
        );
        ok = false;
      }
      if (typeof servicePort === "number") {
        if (!Number.isInteger(servicePort) || servicePort < 1 || servicePort > 65535) {
          bad(`${path}.servicePort`, `must be between 1 and 65535, got ${servicePort}`);
          ok = false;
        }
      } else if (typeof servicePort !== "string" || !servicePort) {
        bad(
          `${path}.servicePort`,
          servicePort === undefined
            ? "is required"
            : `must be a port number or name, got ${describe(servicePort)}`,
        );
        ok = false;
      }
      return ok
        ? { serviceName: serviceName as string, servicePort: servicePort as number | string }
        : undefined;
    }
    if (b.resource !== undefined) {
      bad(`${path}.resource`, "resource backends are not supported; use service");
      return undefined;
    }
    const svc = b.service;
    if (!isRecord(svc)) {
      bad(
        `${path}.service`,
        svc === undefined ? "is required" : `must be an object, got ${describe(svc)}`,
      );
      return undefined;
    }
    let ok = true;
    if (typeof svc.name !== "string" || !svc.name) {
      bad(
        `${path}.service.name`,
        svc.name === undefined
          ? "is required"
          : `must be a non-empty string, got ${describe(svc.name)}`,
      );
      ok = false;
    }
    const port = isRecord(svc.port) ? svc.port : undefined;
    let servicePort: number | string = "";
    if (!port) {
      bad(
        `${path}.service.port`,
        svc.port === undefined ? "is required" : `must be an object, got ${describe(svc.port)}`,
      );
      ok = false;
    } else if (port.number !== undefined && port.name !== undefined) {
      bad(`${path}.service.port`, "only one of number, name may be set");
      ok = false;
    } else if (port.number !== undefined) {
      if (
        typeof port.number !== "number" || !Number.isInteger(port.number) || port.number < 1 ||
        port.number > 65535
      ) {
        bad(
          `${path}.service.port.number`,
          `must be between 1 and 65535, got ${describe(port.number)}`,
        );
        ok = false;
      } else servicePort = port.number;
    } else if (typeof port.name === "string" && port.name) {
      servicePort = port.name;
    } else {
      bad(`${path}.service.port`, "one of number, name is required");
      ok = false;
    }
    return ok ? { serviceName: svc.name as string, servicePort } : undefined;
  };

  const rules: IngressRule[] = [];
  const rawRules = spec.rules ?? [];
  if (!Array.isArray(rawRules)) bad("spec.rules", `must be a list, got ${describe(rawRules)}`);
  else {
    rawRules.forEach((r, i) => {
      const rp = `spec.rules[${i}]`;
      if (!isRecord(r)) return bad(rp, `must be an object, got ${describe(r)}`);
      const host = r.host ?? "";
      if (typeof host !== "string") {
        return bad(`${rp}.host`, `must be a string, got ${describe(host)}`);
      }
      const paths: IngressPath[] = [];
      const http = r.http;
      if (http !== undefined && http !== null) {
        const rawPaths = isRecord(http) ? http.paths : undefined;
        if (!Array.isArray(rawPaths)) {
          bad(`${rp}.http.paths`, `must be a list, got ${describe(rawPaths)}`);
        } else {
          rawPaths.forEach((pth, j) => {
            const pp = `${rp}.http.paths[${j}]`;
            if (!isRecord(pth)) return bad(pp, `must be an object, got ${describe(pth)}`);
            const path = pth.path ?? "";
            if (typeof path !== "string") {
              return bad(`${pp}.path`, `must be a string, got ${describe(path)}`);
            }
            let pathType: PathType = "ImplementationSpecific";
            if (pth.pathType !== undefined) {
              if (
                pth.pathType === "Exact" || pth.pathType === "Prefix" ||
                pth.pathType === "ImplementationSpecific"
              ) {
                pathType = pth.pathType;
              } else {
                return bad(
                  `${pp}.pathType`,
                  `must be one of Exact, Prefix, ImplementationSpecific, got ${
                    describe(pth.pathType)
                  }`,
                );
              }
            } else if (v1) return bad(`${pp}.pathType`, "is required");
            const b = backend(pth.backend, `${pp}.backend`);
            if (b) paths.push({ path, pathType, ...b });
          });
        }
      }
      rules.push({ host, paths });
    });
  }

  const tls: Ingress["tls"] = [];
  const rawTls = spec.tls ?? [];
  if (!Array.isArray(rawTls)) bad("spec.tls", `must be a list, got ${describe(rawTls)}`);
  else {
    rawTls.forEach((t, i) => {
      if (!isRecord(t)) return bad(`spec.tls[${i}]`, `must be an object, got ${describe(t)}`);
      const hosts = t.hosts ?? [];
      if (!Array.isArray(hosts) || hosts.some((h) => typeof h !== "string")) {
        return bad(`spec.tls[${i}].hosts`, "must be a list of strings");
      }
      const secretName = t.secretName ?? "";
      if (typeof secretName !== "string") {
        return bad(`spec.tls[${i}].secretName`, `must be a string, got ${describe(secretName)}`);
      }
      tls.push({ hosts: hosts as string[], secretName });
    });
  }

  const rawDefault = v1 ? spec.defaultBackend : spec.backend;
  const defaultBackend = rawDefault === undefined || rawDefault === null
    ? undefined
    : backend(rawDefault, v1 ? "spec.defaultBackend" : "spec.backend");

  let ingressClassName: string | undefined;
  if (v1 && spec.ingressClassName !== undefined && spec.ingressClassName !== null) {
    if (typeof spec.ingressClassName !== "string") {
      bad("spec.ingressClassName", `must be a string, got ${describe(spec.ingressClassName)}`);
    } else ingressClassName = spec.ingressClassName;
  }

  if (issues.length) return { issues };
  const ingress: Ingress = { apiVersion, name, namespace, annotations, rules, tls };
  if (ingressClassName !== undefined) ingress.ingressClassName = ingressClassName;
  if (defaultBackend) ingress.defaultBackend = defaultBackend;
  return { ingress, issues };
}

/**
 * Whether the mesh processes this Ingress: the class is the `kubernetes.io/ingress.class`
 * annotation, else (networking.k8s.io/v1) `spec.ingressClassName`; it is ours when it equals
 * `ingressClass` or the reference system's class `istio`. Mode OFF: never; STRICT: the class is
 * present and ours; DEFAULT: the class is absent or ours.
 */
export function ingressClassMatches(
  ingress: Pick<Ingress, "annotations" | "ingressClassName">,
  meshConfig: Pick<MeshConfig, "ingressClass" | "ingressControllerMode">,
): boolean {
  const cls = ingress.annotations[INGRESS_CLASS_ANNOTATION] ?? ingress.ingressClassName;
  const ours = cls !== undefined &&
    (cls === meshConfig.ingressClass || cls === REFERENCE_INGRESS_CLASS);
  switch (meshConfig.ingressControllerMode) {
    case "OFF":
      return false;
    case "STRICT":
      return ours;
    case "DEFAULT":
      return cls === undefined || ours;
  }
}

/**
 * The reference system's ingress class (`kubernetes.io/ingress.class: istio`, in every Istio
 * sample): selected as well as the mesh config's `ingressClass`.
 */
export const REFERENCE_INGRESS_CLASS = "istio";

/**
 * The `networking.k8s.io/v1` form of a valid Ingress object (current clusters no longer serve
 * `extensions/v1beta1` or `networking.k8s.io/v1beta1`): `backend.serviceName`/`servicePort`
 * become `backend.service.name`/`port.number|name`, `spec.backend` becomes
 * `spec.defaultBackend`, paths without `pathType` get `ImplementationSpecific` (the v1beta1
 * meaning). A v1 object is returned as a copy; metadata is kept. Throws an Error listing the
 * problems when the object is not a valid Ingress.
 */
export function ingressToV1(obj: ConfigObject): ConfigObject {
  const label = `Ingress/${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
  const { ingress, issues } = normalizeIngress(obj, label, obj.metadata.namespace || "default");
  if (!ingress) {
    throw new Error(
      issues.map((i) => `${i.object}: ${i.path ? i.path + ": " : ""}${i.reason}`).join("; "),
    );
  }
  if (obj.apiVersion === "networking.k8s.io/v1") return structuredClone(obj);
  const backend = (b: IngressBackend) => ({
    service: {
      name: b.serviceName,
      port: typeof b.servicePort === "number" ? { number: b.servicePort } : { name: b.servicePort },
    },
  });
  const spec: Record<string, unknown> = {};
  if (ingress.ingressClassName !== undefined) spec.ingressClassName = ingress.ingressClassName;
  if (ingress.defaultBackend) spec.defaultBackend = backend(ingress.defaultBackend);
  if (ingress.rules.length) {
    spec.rules = ingress.rules.map((r) => ({
      ...(r.host ? { host: r.host } : {}),
      ...(r.paths.length
        ? {
          http: {
            paths: r.paths.map((p) => ({
              ...(p.path ? { path: p.path } : {}),
              pathType: p.pathType,
              backend: backend(p),
            })),
          },
        }
        : {}),
    }));
  }
  if (ingress.tls.length) {
    spec.tls = ingress.tls.map((t) => ({
      ...(t.hosts.length ? { hosts: t.hosts } : {}),
      ...(t.secretName ? { secretName: t.secretName } : {}),
    }));
  }
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: structuredClone(obj.metadata),
    spec,
  };
}

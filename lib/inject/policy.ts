/**
 * Injection policy (which pods get a sidecar) and validation of the traffic annotations.
 * @module
 */

/** Annotation that opts a pod in or out of injection. */
export const INJECT_ANNOTATION = "sidecar.mesh.io/inject";
/** Annotation recording what was injected (JSON). */
export const STATUS_ANNOTATION = "sidecar.mesh.io/status";
/** Annotation selecting the interception mode (`REDIRECT` or `TPROXY`). */
export const INTERCEPTION_MODE_ANNOTATION = "sidecar.mesh.io/interceptionMode";
/** Annotation overriding the proxy image. */
export const PROXY_IMAGE_ANNOTATION = "sidecar.mesh.io/proxyImage";
/** Traffic annotations, by the redirect-script flag they feed. */
export const TRAFFIC_ANNOTATIONS = {
  includeOutboundIPRanges: "traffic.sidecar.mesh.io/includeOutboundIPRanges",
  excludeOutboundIPRanges: "traffic.sidecar.mesh.io/excludeOutboundIPRanges",
  includeInboundPorts: "traffic.sidecar.mesh.io/includeInboundPorts",
  excludeInboundPorts: "traffic.sidecar.mesh.io/excludeInboundPorts",
} as const;

/** Namespaces never injected. */
export const IGNORED_NAMESPACES: readonly string[] = ["kube-system", "kube-public"];

/** The policy of the injection configuration. */
export type Policy = "enabled" | "disabled" | string;

/** The decision for one pod, with why. */
export interface Decision {
  inject: boolean;
  reason: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Whether a pod gets a sidecar: never with `spec.hostNetwork` or in kube-system/kube-public;
 * otherwise annotation `sidecar.mesh.io/inject` (y, yes, true, on, any case → inject; empty or
 * absent → the policy's default; anything else → not), and policy `enabled` (inject unless the
 * annotation says no), `disabled` (only when it says yes), anything else (never).
 */
export function injectionRequired(
  policy: Policy,
  metadata: unknown,
  spec: unknown,
  namespace: string,
): Decision {
  if (isRecord(spec) && spec.hostNetwork === true) {
    return { inject: false, reason: "host networking is enabled" };
  }
  if (IGNORED_NAMESPACES.includes(namespace)) {
    return { inject: false, reason: `namespace ${namespace} is never injected` };
  }
  const annotations = isRecord(metadata) && isRecord(metadata.annotations)
    ? metadata.annotations
    : {};
  const raw = annotations[INJECT_ANNOTATION];
  const value = typeof raw === "string" ? raw.trim().toLowerCase() : "";
  if (policy !== "enabled" && policy !== "disabled") {
    return { inject: false, reason: `policy ${JSON.stringify(policy)} injects nothing` };
  }
  if (value === "") {
    return policy === "enabled"
      ? { inject: true, reason: "policy enabled" }
      : { inject: false, reason: "policy disabled and no opt-in annotation" };
  }
  if (["y", "yes", "true", "on"].includes(value)) {
    return { inject: true, reason: `annotation ${INJECT_ANNOTATION}=${raw}` };
  }
  return { inject: false, reason: `annotation ${INJECT_ANNOTATION}=${raw}` };
}

// ---- values ------------------------------------------------------------------------------------

function ipv4(s: string): boolean {
  const parts = s.split(".");
  return parts.length === 4 && parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) < 256);
}

function ipv6(s: string): boolean {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || !s.includes(":")) return false;
  try {
    new URL(`http://[${s}]/`);
    return true;
  } catch {
    return false;
  }
}

/** Why `s` is not a CIDR (`10.0.0.0/8`, `fd00::/8`), or undefined. */
export function cidrProblem(s: string): string | undefined {
  const slash = s.indexOf("/");
  if (slash < 0) return `${JSON.stringify(s)} is not a CIDR (want <address>/<prefix length>)`;
  const addr = s.slice(0, slash);
  const len = s.slice(slash + 1);
  const v4 = ipv4(addr);
  if (!v4 && !ipv6(addr)) {
    return `${JSON.stringify(s)} is not a CIDR: bad address ${JSON.stringify(addr)}`;
  }
  const max = v4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(len) || Number(len) > max) {
    return `${JSON.stringify(s)} is not a CIDR: prefix length must be 0-${max}`;
  }
  return undefined;
}

function listProblem(
  value: string,
  allowStar: boolean,
  item: (s: string) => string | undefined,
): string | undefined {
  const v = value.trim();
  if (v === "") return undefined;
  if (v === "*") return allowStar ? undefined : `"*" is not allowed here`;
  for (const part of v.split(",")) {
    const p = part.trim();
    if (p === "") return `empty entry in ${JSON.stringify(value)}`;
    if (p === "*") return `"*" must be the whole value, got ${JSON.stringify(value)}`;
    const bad = item(p);
    if (bad) return bad;
  }
  return undefined;
}

function portProblem(s: string): string | undefined {
  if (!/^\d{1,5}$/.test(s) || Number(s) < 1 || Number(s) > 65535) {
    return `${JSON.stringify(s)} is not a port (1-65535)`;
  }
  return undefined;
}

/** Why a list of CIDRs (or `*` when allowed) is invalid, or undefined. */
export function ipRangesProblem(value: string, allowStar: boolean): string | undefined {
  return listProblem(value, allowStar, cidrProblem);
}

/** Why a list of ports (or `*` when allowed) is invalid, or undefined. */
export function portsProblem(value: string, allowStar: boolean): string | undefined {
  return listProblem(value, allowStar, portProblem);
}

/** An annotation with a bad value; the message names the annotation and the reason. */
export class AnnotationError extends Error {
  /** Creates the error. */
  constructor(readonly annotation: string, reason: string) {
    super(`annotation ${annotation}: ${reason}`);
    this.name = "AnnotationError";
  }
}

/**
 * Checks the interception-mode and traffic annotations of a pod. Throws
 * {@link AnnotationError} for the first bad one.
 */
export function validateAnnotations(annotations: Record<string, unknown>): void {
  const check = (key: string, problem: (v: string) => string | undefined) => {
    if (!Object.hasOwn(annotations, key)) return;
    const v = annotations[key];
    if (typeof v !== "string") throw new AnnotationError(key, "must be a string");
    const bad = problem(v);
    if (bad) throw new AnnotationError(key, bad);
  };
  check(
    INTERCEPTION_MODE_ANNOTATION,
    (v) =>
      v === "REDIRECT" || v === "TPROXY"
        ? undefined
        : `must be REDIRECT or TPROXY, got ${JSON.stringify(v)}`,
  );
  check(TRAFFIC_ANNOTATIONS.includeOutboundIPRanges, (v) => ipRangesProblem(v, true));
  check(TRAFFIC_ANNOTATIONS.excludeOutboundIPRanges, (v) => ipRangesProblem(v, false));
  check(TRAFFIC_ANNOTATIONS.includeInboundPorts, (v) => portsProblem(v, true));
  check(TRAFFIC_ANNOTATIONS.excludeInboundPorts, (v) => portsProblem(v, false));
  check(PROXY_IMAGE_ANNOTATION, (v) => v.trim() === "" ? "must not be empty" : undefined);
}

/**
 * PeerAuthentication (`security.mesh.io/v1beta1`, `security.istio.io/v1beta1`/`v1`) → the peer
 * mTLS mode of a workload port, as Istio decides it: a workload-scoped object (its
 * `selector.matchLabels` are a subset of the workload's labels) over the namespace's object (no
 * selector) over the mesh's (no selector, in the root namespace `mesh-system`). `portLevelMtls`
 * of the workload-scoped object wins for its port (the workload's port, the endpoint's target
 * port). `UNSET` (or no `mtls`) inherits from the next scope. When no scope decides, the caller
 * falls back to Istio 0.8's `Policy` and the mesh `authPolicy` ({@link mtlsModeOf}).
 * @module
 */

import type { ConfigObject, Service, ServiceInstance, ServicePort } from "../../model/types.ts";
import type { PushContext } from "../types.ts";
import { hostPortKey, indexOf } from "./context.ts";
import { hostNamespace } from "./util.ts";

/** Peer mTLS requirement of a workload port (the same values as security.ts `MtlsMode`). */
export type PeerMode = "NONE" | "STRICT" | "PERMISSIVE";

/** The root namespace: a PeerAuthentication or AuthorizationPolicy there applies mesh-wide. */
export const ROOT_NAMESPACE = "mesh-system";

// deno-lint-ignore no-explicit-any
type Any = any;

/** True when `selector.matchLabels` (absent or empty: every workload) selects `labels`. */
export function selectorMatches(selector: unknown, labels: Record<string, string>): boolean {
  const ml = (selector as Any)?.matchLabels;
  if (!ml || typeof ml !== "object") return true;
  return Object.entries(ml).every(([k, v]) => labels[k] === v);
}

/** True when an object has a non-empty `selector.matchLabels`. */
export function hasSelector(spec: unknown): boolean {
  const ml = (spec as Any)?.selector?.matchLabels;
  return !!ml && typeof ml === "object" && Object.keys(ml).length > 0;
}

function modeOf(m: unknown): PeerMode | undefined {
  switch ((m as Any)?.mode) {
    case "STRICT":
      return "STRICT";
    case "PERMISSIVE":
      return "PERMISSIVE";
    case "DISABLE":
      return "NONE";
    default:
      return undefined;
  }
}

/** The objects of a push context, oldest first (sorted once per context's array). */
const SORTED = new WeakMap<readonly ConfigObject[], ConfigObject[]>();

function byAge(a: ConfigObject, b: ConfigObject): number {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

/**
 * The PeerAuthentication mode of one workload port: `namespace` and `labels` of the workload,
 * `port` its (target) port; undefined when no PeerAuthentication decides. Among several objects
 * at one scope the oldest wins (then the first by name), as in Istio.
 */
export function peerAuthnMode(
  objects: readonly ConfigObject[],
  namespace: string,
  labels: Record<string, string>,
  port: number,
): PeerMode | undefined {
  if (!objects.length) return undefined;
  let sorted = SORTED.get(objects);
  if (!sorted) SORTED.set(objects, sorted = [...objects].sort(byAge));
  const inNs = sorted.filter((o) => (o.metadata.namespace ?? "") === namespace);
  const workload = inNs.find((o) =>
    hasSelector(o.spec) && selectorMatches((o.spec as Any).selector, labels)
  );
  if (workload) {
    const spec = workload.spec as Any;
    const atPort = modeOf(spec.portLevelMtls?.[String(port)]);
    if (atPort) return atPort;
    const m = modeOf(spec.mtls);
    if (m) return m;
  }
  const ns = inNs.find((o) => !hasSelector(o.spec));
  const nsMode = ns && modeOf((ns.spec as Any).mtls);
  if (nsMode) return nsMode;
  const mesh = sorted.find((o) =>
    (o.metadata.namespace ?? "") === ROOT_NAMESPACE && !hasSelector(o.spec)
  );
  return mesh && modeOf((mesh.spec as Any).mtls);
}

/** Which mode a client picks among its destination's instances: one that every instance takes
 * where possible (PERMISSIVE accepts plaintext), STRICT when any instance requires it. */
const CLIENT_RANK: Record<PeerMode, number> = { PERMISSIVE: 0, NONE: 1, STRICT: 2 };

/**
 * The PeerAuthentication mode of a service port: for a server, of its own `instance`; for a
 * client (no instance), one mode for all the service's instances on that port (a client cannot
 * pick per endpoint): STRICT if any instance is STRICT, else plaintext if any is DISABLE
 * (PERMISSIVE instances accept it), else PERMISSIVE; mixed modes are best avoided. Or the
 * namespace/mesh mode when the service has no instance. Undefined when none decides.
 */
export function peerAuthnModeOf(
  ctx: PushContext,
  svc: Service,
  port: ServicePort,
  instance?: ServiceInstance,
): PeerMode | undefined {
  const objects = ctx.configs.peerAuthentications ?? [];
  if (!objects.length) return undefined;
  const ns = svc.namespace || hostNamespace(svc.hostname);
  if (instance) return peerAuthnMode(objects, ns, instance.labels ?? {}, instance.port);
  const instances = indexOf(ctx).instancesByHostPort.get(hostPortKey(svc.hostname, port.port)) ??
    [];
  if (!instances.length) return peerAuthnMode(objects, ns, {}, port.port);
  let out: PeerMode | undefined;
  for (const i of instances) {
    const m = peerAuthnMode(objects, ns, i.labels ?? {}, i.port);
    if (m && (!out || CLIENT_RANK[m] > CLIENT_RANK[out])) out = m;
  }
  return out;
}

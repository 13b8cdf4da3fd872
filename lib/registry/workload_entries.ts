/**
 * WorkloadEntries as instances of orchestrator Services, as Istio does: a Service with a selector
 * has as instances, besides its pods, the WorkloadEntries of its namespace whose labels the
 * selector selects (the Service's endpoints from its pods come from the orchestrator; these are
 * added by discovery). The orchestrator registry keeps a Service's selector and numeric target
 * ports in its `attributes` ({@link SELECTOR_ATTRIBUTE}, {@link targetPortAttribute}).
 * ServiceEntries select WorkloadEntries in ./serviceentry.ts.
 * @module
 */
import type { ConfigObject, Service, ServiceInstance } from "../model/types.ts";
import { spiffeId } from "./accounts.ts";

/** Attribute holding an orchestrator Service's `spec.selector` (JSON). */
export const SELECTOR_ATTRIBUTE = "selector.mesh.io";

/** Attribute holding the numeric `targetPort` of a Service port. */
export function targetPortAttribute(port: number): string {
  return `targetPort.mesh.io/${port}`;
}

/** A WorkloadEntry's spec (networking.mesh.io/v1alpha3), as far as endpoints read it. */
export interface WESpec {
  address?: string;
  ports?: Record<string, number>;
  labels?: Record<string, string>;
  locality?: string;
  weight?: number;
  serviceAccount?: string;
}

function selectorOf(svc: Service): Record<string, string> | undefined {
  const text = svc.attributes?.[SELECTOR_ATTRIBUTE];
  if (!text) return undefined;
  try {
    const v = JSON.parse(text);
    return v && typeof v === "object" && Object.keys(v).length ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The instances the WorkloadEntries in `entries` give the orchestrator services in `services`
 * whose selector selects them (same namespace; entries without an address are skipped). The port
 * is the entry's port named like the service port, else the service port's numeric target port,
 * else the service port; the identity the entry's `serviceAccount` (an account of its namespace).
 */
export function workloadEntryInstances(
  services: readonly Service[],
  entries: readonly ConfigObject[],
  domain = "cluster.local",
): ServiceInstance[] {
  if (!entries.length) return [];
  const out: ServiceInstance[] = [];
  for (const svc of services) {
    if (svc.registry !== "Orchestrator") continue;
    const selector = selectorOf(svc);
    if (!selector) continue;
    for (const we of entries) {
      if ((we.metadata.namespace ?? "default") !== svc.namespace) continue;
      const spec = we.spec as WESpec;
      if (!spec.address) continue;
      const labels = { ...(we.metadata.labels ?? {}), ...(spec.labels ?? {}) };
      if (!Object.entries(selector).every(([k, v]) => labels[k] === v)) continue;
      for (const sp of svc.ports) {
        const target = Number(svc.attributes?.[targetPortAttribute(sp.port)]) || undefined;
        out.push({
          hostname: svc.hostname,
          servicePort: sp,
          address: spec.address,
          port: spec.ports?.[sp.name] ?? target ?? sp.port,
          labels: { ...(spec.labels ?? {}) },
          locality: typeof spec.locality === "string"
            ? spec.locality.split("/").slice(0, 2).join("/")
            : "",
          serviceAccount: spec.serviceAccount
            ? spiffeId(domain, svc.namespace, spec.serviceAccount)
            : "",
          ...(typeof spec.weight === "number" && spec.weight > 0 ? { weight: spec.weight } : {}),
        });
      }
    }
  }
  return out;
}

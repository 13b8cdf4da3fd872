/**
 * EDS: one ClusterLoadAssignment per requested (known) cluster name, endpoints grouped by locality.
 * @module
 */

import type { ServiceInstance } from "../../model/types.ts";
import type { PushContext, XdsResource } from "../types.ts";
import { hostPortKey, indexOf } from "./context.ts";
import { cmp, endpointAddress, parseClusterName } from "./util.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** `region/zone` → Locality; `zone` alone → `{zone}`; empty → `{}` (always present). */
export function localityOf(loc: string): Record<string, string> {
  if (!loc) return {};
  const i = loc.indexOf("/");
  if (i < 0) return { zone: loc };
  const region = loc.slice(0, i);
  const zone = loc.slice(i + 1);
  const out: Record<string, string> = {};
  if (region) out.region = region;
  if (zone) out.zone = zone;
  return out;
}

/** Instances behind an `outbound|<port>|<subset>|<host>` cluster (subset labels applied). */
export function clusterInstances(ctx: PushContext, clusterName: string): ServiceInstance[] {
  const key = parseClusterName(clusterName);
  if (!key || key.direction !== "outbound") return [];
  const idx = indexOf(ctx);
  const all = idx.instancesByHostPort.get(hostPortKey(key.host, key.port)) ?? [];
  if (!key.subset) return all;
  const dr = idx.destinationRuleByHost.get(key.host)?.spec as Any;
  const ss = (Array.isArray(dr?.subsets) ? dr.subsets : []).find((s: Any) =>
    s?.name === key.subset
  );
  if (!ss) return [];
  const labels = Object.entries((ss.labels ?? {}) as Record<string, string>);
  return all.filter((i) => labels.every(([k, v]) => i.labels[k] === v));
}

/**
 * True when `name` is a cluster the mesh really has: `outbound|<port>|<subset>|<host>` of a known
 * service port (UDP aside) whose subset is empty or defined by the host's DestinationRule, or
 * `inbound|<port>||<host>` of a known service port. Other names (typos, removed services or
 * subsets, BlackHoleCluster) are not clusters anyone can ask EDS about.
 */
export function isKnownCluster(ctx: PushContext, name: string): boolean {
  const key = parseClusterName(name);
  if (!key) return false;
  const idx = indexOf(ctx);
  const svc = idx.serviceByHost.get(key.host);
  if (!svc?.ports.some((p) => p.port === key.port && p.protocol !== "UDP")) return false;
  if (key.direction === "inbound") return key.subset === "";
  if (!key.subset) return true;
  const dr = idx.destinationRuleByHost.get(key.host)?.spec as Any;
  return (Array.isArray(dr?.subsets) ? dr.subsets : []).some((s: Any) => s?.name === key.subset);
}

/**
 * Builds the ClusterLoadAssignment of each known cluster name (see {@link isKnownCluster}), in the
 * order given; unknown names are left out, so ADS reports them as absent (SotW) or removed
 * (delta). A known cluster without endpoints gets an assignment with no endpoints, as Envoy
 * expects. Each locality group carries a `locality` (possibly empty) and `load_balancing_weight` =
 * the sum of its endpoints' weights (1 each unless a ServiceEntry weights them; never 0), as
 * grpc-js-xds requires. `unix://<path>` endpoints become `Pipe`
 * addresses.
 */
export function buildEndpoints(ctx: PushContext, clusterNames: string[]): XdsResource[] {
  return clusterNames.filter((name) => isKnownCluster(ctx, name)).map((name) =>
    loadAssignment(ctx, name)
  );
}

/**
 * The ClusterLoadAssignment of `name` from the instances of `ctx`, without checking that the
 * cluster exists (callers check {@link isKnownCluster} against the full context first).
 */
export function loadAssignment(ctx: PushContext, name: string): XdsResource {
  const groups = new Map<string, ServiceInstance[]>();
  for (const i of clusterInstances(ctx, name)) {
    const g = groups.get(i.locality);
    if (g) g.push(i);
    else groups.set(i.locality, [i]);
  }
  const endpoints = [...groups.keys()].sort(cmp).map((loc) => {
    const insts = groups.get(loc)!;
    return {
      locality: localityOf(loc),
      lb_endpoints: insts.map((i) => ({
        endpoint: { address: endpointAddress(i.address, i.port) },
        // a ServiceEntry endpoint's `weight`
        ...(i.weight ? { load_balancing_weight: { value: i.weight } } : {}),
      })),
      // the endpoints' weights (1 each unless weighted): never 0
      load_balancing_weight: { value: insts.reduce((n, i) => n + (i.weight ?? 1), 0) },
    };
  });
  return { cluster_name: name, endpoints };
}

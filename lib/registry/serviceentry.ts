/**
 * The ServiceEntry registry (always on): services and instances from `ServiceEntry` configs.
 *
 * Rules (reference §1.10): one service per host × address (address `0.0.0.0` when none);
 * resolution NONE → passthrough, STATIC → client-side load balancing over the listed endpoints,
 * DNS → DNS load balancing (endpoints, or the host itself when none are listed); location
 * MESH_EXTERNAL (the default) marks the service mesh-external. An endpoint's port is
 * `endpoints[].ports[<port name>]`, else the service port number. Service accounts come from the
 * ServiceEntry's annotations as on orchestrator Services (`alpha.mesh.io/orchestrator-serviceaccounts`,
 * written by `meshctl register`: see ./accounts.ts): the service lists them (the SANs checked
 * under mutual TLS) and, when there is exactly one, every instance carries it.
 *
 * WorkloadEntries (VMs as workloads): a ServiceEntry with a `workloadSelector` (`labels`) and no
 * endpoints takes as endpoints the WorkloadEntries of its namespace whose labels the selector
 * selects (address, `ports` by port name, labels, locality, weight); an endpoint's or
 * WorkloadEntry's `serviceAccount` (an account name of the namespace) is its instance's identity
 * and is added to the service's.
 * @module
 */
import type {
  ConfigObject,
  RegistryChangeHandler,
  Resolution,
  Service,
  ServiceInstance,
  ServicePort,
  ServiceRegistry,
} from "../model/types.ts";
import { deepEqual, groupBy } from "../model/object.ts";
import { byNsName, type ConfigStore, type StoreEvent } from "../store/types.ts";
import { annotatedServiceAccounts, spiffeId } from "./accounts.ts";
import { keyOf } from "./orchestrator_objects.ts";
import { parseProtocolName } from "./protocol.ts";
import type { WESpec } from "./workload_entries.ts";

interface SESpec {
  hosts?: string[];
  addresses?: string[];
  ports?: { number: number; protocol?: string; name?: string; targetPort?: number }[];
  location?: string | number;
  resolution?: string | number;
  endpoints?: {
    address: string;
    ports?: Record<string, number>;
    labels?: Record<string, string>;
    /** `region/zone/subzone` (the subzone is not kept). */
    locality?: string;
    weight?: number;
    serviceAccount?: string;
  }[];
  workloadSelector?: { labels?: Record<string, string>; matchLabels?: Record<string, string> };
}

/** The WorkloadEntries of `namespace` that `selector` selects (every key/value in their labels). */
function selectedEntries(
  entries: readonly ConfigObject[],
  namespace: string,
  selector: Record<string, string>,
): WESpec[] {
  return entries.filter((we) => {
    if ((we.metadata.namespace ?? "default") !== namespace) return false;
    const spec = we.spec as WESpec;
    if (!spec.address) return false; // reached through a network gateway: not served
    const labels = { ...(we.metadata.labels ?? {}), ...(spec.labels ?? {}) };
    return Object.entries(selector).every(([k, v]) => labels[k] === v);
  }).map((we) => we.spec as WESpec);
}

function resolutionOf(r: SESpec["resolution"]): Resolution {
  if (r === "STATIC" || r === 1) return "ClientSideLB";
  if (r === "DNS" || r === 2) return "DNSLB";
  return "Passthrough";
}

/**
 * Converts ServiceEntry configs to services and instances (pure). `domain` is the trust domain of
 * the service accounts the annotations name (default `cluster.local`).
 */
export function convertServiceEntries(
  configs: readonly ConfigObject[],
  domain = "cluster.local",
  workloadEntries: readonly ConfigObject[] = [],
): { services: Service[]; instances: ServiceInstance[] } {
  const services: Service[] = [];
  const instances: ServiceInstance[] = [];
  for (const cfg of configs) {
    const spec = cfg.spec as SESpec;
    const targetPorts = new Map((spec.ports ?? []).map((p) => [p.number, p.targetPort]));
    const ports: ServicePort[] = (spec.ports ?? []).map((p) => ({
      name: p.name ?? String(p.number),
      port: p.number,
      protocol: parseProtocolName(p.protocol ?? "TCP"),
    }));
    const resolution = resolutionOf(spec.resolution);
    const meshExternal = !(spec.location === "MESH_INTERNAL" || spec.location === 1);
    const addresses = spec.addresses?.length ? spec.addresses : ["0.0.0.0"];
    const namespace = cfg.metadata.namespace ?? "default";
    const annotated = annotatedServiceAccounts(cfg.metadata.annotations, domain, namespace);
    const selector = spec.workloadSelector?.labels ?? spec.workloadSelector?.matchLabels;
    const listed = !spec.endpoints?.length && selector
      ? selectedEntries(workloadEntries, namespace, selector)
      : spec.endpoints ?? [];
    const own = (ep: { serviceAccount?: string }) =>
      ep.serviceAccount ? spiffeId(domain, namespace, ep.serviceAccount) : "";
    const accounts = [...new Set([...annotated, ...listed.map(own).filter((a) => a)])].sort();
    for (const host of spec.hosts ?? []) {
      for (const address of addresses) {
        services.push({
          hostname: host,
          address,
          ports,
          namespace,
          meshExternal,
          resolution,
          serviceAccounts: [...accounts],
          registry: "ServiceEntry",
        });
      }
      if (resolution === "Passthrough") continue;
      const endpoints = listed.length || selector
        ? listed
        : resolution === "DNSLB"
        ? [{ address: host, ports: undefined, labels: undefined }]
        : [];
      for (const ep of endpoints) {
        for (const port of ports) {
          instances.push({
            hostname: host,
            servicePort: port,
            address: ep.address!,
            // the endpoint's own port, else the port's targetPort, else the port itself
            port: ep.ports?.[port.name] ?? targetPorts.get(port.port) ?? port.port,
            labels: { ...(ep.labels ?? {}) },
            locality: typeof ep.locality === "string"
              ? ep.locality.split("/").slice(0, 2).join("/")
              : "",
            serviceAccount: own(ep) || (annotated.length === 1 ? annotated[0] : ""),
            ...(typeof ep.weight === "number" && ep.weight > 0 ? { weight: ep.weight } : {}),
          });
        }
      }
    }
  }
  return { services, instances };
}

/**
 * Whether a change of the config store reaches the proxies only through this registry's
 * instances: every WorkloadEntry change, and a ServiceEntry edit that changes nothing but its
 * `spec.endpoints` (its metadata's `resourceVersion`, `generation` and `kubectl apply`'s
 * last-applied-configuration annotation aside; a ServiceEntry added or deleted is not one). The
 * registry then reports it (`"endpoints"`, or `"services"` when the endpoints changed a service's
 * accounts), and nothing else needs to recompute the configuration (Istio's config handler
 * likewise leaves both kinds to its ServiceEntry controller). `previous` is the object the store
 * held before the event (undefined when it was added).
 */
export function instancesOnlyChange(
  ev: Pick<StoreEvent, "type" | "object">,
  previous: ConfigObject | undefined,
): boolean {
  const next = ev.object;
  if (next.kind === "WorkloadEntry") {
    return previous === undefined || previous.kind === "WorkloadEntry";
  }
  if (ev.type !== "MODIFIED" || next.kind !== "ServiceEntry") return false;
  if (previous?.kind !== "ServiceEntry") return false;
  const strip = (o: ConfigObject) => ({
    ...o,
    metadata: {
      ...o.metadata,
      resourceVersion: undefined,
      generation: undefined,
      annotations: o.metadata.annotations &&
        { ...o.metadata.annotations, [LAST_APPLIED]: undefined },
    },
    spec: { ...o.spec, endpoints: undefined },
  });
  return deepEqual(strip(next), strip(previous));
}

/** The hostnames whose instances differ between `before` and `after` (each host's list in order). */
function changedHosts(
  before: readonly ServiceInstance[],
  after: readonly ServiceInstance[],
): Set<string> {
  const a = groupBy(before, (i) => i.hostname), b = groupBy(after, (i) => i.hostname);
  const out = new Set<string>();
  for (const [host, l] of a) if (!deepEqual(l, b.get(host))) out.add(host);
  for (const host of b.keys()) if (!a.has(host)) out.add(host);
  return out;
}

/** The annotation `kubectl apply` rewrites with the whole object (endpoints included) each time. */
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/**
 * A registry fed by the ServiceEntry configs of a store; it follows the store's watch. `domain`
 * as in {@link convertServiceEntries}.
 *
 * After each change it tells its handlers `"services"` when the services themselves changed
 * (hosts, addresses, ports, resolution, location, service accounts: a config push) and
 * `"endpoints"` when only instances may have (an endpoint or WorkloadEntry added, removed or
 * edited: an endpoints push), as Istio's ServiceEntry controller does. Changes that arrive while
 * a reload waits to start are taken up by that reload.
 */
export function createServiceEntryRegistry(
  store: ConfigStore,
  domain = "cluster.local",
): ServiceRegistry {
  let state: { services: Service[]; instances: ServiceInstance[] } = {
    services: [],
    instances: [],
  };
  // The store's ServiceEntries and WorkloadEntries by namespace/name, kept from its watch (a
  // change is not a listing of every object, each copied).
  const held = new Map<string, Map<string, ConfigObject>>([
    ["ServiceEntry", new Map()],
    ["WorkloadEntry", new Map()],
  ]);
  const handlers: RegistryChangeHandler[] = [];
  let watch: { close(): void } | undefined;
  let chain = Promise.resolve();
  /** A reload is queued and has not started: a change now is seen by it. */
  let queued = false;
  /**
   * A WorkloadEntry changed since the last reload began: it may also be an instance of an
   * orchestrator service (outside this registry), so the hosts that changed are not known here.
   */
  let workloadEntries = false;
  /** The instances by hostname (for `instancesOf`), indexed at its first call after a reload. */
  let byHost: Map<string, ServiceInstance[]> | undefined;
  // The changes of one task make one reload, in order.
  const reload = () => {
    if (queued) return chain;
    queued = true;
    return chain = chain.then(() => {
      queued = false;
      const hostsKnown = !workloadEntries;
      workloadEntries = false;
      const next = convertServiceEntries(
        sortedValues(held.get("ServiceEntry")!),
        domain,
        sortedValues(held.get("WorkloadEntry")!),
      );
      const kind = deepEqual(next.services, state.services) ? "endpoints" : "services";
      const hosts = kind === "endpoints" && hostsKnown
        ? changedHosts(state.instances, next.instances)
        : undefined;
      state = next;
      byHost = undefined;
      for (const h of handlers) h(kind, hosts);
    });
  };
  return {
    name: "ServiceEntry",
    services: () => state.services,
    instances: () => state.instances,
    instancesOf(hosts) {
      byHost ??= groupBy(state.instances, (i) => i.hostname);
      return [...hosts].flatMap((h) => byHost!.get(h) ?? []);
    },
    onChange: (h) => void handlers.push(h),
    async start() {
      // only these kinds: a file of 12,500 VirtualServices is not deep-copied for this handler
      const kinds = [...held.keys()];
      /** What the watch delivered while the listing ran (newer than the listing). */
      let seen: Set<string> | undefined = new Set();
      watch = store.watch((ev) => {
        const objects = held.get(ev.object.kind);
        if (!objects) return;
        const k = keyOf(ev.object.metadata);
        seen?.add(`${ev.object.kind}/${k}`);
        if (ev.object.kind === "WorkloadEntry") workloadEntries = true;
        if (ev.type === "DELETED") objects.delete(k);
        else objects.set(k, ev.object);
        void reload();
      }, kinds);
      for (
        const [kind, type] of [["ServiceEntry", "serviceentry"], ["WorkloadEntry", "workloadentry"]]
      ) {
        // WorkloadEntries only where the store holds them
        if (!store.schemas.some((s) => s.type === type)) continue;
        for (const o of await store.list(type)) {
          const k = keyOf(o.metadata);
          if (!seen.has(`${kind}/${k}`)) held.get(kind)!.set(k, o);
        }
      }
      seen = undefined;
      await reload();
    },
    stop() {
      watch?.close();
      return Promise.resolve();
    },
  };
}

/** The objects in the order the stores list them. */
function sortedValues(objects: ReadonlyMap<string, ConfigObject>): ConfigObject[] {
  return [...objects.values()].sort(byNsName);
}

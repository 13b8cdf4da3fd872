/**
 * RegistryA: a Consul catalog read over its HTTP API, polled every `--regaserverInterval`.
 *
 * Reads `GET <url>/v1/catalog/services` and `GET <url>/v1/catalog/service/<name>`. Mapping
 * (reference §1.10): hostname `<name>.service.consul`; no VIP (`0.0.0.0`); one port per distinct
 * service port, named after its protocol taken from node metadata `protocol` (default `http`;
 * an unknown word means TCP); instance address = ServiceAddress, else the node Address;
 * locality = datacenter; labels from tags of the form `key|value` (other tags ignored); node
 * metadata `external` marks the service mesh-external; service account
 * `spiffe://cluster.local/ns/default/sa/default`.
 * @module
 */
import type { Service, ServiceInstance, ServicePort, ServiceRegistry } from "../model/types.ts";
import { getLogger } from "../log/mod.ts";
import { createPollingRegistry, getJson, type Snapshot } from "./poller.ts";
import { parseProtocolName } from "./protocol.ts";

interface CatalogEntry {
  Node?: string;
  Address?: string;
  Datacenter?: string;
  ServiceAddress?: string;
  ServicePort?: number;
  ServiceTags?: string[] | null;
  NodeMeta?: Record<string, string> | null;
}

/**
 * Converts one Consul catalog service to mesh services and instances (pure). Tags that are not
 * of the form `key|value` are returned in `ignoredTags` (the registry warns about each once).
 */
export function convertConsulService(
  name: string,
  entries: CatalogEntry[],
): Snapshot & { ignoredTags: string[] } {
  const hostname = `${name}.service.consul`;
  const ports = new Map<number, ServicePort>();
  const instances: ServiceInstance[] = [];
  let external = false;
  const ignoredTags: string[] = [];
  for (const e of entries) {
    if (typeof e.ServicePort !== "number") continue;
    const protoWord = e.NodeMeta?.protocol ?? "http";
    const port: ServicePort = {
      name: protoWord,
      port: e.ServicePort,
      protocol: parseProtocolName(protoWord),
    };
    if (!ports.has(port.port)) ports.set(port.port, port);
    if (e.NodeMeta?.external) external = true;
    const labels: Record<string, string> = {};
    for (const tag of e.ServiceTags ?? []) {
      const i = tag.indexOf("|");
      if (i > 0) labels[tag.slice(0, i)] = tag.slice(i + 1);
      else if (!ignoredTags.includes(tag)) ignoredTags.push(tag);
    }
    instances.push({
      hostname,
      servicePort: ports.get(port.port)!,
      address: e.ServiceAddress || e.Address || "",
      port: e.ServicePort,
      labels,
      locality: e.Datacenter ?? "",
      serviceAccount: "spiffe://cluster.local/ns/default/sa/default",
    });
  }
  const service: Service = {
    hostname,
    address: "0.0.0.0",
    ports: [...ports.values()].sort((a, b) => a.port - b.port),
    namespace: "",
    meshExternal: external,
    resolution: external ? "Passthrough" : "ClientSideLB",
    serviceAccounts: ["spiffe://cluster.local/ns/default/sa/default"],
    registry: "RegistryA",
  };
  return { services: [service], instances, ignoredTags };
}

/** Creates the RegistryA (Consul) registry polling `url` every `intervalMs`. */
export function createConsulRegistry(
  url: string,
  intervalMs: number,
): ServiceRegistry & { pollNow(): Promise<void> } {
  const base = url.replace(/\/+$/, "");
  const log = getLogger("default");
  const warned = new Set<string>();
  return createPollingRegistry({
    name: "RegistryA",
    intervalMs,
    async fetchSnapshot(signal) {
      const names = await getJson(`${base}/v1/catalog/services`, signal);
      if (!names || typeof names !== "object" || Array.isArray(names)) {
        throw new Error(`${base}/v1/catalog/services: expected a JSON object of service names`);
      }
      const snap: Snapshot = { services: [], instances: [] };
      for (const name of Object.keys(names).sort()) {
        const entries = await getJson(
          `${base}/v1/catalog/service/${encodeURIComponent(name)}`,
          signal,
        );
        if (!Array.isArray(entries)) {
          throw new Error(`${base}/v1/catalog/service/${name}: expected a JSON array`);
        }
        const part = convertConsulService(name, entries as CatalogEntry[]);
        for (const tag of part.ignoredTags) {
          if (warned.has(`${name}\0${tag}`)) continue;
          warned.add(`${name}\0${tag}`);
          log.warn(
            `RegistryA: service ${name}: tag "${tag}" is not of the form key|value; ignored`,
          );
        }
        snap.services.push(...part.services);
        snap.instances.push(...part.instances);
      }
      return snap;
    },
  });
}

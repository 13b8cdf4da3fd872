/**
 * RegistryB: a Eureka server read with `GET <url>/eureka/v2/apps` (JSON), polled every
 * `--regbserverInterval`.
 *
 * Mapping (reference §1.10): only instances with status `UP`; the service hostname is the
 * instance `hostName`; ports are the enabled `port` and `securePort`, each named by its number;
 * the protocol comes from metadata `mesh.protocol` (also read: `istio.protocol`; default TCP);
 * labels are the metadata minus those keys and `@class`; no VIP (`0.0.0.0`); no service
 * accounts. Conflicting protocols on one port keep the first and log a warning.
 * @module
 */
import type { ServiceInstance, ServicePort, ServiceRegistry } from "../model/types.ts";
import { getLogger } from "../log/mod.ts";
import { createPollingRegistry, getJson, type Snapshot } from "./poller.ts";
import { parseProtocolName } from "./protocol.ts";

interface EurekaPort {
  $?: number | string;
  "@enabled"?: string | boolean;
}
interface EurekaInstance {
  hostName?: string;
  ipAddr?: string;
  status?: string;
  port?: EurekaPort;
  securePort?: EurekaPort;
  metadata?: Record<string, string>;
}

const PROTOCOL_KEYS = ["mesh.protocol", "istio.protocol"];

function asArray<T>(v: T | T[] | undefined): T[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

function enabledPort(p: EurekaPort | undefined): number | undefined {
  if (!p) return undefined;
  const enabled = p["@enabled"] === true || p["@enabled"] === "true";
  const n = Number(p.$);
  return enabled && Number.isInteger(n) && n > 0 && n < 65536 ? n : undefined;
}

/** Converts a Eureka `/eureka/v2/apps` JSON body to mesh services and instances (pure). */
export function convertEurekaApps(body: unknown): Snapshot {
  const log = getLogger("default");
  const apps = asArray(
    (body as { applications?: { application?: unknown } })?.applications?.application as
      | { instance?: EurekaInstance | EurekaInstance[] }[]
      | undefined,
  );
  const byHost = new Map<string, Map<number, ServicePort>>();
  const instances: ServiceInstance[] = [];
  for (const app of apps) {
    for (const inst of asArray(app.instance)) {
      if (inst.status !== "UP" || !inst.hostName || !inst.ipAddr) continue;
      const meta = { ...(inst.metadata ?? {}) };
      const protoWord = PROTOCOL_KEYS.map((k) => meta[k]).find((v) => v) ?? "tcp";
      for (const k of [...PROTOCOL_KEYS, "@class"]) delete meta[k];
      const ports = byHost.get(inst.hostName) ?? new Map<number, ServicePort>();
      byHost.set(inst.hostName, ports);
      for (const n of [enabledPort(inst.port), enabledPort(inst.securePort)]) {
        if (n === undefined) continue;
        const protocol = parseProtocolName(protoWord);
        const existing = ports.get(n);
        if (existing && existing.protocol !== protocol) {
          log.warn(
            `RegistryB: ${inst.hostName} port ${n} has conflicting protocols ${existing.protocol} and ${protocol}; keeping ${existing.protocol}`,
          );
        }
        const port = existing ?? { name: String(n), port: n, protocol };
        ports.set(n, port);
        instances.push({
          hostname: inst.hostName,
          servicePort: port,
          address: inst.ipAddr,
          port: n,
          labels: meta,
          locality: "",
          serviceAccount: "",
        });
      }
    }
  }
  const services = [...byHost.entries()].sort(([a], [b]) => a.localeCompare(b)).map((
    [hostname, ports],
  ) => ({
    hostname,
    address: "0.0.0.0",
    ports: [...ports.values()].sort((a, b) => a.port - b.port),
    namespace: "",
    meshExternal: false,
    resolution: "ClientSideLB" as const,
    serviceAccounts: [],
    registry: "RegistryB",
  }));
  return { services, instances };
}

/** Creates the RegistryB (Eureka) registry polling `url` every `intervalMs`. */
export function createEurekaRegistry(
  url: string,
  intervalMs: number,
): ServiceRegistry & { pollNow(): Promise<void> } {
  const base = url.replace(/\/+$/, "");
  return createPollingRegistry({
    name: "RegistryB",
    intervalMs,
    fetchSnapshot: async (signal) =>
      convertEurekaApps(await getJson(`${base}/eureka/v2/apps`, signal)),
  });
}

/**
 * An orchestrator Service on the `fs` platform. There is no orchestrator there, so `meshctl
 * create|replace -p fs` stores the Service the integration procedure writes (`ports[]` with
 * `port`, `targetPort`, `name`, `protocol`) as the ServiceEntry `meshctl register` keeps for the
 * same name: host `<name>.<ns>.svc.cluster.local`, `MESH_INTERNAL`, `STATIC`, one port per
 * Service port (protocol from the port name, as discovery reads orchestrator Services) and
 * `spec.clusterIP` as its address (its TCP ports then get listeners of their own). A Service
 * describes the ports of instances registered with `meshctl register` (a static ServiceEntry
 * needs at least one): `create` and `replace` both rewrite the ports of that ServiceEntry and keep
 * its instances, each then listening on the Service port's `targetPort` (else what it was
 * registered with for that port number, else the port itself). Pure; no I/O.
 * @module
 */

import { protocolFromPortName } from "../../lib/registry/protocol.ts";
import { isDns1123Label, isIp } from "../../lib/model/values.ts";
import { type ServiceEntrySpec, serviceHost } from "./_registration.ts";

/** The instance a converted entry is validated with (TEST-NET-1; never stored). */
export const STAND_IN_ENDPOINT: Readonly<{ address: string }> = Object.freeze({
  address: "192.0.2.1",
});

/** What the conversion remembers for the write step: the target port per service port number. */
export interface FromService {
  /** Service port number → the port the instances listen on, for ports with a `targetPort`. */
  targetPorts: Record<number, number>;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Converts a `kind: Service` document into a ServiceEntry document (still to be validated like
 * any other), or the problems, each naming the field.
 */
export function serviceAsServiceEntry(
  raw: Record<string, unknown>,
  namespace: string,
  where: string,
): { entry: Record<string, unknown>; fromService: FromService } | { problems: string[] } {
  const problems: string[] = [];
  const meta = isRecord(raw.metadata) ? raw.metadata : {};
  const name = typeof meta.name === "string" ? meta.name : "";
  const spec = isRecord(raw.spec) ? raw.spec : {};
  const ports = Array.isArray(spec.ports) ? spec.ports : [];
  if (ports.length === 0) {
    problems.push(`${where}: Service spec.ports: at least one port is needed`);
  }
  const sePorts: ServiceEntrySpec["ports"] = [];
  const targetPorts: Record<number, number> = {};
  ports.forEach((p: unknown, i: number) => {
    const at = `${where}: Service spec.ports[${i}]`;
    if (!isRecord(p)) return void problems.push(`${at}: must be an object`);
    const port = p.port;
    if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) {
      return void problems.push(`${at}.port: must be a port number (1-65535)`);
    }
    const pname = p.name ?? (ports.length === 1 ? String(port) : undefined);
    if (typeof pname !== "string" || !isDns1123Label(pname)) {
      return void problems.push(
        `${at}.name: must be a DNS-1123 label (required when there are several ports)`,
      );
    }
    const transport = typeof p.protocol === "string" ? p.protocol : "TCP";
    if (!["TCP", "UDP"].includes(transport.toUpperCase())) {
      return void problems.push(
        `${at}.protocol: must be TCP or UDP, got ${JSON.stringify(p.protocol)}`,
      );
    }
    const target = p.targetPort ?? port;
    if (typeof target !== "number" || !Number.isInteger(target) || target < 1 || target > 65535) {
      return void problems.push(
        `${at}.targetPort: must be a port number on the fs platform (no containers name ports ` +
          `there), got ${JSON.stringify(p.targetPort)}`,
      );
    }
    sePorts.push({ number: port, protocol: protocolFromPortName(pname, transport), name: pname });
    if (p.targetPort !== undefined) targetPorts[port] = target;
  });
  const clusterIP = spec.clusterIP;
  if (clusterIP !== undefined && clusterIP !== "None" && clusterIP !== "") {
    if (typeof clusterIP !== "string" || !isIp(clusterIP)) {
      problems.push(
        `${where}: Service spec.clusterIP: must be an IP address, got ${JSON.stringify(clusterIP)}`,
      );
    }
  }
  if (problems.length) return { problems };
  const addresses = typeof clusterIP === "string" && isIp(clusterIP)
    ? { addresses: [clusterIP] }
    : {};
  const labels = isRecord(meta.labels) ? { labels: meta.labels } : {};
  const annotations = isRecord(meta.annotations) ? { annotations: meta.annotations } : {};
  return {
    entry: {
      apiVersion: "networking.mesh.io/v1alpha3",
      kind: "ServiceEntry",
      metadata: { name, namespace, ...labels, ...annotations },
      spec: {
        hosts: [serviceHost(name, namespace)],
        ...addresses,
        ports: sePorts,
        location: "MESH_INTERNAL",
        resolution: "STATIC",
        endpoints: [],
      },
    },
    fromService: { targetPorts },
  };
}

/**
 * The endpoints of the stored ServiceEntry carried over to the one made from a Service: every
 * endpoint listens, for each new port, on its target port when the Service gives one, else on
 * what it was registered with for that port number, else on the port itself.
 */
export function carryEndpoints(
  next: ServiceEntrySpec,
  stored: ServiceEntrySpec | undefined,
  from: FromService,
): ServiceEntrySpec {
  // next.endpoints (the stand-in) are never kept
  const storedPorts = stored?.ports ?? [];
  const endpoints = (stored?.endpoints ?? []).map((e) => {
    const ports: Record<string, number> = {};
    for (const p of next.ports) {
      const old = storedPorts.find((s) => s.number === p.number);
      const was = old ? e.ports?.[old.name] : undefined;
      ports[p.name] = from.targetPorts[p.number] ?? was ?? p.number;
    }
    return { ...e, ports };
  });
  return { ...next, endpoints };
}

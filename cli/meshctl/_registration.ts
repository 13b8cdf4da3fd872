/**
 * The pure part of `meshctl register` and `deregister` (reference §5.4): argument parsing, and
 * the edits of an orchestrator Endpoints object and of a ServiceEntry. No I/O.
 * @module
 */
import { UsageError } from "../_shared/context.ts";
import { checkLabelKey, checkLabelValue, isDns1123Label, isIp } from "../../lib/model/values.ts";
import { SERVICE_ACCOUNT_ANNOTATION } from "../../lib/registry/accounts.ts";
import { protocolFromPortName } from "../../lib/registry/protocol.ts";

/** One port of a registration: `name:port`, `name:port:targetPort` or a bare port. */
export interface PortSpec {
  name: string;
  /** The service port. */
  port: number;
  /** The port the instance listens on, when it differs from `port` (`http:80:8081`). */
  targetPort?: number;
}

/** The port an instance listens on for a registered port. */
export function endpointPort(p: PortSpec): number {
  return p.targetPort ?? p.port;
}

/** Names of bare ports, as the reference gives them; other bare ports are named by number. */
export const WELL_KNOWN_PORT_NAMES: Readonly<Record<number, string>> = Object.freeze({
  80: "http",
  8080: "http",
  443: "https",
  3306: "mysql",
});

/** The annotation naming the service account of registered instances (read by discovery). */
export { SERVICE_ACCOUNT_ANNOTATION };

/** What `register` was asked, checked. */
export interface Registration {
  service: string;
  ip: string;
  ports: PortSpec[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/**
 * Checks the arguments and flags of `register` (`<svcname> <ip> [name:]port[:targetPort]...`); throws a
 * {@link UsageError} naming the first bad value.
 */
export function parseRegistration(
  args: readonly string[],
  flags: { labels: readonly string[]; annotations: readonly string[]; serviceaccount: string },
): Registration {
  const [service, ip, ...portArgs] = args;
  checkServiceName(service);
  checkIp(ip);
  if (portArgs.length === 0) throw new UsageError("register needs at least one port");
  const ports = parsePorts(portArgs);
  const labels = parseKeyValues(flags.labels, "--labels", false);
  const annotations = parseKeyValues(flags.annotations, "--annotations", true);
  const sa = flags.serviceaccount;
  if (!isDns1123Subdomainish(sa)) {
    throw new UsageError(
      `Invalid --serviceaccount ${JSON.stringify(sa)}: must be a DNS-1123 subdomain`,
    );
  }
  annotations[SERVICE_ACCOUNT_ANNOTATION] = sa;
  return { service, ip, ports, labels, annotations };
}

function isDns1123Subdomainish(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split(".").every(isDns1123Label);
}

/** Checks a service name: a DNS-1035 label (as orchestrator Services require). */
export function checkServiceName(name: string): void {
  if (!isDns1123Label(name) || !/^[a-z]/.test(name)) {
    throw new UsageError(
      `Invalid service name ${
        JSON.stringify(name)
      }: must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, ` +
        `ending with a letter or digit, at most 63 characters)`,
    );
  }
}

/** Checks an instance address: an IPv4 or IPv6 literal. */
export function checkIp(ip: string): void {
  if (!isIp(ip)) {
    throw new UsageError(`Invalid IP ${JSON.stringify(ip)}: must be an IPv4 or IPv6 address`);
  }
}

const isPortText = (t: string) => /^\d+$/.test(t) && Number(t) >= 1 && Number(t) <= 65535;

/**
 * Parses `[name:]port[:targetPort]` arguments (`http:80:8081`: service port 80, the instance
 * listens on 8081; a target port needs the name). Bare ports are named from
 * {@link WELL_KNOWN_PORT_NAMES}, else by their number. Port numbers and names must be unique.
 */
export function parsePorts(args: readonly string[]): PortSpec[] {
  const out: PortSpec[] = [];
  for (const arg of args) {
    const parts = arg.split(":");
    const q = JSON.stringify(arg);
    const text = parts.length === 3 ? parts[1] : parts[parts.length - 1];
    const targetText = parts.length === 3 ? parts[2] : undefined;
    if (
      parts.length > 3 || !isPortText(text) ||
      (targetText !== undefined && !isPortText(targetText))
    ) {
      throw new UsageError(
        `Invalid port ${q}: want [name:]port or name:port:targetPort with ports between 1 and ` +
          "65535",
      );
    }
    const port = Number(text);
    const name = parts.length === 1 ? WELL_KNOWN_PORT_NAMES[port] ?? String(port) : parts[0];
    if (!isDns1123Label(name)) {
      throw new UsageError(
        `Invalid port ${q}: name ${
          JSON.stringify(name)
        } must be a DNS-1123 label (lowercase letters, digits and '-')`,
      );
    }
    const sameNumber = out.find((p) => p.port === port);
    if (sameNumber) throw new UsageError(`Invalid port ${q}: port ${port} is given twice`);
    const sameName = out.find((p) => p.name === name);
    if (sameName) {
      throw new UsageError(
        `Invalid port ${q}: ports ${sameName.port} and ${port} would both be named ${
          JSON.stringify(name)
        }; name one of them (name:port)`,
      );
    }
    const targetPort = targetText === undefined ? undefined : Number(targetText);
    out.push(
      targetPort === undefined || targetPort === port ? { name, port } : { name, port, targetPort },
    );
  }
  return out;
}

/**
 * Parses `key=value` items (and, with `bareAllowed`, bare `key` meaning an empty value). Label
 * keys and values are checked like the orchestrator checks them.
 */
export function parseKeyValues(
  items: readonly string[],
  flag: string,
  bareAllowed: boolean,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const i = item.indexOf("=");
    if (i < 0 && !bareAllowed) {
      throw new UsageError(`Invalid ${flag} item ${JSON.stringify(item)}: want key=value`);
    }
    const key = i < 0 ? item : item.slice(0, i);
    const value = i < 0 ? "" : item.slice(i + 1);
    const bad = checkLabelKey(key) ?? (flag === "--labels" ? checkLabelValue(value) : undefined);
    if (bad) throw new UsageError(`Invalid ${flag} item ${JSON.stringify(item)}: ${bad}`);
    out[key] = value;
  }
  return out;
}

/** `http:80, mysql:3306, web:80:8081`. */
export function portsText(ports: readonly PortSpec[]): string {
  return ports.map((p) => `${p.name}:${p.port}${p.targetPort ? `:${p.targetPort}` : ""}`).join(
    ", ",
  );
}

// ---- orchestrator Endpoints -----------------------------------------------------------------

/** An Endpoints subset, as the orchestrator API holds it (fields we touch). */
export interface Subset {
  addresses?: { ip: string; [k: string]: unknown }[];
  notReadyAddresses?: { ip: string; [k: string]: unknown }[];
  ports?: { name?: string; port: number; protocol?: string; [k: string]: unknown }[];
  [k: string]: unknown;
}

const samePortSet = (s: Subset, ports: readonly PortSpec[]) => {
  const have = new Set((s.ports ?? []).map((p) => p.port));
  return have.size === ports.length && ports.every((p) => have.has(endpointPort(p)));
};

/**
 * Adds `ip` to the subset whose port set equals `ports` (or a new subset). Unlike the reference,
 * an address already in that subset is not added again: `added` is then false.
 */
export function addAddress(
  subsets: readonly Subset[],
  ip: string,
  ports: readonly PortSpec[],
): { subsets: Subset[]; added: boolean } {
  const out = subsets.map((s) => ({ ...s }));
  const match = out.find((s) => samePortSet(s, ports));
  if (!match) {
    out.push({
      addresses: [{ ip }],
      ports: ports.map((p) => ({ name: p.name, port: endpointPort(p), protocol: "TCP" })),
    });
    return { subsets: out, added: true };
  }
  if ((match.addresses ?? []).some((a) => a.ip === ip)) return { subsets: out, added: false };
  match.addresses = [...(match.addresses ?? []), { ip }];
  return { subsets: out, added: true };
}

/** Removes `ip` from every subset (ready or not) and drops subsets left without addresses. */
export function removeAddress(
  subsets: readonly Subset[],
  ip: string,
): { subsets: Subset[]; removed: boolean } {
  let removed = false;
  const out: Subset[] = [];
  for (const s of subsets) {
    const keep = (list: Subset["addresses"]) => {
      const kept = (list ?? []).filter((a) => a.ip !== ip);
      if (kept.length !== (list ?? []).length) removed = true;
      return kept;
    };
    const addresses = keep(s.addresses);
    const notReady = keep(s.notReadyAddresses);
    if (addresses.length === 0 && notReady.length === 0) continue;
    const next: Subset = { ...s, addresses };
    if (s.notReadyAddresses) next.notReadyAddresses = notReady;
    if (addresses.length === 0) delete next.addresses;
    out.push(next);
  }
  return { subsets: out, removed };
}

/**
 * Ports of a registration that a Service does not name the same way: discovery serves an
 * endpoint port only under the service port of the same name.
 */
export function unmatchedPorts(
  servicePorts: readonly { name?: string; port?: number }[],
  ports: readonly PortSpec[],
): PortSpec[] {
  return ports.filter((p) => !servicePorts.some((s) => (s.name ?? "") === p.name));
}

// ---- ServiceEntry (fs platform) --------------------------------------------------------------

/** The ServiceEntry spec fields register touches. */
export interface ServiceEntrySpec {
  hosts: string[];
  ports: { number: number; protocol: string; name: string }[];
  location?: string;
  resolution?: string;
  endpoints?: {
    address: string;
    ports?: Record<string, number>;
    labels?: Record<string, string>;
  }[];
  [k: string]: unknown;
}

/** The host a registered service gets on the fs platform: `<svc>.<ns>.svc.cluster.local`. */
export function serviceHost(service: string, namespace: string): string {
  return `${service}.${namespace}.svc.cluster.local`;
}

/** A new ServiceEntry spec for a first registration (mesh-internal, static endpoints). */
export function newServiceEntrySpec(reg: Registration, namespace: string): ServiceEntrySpec {
  return {
    hosts: [serviceHost(reg.service, namespace)],
    ports: [],
    location: "MESH_INTERNAL",
    resolution: "STATIC",
    endpoints: [],
  };
}

/**
 * Adds the registration's endpoint (and any port the entry lacks) to a ServiceEntry spec.
 * `added` is false when the address is already there with all these ports. Throws an Error when
 * a port number or name is already used differently by the entry.
 */
export function addEndpoint(
  spec: ServiceEntrySpec,
  reg: Registration,
  what: string,
): { spec: ServiceEntrySpec; added: boolean } {
  const ports = [...spec.ports];
  for (const p of reg.ports) {
    const byNumber = ports.find((x) => x.number === p.port);
    const byName = ports.find((x) => x.name === p.name);
    if (byNumber && byNumber.name !== p.name) {
      throw new Error(
        `cannot register ${p.name}:${p.port}: ${what} names port ${p.port} ${
          JSON.stringify(byNumber.name)
        }`,
      );
    }
    if (byName && byName.number !== p.port) {
      throw new Error(
        `cannot register ${p.name}:${p.port}: ${what} uses the name ${
          JSON.stringify(p.name)
        } for port ${byName.number}`,
      );
    }
    if (!byNumber) {
      ports.push({ number: p.port, protocol: protocolFromPortName(p.name), name: p.name });
    }
  }
  const endpoints = [...(spec.endpoints ?? [])];
  const i = endpoints.findIndex((e) => e.address === reg.ip);
  const want = Object.fromEntries(reg.ports.map((p) => [p.name, endpointPort(p)]));
  if (i >= 0) {
    const have = endpoints[i].ports ?? {};
    if (reg.ports.every((p) => have[p.name] === endpointPort(p))) {
      return { spec: { ...spec, ports, endpoints }, added: false };
    }
    endpoints[i] = { ...endpoints[i], ports: { ...have, ...want } };
  } else {
    const ep: NonNullable<ServiceEntrySpec["endpoints"]>[number] = { address: reg.ip, ports: want };
    if (Object.keys(reg.labels).length > 0) ep.labels = { ...reg.labels };
    endpoints.push(ep);
  }
  return { spec: { ...spec, ports, endpoints }, added: true };
}

/** Removes the endpoint at `ip` from a ServiceEntry spec. */
export function removeEndpoint(
  spec: ServiceEntrySpec,
  ip: string,
): { spec: ServiceEntrySpec; removed: boolean } {
  const endpoints = (spec.endpoints ?? []).filter((e) => e.address !== ip);
  return {
    spec: { ...spec, endpoints },
    removed: endpoints.length !== (spec.endpoints ?? []).length,
  };
}

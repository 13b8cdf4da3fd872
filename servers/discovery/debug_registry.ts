/**
 * The in-memory debug registry (`memAdapter`, reference §1.5 and §1.10): always aggregated last,
 * filled through `POST /debug/registryz?svc=<host>` (a service) and
 * `POST /debug/endpointz?svc=<host>` (an instance). The bodies are validated here; every
 * problem is reported as one line naming the field.
 * @module
 */

import type {
  Protocol,
  RegistryChangeHandler,
  Service,
  ServiceInstance,
  ServicePort,
  ServiceRegistry,
} from "../../lib/model/mod.ts";
import { isIp } from "../../lib/xds/mod.ts";

/** Name of the debug registry (as in the reference system). */
export const DEBUG_REGISTRY_NAME = "memAdapter";

const PROTOCOLS: readonly Protocol[] = [
  "HTTP",
  "HTTP2",
  "GRPC",
  "HTTPS",
  "MONGO",
  "REDIS",
  "TCP",
  "TLS",
  "UDP",
];
const RESOLUTIONS = ["ClientSideLB", "DNSLB", "Passthrough"] as const;
const HOST_RE = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i;

/** A body that cannot be used: the message names the field and the reason. */
export class DebugInputError extends Error {
  override name = "DebugInputError";
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v);
const describe = (v: unknown) => v === undefined ? "nothing" : JSON.stringify(v);

function checkHost(svc: string): void {
  if (!svc) throw new DebugInputError("Query parameter svc: must name a service hostname");
  if (svc.length > 253 || !HOST_RE.test(svc)) {
    throw new DebugInputError(`Query parameter svc ${JSON.stringify(svc)}: not a valid hostname`);
  }
}

function parsePort(v: unknown, field: string): ServicePort {
  if (!isRec(v)) throw new DebugInputError(`${field}: must be an object, got ${describe(v)}`);
  const { name = "", port, protocol = "TCP" } = v;
  if (typeof name !== "string") {
    throw new DebugInputError(`${field}.name: must be a string, got ${describe(name)}`);
  }
  if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new DebugInputError(
      `${field}.port: must be a port from 1 to 65535, got ${describe(port)}`,
    );
  }
  if (typeof protocol !== "string" || !PROTOCOLS.includes(protocol.toUpperCase() as Protocol)) {
    throw new DebugInputError(
      `${field}.protocol: must be one of ${PROTOCOLS.join(", ")}, got ${describe(protocol)}`,
    );
  }
  return { name, port, protocol: protocol.toUpperCase() as Protocol };
}

function stringMap(v: unknown, field: string): Record<string, string> {
  if (v === undefined) return {};
  if (!isRec(v) || Object.values(v).some((x) => typeof x !== "string")) {
    throw new DebugInputError(`${field}: must be a map of strings`);
  }
  return { ...v } as Record<string, string>;
}

function optString(v: unknown, field: string): string {
  if (v === undefined) return "";
  if (typeof v !== "string") {
    throw new DebugInputError(`${field}: must be a string, got ${describe(v)}`);
  }
  return v;
}

const KNOWN_SERVICE_FIELDS = new Set([
  "hostname",
  "address",
  "ports",
  "namespace",
  "meshExternal",
  "resolution",
  "serviceAccounts",
  "registry",
  "attributes",
]);

/**
 * Parses the body of `POST /debug/registryz?svc=<host>`: a service in the shape `/debug/registryz`
 * prints (`hostname` optional, must equal `svc` when given; `ports` required).
 * @throws DebugInputError naming the field.
 */
export function parseDebugService(svc: string, body: unknown): Service {
  checkHost(svc);
  if (!isRec(body)) throw new DebugInputError(`Service body: must be a JSON object`);
  for (const k of Object.keys(body)) {
    if (!KNOWN_SERVICE_FIELDS.has(k)) throw new DebugInputError(`Service body: unknown field ${k}`);
  }
  if (body.hostname !== undefined && body.hostname !== svc) {
    throw new DebugInputError(
      `Service hostname ${describe(body.hostname)}: must equal svc ${JSON.stringify(svc)}`,
    );
  }
  if (!Array.isArray(body.ports) || body.ports.length === 0) {
    throw new DebugInputError(
      `Service ports: must be a non-empty list, got ${describe(body.ports)}`,
    );
  }
  const ports = body.ports.map((p, i) => parsePort(p, `Service ports[${i}]`));
  const seen = new Set<string>();
  for (const p of ports) {
    if (seen.has(p.name) || seen.has(String(p.port))) {
      throw new DebugInputError(`Service ports: duplicate port ${p.name || p.port}`);
    }
    seen.add(p.name).add(String(p.port));
  }
  const address = optString(body.address, "Service address") || "0.0.0.0";
  const resolution = body.resolution ?? "ClientSideLB";
  if (!RESOLUTIONS.includes(resolution as typeof RESOLUTIONS[number])) {
    throw new DebugInputError(
      `Service resolution: must be one of ${RESOLUTIONS.join(", ")}, got ${describe(resolution)}`,
    );
  }
  if (body.meshExternal !== undefined && typeof body.meshExternal !== "boolean") {
    throw new DebugInputError(`Service meshExternal: must be a boolean`);
  }
  const accounts = body.serviceAccounts ?? [];
  if (!Array.isArray(accounts) || accounts.some((a) => typeof a !== "string")) {
    throw new DebugInputError("Service serviceAccounts: must be a list of strings");
  }
  const out: Service = {
    hostname: svc,
    address,
    ports,
    namespace: optString(body.namespace, "Service namespace"),
    meshExternal: body.meshExternal === true,
    resolution: resolution as Service["resolution"],
    serviceAccounts: [...accounts] as string[],
    registry: DEBUG_REGISTRY_NAME,
  };
  if (body.attributes !== undefined) {
    out.attributes = stringMap(body.attributes, "Service attributes");
  }
  return out;
}

/**
 * An instance address Envoy accepts in an assignment: an IP address, a `unix:///absolute/path`,
 * or, only for a service resolved through DNS (`resolution: DNSLB`), a DNS name.
 * @throws DebugInputError naming `Instance address`.
 */
function checkInstanceAddress(address: string, service: Service): void {
  if (isIp(address)) return;
  if (address.startsWith("unix://")) {
    const path = address.slice("unix://".length);
    if (path.startsWith("/") && path.length > 1 && !/[\0\s]/.test(path)) return;
    throw new DebugInputError(
      `Instance address ${JSON.stringify(address)}: a unix socket must be unix:///absolute/path`,
    );
  }
  const dns = service.resolution === "DNSLB";
  if (dns && address.length <= 253 && HOST_RE.test(address) && !address.startsWith("*")) return;
  throw new DebugInputError(
    `Instance address ${JSON.stringify(address)}: must be an IP address or unix:///path` +
      (dns ? " or a DNS name" : ` (a DNS name only when the service resolution is DNSLB, ` +
        `${service.hostname} is ${service.resolution})`),
  );
}

/**
 * Parses the body of `POST /debug/endpointz?svc=<host>`: an instance `{address, port,
 * servicePort, labels?, locality?, serviceAccount?}` where `servicePort` (required) is a port
 * name, a port number or `{name|port}` of a port of `service` (the service as discovery knows it)
 * and `address` an IP address, `unix:///path`, or a DNS name when the service resolution is DNSLB.
 * @throws DebugInputError naming the field.
 */
export function parseDebugInstance(
  svc: string,
  body: unknown,
  service: Service | undefined,
): ServiceInstance {
  checkHost(svc);
  if (!service) {
    throw new DebugInputError(
      `Query parameter svc ${JSON.stringify(svc)}: no such service (add it with ` +
        `POST /debug/registryz?svc=${svc} first)`,
    );
  }
  if (!isRec(body)) throw new DebugInputError("Instance body: must be a JSON object");
  const allowed = new Set([
    "hostname",
    "address",
    "port",
    "servicePort",
    "labels",
    "locality",
    "serviceAccount",
  ]);
  for (const k of Object.keys(body)) {
    if (!allowed.has(k)) throw new DebugInputError(`Instance body: unknown field ${k}`);
  }
  if (body.hostname !== undefined && body.hostname !== svc) {
    throw new DebugInputError(
      `Instance hostname ${describe(body.hostname)}: must equal svc ${JSON.stringify(svc)}`,
    );
  }
  const address = body.address;
  if (typeof address !== "string" || address === "") {
    throw new DebugInputError(
      `Instance address: must be a non-empty string, got ${describe(address)}`,
    );
  }
  checkInstanceAddress(address, service);
  const sp = body.servicePort;
  if (sp === undefined || sp === null) {
    throw new DebugInputError(
      `Instance servicePort: is required: a port name, number or {name|port} of ${svc} (ports: ${
        service.ports.map((p) => `${p.name}/${p.port}`).join(", ")
      })`,
    );
  }
  const want = isRec(sp) ? (sp.name ?? sp.port) : sp;
  const servicePort = service.ports.find((p) =>
    typeof want === "number" ? p.port === want : typeof want === "string" && p.name === want
  );
  if (!servicePort) {
    throw new DebugInputError(
      `Instance servicePort ${describe(sp)}: not a port of ${svc} (ports: ${
        service.ports.map((p) => `${p.name}/${p.port}`).join(", ")
      })`,
    );
  }
  const port = body.port ?? servicePort.port;
  if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new DebugInputError(
      `Instance port: must be a port from 1 to 65535, got ${describe(port)}`,
    );
  }
  return {
    hostname: svc,
    servicePort: { ...servicePort },
    address,
    port,
    labels: stringMap(body.labels, "Instance labels"),
    locality: optString(body.locality, "Instance locality"),
    serviceAccount: optString(body.serviceAccount, "Instance serviceAccount"),
  };
}

/** The debug registry: services and instances added at run time, nothing else. */
export class DebugRegistry implements ServiceRegistry {
  readonly name = DEBUG_REGISTRY_NAME;
  readonly #services = new Map<string, Service>();
  readonly #instances: ServiceInstance[] = [];
  readonly #handlers: RegistryChangeHandler[] = [];

  services(): Service[] {
    return [...this.#services.values()];
  }
  instances(): ServiceInstance[] {
    // a new list after each change, the same one until then (lib/registry/aggregate.ts)
    return this.#handedOut ??= [...this.#instances];
  }
  #handedOut: ServiceInstance[] | undefined;
  instancesOf(hosts: ReadonlySet<string>): ServiceInstance[] {
    return this.#instances.filter((i) => hosts.has(i.hostname));
  }
  onChange(handler: RegistryChangeHandler): void {
    this.#handlers.push(handler);
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
  /** Adds or replaces a service (its instances stay). */
  addService(svc: Service): void {
    this.#services.set(svc.hostname, svc);
    for (const h of this.#handlers) h("services");
  }
  /** Adds an instance (an identical address:port for the same service port replaces it). */
  addInstance(inst: ServiceInstance): void {
    const i = this.#instances.findIndex((x) =>
      x.hostname === inst.hostname && x.servicePort.port === inst.servicePort.port &&
      x.address === inst.address && x.port === inst.port
    );
    if (i >= 0) this.#instances[i] = inst;
    else this.#instances.push(inst);
    this.#handedOut = undefined;
    const hosts = new Set([inst.hostname]);
    for (const h of this.#handlers) h("endpoints", hosts);
  }
}

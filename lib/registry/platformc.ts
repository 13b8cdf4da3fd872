/**
 * PlatformC: a platform route registry modelled on Cloud Foundry's Copilot, polled over HTTPS
 * (mutual TLS when client certificate files are configured) as JSON.
 *
 * Configuration (`--platformcConfig`, YAML):
 * ```yaml
 * platformc:                       # `copilot:` is accepted too
 *   address: https://copilot.internal:9000   # or host:port (then https is assumed)
 *   server_ca_cert_path: /etc/platformc/ca.pem
 *   client_cert_path: /etc/platformc/client.pem
 *   client_key_path: /etc/platformc/client-key.pem
 *   poll_interval: 30s            # Go duration, default 30s
 * service_port: 8080               # port the mesh gives every route's service (default 8080)
 * ```
 *
 * API polled (the JSON form of Copilot's `Routes` and `InternalRoutes` calls):
 * - `GET /v1/routes` → `{"backends": {"<hostname>": {"backends": [{"address": "10.0.0.1",
 *   "port": 61001, "app_guid": "..."}]}}}`: one HTTP service per hostname, port `http` =
 *   `service_port`, one instance per backend, label `cfapp=<app_guid>` when given.
 * - `GET /v1/internal-routes` → `{"internal_routes": [{"hostname": "...", "vip": "127.128.0.1",
 *   "backends": {"backends": [...]}}]}`: one TCP service per route, VIP from the route, port
 *   `tcp` = `service_port`.
 * @module
 */
import { firstErrorLine } from "../model/errors.ts";
import type { Service, ServiceInstance, ServicePort, ServiceRegistry } from "../model/types.ts";
import { parse as parseYaml } from "../deps/yaml.ts";
import { parseDuration } from "../flags/duration.ts";
import { createPollingRegistry, getJson, type Snapshot } from "./poller.ts";

/** Parsed PlatformC configuration. */
export interface PlatformCConfig {
  address: string;
  serverCaCertPath: string;
  clientCertPath: string;
  clientKeyPath: string;
  pollIntervalMs: number;
  servicePort: number;
}

const KNOWN_TOP = new Set(["platformc", "copilot", "service_port"]);
const KNOWN_INNER = new Set([
  "address",
  "server_ca_cert_path",
  "client_cert_path",
  "client_key_path",
  "poll_interval",
]);

/** Parses and validates a PlatformC configuration file's text; throws a one-line Error. */
export function parsePlatformCConfig(text: string, label: string): PlatformCConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new Error(`${label}: cannot parse YAML: ${firstErrorLine((err as Error).message)}`);
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) {
    throw new Error(`${label}: expected a YAML mapping`);
  }
  const top = doc as Record<string, unknown>;
  for (const k of Object.keys(top)) {
    if (!KNOWN_TOP.has(k)) throw new Error(`${label}: ${k}: unknown field`);
  }
  const inner = (top.platformc ?? top.copilot) as Record<string, unknown> | undefined;
  if (!inner || typeof inner !== "object") {
    throw new Error(`${label}: platformc: missing required field`);
  }
  for (const k of Object.keys(inner)) {
    if (!KNOWN_INNER.has(k)) throw new Error(`${label}: platformc.${k}: unknown field`);
  }
  const str = (k: string, required: boolean): string => {
    const v = inner[k];
    if (v === undefined || v === null || v === "") {
      if (required) throw new Error(`${label}: platformc.${k}: missing required field`);
      return "";
    }
    if (typeof v !== "string") throw new Error(`${label}: platformc.${k}: must be a string`);
    return v;
  };
  let address = str("address", true);
  if (!/^https?:\/\//.test(address)) address = `https://${address}`;
  try {
    new URL(address);
  } catch {
    throw new Error(`${label}: platformc.address: invalid address "${address}"`);
  }
  let pollIntervalMs = 30_000;
  if (inner.poll_interval !== undefined) {
    try {
      pollIntervalMs = parseDuration(String(inner.poll_interval));
    } catch (err) {
      throw new Error(`${label}: platformc.poll_interval: ${(err as Error).message}`);
    }
    if (pollIntervalMs <= 0) throw new Error(`${label}: platformc.poll_interval: must be > 0`);
  }
  const sp = top.service_port ?? 8080;
  if (typeof sp !== "number" || !Number.isInteger(sp) || sp < 1 || sp > 65535) {
    throw new Error(`${label}: service_port: must be a port number between 1 and 65535`);
  }
  const cfg: PlatformCConfig = {
    address: address.replace(/\/+$/, ""),
    serverCaCertPath: str("server_ca_cert_path", false),
    clientCertPath: str("client_cert_path", false),
    clientKeyPath: str("client_key_path", false),
    pollIntervalMs,
    servicePort: sp,
  };
  if (Boolean(cfg.clientCertPath) !== Boolean(cfg.clientKeyPath)) {
    throw new Error(
      `${label}: platformc.client_cert_path and platformc.client_key_path must be given together`,
    );
  }
  return cfg;
}

interface Backend {
  address?: string;
  port?: number;
  app_guid?: string;
}
interface BackendSet {
  backends?: Backend[];
}

/** Converts the two PlatformC responses to services and instances (pure). */
export function convertPlatformC(
  routes: unknown,
  internal: unknown,
  servicePort: number,
): Snapshot {
  const snap: Snapshot = { services: [], instances: [] };
  const add = (hostname: string, vip: string, port: ServicePort, set: BackendSet | undefined) => {
    const svc: Service = {
      hostname,
      address: vip,
      ports: [port],
      namespace: "",
      meshExternal: false,
      resolution: "ClientSideLB",
      serviceAccounts: [],
      registry: "PlatformC",
    };
    snap.services.push(svc);
    for (const b of set?.backends ?? []) {
      if (!b.address || typeof b.port !== "number") continue;
      const inst: ServiceInstance = {
        hostname,
        servicePort: port,
        address: b.address,
        port: b.port,
        labels: b.app_guid ? { cfapp: b.app_guid } : {},
        locality: "",
        serviceAccount: "",
      };
      snap.instances.push(inst);
    }
  };
  const backends = (routes as { backends?: Record<string, BackendSet> })?.backends ?? {};
  for (const host of Object.keys(backends).sort()) {
    add(host, "0.0.0.0", { name: "http", port: servicePort, protocol: "HTTP" }, backends[host]);
  }
  const list = (internal as {
    internal_routes?: { hostname?: string; vip?: string; backends?: BackendSet }[];
  })?.internal_routes ?? [];
  for (const r of list) {
    if (!r.hostname) continue;
    add(
      r.hostname,
      r.vip || "0.0.0.0",
      { name: "tcp", port: servicePort, protocol: "TCP" },
      r.backends,
    );
  }
  return snap;
}

/** Creates the PlatformC registry from a parsed configuration. */
export async function createPlatformCRegistry(
  cfg: PlatformCConfig,
): Promise<ServiceRegistry & { pollNow(): Promise<void> }> {
  const read = (p: string) => p ? Deno.readTextFile(p) : Promise.resolve("");
  const [ca, cert, key] = await Promise.all([
    read(cfg.serverCaCertPath),
    read(cfg.clientCertPath),
    read(cfg.clientKeyPath),
  ]);
  const client = Deno.createHttpClient({
    ...(ca ? { caCerts: [ca] } : {}),
    ...(cert ? { cert, key } : {}),
  });
  const reg = createPollingRegistry({
    name: "PlatformC",
    intervalMs: cfg.pollIntervalMs,
    async fetchSnapshot(signal) {
      const routes = await getJson(`${cfg.address}/v1/routes`, signal, { client });
      const internal = await getJson(`${cfg.address}/v1/internal-routes`, signal, { client });
      return convertPlatformC(routes, internal, cfg.servicePort);
    },
  });
  const stop = reg.stop;
  reg.stop = async () => {
    await stop();
    client.close();
  };
  return reg;
}

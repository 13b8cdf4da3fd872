/**
 * `toConfig`: the flags of `mesh-agent proxy` and the environment (read once by `cli/`) → a
 * validated, frozen {@link AgentConfig}, or a {@link ConfigError} listing every problem.
 * @module
 */

import { isIp } from "../../lib/xds/node.ts";
import { DEFAULT_CERT_REFRESH_MS } from "../../lib/xds/grpc_bootstrap.ts";
import { parseDuration } from "../../lib/flags/mod.ts";
import { ConfigError } from "../../lib/flags/config_error.ts";

/** Roles of `mesh-agent proxy [role]`. */
export const ROLES = ["sidecar", "router", "ingress"] as const;
/** A proxy role. */
export type Role = typeof ROLES[number];
/** Values of `--controlPlaneAuthPolicy`. */
export const AUTH_POLICIES = ["NONE", "MUTUAL_TLS"] as const;
/** Values of `--proxyLogLevel` (Envoy's `-l`). */
export const PROXY_LOG_LEVELS = ["trace", "debug", "info", "warn", "err", "critical", "off"];
/** Values of `--serviceregistry`. */
export const REGISTRIES = ["Orchestrator", "RegistryA", "RegistryB", "PlatformC", "Mock"];
/** Prefix of the environment variables copied into the node metadata. */
export const META_PREFIX = "MESH_META_";
/** Where the workload certificate files live unless `MESH_CERT_DIR` says otherwise. */
export const DEFAULT_CERT_DIR = "/etc/certs";
/** Service account of mesh-discovery (its SPIFFE identity is checked with MUTUAL_TLS). */
export const DISCOVERY_SERVICE_ACCOUNT = "mesh-discovery-service-account";
/** The legacy HTTP discovery port; ADS then goes to 15010 (15012 with MUTUAL_TLS). */
export const LEGACY_HTTP_PORT = 15007;

/** Bad flags: {@link toConfig}'s usage error, shared by every program (lib/flags). */
export { ConfigError };

/** `host:port`, parsed. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** Getting the workload certificate from mesh_ca (no orchestrator). */
export interface CaConfig {
  /** `host:port` of mesh_ca's gRPC API (`MESH_CA_ADDRESS`). */
  readonly address: string;
  /** PEM file of the root that verifies mesh_ca (`MESH_CA_ROOT_CERT`, default `<certDir>/root-cert.pem`). */
  readonly rootCertFile: string;
  /** File with a bearer JWT (`MESH_CA_TOKEN_FILE`); without it the existing certificate is the credential. */
  readonly tokenFile: string;
  /** Name mesh_ca's certificate must carry (`MESH_CA_SERVER_NAME`, default `mesh-ca`). */
  readonly serverName: string;
  /** Requested lifetime in seconds (`MESH_CA_CERT_TTL`; 0: the CA's default). */
  readonly ttlSeconds: number;
}

/** The validated configuration of `mesh-agent proxy`. */
export interface AgentConfig {
  readonly role: Role;
  readonly id: string;
  readonly ip: string;
  readonly domain: string;
  /** `<role>~<ip>~<id>~<domain>`. */
  readonly nodeId: string;
  readonly serviceCluster: string;
  readonly availabilityZone: string;
  readonly configPath: string;
  readonly binaryPath: string;
  /** `--bootstrapv2`: fully dynamic ADS; otherwise REST-JSON polling of listeners and clusters. */
  readonly ads: boolean;
  readonly concurrency: number;
  readonly connectTimeoutMs: number;
  readonly controlPlaneAuthPolicy: typeof AUTH_POLICIES[number];
  readonly customConfigFile: string;
  readonly templateFile: string;
  readonly disableInternalTelemetry: boolean;
  /** `--discoveryAddress` (HTTP; REST xDS and the ADS host). */
  readonly discovery: HostPort;
  /** Where ADS goes (see {@link adsAddress}). */
  readonly adsTarget: HostPort;
  /** The SPIFFE identity discovery must present with MUTUAL_TLS. */
  readonly discoverySan: string;
  readonly discoveryRefreshDelayMs: number;
  readonly drainDurationMs: number;
  readonly parentShutdownDurationMs: number;
  readonly proxyAdminPort: number;
  readonly proxyLogLevel: string;
  readonly serviceregistry: string;
  readonly statsdUdpAddress?: HostPort;
  readonly tracerBAddress?: HostPort;
  /** Node metadata from the `MESH_META_*` variables. */
  readonly metadata: Readonly<Record<string, string>>;
  /** Directory of `cert-chain.pem`, `key.pem`, `root-cert.pem` (`MESH_CERT_DIR`). */
  readonly certDir: string;
  /** Set when `MESH_CA_ADDRESS` is: the agent gets and renews the certificate itself. */
  readonly ca?: CaConfig;
  /**
   * `--proxyless`: no proxy; the agent writes a gRPC xDS bootstrap (`<configPath>/grpc-bootstrap.json`)
   * for the application and keeps the certificate files fresh.
   */
  readonly proxyless: boolean;
  /** `refresh_interval` of the gRPC bootstrap's file watcher (`MESH_CERT_REFRESH_INTERVAL`). */
  readonly certRefreshMs: number;
  /** Serve the certificate over SDS on `<configPath>/sds.sock` (`MESH_AGENT_SDS`; default on with MUTUAL_TLS). */
  readonly sds: boolean;
}

/** The flags `toConfig` reads (the options of `mesh-agent proxy`). */
export interface ProxyFlags {
  availabilityZone: string;
  binaryPath: string;
  bootstrapv2: boolean;
  concurrency: number;
  configPath: string;
  connectTimeout: number;
  controlPlaneAuthPolicy: string;
  customConfigFile: string;
  disableInternalTelemetry: boolean;
  discoveryAddress: string;
  discoveryRefreshDelay: number;
  domain: string;
  drainDuration: number;
  id: string;
  ip: string;
  parentShutdownDuration: number;
  proxyAdminPort: number;
  proxyLogLevel: string;
  proxyless?: boolean;
  serviceCluster: string;
  serviceregistry: string;
  statsdUdpAddress: string;
  templateFile: string;
  tracerBAddress: string;
}

/** Parses `host:port` (`[v6]:port` too); undefined when malformed. */
export function parseHostPort(s: string): HostPort | undefined {
  const m = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(s);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1].replace(/^\[(.*)\]$/, "$1"), port };
}

/**
 * Where ADS goes: the discovery address itself, except for the legacy HTTP port 15007 (the
 * default), where Istio's rule applies: the same host on 15010, or 15012 with MUTUAL_TLS.
 */
export function adsAddress(discovery: HostPort, mtls: boolean): HostPort {
  if (discovery.port !== LEGACY_HTTP_PORT) return discovery;
  return { host: discovery.host, port: mtls ? 15012 : 15010 };
}

/** Discovery's SPIFFE identity: namespace from the second DNS label of its host, else the pod's. */
export function discoverySpiffeId(host: string, podNamespace: string | undefined): string {
  const labels = host.split(".");
  const ns = !isIp(host) && labels.length > 1 ? labels[1] : podNamespace || "mesh-system";
  return `spiffe://cluster.local/ns/${ns}/sa/${DISCOVERY_SERVICE_ACCOUNT}`;
}

// long: one check per flag and environment variable, collecting every problem
/**
 * Validates the flags and the environment (`POD_NAME`, `POD_NAMESPACE`, `INSTANCE_IP`,
 * `MESH_META_*`, `MESH_CERT_DIR`, `MESH_CA_*`, `MESH_AGENT_SDS`). Throws {@link ConfigError}
 * naming every problem.
 */
export function toConfig(
  flags: ProxyFlags,
  role: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): AgentConfig {
  const problems: string[] = [];
  const r = (role ?? "sidecar") as Role;
  if (!ROLES.includes(r)) {
    problems.push(`Invalid role "${role}": want sidecar, router or ingress`);
  }
  const registry = flags.serviceregistry;
  if (!REGISTRIES.includes(registry)) {
    problems.push(
      `Invalid value "${registry}" for --serviceregistry: want ${REGISTRIES.join(", ")}`,
    );
  }
  const orch = registry === "Orchestrator";
  const ip = flags.ip || env.INSTANCE_IP || "";
  if (!ip) problems.push("--ip is empty and INSTANCE_IP is not set: cannot tell the proxy's IP");
  else if (!isIp(ip)) problems.push(`Invalid value "${ip}" for --ip: not an IP address`);
  let id = flags.id;
  if (!id) {
    if (!orch) id = ip;
    else if (env.POD_NAME && env.POD_NAMESPACE) id = `${env.POD_NAME}.${env.POD_NAMESPACE}`;
    else {
      problems.push(
        "--id is empty and POD_NAME or POD_NAMESPACE is not set: cannot derive the proxy ID",
      );
    }
  }
  let domain = flags.domain;
  if (!domain && orch) {
    if (env.POD_NAMESPACE) domain = `${env.POD_NAMESPACE}.svc.cluster.local`;
    else problems.push("--domain is empty and POD_NAMESPACE is not set: cannot derive the domain");
  }
  for (const [name, v] of [["id", id], ["domain", domain]] as const) {
    if (v.includes("~")) problems.push(`Invalid value "${v}" for --${name}: must not contain "~"`);
  }
  const policy = flags.controlPlaneAuthPolicy as AgentConfig["controlPlaneAuthPolicy"];
  if (!AUTH_POLICIES.includes(policy)) {
    problems.push(
      `Invalid value "${policy}" for --controlPlaneAuthPolicy: want NONE or MUTUAL_TLS`,
    );
  }
  if (!PROXY_LOG_LEVELS.includes(flags.proxyLogLevel)) {
    problems.push(
      `Invalid value "${flags.proxyLogLevel}" for --proxyLogLevel: want ${
        PROXY_LOG_LEVELS.join(", ")
      }`,
    );
  }
  const hostPort = (name: string, v: string, optional: boolean) => {
    if (!v && optional) return undefined;
    const hp = parseHostPort(v);
    if (!hp) problems.push(`Invalid value "${v}" for --${name}: want <host>:<port>`);
    return hp;
  };
  const discovery = hostPort("discoveryAddress", flags.discoveryAddress, false) ??
    { host: "", port: 0 };
  const statsd = hostPort("statsdUdpAddress", flags.statsdUdpAddress, true);
  const tracer = hostPort("tracerBAddress", flags.tracerBAddress, true);
  if (flags.concurrency < 0) {
    problems.push(
      `Invalid value for --concurrency: must not be negative, got ${flags.concurrency}`,
    );
  }
  if (flags.proxyAdminPort < 1 || flags.proxyAdminPort > 65535) {
    problems.push(`Invalid value for --proxyAdminPort: want 1-65535, got ${flags.proxyAdminPort}`);
  }
  for (
    const [name, ms] of [
      ["connectTimeout", flags.connectTimeout],
      ["discoveryRefreshDelay", flags.discoveryRefreshDelay],
    ] as const
  ) {
    if (ms <= 0) problems.push(`Invalid value for --${name}: must be positive`);
  }
  for (
    const [name, ms] of [
      ["drainDuration", flags.drainDuration],
      ["parentShutdownDuration", flags.parentShutdownDuration],
    ] as const
  ) {
    if (ms < 0) problems.push(`Invalid value for --${name}: must not be negative`);
  }
  if (flags.drainDuration > flags.parentShutdownDuration) {
    problems.push("--drainDuration must not be longer than --parentShutdownDuration");
  }
  if (!flags.configPath) problems.push("--configPath must not be empty");
  if (!flags.binaryPath) problems.push("--binaryPath must not be empty");
  if (flags.customConfigFile && flags.templateFile) {
    problems.push("--customConfigFile and --templateFile cannot be used together");
  }
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(env).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)) {
    if (k.startsWith(META_PREFIX) && k.length > META_PREFIX.length && v !== undefined) {
      metadata[k.slice(META_PREFIX.length)] = v;
    }
  }
  const certDir = env.MESH_CERT_DIR || DEFAULT_CERT_DIR;
  let ca: CaConfig | undefined;
  if (env.MESH_CA_ADDRESS) {
    if (!parseHostPort(env.MESH_CA_ADDRESS)) {
      problems.push(
        `Invalid value "${env.MESH_CA_ADDRESS}" for MESH_CA_ADDRESS: want <host>:<port>`,
      );
    }
    const ttl = Number(env.MESH_CA_CERT_TTL ?? "0");
    if (!Number.isInteger(ttl) || ttl < 0) {
      problems.push(
        `Invalid value "${env.MESH_CA_CERT_TTL}" for MESH_CA_CERT_TTL: want whole seconds`,
      );
    }
    ca = Object.freeze({
      address: env.MESH_CA_ADDRESS,
      rootCertFile: env.MESH_CA_ROOT_CERT || `${certDir}/root-cert.pem`,
      tokenFile: env.MESH_CA_TOKEN_FILE ?? "",
      serverName: env.MESH_CA_SERVER_NAME || "mesh-ca",
      ttlSeconds: ttl,
    });
  }
  const mtls = policy === "MUTUAL_TLS";
  const sdsEnv = env.MESH_AGENT_SDS;
  if (sdsEnv !== undefined && !["true", "false", ""].includes(sdsEnv)) {
    problems.push(`Invalid value "${sdsEnv}" for MESH_AGENT_SDS: want true or false`);
  }
  const proxyless = flags.proxyless === true;
  if (proxyless && r !== "sidecar" && ROLES.includes(r)) {
    problems.push(`--proxyless works with role sidecar only, not ${r}`);
  }
  for (
    const [name, v] of [["customConfigFile", flags.customConfigFile], [
      "templateFile",
      flags.templateFile,
    ]]
  ) {
    if (proxyless && v) {
      problems.push(`--${name} configures a proxy: it cannot be used with --proxyless`);
    }
  }
  let certRefreshMs = DEFAULT_CERT_REFRESH_MS;
  const refresh = env.MESH_CERT_REFRESH_INTERVAL;
  if (refresh) {
    try {
      certRefreshMs = parseDuration(refresh);
      if (certRefreshMs <= 0) throw new Error("must be positive");
    } catch (e) {
      problems.push(
        `Invalid value "${refresh}" for MESH_CERT_REFRESH_INTERVAL: ${(e as Error).message}`,
      );
    }
  }
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze({
    role: r,
    id,
    ip,
    domain,
    nodeId: `${r}~${ip}~${id}~${domain}`,
    serviceCluster: flags.serviceCluster,
    availabilityZone: flags.availabilityZone,
    configPath: flags.configPath,
    binaryPath: flags.binaryPath,
    ads: flags.bootstrapv2,
    concurrency: flags.concurrency,
    connectTimeoutMs: flags.connectTimeout,
    controlPlaneAuthPolicy: policy,
    customConfigFile: flags.customConfigFile,
    templateFile: flags.templateFile,
    disableInternalTelemetry: flags.disableInternalTelemetry,
    discovery: Object.freeze(discovery),
    adsTarget: Object.freeze(adsAddress(discovery, mtls)),
    discoverySan: discoverySpiffeId(discovery.host, env.POD_NAMESPACE),
    discoveryRefreshDelayMs: flags.discoveryRefreshDelay,
    drainDurationMs: flags.drainDuration,
    parentShutdownDurationMs: flags.parentShutdownDuration,
    proxyAdminPort: flags.proxyAdminPort,
    proxyLogLevel: flags.proxyLogLevel,
    serviceregistry: registry,
    statsdUdpAddress: statsd,
    tracerBAddress: tracer,
    metadata: Object.freeze(metadata),
    certDir,
    ca,
    sds: !proxyless && (sdsEnv ? sdsEnv === "true" : mtls),
    proxyless,
    certRefreshMs,
  });
}

/**
 * `toConfig(flags, env)`: the flags of `mesh-discovery discovery` (plus groups L and I) turned
 * into a validated, frozen {@link DiscoveryConfig}. Pure: no I/O.
 * @module
 */

import type { H2Limits } from "../../lib/grpc/mod.ts";
import type { InClusterEnv } from "../../lib/kube/mod.ts";
import {
  MAX_MOCK_PORT_OFFSET,
  MOCK_PORT_OFFSET,
  parseRegistries,
  type RegistryName,
} from "../../lib/registry/mod.ts";
import { ConfigError } from "../../lib/flags/config_error.ts";

/** A parsed listen address. `host` is "" for the `:port` form (all interfaces). */
export interface ListenAddress {
  /** Host or IP as given (IPv6 without brackets); "" = all interfaces. */
  readonly host: string;
  /** Port, 0 = pick a free one. */
  readonly port: number;
}

/** Where `--webhookEndpoint` points. */
export type WebhookTarget =
  | { readonly kind: "http"; readonly url: string }
  | { readonly kind: "unix"; readonly path: string };

/** The validated configuration of the discovery server. */
export interface DiscoveryConfig {
  /** Only this application namespace is watched; "" = all. */
  readonly appNamespace: string;
  readonly platformcConfig: string;
  readonly clusterRegistriesConfigMap: string;
  readonly clusterRegistriesNamespace: string;
  /** File store directory; "" = orchestrator (CRD) store. */
  readonly configDir: string;
  readonly regaserverURL: string;
  readonly regaserverIntervalMs: number;
  readonly regbserverURL: string;
  readonly regbserverIntervalMs: number;
  /** Cache REST xDS responses until the next push. */
  readonly discoveryCache: boolean;
  readonly domain: string;
  readonly grpcAddr: ListenAddress;
  /** null when disabled (`--secureGrpcAddr ""`). */
  readonly secureGrpcAddr: ListenAddress | null;
  /** Transport limits of both gRPC listeners (`--grpcMax*`, `--keepalive*`). */
  readonly grpc: {
    readonly limits: Readonly<Partial<H2Limits>>;
    readonly maxConnections: number;
    readonly maxConnectionsPerAddress: number;
    readonly maxFailedConnectionsPerSecond: number;
  };
  /**
   * `--grpcReusedReads`: the `--grpcAddr` connections (of the main isolate or of each worker) read
   * into a reused buffer each (`GrpcListenOptions.nativeReads`) instead of through node:net.
   */
  readonly grpcReusedReads: boolean;
  readonly orchconfig: string;
  readonly meshConfigPath: string;
  readonly monitoringPort: number;
  /** `--httpAddress`: the local address `--port` and `--monitoringPort` bind. */
  readonly httpAddress: string;
  /** Controller namespace (`--namespace`, else `POD_NAMESPACE`). */
  readonly namespace: string;
  readonly port: number;
  readonly profile: boolean;
  /** `--ingressStatus`: write the gateway service's addresses into the mesh's Ingresses. */
  readonly ingressStatus: boolean;
  /** The Lease electing the replica that writes shared state (see servers/discovery/leader.ts). */
  readonly lease: {
    readonly name: string;
    readonly namespace: string;
    readonly identity: string;
    readonly durationMs: number;
  };
  /** `--registries`, validated, duplicates removed, in order. */
  readonly registries: readonly RegistryName[];
  /** Warnings found while validating (duplicate registries), logged at start. */
  readonly warnings: readonly string[];
  readonly resyncMs: number;
  readonly webhook: WebhookTarget | null;
  readonly ctrlz: { readonly address: string; readonly port: number };
  /** Directory of `cert-chain.pem`, `key.pem`, `root-cert.pem` for the TLS port. */
  readonly certDir: string;
  /** Mock registry: endpoint port = service port + this (`MESH_MOCK_PORT_OFFSET`, default 10000). */
  readonly mockPortOffset: number;
  /** In-cluster orchestrator configuration (used without --orchconfig). */
  readonly inCluster: InClusterEnv;
  /** `--workers`: isolates serving `--grpcAddr` (0 = one per core; 1 = this isolate alone). */
  readonly workers: number;
}

/** The flag values `toConfig` reads (the options object of `discovery`). */
export interface DiscoveryFlags {
  readonly appNamespace: string;
  readonly platformcConfig: string;
  readonly clusterRegistriesConfigMap: string;
  readonly clusterRegistriesNamespace: string;
  readonly configDir: string;
  readonly regaserverInterval: number;
  readonly regaserverURL: string;
  readonly regbserverInterval: number;
  readonly regbserverURL: string;
  readonly discovery_cache: boolean;
  readonly domain: string;
  readonly grpcAddr: string;
  readonly secureGrpcAddr: string;
  readonly grpcMaxConcurrentStreams: number;
  readonly grpcMaxConnections: number;
  readonly grpcMaxConnectionsPerAddress: number;
  readonly grpcMaxFailedConnectionRate: number;
  readonly grpcReusedReads?: boolean;
  readonly keepaliveInterval: number;
  readonly keepaliveTimeout: number;
  readonly keepaliveMinTime: number;
  readonly keepaliveMaxServerConnectionAge: number;
  readonly orchconfig: string;
  readonly meshConfig: string;
  readonly monitoringPort: number;
  /** Absent: `0.0.0.0`. */
  readonly httpAddress?: string;
  readonly namespace: string;
  readonly port: number;
  readonly profile: boolean;
  readonly ingressStatus: boolean;
  /** Absent: defaults (see the flags). */
  readonly leaseName?: string;
  readonly leaseNamespace?: string;
  readonly leaseDuration?: number;
  readonly leaderIdentity?: string;
  readonly registries: readonly string[];
  readonly resync: number;
  readonly webhookEndpoint: string;
  readonly ctrlz_address: string;
  readonly ctrlz_port: number;
  /** Absent: 1. */
  readonly workers?: number;
}

/** Environment variables `toConfig` reads (read once by the CLI). */
export interface DiscoveryEnv {
  readonly POD_NAMESPACE?: string;
  /** The pod's name: the default Lease identity (`--leaderIdentity`). */
  readonly POD_NAME?: string;
  /** The host name (read by the CLI): the Lease identity without POD_NAME. */
  readonly HOSTNAME?: string;
  /** Directory of the mesh certificate files (default `/etc/certs/`). */
  readonly MESH_CERT_DIR?: string;
  /** Set inside a cluster: in-cluster orchestrator configuration works without --orchconfig. */
  readonly KUBERNETES_SERVICE_HOST?: string;
  /** The API server's port inside a cluster. */
  readonly KUBERNETES_SERVICE_PORT?: string;
  /** Offset of the Mock registry's endpoint ports above its service ports (default 10000). */
  readonly MESH_MOCK_PORT_OFFSET?: string;
}

/** Default directory of the mesh certificate files. */
export const DEFAULT_CERT_DIR = "/etc/certs/";

/** Bad flags: {@link toConfig}'s usage error, shared by every program (lib/flags). */
export { ConfigError };

/**
 * Parses a listen address: `:15010` (all interfaces), `host:port`, `[v6]:port`.
 * @throws Error naming `flag` and the reason.
 */
export function parseListenAddress(value: string, flag: string): ListenAddress {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\[\]\s]*)):(\d{1,5})$/.exec(value);
  if (!m) {
    throw new Error(
      `Invalid value for --${flag}: ${
        JSON.stringify(value)
      }: want ":<port>", "<host>:<port>" or "[<ipv6>]:<port>"`,
    );
  }
  const port = Number(m[3]);
  if (port > 65535) {
    throw new Error(`Invalid value for --${flag}: ${JSON.stringify(value)}: port ${port} > 65535`);
  }
  return { host: m[1] ?? m[2] ?? "", port };
}

/**
 * Parses `--webhookEndpoint`: `http://<sockethost>` (host[:port], no path) or
 * `unix:///<absolute socket path>`.
 */
export function parseWebhook(value: string): WebhookTarget {
  const want = 'want "http://<host>[:<port>]" or "unix:///<absolute socket path>"';
  if (value.startsWith("unix://")) {
    const path = value.slice("unix://".length);
    if (!path.startsWith("/") || path === "/") {
      throw new Error(`Invalid value for --webhookEndpoint: ${JSON.stringify(value)}: ${want}`);
    }
    return { kind: "unix", path };
  }
  if (value.startsWith("http://")) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new Error(`Invalid value for --webhookEndpoint: ${JSON.stringify(value)}: ${want}`);
    }
    if (!url.hostname || (url.pathname !== "/" && url.pathname !== "") || url.search) {
      throw new Error(
        `Invalid value for --webhookEndpoint: ${JSON.stringify(value)}: ${want} (no path)`,
      );
    }
    return { kind: "http", url: `http://${url.host}` };
  }
  throw new Error(`Invalid value for --webhookEndpoint: ${JSON.stringify(value)}: ${want}`);
}

function checkPort(value: number, flag: string, problems: string[]): void {
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    problems.push(`Invalid value for --${flag}: ${value}: want a port number from 0 to 65535`);
  }
}

// long: one check per flag, in flag-table order, collecting every problem
/**
 * Validates every flag and returns the frozen configuration.
 * @throws ConfigError listing every problem found.
 */
export function toConfig(flags: DiscoveryFlags, env: DiscoveryEnv = {}): DiscoveryConfig {
  const problems: string[] = [];
  const attempt = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (e) {
      problems.push((e as Error).message);
      return undefined;
    }
  };
  const grpcAddr = attempt(() => parseListenAddress(flags.grpcAddr, "grpcAddr"));
  const secureGrpcAddr = flags.secureGrpcAddr === ""
    ? null
    : attempt(() => parseListenAddress(flags.secureGrpcAddr, "secureGrpcAddr"));
  checkPort(flags.port, "port", problems);
  checkPort(flags.monitoringPort, "monitoringPort", problems);
  checkPort(flags.ctrlz_port, "ctrlz_port", problems);
  if (flags.port !== 0 && flags.port === flags.monitoringPort) {
    problems.push(`Flags --port and --monitoringPort must differ (both ${flags.port})`);
  }
  const parsed = attempt(() => parseRegistries(flags.registries));
  if (parsed && parsed.names.length === 0) {
    problems.push("Invalid value for --registries: name at least one registry");
  }
  const webhook = flags.webhookEndpoint === ""
    ? null
    : attempt(() => parseWebhook(flags.webhookEndpoint));
  for (
    const [name, ms] of [
      ["regaserverInterval", flags.regaserverInterval],
      ["regbserverInterval", flags.regbserverInterval],
    ] as const
  ) {
    if (!(ms > 0)) problems.push(`Invalid value for --${name}: must be greater than 0s`);
  }
  if (!(flags.resync >= 0)) problems.push("Invalid value for --resync: must not be negative");
  if (!(flags.grpcMaxConcurrentStreams >= 1)) {
    problems.push("Invalid value for --grpcMaxConcurrentStreams: must be at least 1");
  }
  if (!(flags.grpcMaxConnections >= 0)) {
    problems.push("Invalid value for --grpcMaxConnections: must not be negative (0: no cap)");
  }
  if (!(flags.grpcMaxConnectionsPerAddress >= 0)) {
    problems.push(
      "Invalid value for --grpcMaxConnectionsPerAddress: must not be negative (0: no bound)",
    );
  }
  if (!(flags.grpcMaxFailedConnectionRate >= 0)) {
    problems.push("Invalid value for --grpcMaxFailedConnectionRate: must not be negative (0: off)");
  }
  for (
    const name of [
      "keepaliveInterval",
      "keepaliveMinTime",
      "keepaliveMaxServerConnectionAge",
    ] as const
  ) {
    if (!(flags[name] >= 0)) problems.push(`Invalid value for --${name}: must not be negative`);
  }
  if (!(flags.keepaliveTimeout > 0)) {
    problems.push("Invalid value for --keepaliveTimeout: must be greater than 0s");
  }
  for (
    const [name, url] of [["regaserverURL", flags.regaserverURL], [
      "regbserverURL",
      flags.regbserverURL,
    ]] as const
  ) {
    if (url === "") continue;
    let ok = false;
    try {
      ok = ["http:", "https:"].includes(new URL(url).protocol);
    } catch { /* reported below */ }
    if (!ok) {
      problems.push(
        `Invalid value for --${name}: ${JSON.stringify(url)}: want an http:// or https:// URL`,
      );
    }
  }
  const registries = parsed?.names ?? [];
  if (registries.includes("RegistryA") && flags.regaserverURL === "") {
    problems.push("Registry RegistryA needs --regaserverURL");
  }
  if (registries.includes("RegistryB") && flags.regbserverURL === "") {
    problems.push("Registry RegistryB needs --regbserverURL");
  }
  if (registries.includes("PlatformC") && flags.platformcConfig === "") {
    problems.push("Registry PlatformC needs --platformcConfig");
  }
  if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(flags.domain)) {
    problems.push(
      `Invalid value for --domain: ${
        JSON.stringify(flags.domain)
      }: want a DNS suffix like cluster.local`,
    );
  }
  // What reads the orchestrator API, and how to do without it (named by flag).
  const orchUsers = [
    ...(flags.configDir === "" ? ["the config store (no --configDir)"] : []),
    ...(registries.includes("Orchestrator") ? ["the Orchestrator registry (--registries)"] : []),
    ...(flags.clusterRegistriesConfigMap ? ["--clusterRegistriesConfigMap"] : []),
  ];
  if (orchUsers.length && flags.orchconfig === "" && !env.KUBERNETES_SERVICE_HOST) {
    problems.push(
      `${orchUsers.join(" and ")} read${orchUsers.length === 1 ? "s" : ""} an orchestrator API ` +
        "server, but there is no --orchconfig and no in-cluster configuration " +
        "(KUBERNETES_SERVICE_HOST is not set): give --orchconfig <kubeconfig>" +
        (flags.configDir === "" ? ", or --configDir <dir> to read config from files" : "") +
        (registries.includes("Orchestrator")
          ? ", or --registries ServiceEntry (services from ServiceEntries only)"
          : ""),
    );
  }
  let mockPortOffset = MOCK_PORT_OFFSET;
  if (env.MESH_MOCK_PORT_OFFSET !== undefined && env.MESH_MOCK_PORT_OFFSET !== "") {
    const v = env.MESH_MOCK_PORT_OFFSET;
    mockPortOffset = /^\d+$/.test(v) ? Number(v) : NaN;
    if (!(mockPortOffset >= 1 && mockPortOffset <= MAX_MOCK_PORT_OFFSET)) {
      problems.push(
        `Invalid value for MESH_MOCK_PORT_OFFSET: ${JSON.stringify(v)}: want a whole number ` +
          `from 1 to ${MAX_MOCK_PORT_OFFSET} (Mock endpoint port = service port + offset)`,
      );
    }
  }
  if (flags.meshConfig === "") problems.push("Invalid value for --meshConfig: must not be empty");
  const leaseDurationMs = flags.leaseDuration ?? 15_000;
  if (!(leaseDurationMs >= 1000)) {
    problems.push("Invalid value for --leaseDuration: must be at least 1s");
  }
  if (flags.leaseName === "") problems.push("Invalid value for --leaseName: must not be empty");
  if (flags.ctrlz_address === "") {
    problems.push("Invalid value for --ctrlz_address: must not be empty");
  }
  const workers = flags.workers ?? 1;
  if (!Number.isInteger(workers) || workers < 0 || workers > 256) {
    problems.push(`Invalid value for --workers: must be 0 (one per core) to 256, got ${workers}`);
  }
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze({
    appNamespace: flags.appNamespace,
    platformcConfig: flags.platformcConfig,
    clusterRegistriesConfigMap: flags.clusterRegistriesConfigMap,
    clusterRegistriesNamespace: flags.clusterRegistriesNamespace,
    configDir: flags.configDir,
    regaserverURL: flags.regaserverURL,
    regaserverIntervalMs: flags.regaserverInterval,
    regbserverURL: flags.regbserverURL,
    regbserverIntervalMs: flags.regbserverInterval,
    discoveryCache: flags.discovery_cache,
    domain: flags.domain,
    grpcAddr: Object.freeze(grpcAddr!),
    secureGrpcAddr: secureGrpcAddr ? Object.freeze(secureGrpcAddr) : null,
    grpc: Object.freeze({
      limits: Object.freeze({
        maxConcurrentStreams: flags.grpcMaxConcurrentStreams,
        keepaliveIntervalMs: flags.keepaliveInterval,
        keepaliveTimeoutMs: flags.keepaliveTimeout,
        keepaliveMinTimeMs: flags.keepaliveMinTime,
        maxConnectionAgeMs: flags.keepaliveMaxServerConnectionAge,
      }),
      maxConnections: flags.grpcMaxConnections,
      maxConnectionsPerAddress: flags.grpcMaxConnectionsPerAddress,
      maxFailedConnectionsPerSecond: flags.grpcMaxFailedConnectionRate,
    }),
    grpcReusedReads: flags.grpcReusedReads ?? false,
    orchconfig: flags.orchconfig,
    meshConfigPath: flags.meshConfig,
    monitoringPort: flags.monitoringPort,
    httpAddress: flags.httpAddress || "0.0.0.0",
    namespace: flags.namespace || env.POD_NAMESPACE || "",
    port: flags.port,
    profile: flags.profile,
    ingressStatus: flags.ingressStatus,
    lease: Object.freeze({
      name: flags.leaseName ?? "mesh-discovery-leader",
      namespace: flags.leaseNamespace || flags.namespace || env.POD_NAMESPACE || "mesh-system",
      identity: flags.leaderIdentity || env.POD_NAME || env.HOSTNAME || "mesh-discovery",
      durationMs: leaseDurationMs,
    }),
    registries: Object.freeze([...registries]),
    warnings: Object.freeze([...(parsed?.warnings ?? [])]),
    resyncMs: flags.resync,
    webhook: webhook ? Object.freeze(webhook) : null,
    ctrlz: Object.freeze({ address: flags.ctrlz_address, port: flags.ctrlz_port }),
    certDir: env.MESH_CERT_DIR || DEFAULT_CERT_DIR,
    mockPortOffset,
    inCluster: Object.freeze({
      KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST,
      KUBERNETES_SERVICE_PORT: env.KUBERNETES_SERVICE_PORT,
    }),
    workers,
  });
}

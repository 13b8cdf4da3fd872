/**
 * mesh_ca, the certificate authority: `toConfig(flags, env)` then `start(config, deps)`.
 *
 * `start` gets the key material ({@link startKeySource}: self-signed root kept in a Secret or a
 * directory, plugged files, or an upstream CA), serves the signing API over TLS on
 * `--grpc-port`, runs the service-account → Secret controller with an orchestrator, the
 * monitoring listener and the liveness self-check, and returns a handle whose `shutdown()`
 * stops everything.
 *
 * @example
 * ```ts ignore
 * const handle = await start(toConfig(flags, env), {});
 * console.log(handle.addresses.grpc);
 * await handle.shutdown();
 * ```
 * @module
 */

import type { GrpcListener } from "../../lib/grpc/mod.ts";
import { loadKubeConfig } from "../../lib/kube/mod.ts";
import { getLogger, type Logger } from "../../lib/log/mod.ts";
import { Cleanups } from "../../lib/process/mod.ts";
import { type CertAuthority, type DnsNameRules, selectSigningBackend } from "../../lib/pki/mod.ts";
import type { CaConfig } from "./config.ts";
import { type Controller, startController } from "./controller.ts";
import { startSigningServer } from "./grpc.ts";
import { directoryRootStore, type KeySource, startKeySource } from "./keys.ts";
import { createCaMetrics, startMonitoring } from "./monitoring.ts";
import { startSelfCheck } from "./selfcheck.ts";
import { createAuthenticator } from "./signer.ts";
import { isPortProblem, workerCount } from "../../lib/workers/mod.ts";

export {
  type CaConfig,
  type CaEnv,
  type CaFlags,
  ConfigError,
  type KeyMode,
  toConfig,
} from "./config.ts";
export { CA_SECRET } from "./orch.ts";
export { WORKLOAD_SECRET } from "./controller.ts";
export { ROOT_FILES } from "./keys.ts";
export { CA_SERVICE, CERTIFICATE_SERVICE } from "./grpc.ts";

/** Injected dependencies of {@link start}. */
export interface CaDeps {
  /** Host the listeners bind (default `0.0.0.0`). */
  host?: string;
  /** gRPC port override (tests: 0 picks a free port; default the config's). */
  grpcPort?: number;
  /** Monitoring port override (as `grpcPort`). */
  monitoringPort?: number;
  /** Text of `/version`. */
  versionText?: string;
  /** Controller relist and rotation check period (default 60 s). */
  resyncMs?: number;
  log?: Logger;
  now?: () => number;
}

/** Bound addresses. */
export interface CaAddresses {
  /** `host:port` of the signing API, or null when not served. */
  grpc: string | null;
  /** `host:port` of the monitoring listener, or null when off. */
  monitoring: string | null;
}

/** A running CA. */
export interface CaHandle {
  readonly addresses: CaAddresses;
  /** Resolves once the controller made its first pass (at once without an orchestrator). */
  readonly ready: Promise<void>;
  /** The current CA (tests). */
  ca(): CertAuthority;
  shutdown(): Promise<void>;
}

/** Server certificate names: the host identities and the in-cluster service name. */
function serverNames(config: CaConfig): string[] {
  return [
    ...config.hostIdentities,
    `mesh-citadel.${config.storageNamespace}.svc.cluster.local`,
    `mesh-ca.${config.storageNamespace}.svc.cluster.local`,
  ].filter((n, i, all) => all.indexOf(n) === i);
}

/**
 * Starts the CA.
 * @throws Error with a one-line startup message (unreadable or inconsistent key material, port
 * in use, orchestrator unreachable...).
 */
export async function start(config: CaConfig, deps: CaDeps = {}): Promise<CaHandle> {
  const log = deps.log ?? getLogger("default");
  for (const w of config.warnings) log.warn(w);
  const host = deps.host ?? "0.0.0.0";
  const cleanups = new Cleanups();
  try {
    return await startParts(config, deps, log, host, cleanups);
  } catch (e) {
    await cleanups.run().catch(() => {});
    throw e;
  }
}

/** What start's steps share: the config, the key source, the orchestrator and the cleanups. */
interface Parts {
  config: CaConfig;
  deps: CaDeps;
  log: Logger;
  host: string;
  cleanups: Cleanups;
  metrics: Awaited<ReturnType<typeof createCaMetrics>>;
  apis: Awaited<ReturnType<typeof import("./orch.ts").orchApis>> | undefined;
  keys: KeySource;
  dns: DnsNameRules;
}

/** start's steps in order: keys, signing API, controller, monitoring, liveness. */
async function startParts(
  config: CaConfig,
  deps: CaDeps,
  log: Logger,
  host: string,
  cleanups: Cleanups,
): Promise<CaHandle> {
  const p = await openKeys(config, deps, log, host, cleanups);
  const grpc = await serveSigningApi(p);
  const controller = runController(p);
  const monitoring = await serveMonitoring(p);
  if (config.liveness && grpc) startLiveness(p, grpc.port);
  const ready = controller ? controller.ready : Promise.resolve();
  return {
    addresses: {
      grpc: grpc ? `${host}:${grpc.port}` : null,
      monitoring: monitoring ? `${monitoring.host}:${monitoring.port}` : null,
    },
    ready,
    ca: () => p.keys.ca(),
    shutdown: () => cleanups.run(),
  };
}

/** Metrics, the orchestrator's APIs (when configured), and the key source over its root store. */
async function openKeys(
  config: CaConfig,
  deps: CaDeps,
  log: Logger,
  host: string,
  cleanups: Cleanups,
): Promise<Parts> {
  const metrics = await createCaMetrics();
  cleanups.push(() => metrics.close());
  let apis;
  if (config.orchestrator) {
    const { orchApis } = await import("./orch.ts");
    apis = await orchApis(await loadKubeConfig(config.orchestrator.kubeconfig));
  }
  let store;
  if (config.keys.kind === "self-signed") {
    if (apis) {
      const { secretRootStore } = await import("./orch.ts");
      store = secretRootStore(apis.core, config.storageNamespace);
    } else store = directoryRootStore(config.localStorageDir);
  }
  const backend = selectSigningBackend(config.signingBackend, { libraries: config.libcrypto });
  log.info(`signing backend: ${backend.description}`);
  const keys: KeySource = await startKeySource(config.keys, {
    store,
    backend,
    maxTtlMs: config.maxTtlMs,
    graceRatio: config.graceRatio,
    minGraceMs: config.minGraceMs,
    log,
    now: deps.now,
  });
  cleanups.push(() => keys.stop());
  const dns = {
    custom: config.customDnsNames,
    appendWebhookNames: config.appendDnsNames,
    systemNamespace: config.storageNamespace,
  };
  return { config, deps, log, host, cleanups, metrics, apis, keys, dns };
}

/** The trusted JWKS of `--trusted-jwks`, when given. */
async function readJwks(config: CaConfig): Promise<{ keys: unknown[] } | undefined> {
  if (!config.trustedJwks) return undefined;
  try {
    const jwks = JSON.parse(await Deno.readTextFile(config.trustedJwks));
    if (!Array.isArray(jwks?.keys)) throw new Error('no "keys" array');
    return jwks;
  } catch (e) {
    throw new Error(
      `Cannot use --trusted-jwks "${config.trustedJwks}": ${(e as Error).message}`,
    );
  }
}

/** A server certificate for the signing API, issued by the current CA. */
async function serverTls({ config, keys }: Parts) {
  const ca = keys.ca();
  const issued = await ca.issueWithKey({
    uris: [],
    dns: serverNames(config),
    ttlMs: Math.min(config.maxTtlMs, config.workloadTtlMs),
    subject: `O=${ca.material.signingCert.subjectName.getField("O")[0] ?? "mesh"}`,
  }, { kind: "ec" });
  return {
    cert: issued.chain.slice(0, -1).join(""),
    key: issued.keyPem,
    ca: ca.caChain.join(""),
    notAfter: issued.notAfter,
  };
}

/** The signing API's server certificate and the CA chain it presents. */
type ServerTls = Awaited<ReturnType<typeof serverTls>>;

/** The signing API as served: by this isolate, or by worker isolates sharing one port. */
interface SigningApi {
  port: number;
  /** How many worker isolates serve it (0: this isolate). */
  workers: number;
  /** A renewed server certificate; with `caChanged`, also the new CA (workers sign with it). */
  setTls(tls: ServerTls, caChanged: boolean): Promise<void>;
  close(graceMs: number): Promise<void>;
}

/** What both ways of serving the signing API are given. */
interface SigningApiInputs {
  port: number;
  tls: ServerTls;
  jwks: { keys: unknown[] } | undefined;
  tokenReview: Parameters<typeof createAuthenticator>[0]["tokenReview"];
  policy: Parameters<typeof startSigningServer>[0]["policy"];
}

/** The gRPC signing API over TLS on `--grpc-port` (none when 0). */
async function serveSigningApi(p: Parts): Promise<SigningApi | undefined> {
  const { config, deps, log, host, cleanups } = p;
  const grpcPort = deps.grpcPort ?? config.grpcPort;
  if (grpcPort === null) {
    log.info("gRPC signing API not served (--grpc-port 0)");
    return undefined;
  }
  const jwks = await readJwks(config);
  let tokenReview;
  if (p.apis) {
    const { kubeTokenReviewer } = await import("./orch.ts");
    tokenReview = kubeTokenReviewer(p.apis.authn);
  }
  const tls = await serverTls(p);
  const policy = {
    workloadTtlMs: config.workloadTtlMs,
    maxTtlMs: config.maxTtlMs,
    signCaCerts: config.signCaCerts,
    dns: p.dns,
  };
  const inputs = { port: grpcPort, tls, jwks, tokenReview, policy };
  const api = await serveOnWorkers(p, inputs) ?? await serveOnThisIsolate(p, inputs);
  cleanups.push(() => api.close(2000));
  renewServerTls(p, api, tls.notAfter);
  log.info(
    `gRPC signing API listening on ${host}:${api.port} (TLS)${
      api.workers ? ` in ${api.workers} worker isolates` : ""
    }`,
  );
  return api;
}

/**
 * `--workers` > 1: the signing API in worker isolates sharing the port, their metrics summed into
 * this isolate's `/metrics`. Undefined (one isolate serves) when one worker is asked for, or when
 * the workers cannot start for another reason than the port (logged).
 */
async function serveOnWorkers(p: Parts, i: SigningApiInputs): Promise<SigningApi | undefined> {
  const { config, log, host, keys, metrics } = p;
  const workers = workerCount(config.workers);
  if (workers.reason) log.warn(`${workers.reason}: serving on one isolate`);
  if (workers.count <= 1) return undefined;
  try {
    const { startSigningWorkers, workerMetricsText } = await import("./workers.ts");
    const pool = await startSigningWorkers({
      count: workers.count,
      host,
      port: i.port,
      ca: () => keys.ca(),
      tls: i.tls,
      maxTtlMs: config.maxTtlMs,
      backend: config.signingBackend,
      libcrypto: config.libcrypto,
      policy: i.policy,
      jwks: i.jwks,
      tokenReview: i.tokenReview,
      log,
    });
    metrics.pools.push(pool.pool);
    const own = metrics.text;
    metrics.text = () => workerMetricsText({ json: metrics.json }, pool).catch(own);
    return {
      port: pool.port,
      workers: pool.count,
      setTls: (tls, caChanged) => caChanged ? pool.setCa(tls) : pool.setTls(tls),
      close: (graceMs) => pool.close(graceMs),
    };
  } catch (e) {
    const m = (e as Error).message;
    if (isPortProblem(m)) throw new Error(`Cannot serve gRPC on ${host}:${i.port}: ${m}`);
    log.warn(
      `cannot serve the signing API in ${workers.count} worker isolates (${m}): serving on one isolate`,
    );
    return undefined;
  }
}

/** The signing API served by this isolate. */
async function serveOnThisIsolate(p: Parts, i: SigningApiInputs): Promise<SigningApi> {
  const { log, host, keys } = p;
  let listener: GrpcListener;
  try {
    listener = await startSigningServer({
      host,
      port: i.port,
      tls: i.tls,
      ca: () => keys.ca(),
      auth: createAuthenticator({ ca: () => keys.ca(), tokenReview: i.tokenReview, jwks: i.jwks }),
      policy: i.policy,
      metrics: p.metrics,
      log,
    });
  } catch (e) {
    throw new Error(`Cannot serve gRPC on ${host}:${i.port}: ${(e as Error).message}`);
  }
  p.metrics.listeners.push(listener);
  const te = new TextEncoder();
  return {
    port: listener.port,
    workers: 0,
    setTls: (tls) => {
      listener.setTls({
        cert: te.encode(tls.cert),
        key: te.encode(tls.key),
        ca: te.encode(tls.ca),
      });
      return Promise.resolve();
    },
    close: (graceMs) => listener.close(14, "Server is shutting down", graceMs),
  };
}

/** Re-issues the signing API's server certificate at half its life, and when the CA changes. */
function renewServerTls(p: Parts, api: SigningApi, firstNotAfter: Date) {
  renewTls({
    issue: () => serverTls(p),
    apply: (tls, caChanged) => api.setTls(tls, caChanged),
    onCaChange: (cb) => p.keys.onChange(cb),
    cleanups: p.cleanups,
    log: p.log,
    now: p.deps.now ?? Date.now,
  }, firstNotAfter);
}

/**
 * The renewal of {@link renewServerTls}: `issue` at half the certificate's life (at least a second
 * apart) and when the CA changes, then `apply`. Stops with `cleanups`, also when a renewal is in
 * flight then: it is not applied and schedules nothing (a timer left after shutdown would renew
 * forever in a process that keeps running, e.g. a test suite).
 */
export function renewTls<T extends { notAfter: Date }>(o: {
  issue: () => Promise<T>;
  apply: (tls: T, caChanged: boolean) => Promise<void>;
  onCaChange: (cb: () => void) => void;
  cleanups: Cleanups;
  log: Logger;
  now: () => number;
}, firstNotAfter: Date): void {
  let notAfter = firstNotAfter;
  let timer: number | undefined;
  let stopped = false;
  const refresh = async (caChanged: boolean) => {
    if (stopped) return;
    try {
      const tls = await o.issue();
      if (stopped) return;
      notAfter = tls.notAfter;
      await o.apply(tls, caChanged);
    } catch (e) {
      if (!stopped) {
        o.log.error(`cannot renew the gRPC server certificate: ${(e as Error).message}`);
      }
    }
    schedule();
  };
  const schedule = () => {
    clearTimeout(timer);
    if (stopped) return;
    const left = notAfter.getTime() - o.now();
    timer = setTimeout(() => refresh(false), Math.min(Math.max(left / 2, 1000), 2 ** 31 - 1));
  };
  schedule();
  o.onCaChange(() => void refresh(true));
  o.cleanups.push(() => {
    stopped = true;
    clearTimeout(timer);
  });
}

/** The service-account → Secret controller, with an orchestrator. */
function runController(p: Parts): Controller | undefined {
  const { config, deps, log, apis, keys } = p;
  if (!apis) return undefined;
  const controller = startController({
    apis,
    namespace: config.listenedNamespace,
    ca: () => keys.ca(),
    workloadTtlMs: config.workloadTtlMs,
    graceRatio: config.graceRatio,
    minGraceMs: config.minGraceMs,
    keySize: config.keySize,
    dns: p.dns,
    log,
    resyncMs: deps.resyncMs,
    onSecret: (a) => p.metrics.secret(a),
    now: deps.now,
  });
  p.cleanups.push(() => controller.stop());
  keys.onChange(() => controller.reconcileAll());
  log.info(
    `controller: watching service accounts in ${
      config.listenedNamespace ? `namespace ${config.listenedNamespace}` : "all namespaces"
    }`,
  );
  return controller;
}

/** The monitoring listener (`/metrics`, `/version`, pprof), when configured. */
async function serveMonitoring(p: Parts): Promise<{ host: string; port: number } | undefined> {
  const { config, deps } = p;
  const monitoringPort = deps.monitoringPort ?? config.monitoring?.port ?? null;
  // deps.host (tests) wins over --monitoring-address
  const monitoringHost = deps.host ?? config.monitoring?.address ?? p.host;
  if (monitoringPort === null || !config.monitoring) return undefined;
  let m;
  try {
    m = await startMonitoring({
      host: monitoringHost,
      port: monitoringPort,
      profiling: config.monitoring.profiling,
      metrics: p.metrics,
      versionText: deps.versionText ?? "mesh_ca",
      onError: (m) => p.log.warn(`monitoring: ${m}`),
    });
  } catch (e) {
    throw new Error(
      `Cannot serve monitoring on ${monitoringHost}:${monitoringPort}: ${(e as Error).message}`,
    );
  }
  const started = m;
  p.cleanups.push(() => started.shutdown());
  p.log.info(`monitoring listening on ${monitoringHost}:${m.port}`);
  return { host: monitoringHost, port: m.port };
}

/** The liveness self-check: a signing call to our own API, its result in the probe file. */
function startLiveness(p: Parts, grpcPort: number) {
  const { config } = p;
  const sc = startSelfCheck({
    address: `127.0.0.1:${grpcPort}`,
    servername: serverNames(config)[0],
    namespace: config.storageNamespace,
    ca: () => p.keys.ca(),
    probePath: config.liveness!.path,
    probeIntervalMs: config.liveness!.intervalMs,
    checkIntervalMs: config.liveness!.checkIntervalMs,
    log: p.log,
    onCheck: (ok) => p.metrics.selfCheck(ok),
  });
  p.cleanups.push(() => sc.stop());
}

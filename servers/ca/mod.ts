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
import { type CertAuthority, selectSigningBackend } from "../../lib/pki/mod.ts";
import type { CaConfig } from "./config.ts";
import { type Controller, startController } from "./controller.ts";
import { startSigningServer } from "./grpc.ts";
import { directoryRootStore, type KeySource, startKeySource } from "./keys.ts";
import { createCaMetrics, startMonitoring } from "./monitoring.ts";
import { startSelfCheck } from "./selfcheck.ts";
import { createAuthenticator } from "./signer.ts";
import type { SigningWorkers } from "./workers.ts";
import { workerCount } from "../../lib/workers/mod.ts";

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

/** A failure to bind the port, which one isolate would meet too (no fallback). */
const PORT_PROBLEM = /EADDRINUSE|EACCES|EADDRNOTAVAIL/;

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

// long: start's steps (keys, signing API, controller, monitoring, liveness); split: issue 25
async function startParts(
  config: CaConfig,
  deps: CaDeps,
  log: Logger,
  host: string,
  cleanups: Cleanups,
): Promise<CaHandle> {
  const metrics = await createCaMetrics();
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

  // ---- gRPC signing API
  let grpc: GrpcListener | undefined;
  let shared: SigningWorkers | undefined;
  let grpcPortBound: number | undefined;
  const grpcPort = deps.grpcPort ?? config.grpcPort;
  if (grpcPort !== null) {
    let jwks;
    if (config.trustedJwks) {
      try {
        jwks = JSON.parse(await Deno.readTextFile(config.trustedJwks));
        if (!Array.isArray(jwks?.keys)) throw new Error('no "keys" array');
      } catch (e) {
        throw new Error(
          `Cannot use --trusted-jwks "${config.trustedJwks}": ${(e as Error).message}`,
        );
      }
    }
    let tokenReview;
    if (apis) {
      const { kubeTokenReviewer } = await import("./orch.ts");
      tokenReview = kubeTokenReviewer(apis.authn);
    }
    const serverTls = async () => {
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
    };
    let tls = await serverTls();
    const policy = {
      workloadTtlMs: config.workloadTtlMs,
      maxTtlMs: config.maxTtlMs,
      signCaCerts: config.signCaCerts,
      dns,
    };
    const workers = workerCount(config.workers);
    if (workers.reason) log.warn(`${workers.reason}: serving on one isolate`);
    try {
      if (workers.count > 1) {
        const { startSigningWorkers, workerMetricsText } = await import("./workers.ts");
        const pool = await startSigningWorkers({
          count: workers.count,
          host,
          port: grpcPort,
          ca: () => keys.ca(),
          tls,
          maxTtlMs: config.maxTtlMs,
          backend: config.signingBackend,
          libcrypto: config.libcrypto,
          policy,
          jwks,
          tokenReview,
          log,
        });
        shared = pool;
        const own = metrics.text;
        metrics.text = () => workerMetricsText({ json: metrics.json }, pool).catch(own);
      }
    } catch (e) {
      const m = (e as Error).message;
      if (PORT_PROBLEM.test(m)) throw new Error(`Cannot serve gRPC on ${host}:${grpcPort}: ${m}`);
      log.warn(
        `cannot serve the signing API in ${workers.count} worker isolates (${m}): serving on one isolate`,
      );
    }
    try {
      if (!shared) {
        grpc = await startSigningServer({
          host,
          port: grpcPort,
          tls,
          ca: () => keys.ca(),
          auth: createAuthenticator({ ca: () => keys.ca(), tokenReview, jwks }),
          policy,
          metrics,
          log,
        });
      }
    } catch (e) {
      throw new Error(`Cannot serve gRPC on ${host}:${grpcPort}: ${(e as Error).message}`);
    }
    const pool = shared;
    const listener = pool
      ? {
        port: pool.port,
        close: (_s: number, _m: string, graceMs: number) => pool.close(graceMs),
        setTls: () => {}, // sent to the workers by refresh()
      }
      : grpc!;
    cleanups.push(() => listener.close(14, "Server is shutting down", 2000));
    // The server certificate is re-issued at half its life, and when the CA changes.
    let tlsTimer: number | undefined;
    const refresh = async (caChanged = false) => {
      try {
        tls = await serverTls();
        if (pool) await (caChanged ? pool.setCa(tls) : pool.setTls(tls));
        const te = new TextEncoder();
        listener.setTls({
          cert: te.encode(tls.cert),
          key: te.encode(tls.key),
          ca: te.encode(tls.ca),
        });
      } catch (e) {
        log.error(`cannot renew the gRPC server certificate: ${(e as Error).message}`);
      }
      scheduleTls();
    };
    const scheduleTls = () => {
      clearTimeout(tlsTimer);
      const left = tls.notAfter.getTime() - (deps.now ?? Date.now)();
      tlsTimer = setTimeout(() => refresh(), Math.min(Math.max(left / 2, 1000), 2 ** 31 - 1));
    };
    scheduleTls();
    keys.onChange(() => void refresh(true));
    cleanups.push(() => clearTimeout(tlsTimer));
    grpcPortBound = listener.port;
    log.info(
      `gRPC signing API listening on ${host}:${listener.port} (TLS)${
        pool ? ` in ${pool.count} worker isolates` : ""
      }`,
    );
  } else {
    log.info("gRPC signing API not served (--grpc-port 0)");
  }

  // ---- controller
  let controller: Controller | undefined;
  if (apis) {
    controller = startController({
      apis,
      namespace: config.listenedNamespace,
      ca: () => keys.ca(),
      workloadTtlMs: config.workloadTtlMs,
      graceRatio: config.graceRatio,
      minGraceMs: config.minGraceMs,
      keySize: config.keySize,
      dns,
      log,
      resyncMs: deps.resyncMs,
      onSecret: (a) => metrics.secret(a),
      now: deps.now,
    });
    const c = controller;
    cleanups.push(() => c.stop());
    keys.onChange(() => c.reconcileAll());
    log.info(
      `controller: watching service accounts in ${
        config.listenedNamespace ? `namespace ${config.listenedNamespace}` : "all namespaces"
      }`,
    );
  }

  // ---- monitoring
  let monitoring: { port: number } | undefined;
  const monitoringPort = deps.monitoringPort ?? config.monitoring?.port ?? null;
  // deps.host (tests) wins over --monitoring-address
  const monitoringHost = deps.host ?? config.monitoring?.address ?? host;
  if (monitoringPort !== null && config.monitoring) {
    try {
      const m = await startMonitoring({
        host: monitoringHost,
        port: monitoringPort,
        profiling: config.monitoring.profiling,
        metrics,
        versionText: deps.versionText ?? "mesh_ca",
      });
      monitoring = m;
      cleanups.push(() => m.shutdown());
    } catch (e) {
      throw new Error(
        `Cannot serve monitoring on ${monitoringHost}:${monitoringPort}: ${(e as Error).message}`,
      );
    }
    log.info(`monitoring listening on ${monitoringHost}:${monitoring.port}`);
  }

  // ---- liveness
  if (config.liveness && grpcPortBound !== undefined) {
    const sc = startSelfCheck({
      address: `127.0.0.1:${grpcPortBound}`,
      servername: serverNames(config)[0],
      namespace: config.storageNamespace,
      ca: () => keys.ca(),
      probePath: config.liveness.path,
      probeIntervalMs: config.liveness.intervalMs,
      checkIntervalMs: config.liveness.checkIntervalMs,
      log,
      onCheck: (ok) => metrics.selfCheck(ok),
    });
    cleanups.push(() => sc.stop());
  }

  const ready = controller ? controller.ready : Promise.resolve();
  return {
    addresses: {
      grpc: grpcPortBound !== undefined ? `${host}:${grpcPortBound}` : null,
      monitoring: monitoring ? `${monitoringHost}:${monitoring.port}` : null,
    },
    ready,
    ca: () => keys.ca(),
    shutdown: () => cleanups.run(),
  };
}

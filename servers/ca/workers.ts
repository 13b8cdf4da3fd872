/**
 * mesh_ca's signing API on W worker isolates (`--workers`): the control isolate keeps the key
 * source, its rotation, the Secret controller, the self-check and the monitoring listener; each
 * worker serves the signing API on the shared port with a copy of the CA key
 * (`worker_main.ts`).
 *
 * What crosses: at start and on every key change the CA key material and the server
 * certificate (PEM); from a worker, a TokenReview request per uncached orchestrator token (the
 * control isolate holds the orchestrator client); on a `/metrics` scrape each worker's registry
 * as JSON, summed with the control isolate's.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";
import { aggregateMetrics } from "../../lib/monitoring/mod.ts";
import {
  type BackendChoice,
  type CaMaterialPem,
  type CertAuthority,
  exportPrivateKey,
} from "../../lib/pki/mod.ts";
import { reserveSharedPort, WorkerPool } from "../../lib/workers/mod.ts";
import type { SignPolicy, TokenReviewer } from "./signer.ts";

/** The CA key material and server certificate sent to every worker. */
export interface CaKeyUpdate {
  material: CaMaterialPem;
  tls: { cert: string; key: string; ca: string };
}

/** What a worker starts from. */
export interface CaWorkerInit {
  host: string;
  port: number;
  keys: CaKeyUpdate;
  maxTtlMs: number;
  backend: BackendChoice;
  libcrypto: readonly string[] | undefined;
  policy: SignPolicy;
  jwks: { keys: unknown[] } | undefined;
  /** Tokens are reviewed by the control isolate. */
  tokenReview: boolean;
}

/** Options of {@link startSigningWorkers}. */
export interface SigningWorkersOptions {
  count: number;
  host: string;
  /** The port (0: a free one, picked here and given to every worker). */
  port: number;
  ca: () => CertAuthority;
  tls: { cert: string; key: string; ca: string };
  maxTtlMs: number;
  backend: BackendChoice;
  libcrypto: readonly string[] | undefined;
  policy: SignPolicy;
  jwks?: { keys: unknown[] };
  tokenReview?: TokenReviewer;
  /** A worker that died is started again after this long (ms, default 1000). */
  restartDelayMs?: number;
  log: Logger;
}

/** The signing API served by workers. */
export interface SigningWorkers {
  /** The shared port. */
  readonly port: number;
  /** How many workers serve. */
  readonly count: number;
  /** Sends the current CA and this server certificate to every worker. */
  setCa(tls: { cert: string; key: string; ca: string }): Promise<void>;
  /** Sends a renewed server certificate to every worker. */
  setTls(tls: { cert: string; key: string; ca: string }): Promise<void>;
  /** Every worker's registry (`getMetricsAsJSON()`). */
  metrics(): Promise<unknown[]>;
  /** The workers' pool (its health in `/metrics`; for tests: end a worker as if it died). */
  readonly pool: WorkerPool;
  close(graceMs?: number): Promise<void>;
}

/** PEM texts of a CA's key material (what a worker loads). */
export async function caMaterialPem(ca: CertAuthority): Promise<CaMaterialPem> {
  const m = ca.material;
  return {
    signingCert: m.signingCert.toString("pem") + "\n",
    signingKey: await exportPrivateKey(m.signingKey),
    certChain: m.intermediates.map((c) => c.toString("pem") + "\n").join(""),
    rootCert: ca.rootPem,
  };
}

/**
 * Starts `count` workers serving the signing API on one port.
 * @throws Error when the port cannot be bound or a worker fails to start.
 */
export async function startSigningWorkers(o: SigningWorkersOptions): Promise<SigningWorkers> {
  const port = await reserveSharedPort(o.host, o.port);
  let keys: CaKeyUpdate = { material: await caMaterialPem(o.ca()), tls: o.tls };
  const review = o.tokenReview;
  const pool = await WorkerPool.start({
    url: new URL("./worker_main.ts", import.meta.url),
    count: o.count,
    name: "signing API worker",
    log: o.log,
    restartDelayMs: o.restartDelayMs,
    init: (): CaWorkerInit => ({
      host: o.host,
      port,
      keys,
      maxTtlMs: o.maxTtlMs,
      backend: o.backend,
      libcrypto: o.libcrypto,
      policy: o.policy,
      jwks: o.jwks,
      tokenReview: !!review,
    }),
    handlers: {
      tokenReview: (token) => {
        if (!review) throw new Error("tokens are not reviewed here");
        return review(token as string);
      },
    },
  });
  return {
    port,
    count: o.count,
    async setCa(tls) {
      keys = { material: await caMaterialPem(o.ca()), tls };
      await pool.broadcast("setCa", keys);
    },
    async setTls(tls) {
      keys = { ...keys, tls };
      await pool.broadcast("setTls", tls);
    },
    metrics: () => pool.broadcast("metrics"),
    pool,
    close: (graceMs) => pool.close(graceMs),
  };
}

/** The Prometheus text of the control isolate's registry and every worker's, summed. */
export async function workerMetricsText(
  own: { json(): Promise<unknown> },
  workers: SigningWorkers,
): Promise<string> {
  return await aggregateMetrics(await own.json(), await workers.metrics());
}

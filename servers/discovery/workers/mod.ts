/**
 * mesh-discovery's ADS on W worker isolates (`--workers`). The control isolate keeps what is one
 * per process: registries, config store, model and resource cache, push routing and debouncing,
 * HTTP/debug/REST, the TLS ADS port. Each worker owns the ADS connections it accepts on the
 * shared `--grpcAddr` port (SO_REUSEPORT): the gRPC transport and the stream state machines
 * (`lib/xds/server/worker_ads.ts`); its generator questions are answered by the control
 * isolate's model with shared maps mirrored once per worker (`lib/xds/server/worker_control.ts`,
 * `worker_mirror.ts`). See docs/ARCHITECTURE.md, "Every core".
 * @module
 */

import { SharedAddressCounts } from "../../../lib/grpc/mod.ts";
import type { Logger } from "../../../lib/log/mod.ts";
import type { Cleanups } from "../../../lib/process/mod.ts";
import { reserveSharedPort, WorkerPool } from "../../../lib/workers/mod.ts";
import { type Proxy, proxyFromNode, TYPE_URLS } from "../../../lib/xds/mod.ts";
import type { WorkerConnection, WorkerPush } from "../../../lib/xds/server/worker_ads.ts";
import { WorkerXdsControl } from "../../../lib/xds/server/worker_control.ts";
import type { SecureListener, XdsCore } from "../ads.ts";
import type { MeshCerts } from "../certs.ts";
import type { DiscoveryConfig } from "../config.ts";
import { adsAcceptLoops, hostOf, hostPort, listenError } from "../listen.ts";

/** A port every worker listens on (SO_REUSEPORT), and what they count on it together. */
export interface SharedPort {
  host: string;
  port: number;
  /**
   * With `--grpcMaxConnections`: every worker's open connections, one slot each (shared memory),
   * so that the cap is the port's, not each worker's.
   */
  connections?: Int32Array;
  /**
   * With `--grpcMaxConnectionsPerAddress`: every worker's open connections by source address
   * (`SharedAddressCounts`), so that the bound is the port's, not each worker's.
   */
  addresses?: SharedArrayBuffer;
}

/** `--secureGrpcAddr` on the workers: its port and the certificates served now. */
export interface SecurePort extends SharedPort {
  certs: MeshCerts;
}

/** What a worker starts from. */
export interface DiscoveryWorkerInit {
  /** `--grpcAddr`. */
  plain: SharedPort;
  /** `--secureGrpcAddr`, once it started (a `secure` request starts it, or renews its certs). */
  secure?: SecurePort;
  knownTypes: string[];
  transport: DiscoveryConfig["grpc"];
  /** `--grpcReusedReads`: read each plaintext connection into a reused buffer (`Deno.Conn`). */
  reusedReads: boolean;
  /** The process's ADS listeners (see `adsAcceptLoops`). */
  acceptLoops: number;
}

/**
 * Slots of the table of connections by address: no more addresses than connections hold a slot
 * at once (twice that keeps the probes short); without a connection cap, 16,384 addresses (1.3 MB
 * with 4 workers). An address beyond is bounded by its worker's count alone.
 */
export function addressSlots(maxConnections: number): number {
  return maxConnections > 0 ? Math.min(Math.max(2 * maxConnections, 64), 65_536) : 16_384;
}

/** The ADS types mesh-discovery serves. */
export const KNOWN_TYPES = [
  TYPE_URLS.cluster,
  TYPE_URLS.endpoint,
  TYPE_URLS.listener,
  TYPE_URLS.route,
];

/** Options of {@link startAdsWorkers}. */
export interface AdsWorkersOptions {
  /** Worker isolates (> 1). */
  count: number;
  debounceAfterMs?: number;
  /** A worker that died is started again after this long (ms, default 1000). */
  restartDelayMs?: number;
  log: Logger;
  cleanups: Cleanups;
}

/**
 * `--grpcAddr` and `--secureGrpcAddr` served by `count` worker isolates. Made before the push
 * routing (it replaces `core.server` with the view of every isolate's streams); {@link listen}
 * starts the workers, {@link listenSecure} the TLS port on them.
 */
export class AdsWorkers {
  /** Every isolate's streams as one server (it is `core.server` now). */
  readonly control: WorkerXdsControl<Proxy>;
  #pool: WorkerPool | undefined;
  #secure: SecurePort | undefined;

  constructor(
    readonly config: DiscoveryConfig,
    readonly core: XdsCore,
    readonly o: AdsWorkersOptions,
  ) {
    const control = this.control = new WorkerXdsControl<Proxy>({
      local: core.local,
      parseNode: (n) => proxyFromNode(n),
      proxyKey: (p) => p.ip,
      resourcesFor: (p, t, names) => core.model.resourcesFor(p, t, names),
      broadcastPush: (p: WorkerPush) => this.#pool?.broadcast("push", p) ?? Promise.resolve(),
      broadcastFlush: () => this.#pool?.broadcast("flush") ?? Promise.resolve(),
      broadcastConnections: () =>
        this.#pool?.broadcast<WorkerConnection[]>("connections") ?? Promise.resolve([]),
      metrics: core.metrics.xds,
      log: o.log,
      ...(o.debounceAfterMs !== undefined ? { debounceAfter: o.debounceAfterMs } : {}),
    });
    core.server = control;
    core.listeners.addSum(() => control.transport());
  }

  /**
   * Binds the port (0: a free one) and starts the workers; resolves to the bound `host:port`.
   * @throws Error "Cannot listen on --grpcAddr ..." when the port cannot be bound or a worker
   * fails to start.
   */
  async listen(): Promise<string> {
    const { config, control, o } = this;
    const host = hostOf(config.grpcAddr);
    const where = `--grpcAddr ${hostPort(host, config.grpcAddr.port)}`;
    const port = await reserveSharedPort(host, config.grpcAddr.port).catch((e) => {
      throw listenError(where, e);
    });
    const plain = this.#share(host, port);
    const pool = this.#pool = await WorkerPool.start({
      url: new URL("./worker_main.ts", import.meta.url),
      count: o.count,
      name: "ADS worker",
      log: o.log,
      restartDelayMs: o.restartDelayMs,
      init: (index): DiscoveryWorkerInit => {
        control.startWorker(index);
        // a worker started again: what the one that died held is gone with it
        for (const share of [plain, this.#secure]) {
          if (share?.connections) Atomics.store(share.connections, index, 0);
          if (share?.addresses) SharedAddressCounts.forget(share.addresses, o.count, index);
        }
        return {
          plain,
          ...(this.#secure ? { secure: this.#secure } : {}),
          knownTypes: KNOWN_TYPES,
          transport: config.grpc,
          reusedReads: config.grpcReusedReads,
          acceptLoops: adsAcceptLoops(config, o.count),
        };
      },
      handlers: control.handlers,
      onDied: (index) => control.forgetWorker(index),
    }).catch((e) => {
      throw listenError(where, e);
    });
    o.cleanups.push(() => pool.close());
    this.core.pools.push(pool);
    return hostPort(host, port);
  }

  /** `host`:`port` shared by the workers, with the counts the connection caps need. */
  #share(host: string, port: number): SharedPort {
    const { grpc } = this.config, n = this.o.count;
    return {
      host,
      port,
      ...(grpc.maxConnections > 0
        ? { connections: new Int32Array(new SharedArrayBuffer(4 * n)) }
        : {}),
      ...(grpc.maxConnectionsPerAddress > 0
        ? { addresses: SharedAddressCounts.create(n, addressSlots(grpc.maxConnections)) }
        : {}),
    };
  }

  /**
   * Opens `--secureGrpcAddr` (`host`:`port`, 0: a free one) on every worker with `certs` (after
   * {@link listen}); `setTls` gives every worker, and those started again, new certificates for
   * new connections. Rejects when the port cannot be bound or no worker could open it.
   */
  async listenSecure(host: string, port: number, certs: MeshCerts): Promise<SecureListener> {
    const pool = this.#pool;
    if (!pool) throw new Error("the workers are not started");
    const bound = await reserveSharedPort(host, port);
    const secure: SecurePort = this.#secure = { ...this.#share(host, bound), certs };
    const opened = await pool.broadcast("secure", secure);
    if (opened.every((r) => r === undefined)) {
      this.#secure = undefined;
      throw new Error("no worker could open it (see the warnings above)");
    }
    return {
      port: bound,
      setTls: async (next) => {
        secure.certs = next;
        await pool.broadcast("secure", secure);
      },
    };
  }

  /** The worker pool (once {@link listen} resolved). */
  get pool(): WorkerPool | undefined {
    return this.#pool;
  }
}

/**
 * mesh-policy's API on W worker isolates (`--workers`): the control isolate keeps the config
 * store, its watch and reloads, the monitoring listener, and one snapshot whose adapters hold
 * the process's state (the prometheus adapter's metrics, memquota's counters, stdio, statsd,
 * zipkin); each worker serves Check and Report on the shared port (`worker_main.ts`).
 *
 * What crosses: at start and on every reload the configuration objects (one message per worker
 * per reload; each worker builds its own snapshot from them); from a worker, each Report and each
 * Check that asks for quotas, as its request bytes, answered with the response bytes or a status,
 * and a `cancel` note when its call ends first (deadline, client cancel), which aborts the work
 * in the control isolate (Checks without quotas, the hot path, stay in the worker); on a `/metrics` scrape each worker's
 * registry as JSON, summed with the control isolate's.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";
import type { ConfigObject } from "../../lib/model/types.ts";
import { reserveSharedPort, WorkerPool } from "../../lib/workers/mod.ts";
import { CallError } from "./abort.ts";
import type { AdapterEnv } from "./adapters/mod.ts";
import { Code } from "./adapters/mod.ts";
import type { MixerWork } from "./grpc.ts";
import type { PolicyConfig } from "./config.ts";
import type { Pool } from "./pool.ts";

/** What a worker starts from. */
export interface PolicyWorkerInit {
  host: string;
  port: number;
  namespace: string;
  /** The configuration objects in force (defaults included) and their reload number. */
  objects: readonly ConfigObject[];
  generation: number;
  configStoreURL: string;
  maxMessageSize: number;
  maxConcurrentStreams: number;
  apiWorkerPoolSize: number;
  adapterWorkerPoolSize: number;
  tracing: PolicyConfig["tracing"];
}

/** A call a worker forwards to the control isolate (`id`, unique in the process, for `cancel`). */
export interface ForwardedCall {
  id: string;
  method: "Check" | "Report";
  body: Uint8Array;
}

/** The control isolate's answer to a forwarded call. */
export type ForwardReply = { body: Uint8Array } | { code: number; message: string };

/** Options of {@link startPolicyWorkers}. */
export interface PolicyWorkersOptions {
  count: number;
  host: string;
  /** The port (0: a free one, picked here and given to every worker). */
  port: number;
  config: PolicyConfig;
  /** The configuration in force now. */
  objects: () => { objects: readonly ConfigObject[]; generation: number };
  /** The control isolate's own Check and Report (for forwarded calls) and its API pool. */
  work: { check: MixerWork; report: MixerWork };
  api: Pool;
  write: AdapterEnv["write"];
  log: Logger;
}

/** The policy API served by workers. */
export interface PolicyWorkers {
  readonly port: number;
  readonly count: number;
  /** Sends a configuration to every worker; resolves once each built its snapshot. */
  setConfig(objects: readonly ConfigObject[], generation: number): Promise<void>;
  /** Every worker's registry (`getMetricsAsJSON()`). */
  metrics(): Promise<unknown[]>;
  /** Forwarded calls the control isolate is working on (for tests: an answered call holds none). */
  readonly forwarding: number;
  /** The workers' pool. */
  readonly pool: WorkerPool;
  close(graceMs?: number): Promise<void>;
}

/**
 * Starts `count` workers serving the policy API on one port.
 * @throws Error when the port cannot be bound or a worker fails to start.
 */
export async function startPolicyWorkers(o: PolicyWorkersOptions): Promise<PolicyWorkers> {
  const port = await reserveSharedPort(o.host, o.port);
  const c = o.config;
  // forwarded calls in progress, by id: a worker cancels one when its call ends first
  const inflight = new Map<string, AbortController>();
  const call = async (arg: unknown): Promise<ForwardReply> => {
    const { id, method, body } = arg as ForwardedCall;
    const work = method === "Check" ? o.work.check : o.work.report;
    const abort = new AbortController();
    inflight.set(id, abort);
    try {
      const res = await o.api.run(() => work(body, abort.signal), abort.signal);
      return { body: res! };
    } catch (e) {
      if (e instanceof CallError) return { code: e.code, message: e.message };
      return { code: Code.INTERNAL, message: `internal error: ${(e as Error).message}` };
    } finally {
      if (inflight.get(id) === abort) inflight.delete(id);
    }
  };
  const cancel = (arg: unknown) => {
    const { id, code, message } = arg as { id: string; code: number; message: string };
    inflight.get(id)?.abort(new CallError(code, message));
  };
  const pool = await WorkerPool.start({
    url: new URL("./worker_main.ts", import.meta.url),
    count: o.count,
    name: "policy API worker",
    log: o.log,
    init: (): PolicyWorkerInit => ({
      host: o.host,
      port,
      namespace: c.configDefaultNamespace,
      ...o.objects(),
      configStoreURL: c.configStoreURL,
      maxMessageSize: c.maxMessageSize,
      maxConcurrentStreams: c.maxConcurrentStreams,
      apiWorkerPoolSize: c.apiWorkerPoolSize,
      adapterWorkerPoolSize: c.adapterWorkerPoolSize,
      tracing: c.tracing,
    }),
    handlers: {
      call,
      cancel,
      write: (a) => {
        const { stream, line } = a as { stream: "stdout" | "stderr"; line: string };
        o.write(stream, line);
      },
    },
  });
  return {
    port,
    count: o.count,
    async setConfig(objects, generation) {
      await pool.broadcast("config", { objects, generation });
    },
    metrics: () => pool.broadcast("metrics"),
    get forwarding() {
      return inflight.size;
    },
    pool,
    close: (graceMs) => pool.close(graceMs),
  };
}

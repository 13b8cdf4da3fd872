/**
 * One worker isolate of mesh-policy's API (`--workers` > 1): it serves Check and Report on the
 * port shared with the other workers (SO_REUSEPORT), answers Checks with its own snapshot built
 * from the configuration the control isolate pushes (`config`), and forwards Reports and Checks
 * that ask for quotas to the control isolate (one process-wide copy of adapter state), cancelling
 * them there when their call ends first (deadline, client cancel). Its own
 * metrics are collected by the control isolate (`metrics`). See `workers.ts`.
 * @module
 */
/// <reference lib="deno.worker" />

import { type GrpcListener, listenGrpc } from "../../lib/grpc/mod.ts";
import { mixerCodec } from "../../lib/mixer/mod.ts";
import type { ConfigObject } from "../../lib/model/types.ts";
import { serveControl } from "../../lib/workers/mod.ts";
import { CallError } from "./abort.ts";
import { type AdapterEnv, Code } from "./adapters/mod.ts";
import { listenerLogging, mixerHandlers } from "./grpc.ts";
import { orchKubeConfig } from "./kubeconfig.ts";
import { createPolicyMetrics } from "./monitoring.ts";
import { Pool } from "./pool.ts";
import { Snapshot } from "./runtime.ts";
import { createTracer, type Tracer } from "./tracing.ts";
import type { ForwardReply, PolicyWorkerInit } from "./workers.ts";

let current: Snapshot | undefined;
let env: AdapterEnv | undefined;
let ns = "default";
let grpc: GrpcListener | undefined;
let tracer: Tracer | undefined;
let generation = -1;
/**
 * Calls forwarded to the control isolate so far; their ids are `<worker index>:<start>:<n>`, the
 * start telling a worker started again from its predecessor (whose calls may still run there).
 */
let forwarded = 0;
const started = Date.now().toString(36) + Math.random().toString(36).slice(2, 6);
const metrics = createPolicyMetrics();

/** Builds the snapshot of a configuration (the previous one's handlers reused as in the control isolate). */
async function apply(objects: readonly ConfigObject[], gen: number): Promise<number> {
  const old = current;
  current = Snapshot.build(objects, ns, env!, old).snapshot;
  generation = gen;
  await old?.retire(current);
  return generation;
}

serveControl<PolicyWorkerInit>(async ({ arg, index, count }, link) => {
  ns = arg.namespace;
  env = {
    log: link.logger("adapters"),
    now: Date.now,
    rbac: () => ({ roles: [], bindings: [] }),
    write: (stream, line) => link.channel.notify("write", { stream, line }),
    fetch: (...a) => fetch(...a),
    kubeConfig: orchKubeConfig(arg.configStoreURL),
    traceUrl: arg.tracing.zipkinUrl || undefined,
  };
  await apply(arg.objects, arg.generation);
  const log = link.logger("default");
  tracer = await createTracer(arg.tracing, log);
  const handlers = mixerHandlers({
    codec: await mixerCodec(),
    api: new Pool(arg.apiWorkerPoolSize),
    adapters: new Pool(arg.adapterWorkerPoolSize),
    snapshot: () => current!,
    metrics,
    log: link.logger("api"),
    maxMessageSize: arg.maxMessageSize,
    span: tracer?.span,
    forward: async (method, body, signal) => {
      signal.throwIfAborted();
      // the call's deadline or cancel reaches the control isolate's work too (adapters, quotas)
      const id = `${index}:${started}:${++forwarded}`;
      const cancel = () => {
        const r = signal.reason;
        link.channel.notify("cancel", {
          id,
          code: r instanceof CallError ? r.code : Code.CANCELLED,
          message: r instanceof Error ? r.message : String(r),
        });
      };
      signal.addEventListener("abort", cancel, { once: true });
      try {
        const r = await link.channel.request<ForwardReply>("call", { id, method, body });
        if ("code" in r) throw new CallError(r.code, r.message);
        return r.body;
      } finally {
        signal.removeEventListener("abort", cancel);
      }
    },
  });
  grpc = await listenGrpc({
    host: arg.host,
    port: arg.port,
    handlers,
    ...listenerLogging(log),
    limits: {
      maxConcurrentStreams: arg.maxConcurrentStreams,
      maxReceiveMessageBytes: arg.maxMessageSize,
    },
    reusePort: { index, of: count },
  });
  metrics.listeners.push(grpc);
  return { port: grpc.port };
}, {
  config: (a) => {
    const { objects, generation } = a as { objects: ConfigObject[]; generation: number };
    return apply(objects, generation);
  },
  metrics: () => metrics.json(),
  async close(graceMs) {
    await grpc?.close(14, "Server is shutting down", graceMs as number);
    await tracer?.close();
    await current?.retire(undefined);
  },
});

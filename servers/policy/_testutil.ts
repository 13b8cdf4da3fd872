/**
 * Test helpers of servers/policy: flags with the spec's defaults, an in-process server on free
 * ports over a memory store, and a grpc-js client (an independent implementation of gRPC).
 * @module
 */

import { DEFAULT_MANIFEST, type Value } from "../../lib/expr/mod.ts";
import { type CheckResponse, compress, mixerCodec } from "../../lib/mixer/mod.ts";
import type { ConfigObject } from "../../lib/model/types.ts";
import { createMemoryStore } from "../../lib/store/mod.ts";
import type { ConfigStore } from "../../lib/store/types.ts";
import type { PolicyFlags } from "./config.ts";
import {
  POLICY_STORE_SCHEMAS,
  type PolicyDeps,
  type PolicyHandle,
  start,
  toConfig,
} from "./mod.ts";
import { quietLogger } from "../../lib/log/testing.ts";

/** `mesh-policy server` flags with the spec's defaults, then `over`. */
export function policyFlags(over: Partial<PolicyFlags> = {}): PolicyFlags {
  return {
    adapterWorkerPoolSize: 1024,
    address: "",
    apiWorkerPoolSize: 1024,
    configDefaultNamespace: "mesh-system",
    configStoreURL: "",
    livenessProbeInterval: 0,
    livenessProbePath: "",
    maxConcurrentStreams: 1024,
    maxMessageSize: 1048576,
    monitoringPort: 9093,
    port: 9091,
    profile: false,
    readinessProbeInterval: 0,
    readinessProbePath: "",
    singleThreaded: false,
    trace_tracera_url: "",
    trace_log_spans: false,
    trace_tracerb_url: "",
    ...over,
  };
}

/** A config object of the policy group. */
export function obj(
  kind: string,
  name: string,
  spec: Record<string, unknown>,
  namespace = "mesh-system",
): ConfigObject {
  return { apiVersion: "config.mesh.io/v1alpha2", kind, metadata: { name, namespace }, spec };
}

/** A running server with a memory store, a grpc-js client and captured stdio lines. */
export interface TestServer extends TestClient {
  handle: PolicyHandle;
  store: ConfigStore;
  lines: string[];
}

/** Starts a server on 127.0.0.1 with `objects` in its store. */
export async function startTestServer(
  objects: ConfigObject[] = [],
  over: Partial<PolicyFlags> = {},
  deps: PolicyDeps = {},
): Promise<TestServer> {
  const store = createMemoryStore(POLICY_STORE_SCHEMAS, { defaultNamespace: "mesh-system" });
  for (const o of objects) await store.create(o);
  const lines: string[] = [];
  const handle = await start(toConfig(policyFlags(over)), {
    host: "127.0.0.1",
    port: 0,
    monitoringPort: 0,
    store,
    reloadDelayMs: 5,
    write: (_s, l) => lines.push(l),
    log: quietLogger,
    ...deps,
  });
  await handle.ready;
  return { handle, store, lines, ...await connectTestClient(handle) };
}

/**
 * Starts a server on 127.0.0.1 whose configuration comes from `--configStoreURL
 * orch://<kubeconfig>`, with a client; `code` answers a Check's precondition status code. Await
 * `handle.ready` before relying on the configuration; `close()` ends both.
 */
export async function startOrchTestServer(
  kubeconfig: string,
): Promise<
  TestClient & { handle: PolicyHandle; code(attrs: Record<string, Value>): Promise<number> }
> {
  const handle = await start(toConfig(policyFlags({ configStoreURL: `orch://${kubeconfig}` })), {
    host: "127.0.0.1",
    port: 0,
    monitoringPort: null,
    reloadDelayMs: 5,
    log: quietLogger,
  });
  const client = await connectTestClient(handle);
  return {
    ...client,
    handle,
    code: async (attrs) => (await client.check(attrs)).precondition.status.code ?? 0,
  };
}

/** A grpc-js Mixer client of a running server. */
export interface TestClient {
  check(attrs: Record<string, Value>, extra?: Record<string, unknown>): Promise<CheckResponse>;
  /** Sends a raw request; resolves with the response or rejects with the grpc-js error. */
  call(method: "Check" | "Report", req: unknown): Promise<unknown>;
  report(bags: Record<string, Value>[]): Promise<unknown>;
  /** Closes the client and shuts the server down. */
  close(): Promise<void>;
}

/** Connects a grpc-js Mixer client (an independent client of our transport) to `handle`. */
export async function connectTestClient(handle: PolicyHandle): Promise<TestClient> {
  const grpc = await import("../../lib/deps/grpc.ts");
  const codec = await mixerCodec();
  // deno-lint-ignore no-explicit-any
  const pkg = grpc.loadPackageDefinition(codec.definition) as any;
  const target = handle.addresses.grpc.startsWith("unix:")
    ? `unix://${handle.addresses.grpc.slice(5)}`
    : handle.addresses.grpc;
  const client = new pkg.mesh.mixer.v1.Mixer(target, grpc.credentials.createInsecure());
  const call = (method: "Check" | "Report", req: unknown) =>
    new Promise<unknown>((resolve, reject) => {
      client[method](req, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res)));
    });
  return {
    call,
    check: (attrs, extra = {}) =>
      call("Check", { attributes: compress(attrs, DEFAULT_MANIFEST), ...extra }) as Promise<
        CheckResponse
      >,
    report: (bags) =>
      call("Report", { attributes: bags.map((b) => compress(b, DEFAULT_MANIFEST)) }),
    async close() {
      client.close();
      await handle.shutdown();
    },
  };
}

/** Polls `f` until it returns true (deadline 5 s). */
export async function eventually(f: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await f())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

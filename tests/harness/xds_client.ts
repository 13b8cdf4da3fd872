/**
 * Helpers around real proxyless xDS clients for end-to-end tests: `@grpc/grpc-js-xds`
 * (`impl: "grpc-js"`, the default) and gRPC C-core through Debian's python3-grpcio
 * (`impl: "grpc-core"`, `/usr/bin/python3`).
 *
 * Both read their bootstrap once per process, so every client identity runs as a subprocess
 * (`xds_client_proc.ts`, `xds_client_proc.py`) that takes the same commands as JSON lines.
 * {@link startXdsClient} starts one with a bootstrap pointing at a discovery server's plaintext
 * gRPC port (grpc-js: `GRPC_XDS_BOOTSTRAP_CONFIG`; C-core: a temp file named by
 * `GRPC_XDS_BOOTSTRAP`); `call()` makes a batch of WhoAmI calls (`cli/demo/whoami.ts`) through
 * `xds:///<host>:<port>` and returns where they went.
 *
 * @example
 * ```ts ignore
 * await using client = await startXdsClient({ grpcPort: 15010, id: "c1" });
 * const r = await client.call("xds:///hello.default.svc.cluster.local:7070", { n: 100 });
 * console.log(r.versions); // { v1: 80, v2: 20 }
 * ```
 * @module
 */

import { WHOAMI_METHOD } from "../../cli/demo/whoami.ts";

/** The xDS client implementations the harness can run. */
export type XdsClientImpl = "grpc-js" | "grpc-core";

/** The interpreter with Debian's python3-grpcio (the `python3` first on PATH may lack it). */
export const SYSTEM_PYTHON = "/usr/bin/python3";

/** Options of {@link xdsBootstrap}. */
export interface BootstrapOptions {
  /** Plaintext ADS port of mesh-discovery on 127.0.0.1. */
  grpcPort: number;
  /** Client id: the node id becomes `sidecar~127.0.0.1~<id>.default~default.svc.cluster.local`. */
  id: string;
  /** Server host (default 127.0.0.1). */
  host?: string;
}

/** The bootstrap document grpc-js-xds expects (xDS v3 over insecure credentials). */
export function xdsBootstrap(opts: BootstrapOptions): Record<string, unknown> {
  return {
    xds_servers: [{
      server_uri: `${opts.host ?? "127.0.0.1"}:${opts.grpcPort}`,
      channel_creds: [{ type: "insecure" }],
      server_features: ["xds_v3"],
    }],
    node: {
      id: `sidecar~127.0.0.1~${opts.id}.default~default.svc.cluster.local`,
      cluster: opts.id,
      locality: { region: "mock-region", zone: "mock-zone" },
      metadata: { NAMESPACE: "default" },
    },
  };
}

/**
 * A bootstrap file written by someone else (mesh-agent `--proxyless`): the client is started
 * with `GRPC_XDS_BOOTSTRAP=<file>`, as an application in the mesh is.
 */
export interface FileBootstrap {
  /** Path of the gRPC xDS bootstrap file. */
  bootstrapFile: string;
}

/** Options of one batch of calls. */
export interface CallOptions {
  /** Number of calls (default 100). */
  n?: number;
  /** Calls in flight at once (default 10). */
  concurrency?: number;
  /** Request metadata (gRPC headers). */
  metadata?: Record<string, string>;
  /** Per-call deadline in ms (default 5000). */
  deadlineMs?: number;
  /** Give every call its own request id (backends in fail-first mode need it). */
  uniqueIds?: boolean;
}

/** Outcome of a batch of calls. */
export interface CallResult {
  /** Successful calls per backend version. */
  versions: Record<string, number>;
  /** Calls per backend address. */
  addresses: Record<string, number>;
  /** Calls per gRPC status code (0 = OK). */
  codes: Record<string, number>;
  /** Successful calls per attempt number seen by the backend (2 = one retry). */
  attempts: Record<string, number>;
  /** Successful calls per caller identity the backend saw (`""`: plaintext). */
  peers: Record<string, number>;
  /** Up to five distinct error messages (`<code>: <details>`). */
  errors: string[];
}

/** A running proxyless client subprocess. */
export interface XdsClientProcess {
  /** The node id the client presents. */
  readonly nodeId: string;
  /** Makes `opts.n` calls to `target` (`xds:///host:port`) and reports where they went. */
  call(target: string, opts?: CallOptions): Promise<CallResult>;
  /**
   * Calls in batches of `opts.n` (default 20; per-call deadline 1 s unless `deadlineMs`) until
   * `ok(result)` holds for one batch; throws with the last result when `timeoutMs` (default
   * 10000) passes first. With `fresh`, every batch runs on new channels ({@link reset} first):
   * an xDS server applies a changed listener (RBAC, TLS) to new connections only, and a
   * grpc-js-xds server was seen to serve an established connection under the old one for over
   * a minute.
   */
  callUntil(
    target: string,
    ok: (r: CallResult) => boolean,
    opts?: CallOptions & { timeoutMs?: number; fresh?: boolean },
  ): Promise<CallResult>;
  /** Closes every channel: the next calls open new connections (current TLS settings). */
  reset(): Promise<void>;
  /** Stderr of the subprocess so far (grpc-js-xds tracing goes there). */
  stderr(): string;
  /** Ends the subprocess and waits for it. */
  close(): Promise<void>;
  /** Same as `close()`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The heap limit of a grpc-js client subprocess (MiB). */
const CLIENT_HEAP_MB = 512;

/** Fraction (0–1) of successful calls that went to `version`. */
export function share(r: CallResult, version: string): number {
  const total = Object.values(r.versions).reduce((a, b) => a + b, 0);
  return total ? (r.versions[version] ?? 0) / total : 0;
}

/** Options of {@link startXdsClient} besides the bootstrap's. */
export interface XdsClientOptions {
  /** Extra environment (e.g. `GRPC_TRACE`, `GRPC_VERBOSITY`). */
  env?: Record<string, string>;
  /** Implementation (default grpc-js). */
  impl?: XdsClientImpl;
  /**
   * Channel credentials from xDS (`XdsChannelCredentials` / `grpc.xds_channel_credentials`,
   * plaintext fallback): the client uses TLS where its clusters say so. Default plaintext.
   */
  xdsCredentials?: boolean;
}

/**
 * Starts a proxyless client subprocess of `impl` (default grpc-js) with the bootstrap of
 * {@link xdsBootstrap}, or with a bootstrap file (`bootstrapFile`, passed as
 * `GRPC_XDS_BOOTSTRAP`; e.g. the one mesh-agent `--proxyless` wrote).
 */
export async function startXdsClient(
  opts: (BootstrapOptions | FileBootstrap) & XdsClientOptions,
): Promise<XdsClientProcess> {
  const fromFile = "bootstrapFile" in opts ? opts.bootstrapFile : undefined;
  const bootstrap = fromFile !== undefined
    ? JSON.parse(await Deno.readTextFile(fromFile))
    : xdsBootstrap(opts as BootstrapOptions);
  const credsEnv: Record<string, string> = opts.xdsCredentials ? { MESH_TEST_XDS_CREDS: "1" } : {};
  let command: Deno.Command;
  let bootstrapDir: string | undefined;
  if (opts.impl === "grpc-core") {
    let file = fromFile;
    if (file === undefined) {
      bootstrapDir = await Deno.makeTempDir({ prefix: "mesh-xds-bootstrap-" });
      file = `${bootstrapDir}/bootstrap.json`;
      await Deno.writeTextFile(file, JSON.stringify(bootstrap));
    }
    command = new Deno.Command(SYSTEM_PYTHON, {
      args: [new URL("./xds_client_proc.py", import.meta.url).pathname, WHOAMI_METHOD],
      env: {
        GRPC_XDS_BOOTSTRAP: file,
        // An idle Python channel has nobody polling its sockets but C-core's backup poller
        // (every 5 s by default), so xDS updates would wait up to that long between calls.
        GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS: "100",
        PYTHONUNBUFFERED: "1",
        ...credsEnv,
        ...opts.env,
      },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    });
  } else {
    command = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        // a client needs ~50 MB of heap: one that leaks fails within seconds, with the reason,
        // instead of thrashing the machine for minutes on its way to V8's 4 GB default
        `--v8-flags=--max-old-space-size=${CLIENT_HEAP_MB}`,
        new URL("./xds_client_proc.ts", import.meta.url).pathname,
      ],
      env: {
        ...(fromFile !== undefined
          ? { GRPC_XDS_BOOTSTRAP: fromFile }
          : { GRPC_XDS_BOOTSTRAP_CONFIG: JSON.stringify(bootstrap) }),
        ...credsEnv,
        ...opts.env,
      },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    });
  }
  const child = command.spawn();
  const writer = child.stdin.getWriter();
  const pending = new Map<number, (v: Record<string, unknown>) => void>();
  let nextId = 1;
  let err = "";
  let closed = false;
  let exitError: Error | undefined;

  const readOut = (async () => {
    const decoder = new TextDecoder();
    let buf = "";
    for await (const chunk of child.stdout) {
      buf += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(line);
        } catch {
          continue;
        }
        const resolve = pending.get(msg.id as number);
        pending.delete(msg.id as number);
        resolve?.(msg);
      }
    }
  })();
  const readErr = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) err += decoder.decode(chunk, { stream: true });
  })();
  const status = Promise.all([child.status, readOut, readErr]).then(async ([s]) => {
    if (bootstrapDir) await Deno.remove(bootstrapDir, { recursive: true }).catch(() => {});
    exitError = new Error(`xDS client exited (code ${s.code}); stderr:\n${err.slice(-2000)}`);
    for (const r of pending.values()) r({ error: exitError.message });
    pending.clear();
    return s;
  });

  const send = async (cmd: Record<string, unknown>): Promise<Record<string, unknown>> => {
    if (exitError) throw exitError;
    const id = nextId++;
    const reply = new Promise<Record<string, unknown>>((r) => pending.set(id, r));
    await writer.write(new TextEncoder().encode(JSON.stringify({ ...cmd, id }) + "\n"));
    const msg = await reply;
    if (typeof msg.error === "string") throw new Error(msg.error);
    return msg;
  };

  const client: XdsClientProcess = {
    nodeId: (bootstrap.node as { id: string }).id,
    async call(target, o = {}) {
      const r = await send({
        op: "call",
        target,
        n: o.n ?? 100,
        concurrency: o.concurrency ?? 10,
        metadata: o.metadata,
        deadlineMs: o.deadlineMs ?? 5000,
        uniqueIds: o.uniqueIds ?? false,
      });
      return r as unknown as CallResult;
    },
    async callUntil(target, ok, o = {}) {
      const deadline = Date.now() + (o.timeoutMs ?? 10_000);
      let last: CallResult | undefined;
      while (true) {
        if (o.fresh) await client.reset();
        last = await client.call(target, { n: 20, deadlineMs: 1000, ...o });
        if (ok(last)) return last;
        if (Date.now() > deadline) {
          throw new Error(
            `Calls to ${target} did not reach the expected state within ${
              o.timeoutMs ?? 10_000
            } ms; last batch: ${JSON.stringify(last)}`,
          );
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async reset() {
      await send({ op: "reset" });
    },
    stderr: () => err,
    async close() {
      if (closed) return;
      closed = true;
      if (!exitError) {
        const timer = setTimeout(() => {
          try {
            child.kill("SIGKILL");
          } catch { /* gone */ }
        }, 3000);
        await send({ op: "exit" }).catch(() => {});
        await status;
        clearTimeout(timer);
      }
      await writer.close().catch(() => {});
      await status;
    },
    async [Symbol.asyncDispose]() {
      await client.close();
    },
  };
  return client;
}

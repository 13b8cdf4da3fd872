/**
 * Proxyless WhoAmI servers for end-to-end tests, of both implementations: grpc-js-xds
 * (`xds_server_proc.ts`, `XdsServer`) and gRPC C-core (`xds_server_proc.py`, `/usr/bin/python3`),
 * each started with a bootstrap file (the one mesh-agent `--proxyless` wrote: see
 * ./mesh_agent.ts). Replies name the caller's SPIFFE identity from its TLS certificate.
 * @module
 */

import { SYSTEM_PYTHON, type XdsClientImpl } from "./xds_client.ts";

/** A running proxyless WhoAmI server subprocess. */
export interface XdsServerProcess {
  readonly impl: XdsClientImpl;
  /** The address it serves (`<ip>:<port>`). */
  readonly address: string;
  /** Resolves with the bound port (rejects when the process reports an error or exits). */
  readonly bound: Promise<number>;
  /** Stdout and stderr so far. */
  output(): string;
  /** Closes stdin and waits for the process (SIGKILL after 3 s). */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a proxyless WhoAmI server of `impl` on `address` answering `version`. */
export function startXdsServer(o: {
  impl: XdsClientImpl;
  bootstrapFile: string;
  address: string;
  version: string;
  env?: Record<string, string>;
}): XdsServerProcess {
  const env = { GRPC_XDS_BOOTSTRAP: o.bootstrapFile, ...o.env };
  const command = o.impl === "grpc-core"
    ? new Deno.Command(SYSTEM_PYTHON, {
      args: [new URL("./xds_server_proc.py", import.meta.url).pathname, o.address, o.version],
      env: { PYTHONUNBUFFERED: "1", ...env },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    })
    : new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("./xds_server_proc.ts", import.meta.url).pathname,
        o.address,
        o.version,
      ],
      env: { GRPC_XDS_EXPERIMENTAL_RBAC: "true", ...env },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    });
  const child = command.spawn();
  let text = "";
  let settle: { ok: (p: number) => void; fail: (e: Error) => void } | undefined;
  const bound = new Promise<number>((ok, fail) => (settle = { ok, fail }));
  bound.catch(() => {});
  const pump = async (s: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder();
    for await (const chunk of s) {
      text += dec.decode(chunk, { stream: true });
      for (const line of text.split("\n")) {
        if (!line.startsWith("{")) continue;
        try {
          const m = JSON.parse(line);
          if (typeof m.bound === "number") settle?.ok(m.bound);
          if (typeof m.error === "string") settle?.fail(new Error(m.error));
        } catch { /* partial line */ }
      }
    }
  };
  const status = Promise.all([child.status, pump(child.stdout), pump(child.stderr)]).then(
    ([s]) => {
      settle?.fail(new Error(`server exited (code ${s.code}):\n${text.slice(-2000)}`));
      return s;
    },
  );
  let closed = false;
  const close = async () => {
    if (closed) return status.then(() => {});
    closed = true;
    await child.stdin.close().catch(() => {});
    const t = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
    }, 3000);
    await status;
    clearTimeout(t);
  };
  return {
    impl: o.impl,
    address: o.address,
    bound,
    output: () => text,
    close,
    [Symbol.asyncDispose]: close,
  };
}

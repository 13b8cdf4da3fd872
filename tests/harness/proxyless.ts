/**
 * Proxyless gRPC workloads for end-to-end tests: the gRPC xDS bootstrap mesh-agent
 * `--proxyless` writes (`<dir>/grpc-bootstrap.json`, written here while the agent is not
 * available), workload certificate files, and proxyless WhoAmI servers of both implementations:
 * grpc-js-xds (`xds_server_proc.ts`) and gRPC C-core (`xds_server_proc.py`, `/usr/bin/python3`).
 * @module
 */

import type { TestPki } from "./certs.ts";
import { SYSTEM_PYTHON, type XdsClientImpl } from "./xds_client.ts";

/** What a workload's bootstrap says about it. */
export interface GrpcBootstrapOptions {
  /** Plaintext ADS address of mesh-discovery (`127.0.0.1:<port>`). */
  discoveryAddress: string;
  /** The workload's IP (node id `sidecar~<ip>~<id>~<domain>`). */
  ip: string;
  /** `<pod>.<namespace>`. */
  id: string;
  /** Directory of `cert-chain.pem`, `key.pem`, `root-cert.pem`. */
  certDir: string;
  /** DNS domain of the node id (default `default.svc.cluster.local`). */
  domain?: string;
  /** Workload labels (`MESH_META_*` style metadata). */
  labels?: Record<string, string>;
  /** Certificate refresh interval of the file watcher (default `1s`). */
  refreshInterval?: string;
}

/** The bootstrap in the shape of issue 22 (mesh-agent `--proxyless`). */
export function grpcBootstrap(o: GrpcBootstrapOptions): Record<string, unknown> {
  const domain = o.domain ?? "default.svc.cluster.local";
  return {
    xds_servers: [{
      server_uri: o.discoveryAddress,
      channel_creds: [{ type: "insecure" }],
      server_features: ["xds_v3"],
    }],
    node: {
      id: `sidecar~${o.ip}~${o.id}~${domain}`,
      cluster: o.id.split(".")[0],
      metadata: {
        GENERATOR: "grpc",
        NAMESPACE: o.id.split(".")[1] ?? "default",
        INSTANCE_IPS: o.ip,
        labels: o.labels ?? {},
      },
      locality: { region: "mock-region", zone: "mock-zone" },
    },
    certificate_providers: {
      default: {
        plugin_name: "file_watcher",
        config: {
          certificate_file: `${o.certDir}/cert-chain.pem`,
          private_key_file: `${o.certDir}/key.pem`,
          ca_certificate_file: `${o.certDir}/root-cert.pem`,
          refresh_interval: o.refreshInterval ?? "1s",
        },
      },
    },
    server_listener_resource_name_template: "grpc/server?xds.resource.listening_address=%s",
  };
}

async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp-${crypto.randomUUID()}`;
  await Deno.writeTextFile(tmp, text);
  await Deno.rename(tmp, path);
}

/** Writes `<dir>/grpc-bootstrap.json` (temp file + rename); returns its path. */
export async function writeGrpcBootstrap(dir: string, o: GrpcBootstrapOptions): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  const path = `${dir}/grpc-bootstrap.json`;
  await writeAtomic(path, JSON.stringify(grpcBootstrap(o), null, 2));
  return path;
}

let serial = 0;

/**
 * Issues a certificate for `spiffe://cluster.local/ns/<ns>/sa/<sa>` from `pki` and writes the
 * workload files into `dir` (each by temp file + rename, key before chain, as mesh-agent does);
 * call again to rotate.
 */
export async function writeWorkloadCerts(
  pki: TestPki,
  dir: string,
  sa: string,
  ns = "default",
): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  const leaf = await pki.issue(`${sa}-${++serial}`, {
    uris: [`spiffe://cluster.local/ns/${ns}/sa/${sa}`],
  });
  await writeAtomic(`${dir}/root-cert.pem`, await Deno.readTextFile(pki.caCert));
  await writeAtomic(`${dir}/key.pem`, await Deno.readTextFile(leaf.key));
  await writeAtomic(`${dir}/cert-chain.pem`, await Deno.readTextFile(leaf.cert));
}

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

/**
 * Real mesh_ca and mesh-agent `--proxyless` processes for end-to-end tests: {@link startMeshCa}
 * runs a self-signed mesh_ca that trusts a test JWT issuer; {@link startProxylessAgent} runs one
 * agent per workload (its own service account token, certificate directory and bootstrap) and
 * waits until the bootstrap is written. An application (or a harness client) then starts with
 * `GRPC_XDS_BOOTSTRAP=<agent.bootstrap>`.
 *
 * @example
 * ```ts ignore
 * await using ca = await startMeshCa(dir);
 * await using agent = await startProxylessAgent({ ca, dir: `${dir}/a`, sa: "client",
 *   discovery: d.grpc });
 * await using client = await startXdsClient({ bootstrapFile: agent.bootstrap });
 * ```
 * @module
 */

import { type ProgramProcess, spawnProgram } from "./procs.ts";
import { selfSignedCaArgs, type TestIssuer, testIssuer } from "./ca_client.ts";
import { freePort } from "./procs.ts";

/** A running mesh_ca. */
export interface RunningMeshCa {
  readonly proc: ProgramProcess;
  /** `127.0.0.1:<port>` of the gRPC signing API. */
  readonly address: string;
  /** PEM file of mesh_ca's root certificate. */
  readonly rootFile: string;
  /** The issuer whose JWKS mesh_ca trusts. */
  readonly issuer: TestIssuer;
  /** Stops mesh_ca. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts mesh_ca (`--self-signed-ca`, storage in `<dir>/store`, `--trusted-jwks` of a fresh test
 * issuer, gRPC on a free port, monitoring on port 0, grace period 1 s so short-lived certificates
 * are allowed).
 */
export async function startMeshCa(dir: string, extra: string[] = []): Promise<RunningMeshCa> {
  const issuer = await testIssuer();
  const port = freePort();
  // its default monitoring port 9093 may be taken by another program on this machine
  const args = await selfSignedCaArgs(
    dir,
    issuer,
    { grpc: port, monitoring: 0 },
    "--workload-cert-min-grace-period",
    "1s",
    ...extra,
  );
  const proc = spawnProgram("mesh_ca", args);
  try {
    await proc.waitFor(/gRPC signing API listening/, 60_000); // generous: a loaded box
  } catch (e) {
    await proc.stop();
    throw e;
  }
  const rootFile = `${dir}/ca-root.pem`;
  await Deno.copyFile(`${dir}/store/ca-cert.pem`, rootFile);
  return {
    proc,
    address: `127.0.0.1:${port}`,
    rootFile,
    issuer,
    [Symbol.asyncDispose]: async () => void await proc.stop(),
  };
}

/** Options of {@link startProxylessAgent}. */
export interface ProxylessAgentOptions {
  readonly ca: RunningMeshCa;
  /** Directory of this workload: `certs/`, `proxy/` (the bootstrap) and `token` go there. */
  readonly dir: string;
  /** Service account (the identity is `spiffe://cluster.local/ns/<ns>/sa/<sa>`). */
  readonly sa: string;
  /** Namespace (default `default`). */
  readonly ns?: string;
  /** `host:port` of mesh-discovery's ADS port. */
  readonly discovery: string;
  /** Pod name (default `<sa>-1`). */
  readonly pod?: string;
  /** Workload IP (default 127.0.0.1). */
  readonly ip?: string;
  /** Extra environment (`MESH_META_*`, `MESH_CA_CERT_TTL`, `MESH_CERT_REFRESH_INTERVAL`...). */
  readonly env?: Record<string, string>;
  /** Extra flags of `mesh-agent proxy`. */
  readonly flags?: string[];
}

/** A running proxyless agent. */
export interface RunningProxylessAgent {
  readonly proc: ProgramProcess;
  /** Path of the gRPC bootstrap the agent wrote. */
  readonly bootstrap: string;
  /** Directory of the workload certificate files. */
  readonly certDir: string;
  /** Stops the agent (SIGTERM, then waits). */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts `mesh-agent proxy --proxyless` for one workload with a token for `<ns>/<sa>` and waits
 * (30 s) until it logs that its bootstrap is written.
 */
export async function startProxylessAgent(
  o: ProxylessAgentOptions,
): Promise<RunningProxylessAgent> {
  const ns = o.ns ?? "default";
  await Deno.mkdir(o.dir, { recursive: true });
  await Deno.writeTextFile(
    `${o.dir}/token`,
    await o.ca.issuer.token(`system:serviceaccount:${ns}:${o.sa}`),
  );
  const certDir = `${o.dir}/certs`;
  const bootstrap = `${o.dir}/proxy/grpc-bootstrap.json`;
  const proc = spawnProgram("mesh-agent", [
    "proxy",
    "--proxyless",
    "--discoveryAddress",
    o.discovery,
    "--configPath",
    `${o.dir}/proxy`,
    ...(o.flags ?? []),
  ], {
    env: {
      POD_NAME: o.pod ?? `${o.sa}-1`,
      POD_NAMESPACE: ns,
      INSTANCE_IP: o.ip ?? "127.0.0.1",
      MESH_META_NAMESPACE: ns,
      MESH_CERT_DIR: certDir,
      MESH_CA_ADDRESS: o.ca.address,
      MESH_CA_ROOT_CERT: o.ca.rootFile,
      MESH_CA_TOKEN_FILE: `${o.dir}/token`,
      ...o.env,
    },
  });
  try {
    // the agent logs the path once the file is in place
    await proc.waitFor(/gRPC bootstrap written/, 60_000); // generous: a loaded box
  } catch (e) {
    await proc.stop();
    throw e;
  }
  return { proc, bootstrap, certDir, [Symbol.asyncDispose]: async () => void await proc.stop() };
}

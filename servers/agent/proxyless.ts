/**
 * `mesh-agent proxy --proxyless`: the agent of a proxyless gRPC workload. No proxy process runs;
 * the agent keeps the workload certificate in `MESH_CERT_DIR` (from mesh_ca, when
 * `MESH_CA_ADDRESS` is set, renewed at half its life) and writes the gRPC xDS bootstrap
 * (`<configPath>/grpc-bootstrap.json`, {@link grpcBootstrap}) that the application reads through
 * `GRPC_XDS_BOOTSTRAP`. gRPC reloads the certificate files itself (the bootstrap's `file_watcher`
 * provider), so a renewal needs nothing from the agent but the files. With
 * `--controlPlaneAuthPolicy MUTUAL_TLS` the bootstrap points at the agent's xDS relay
 * (`<configPath>/xds.sock`), which reaches discovery over mutual TLS. On shutdown the bootstrap
 * is removed.
 * @module
 */

import { hostPort } from "../../lib/net/mod.ts";
import { getLogger, type Logger } from "../../lib/log/mod.ts";
import { GRPC_BOOTSTRAP_FILE, grpcBootstrap } from "../../lib/xds/grpc_bootstrap.ts";
import type { AgentConfig } from "./config.ts";
import { agentCertRotation, type CertRotation } from "./certs.ts";
import { writeAtomic } from "./supervisor.ts";
import { startXdsRelay, XDS_RELAY_SOCKET, type XdsRelay } from "./xds_relay.ts";

/** Injected dependencies of {@link startProxyless}. */
export interface ProxylessDeps {
  /** Delay before retrying a failed certificate request (default 5 s). */
  caRetryMs?: number;
  logger?: Logger;
}

/** A running proxyless agent. */
export interface ProxylessHandle {
  /** `bootstrap`: the path of the gRPC bootstrap file. */
  readonly addresses: { readonly bootstrap: string };
  /** Resolves once the bootstrap is written (after the first certificate, with mesh_ca). */
  readonly ready: Promise<void>;
  /** Rejects when the agent cannot go on (the bootstrap cannot be written); never resolves. */
  readonly failed: Promise<never>;
  /** The certificate rotation, when the agent gets certificates from mesh_ca. */
  readonly certs?: CertRotation;
  /** Stops the rotation and removes the bootstrap file. */
  shutdown(): Promise<void>;
}

/**
 * The bootstrap document of `c` (see {@link grpcBootstrap}): ADS at `--discoveryAddress` with
 * insecure credentials, or, with MUTUAL_TLS, at `relayUri` (the agent's {@link startXdsRelay}),
 * also plaintext: the relay does the mutual TLS.
 */
export function proxylessBootstrap(c: AgentConfig, relayUri?: string): Record<string, unknown> {
  return grpcBootstrap({
    serverUri: relayUri ?? hostPort(c.adsTarget.host, c.adsTarget.port),
    nodeId: c.nodeId,
    cluster: c.serviceCluster,
    metadata: c.metadata,
    locality: c.availabilityZone ? { zone: c.availabilityZone } : undefined,
    certDir: c.certDir,
    refreshIntervalMs: c.certRefreshMs,
  });
}

/**
 * Starts the proxyless agent. Rejects at once, naming `--configPath`, when the bootstrap
 * directory cannot be created or written (checked before anything else starts).
 */
export async function startProxyless(
  c: AgentConfig,
  deps: ProxylessDeps = {},
): Promise<ProxylessHandle> {
  const log = deps.logger ?? getLogger("default");
  const path = `${c.configPath}/${GRPC_BOOTSTRAP_FILE}`;
  try {
    await Deno.mkdir(c.configPath, { recursive: true });
    // a probe write: an unwritable directory is a startup error, not a later failure
    await writeAtomic(`${path}.probe`, "");
    await Deno.remove(`${path}.probe`);
  } catch (e) {
    throw new Error(
      `Cannot write the gRPC bootstrap into --configPath ${c.configPath}: ${(e as Error).message}`,
    );
  }
  const certs = agentCertRotation(c, log, deps.caRetryMs);
  const { promise: failed, reject: fail } = Promise.withResolvers<never>();
  failed.catch(() => {});
  const { promise: ready, resolve: setReady } = Promise.withResolvers<void>();
  let stopping = false;
  let written = false;
  let relay: XdsRelay | undefined;
  if (c.controlPlaneAuthPolicy === "MUTUAL_TLS") {
    try {
      relay = await startXdsRelay({
        socketPath: `${c.configPath}/${XDS_RELAY_SOCKET}`,
        target: c.adsTarget,
        certDir: c.certDir,
        san: c.discoverySan,
        log,
      });
    } catch (e) {
      certs?.stop();
      throw new Error(
        `Cannot listen on ${c.configPath}/${XDS_RELAY_SOCKET} (--configPath): ${
          (e as Error).message
        }`,
      );
    }
  }
  const text = JSON.stringify(proxylessBootstrap(c, relay?.uri), null, 2) + "\n";
  (async () => {
    if (certs) await certs.ready;
    if (stopping) return;
    await writeAtomic(path, text);
    written = true;
    log.info("gRPC bootstrap written", {
      path,
      node: c.nodeId,
      xds_server: hostPort(c.adsTarget.host, c.adsTarget.port),
      ...(relay ? { via: relay.uri } : {}),
    });
    setReady();
  })().catch((e) =>
    fail(new Error(`Cannot write the gRPC bootstrap ${path}: ${(e as Error).message}`))
  );
  let stopped: Promise<void> | undefined;
  return {
    addresses: { bootstrap: path },
    ready,
    failed,
    certs,
    shutdown() {
      stopped ??= (async () => {
        stopping = true;
        certs?.stop();
        await relay?.close();
        if (written) {
          await Deno.remove(path).catch(() => {});
          log.info("gRPC bootstrap removed", { path });
        }
      })();
      return stopped;
    },
  };
}

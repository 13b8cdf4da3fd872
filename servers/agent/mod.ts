/**
 * mesh-agent's proxy agent: `toConfig(flags, role, env)` then `start(config, deps)`.
 *
 * `start` writes the proxy bootstrap (generated, rendered from `--templateFile`, or
 * `--customConfigFile` as is), runs the proxy through the {@link Supervisor} (hot-restart epochs,
 * crash backoff within a budget), watches the workload certificate files and starts a new epoch
 * when they change (coalesced), and removes the `envoy-rev<n>.json` files an earlier run left.
 *
 * @example
 * ```ts ignore
 * const handle = await start(toConfig(flags, "sidecar", env), {});
 * await handle.ready;
 * await handle.shutdown();
 * ```
 * @module
 */

import { getLogger, type Logger } from "../../lib/log/mod.ts";
import { isIp } from "../../lib/xds/node.ts";
import type { AgentConfig } from "./config.ts";
import {
  buildBootstrap,
  CERT_FILES,
  checkBootstrapIsolated,
  renderTemplate,
  SDS_SOCKET,
} from "./bootstrap.ts";
import { removeStaleRevFiles, Supervisor } from "./supervisor.ts";
import { agentCertRotation, type CertRotation, loadWorkloadCert } from "./certs.ts";
import { startSdsServer } from "./sds.ts";

export {
  adsAddress,
  type AgentConfig,
  ConfigError,
  discoverySpiffeId,
  parseHostPort,
  type ProxyFlags,
  ROLES,
  toConfig,
} from "./config.ts";
export {
  BOOTSTRAP_PROTO_FILES,
  buildBootstrap,
  CERT_FILES,
  checkBootstrap,
  checkBootstrapInWorker,
  checkBootstrapIsolated,
  renderTemplate,
  SDS_SOCKET,
  templateData,
} from "./bootstrap.ts";
export { removeStaleRevFiles, revFile, Supervisor, writeAtomic } from "./supervisor.ts";
export { proxyArgs } from "./args.ts";
export {
  proxylessBootstrap,
  type ProxylessDeps,
  type ProxylessHandle,
  startProxyless,
} from "./proxyless.ts";
export {
  startXdsRelay,
  XDS_RELAY_SOCKET,
  type XdsRelay,
  type XdsRelayOptions,
} from "./xds_relay.ts";
export { type SdsServer, startSdsServer } from "./sds.ts";
export {
  type CertRotation,
  loadWorkloadCert,
  renewAt,
  requestCertificate,
  startCertRotation,
  type WorkloadCert,
} from "./certs.ts";

import { proxyArgs } from "./args.ts";

/** Injected dependencies of {@link start} (tests shorten the delays). */
export interface AgentDeps {
  /** Delay that coalesces certificate file events (default 1 s). */
  coalesceMs?: number;
  /** Restarts allowed after proxy failures (default 10). */
  retryBudget?: number;
  /** First restart delay (default 200 ms). */
  retryBaseMs?: number;
  /** Environment of the proxy process (default: inherited). */
  proxyEnv?: Record<string, string>;
  /** Called when an epoch starts. */
  onEpoch?(epoch: number): void;
  /** Delay before retrying a failed certificate request (default 5 s). */
  caRetryMs?: number;
  logger?: Logger;
}

/** A running agent. */
export interface AgentHandle {
  readonly addresses: { readonly admin: string; readonly sds?: string };
  /** Resolves once the first epoch has started (after the certificate, with mesh_ca). */
  readonly ready: Promise<void>;
  /** Rejects when the agent gives up (retry budget spent); never resolves. */
  readonly failed: Promise<never>;
  /** The supervisor (live epochs). */
  readonly supervisor: Supervisor;
  /** The certificate rotation, when the agent gets certificates from mesh_ca. */
  readonly certs?: CertRotation;
  /** Drains and stops the proxy, stops watching, removes the generated files. */
  shutdown(): Promise<void>;
}

/** SHA-256 (hex) of the certificate files that exist, in a fixed order. */
export async function certDigest(dir: string): Promise<string> {
  const parts: string[] = [];
  for (const name of Object.values(CERT_FILES)) {
    try {
      parts.push(`${name}:${await Deno.readTextFile(`${dir}/${name}`)}`);
    } catch {
      parts.push(`${name}:-`);
    }
  }
  return await sha256(parts.join("\n"));
}

async function sha256(s: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * `c` with the host of `--statsdUdpAddress` resolved to an IP (Envoy's statsd sink takes an IP
 * address only); `localhost` is 127.0.0.1. Throws naming the flag when the host does not resolve.
 */
export async function resolveStatsd(c: AgentConfig): Promise<AgentConfig> {
  const hp = c.statsdUdpAddress;
  if (!hp || isIp(hp.host)) return c;
  let ip = hp.host === "localhost" ? "127.0.0.1" : undefined;
  if (!ip) {
    try {
      ip = (await Deno.resolveDns(hp.host, "A"))[0];
    } catch (e) {
      throw new Error(
        `Cannot resolve --statsdUdpAddress host "${hp.host}": ${(e as Error).message}`,
      );
    }
    if (!ip) throw new Error(`Cannot resolve --statsdUdpAddress host "${hp.host}": no address`);
  }
  return Object.freeze({ ...c, statsdUdpAddress: Object.freeze({ host: ip, port: hp.port }) });
}

/** The bootstrap text of `c` (generated or rendered, always checked), or undefined for a custom file. */
export async function bootstrapText(c: AgentConfig): Promise<string | undefined> {
  if (c.customConfigFile) {
    try {
      await Deno.stat(c.customConfigFile);
    } catch (e) {
      throw new Error(
        `Cannot read --customConfigFile ${c.customConfigFile}: ${(e as Error).message}`,
      );
    }
    return undefined;
  }
  let doc;
  if (c.templateFile) {
    let text;
    try {
      text = await Deno.readTextFile(c.templateFile);
    } catch (e) {
      throw new Error(`Cannot read --templateFile ${c.templateFile}: ${(e as Error).message}`);
    }
    doc = await renderTemplate(c, text);
  } else {
    doc = buildBootstrap(await resolveStatsd(c));
  }
  await checkBootstrapIsolated(doc);
  return JSON.stringify(doc, null, 2) + "\n";
}

/** Watches `dir` (when it exists) and calls `onChange` once per burst of events. */
function watchDir(dir: string, delayMs: number, onChange: () => void): () => void {
  let watcher: Deno.FsWatcher | undefined;
  let timer: number | undefined;
  try {
    watcher = Deno.watchFs(dir, { recursive: false });
  } catch {
    return () => {};
  }
  (async () => {
    try {
      for await (const _ of watcher) {
        clearTimeout(timer);
        timer = setTimeout(onChange, delayMs);
      }
    } catch { /* closed */ }
  })();
  return () => {
    clearTimeout(timer);
    try {
      watcher?.close();
    } catch { /* closed */ }
  };
}

/**
 * Starts the agent; rejects on a startup error (bad bootstrap, unreadable files). The proxy
 * starts in the background (once a certificate is in place when mesh_ca is used): await `ready`.
 */
export async function start(c: AgentConfig, deps: AgentDeps = {}): Promise<AgentHandle> {
  const log = deps.logger ?? getLogger("default");
  await Deno.mkdir(c.configPath, { recursive: true });
  const stale = await removeStaleRevFiles(c.configPath);
  if (stale.length) log.info("removed stale proxy configurations", { files: stale.join(",") });
  const bootstrap = await bootstrapText(c);
  const certs = agentCertRotation(c, log, deps.caRetryMs);
  const { promise: failed, reject: fail } = Promise.withResolvers<never>();
  failed.catch(() => {});
  const { promise: ready, resolve: setReady } = Promise.withResolvers<void>();
  const sup = new Supervisor({
    binaryPath: c.binaryPath,
    configPath: c.configPath,
    args: (n, file) => proxyArgs(c, n, file),
    retryBudget: deps.retryBudget,
    retryBaseMs: deps.retryBaseMs,
    adminPort: c.customConfigFile ? undefined : c.proxyAdminPort,
    drainMs: c.drainDurationMs,
    parentShutdownMs: c.parentShutdownDurationMs,
    log,
    env: deps.proxyEnv,
    onFatal: (err) => fail(err),
    onEpoch: (n) => {
      setReady();
      deps.onEpoch?.(n);
    },
  });
  const desired = async () => {
    // with SDS the certificate reaches the proxy without a restart
    const certs = c.sds ? "sds" : await certDigest(c.certDir);
    return {
      hash: await sha256(`${bootstrap ?? c.customConfigFile}\n${certs}`),
      bootstrap,
      file: bootstrap === undefined ? c.customConfigFile : undefined,
    };
  };
  const reconcile = async () => {
    try {
      await sup.update(await desired());
    } catch (e) {
      log.error("cannot update the proxy", { error: (e as Error).message });
    }
  };
  const sds = c.sds ? await startSdsServer(`${c.configPath}/${SDS_SOCKET}`, log) : undefined;
  // certificate files changed: over SDS without a restart, else a new epoch
  const onCerts = async () => {
    if (!sds) return await reconcile();
    const cur = await loadWorkloadCert(c.certDir);
    if (cur) {
      sds.update(cur);
      log.info("workload certificate pushed over SDS", { identity: cur.identity });
    }
  };
  let stopWatch = () => {};
  let stopping = false;
  // the proxy starts once a certificate from mesh_ca (when configured) is in place; a signal
  // that comes first still stops the agent
  (async () => {
    if (certs) await certs.ready;
    if (stopping) return;
    if (sds) {
      const cur = certs?.current() ?? await loadWorkloadCert(c.certDir);
      if (cur) sds.update(cur);
    }
    stopWatch = watchDir(c.certDir, deps.coalesceMs ?? 1000, () => void onCerts());
    failed.catch(() => stopWatch());
    await sup.update(await desired());
  })().catch((e) => fail(e as Error));
  let stopped: Promise<void> | undefined;
  return {
    addresses: { admin: `127.0.0.1:${c.proxyAdminPort}`, sds: sds?.address },
    ready,
    failed,
    supervisor: sup,
    certs,
    shutdown() {
      stopped ??= (async () => {
        stopping = true;
        certs?.stop();
        stopWatch();
        await sup.shutdown();
        await sds?.shutdown();
      })();
      return stopped;
    },
  };
}

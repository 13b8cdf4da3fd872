/**
 * `toConfig`: validates the flags of `mesh-policy server` into a frozen configuration.
 * @module
 */

import { ConfigError } from "../../lib/flags/config_error.ts";

/** The flags of `mesh-policy server` this server reads. */
export interface PolicyFlags {
  adapterWorkerPoolSize: number;
  address: string;
  apiWorkerPoolSize: number;
  configDefaultNamespace: string;
  configStoreURL: string;
  livenessProbeInterval: number;
  livenessProbePath: string;
  maxConcurrentStreams: number;
  maxMessageSize: number;
  monitoringPort: number;
  port: number;
  profile: boolean;
  readinessProbeInterval: number;
  readinessProbePath: string;
  singleThreaded: boolean;
  trace_tracera_url: string;
  trace_log_spans: boolean;
  trace_tracerb_url: string;
  /** `--workers`: isolates serving the API (0 = one per core; absent = 1). */
  workers?: number;
}

/** Where the gRPC API listens. */
export type ApiAddress = { kind: "tcp"; host: string; port: number } | {
  kind: "unix";
  path: string;
};

/** A validated configuration. */
export interface PolicyConfig {
  readonly address: ApiAddress;
  readonly monitoringPort: number;
  readonly maxMessageSize: number;
  readonly maxConcurrentStreams: number;
  readonly apiWorkerPoolSize: number;
  readonly adapterWorkerPoolSize: number;
  readonly singleThreaded: boolean;
  /** --workers: isolates serving the API (0 = one per core; 1, or --singleThreaded: no workers). */
  readonly workers: number;
  /** Empty: no store (the built-in defaults only). */
  readonly configStoreURL: string;
  readonly configDefaultNamespace: string;
  readonly profile: boolean;
  readonly liveness?: { path: string; intervalMs: number };
  readonly readiness?: { path: string; intervalMs: number };
  readonly tracing: { zipkinUrl: string; jaegerUrl: string; logSpans: boolean };
}

/** Bad flags: {@link toConfig}'s usage error, shared by every program (lib/flags). */
export { ConfigError };

/** Parses `--address` (`tcp://host:port` or `unix://path`). */
export function parseAddress(text: string): ApiAddress | string {
  const unix = /^unix:\/\/(.+)$/.exec(text);
  if (unix) return { kind: "unix", path: unix[1] };
  const tcp = /^tcp:\/\/(\[[^\]]+\]|[^:/]*):(\d{1,5})$/.exec(text);
  if (tcp && Number(tcp[2]) <= 65535) {
    return {
      kind: "tcp",
      host: tcp[1].replace(/^\[(.*)\]$/, "$1") || "0.0.0.0",
      port: Number(tcp[2]),
    };
  }
  return `invalid --address "${text}": want tcp://<host>:<port> or unix://<path>`;
}

function probe(path: string, intervalMs: number, name: string, problems: string[]) {
  if (!path) return undefined;
  if (intervalMs <= 0) {
    problems.push(`--${name}ProbePath needs a positive --${name}ProbeInterval`);
    return undefined;
  }
  return { path, intervalMs };
}

/**
 * Validates the flags.
 * @throws {ConfigError} listing every problem.
 */
export function toConfig(f: PolicyFlags): PolicyConfig {
  const problems: string[] = [];
  let address: ApiAddress = { kind: "tcp", host: "0.0.0.0", port: f.port };
  if (f.address) {
    const a = parseAddress(f.address);
    if (typeof a === "string") problems.push(a);
    else address = a;
  }
  for (
    const name of ["apiWorkerPoolSize", "adapterWorkerPoolSize", "maxConcurrentStreams"] as const
  ) {
    if (!(f[name] >= 1)) problems.push(`--${name} must be at least 1, got ${f[name]}`);
  }
  if (!(f.maxMessageSize >= 1024)) {
    problems.push(`--maxMessageSize must be at least 1024, got ${f.maxMessageSize}`);
  }
  if (f.configStoreURL && !/^(fs|orch):\/\//.test(f.configStoreURL)) {
    problems.push(
      `invalid --configStoreURL "${f.configStoreURL}": want fs://<dir> or orch://<orchconfig path>`,
    );
  }
  if (f.configStoreURL === "fs://") {
    problems.push(`invalid --configStoreURL "fs://": name a directory`);
  }
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(f.configDefaultNamespace)) {
    problems.push(
      `invalid --configDefaultNamespace "${f.configDefaultNamespace}": not a namespace name`,
    );
  }
  for (
    const [flag, url] of [["trace_tracera_url", f.trace_tracera_url], [
      "trace_tracerb_url",
      f.trace_tracerb_url,
    ]]
  ) {
    if (url && (!/^https?:\/\//.test(url) || !URL.canParse(url))) {
      problems.push(`invalid --${flag} "${url}": want an http(s) URL`);
    }
  }
  const liveness = probe(f.livenessProbePath, f.livenessProbeInterval, "liveness", problems);
  const readiness = probe(f.readinessProbePath, f.readinessProbeInterval, "readiness", problems);
  const workers = f.workers ?? 1;
  if (!Number.isInteger(workers) || workers < 0 || workers > 256) {
    problems.push(`--workers must be 0 (one per core) to 256, got ${workers}`);
  }
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze({
    workers: f.singleThreaded ? 1 : workers,
    address,
    monitoringPort: f.monitoringPort,
    maxMessageSize: f.maxMessageSize,
    maxConcurrentStreams: f.maxConcurrentStreams,
    apiWorkerPoolSize: f.singleThreaded ? 1 : f.apiWorkerPoolSize,
    adapterWorkerPoolSize: f.singleThreaded ? 1 : f.adapterWorkerPoolSize,
    singleThreaded: f.singleThreaded,
    configStoreURL: f.configStoreURL,
    configDefaultNamespace: f.configDefaultNamespace,
    profile: f.profile,
    liveness,
    readiness,
    tracing: {
      zipkinUrl: f.trace_tracera_url,
      jaegerUrl: f.trace_tracerb_url,
      logSpans: f.trace_log_spans,
    },
  });
}

/**
 * `toConfig(flags, env)`: the flags of `mesh_ca` turned into a validated, frozen
 * {@link CaConfig}. Pure: no I/O. Contradictory flags are usage errors; flags that the chosen
 * mode ignores become warnings the server logs at start.
 * @module
 */

import { formatDuration } from "../../lib/flags/mod.ts";
import { BACKEND_CHOICES, type BackendChoice } from "../../lib/pki/backend.ts";
import { parseCustomDnsNames } from "../../lib/pki/dns.ts";
import { ConfigError } from "../../lib/flags/config_error.ts";

/** Flags read by {@link toConfig} (the options of the root command). */
export interface CaFlags {
  appendDnsNames: boolean;
  certChain: string;
  caStorageNamespace: string;
  customDnsNames: string;
  enableProfiling: boolean;
  grpcHostIdentities: string;
  grpcHostname: string;
  grpcPort: number;
  keySize: number;
  orchConfig: string;
  listenedNamespace: string;
  livenessProbeInterval: number;
  livenessProbePath: string;
  localStorageDir: string;
  maxWorkloadCertTtl: number;
  monitoringPort: number;
  /** `--monitoring-address` (absent: `0.0.0.0`). */
  monitoringAddress?: string;
  org: string;
  probeCheckInterval: number;
  requestedCaCertTtl: number;
  rootCert: string;
  selfSignedCa: boolean;
  selfSignedCaCertTtl: number;
  selfSignedCaOrg: string;
  signCaCerts: boolean;
  signingBackend: string;
  signingCert: string;
  signingKey: string;
  trustedJwks: string;
  upstreamCaAddress: string;
  workloadCertGracePeriodRatio: number;
  workloadCertMinGracePeriod: number;
  workloadCertTtl: number;
  /** `--workers`: isolates serving the signing API (0 = one per core; absent = 1). */
  workers?: number;
}

/** Environment read by {@link toConfig}. */
export interface CaEnv {
  /** Default of --listened-namespace. */
  NAMESPACE?: string;
  /** Set inside the orchestrator (in-cluster configuration). */
  KUBERNETES_SERVICE_HOST?: string;
  /** Token file presented to the upstream CA (default: the pod's service-account token). */
  MESH_CA_UPSTREAM_TOKEN_FILE?: string;
  /** libcrypto to load instead of `libcrypto.so.3`, then `libcrypto.so` (a file name or path). */
  MESH_CA_LIBCRYPTO?: string;
}

/** Where the CA's key material comes from. */
export type KeyMode =
  | {
    readonly kind: "self-signed";
    readonly org: string;
    readonly ttlMs: number;
    readonly keySize: number;
  }
  | {
    readonly kind: "plugged";
    readonly signingCert: string;
    readonly signingKey: string;
    readonly certChain: string;
    readonly rootCert: string;
  }
  | {
    readonly kind: "upstream";
    /** `host:port` of the upstream mesh_ca. */
    readonly address: string;
    readonly org: string;
    readonly requestedTtlMs: number;
    readonly keySize: number;
    /** Root certificate file of the upstream CA (verifies its TLS server). */
    readonly rootCert: string;
    /** Bearer token file presented to the upstream. */
    readonly tokenFile: string;
  };

/** The validated configuration of mesh_ca. */
export interface CaConfig {
  readonly keys: KeyMode;
  /** --key-size: RSA size of generated keys (roots, workload Secrets, upstream CSRs). */
  readonly keySize: number;
  /** Orchestrator access: kubeconfig path ("" = in-cluster); null = run without one. */
  readonly orchestrator: { readonly kubeconfig: string } | null;
  /** Directory of the CA's own state without an orchestrator ("" with one). */
  readonly localStorageDir: string;
  readonly storageNamespace: string;
  /** Namespace whose service accounts get secrets; "" = all. */
  readonly listenedNamespace: string;
  /** null: gRPC not served. */
  readonly grpcPort: number | null;
  readonly hostIdentities: readonly string[];
  /** JWKS file for bearer JWTs ("" = none). */
  readonly trustedJwks: string;
  readonly workloadTtlMs: number;
  readonly maxTtlMs: number;
  readonly signCaCerts: boolean;
  /** --signing-backend: who signs workload certificates and verifies CSRs. */
  readonly signingBackend: BackendChoice;
  /** Libraries tried for the OpenSSL backend (from $MESH_CA_LIBCRYPTO; undefined: the defaults). */
  readonly libcrypto: readonly string[] | undefined;
  readonly appendDnsNames: boolean;
  readonly customDnsNames: ReadonlyMap<string, readonly string[]>;
  readonly graceRatio: number;
  readonly minGraceMs: number;
  /** null: monitoring off. */
  readonly monitoring:
    | { readonly port: number; readonly profiling: boolean; readonly address: string }
    | null;
  /** null: no liveness probe file. */
  readonly liveness:
    | { readonly path: string; readonly intervalMs: number; readonly checkIntervalMs: number }
    | null;
  /** Things to log at start (ignored or deprecated flags). */
  readonly warnings: readonly string[];
  /** --workers: isolates serving the signing API (0 = one per core, 1 = no worker isolates). */
  readonly workers: number;
}

/** Bad flags: {@link toConfig}'s usage error, shared by every program (lib/flags). */
export { ConfigError };

/** The most `--workers`. */
export const MAX_WORKERS = 256;

const SA_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function checkPort(v: number, flag: string, problems: string[]) {
  if (!Number.isInteger(v) || v < 0 || v > 65535) {
    problems.push(`Invalid value for --${flag}: want a port number from 0 to 65535, got ${v}`);
  }
}

function keyMode(f: CaFlags, env: CaEnv, problems: string[], warnings: string[]): KeyMode {
  const plugged = { signingCert: f.signingCert, signingKey: f.signingKey, rootCert: f.rootCert };
  if (f.selfSignedCa) {
    if (f.upstreamCaAddress) {
      problems.push("Flags --self-signed-ca and --upstream-ca-address contradict: choose one");
    }
    const ignored = ["signing-cert", "signing-key", "cert-chain", "root-cert"].filter((_n, i) =>
      [f.signingCert, f.signingKey, f.certChain, f.rootCert][i]
    );
    if (ignored.length) {
      warnings.push(
        `--self-signed-ca is set: ${ignored.map((n) => `--${n}`).join(", ")} ignored`,
      );
    }
    return {
      kind: "self-signed",
      org: f.selfSignedCaOrg,
      ttlMs: f.selfSignedCaCertTtl,
      keySize: f.keySize,
    };
  }
  if (f.upstreamCaAddress) {
    if (!/^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:.]+\]:\d{1,5}$/.test(f.upstreamCaAddress)) {
      problems.push(
        `Invalid value for --upstream-ca-address: want <host>:<port>, got "${f.upstreamCaAddress}"`,
      );
    }
    if (f.signingCert || f.signingKey || f.certChain) {
      problems.push(
        "Flag --upstream-ca-address gets the signing certificate from the upstream CA: drop " +
          "--signing-cert, --signing-key and --cert-chain",
      );
    }
    if (!f.rootCert) {
      problems.push(
        "Flag --upstream-ca-address needs --root-cert (the upstream CA's root certificate)",
      );
    }
    if (!(f.requestedCaCertTtl > 0)) {
      problems.push("Invalid value for --requested-ca-cert-ttl: must be greater than 0s");
    }
    return {
      kind: "upstream",
      address: f.upstreamCaAddress,
      org: f.org,
      requestedTtlMs: f.requestedCaCertTtl,
      keySize: f.keySize,
      rootCert: f.rootCert,
      tokenFile: env.MESH_CA_UPSTREAM_TOKEN_FILE || SA_TOKEN,
    };
  }
  const missing = Object.entries({
    "signing-cert": plugged.signingCert,
    "signing-key": plugged.signingKey,
    "root-cert": plugged.rootCert,
  }).filter(([, v]) => !v).map(([k]) => `--${k}`);
  if (missing.length) {
    problems.push(
      `No key material: give --self-signed-ca, --upstream-ca-address, or the plugged files ` +
        `(missing ${missing.join(", ")})`,
    );
  }
  return { kind: "plugged", ...plugged, certChain: f.certChain };
}

// long: one check per flag, collecting every problem
/**
 * Validates the flags.
 * @throws ConfigError listing every problem found.
 */
export function toConfig(f: CaFlags, env: CaEnv = {}): CaConfig {
  const problems: string[] = [];
  const warnings: string[] = [];
  const keys = keyMode(f, env, problems, warnings);
  if (!Number.isInteger(f.keySize) || f.keySize < 2048 || f.keySize > 8192 || f.keySize % 8) {
    problems.push(
      `Invalid value for --key-size: want 2048 to 8192 bits, a multiple of 8, got ${f.keySize}`,
    );
  }
  for (
    const [name, v] of [
      ["workload-cert-ttl", f.workloadCertTtl],
      ["max-workload-cert-ttl", f.maxWorkloadCertTtl],
      ["self-signed-ca-cert-ttl", f.selfSignedCaCertTtl],
      ["probe-check-interval", f.probeCheckInterval],
    ] as const
  ) {
    if (!(v > 0)) problems.push(`Invalid value for --${name}: must be greater than 0s`);
  }
  if (f.workloadCertTtl > f.maxWorkloadCertTtl) {
    problems.push(
      `Invalid value for --workload-cert-ttl: ${
        formatDuration(f.workloadCertTtl)
      } is greater than ` +
        `--max-workload-cert-ttl ${formatDuration(f.maxWorkloadCertTtl)}`,
    );
  }
  if (!(f.workloadCertGracePeriodRatio >= 0 && f.workloadCertGracePeriodRatio <= 1)) {
    problems.push(
      `Invalid value for --workload-cert-grace-period-ratio: must be in [0, 1], got ${f.workloadCertGracePeriodRatio}`,
    );
  }
  if (!(f.workloadCertMinGracePeriod >= 0)) {
    problems.push("Invalid value for --workload-cert-min-grace-period: must not be negative");
  }
  checkPort(f.grpcPort, "grpc-port", problems);
  checkPort(f.monitoringPort, "monitoring-port", problems);
  if (f.grpcPort && f.grpcPort === f.monitoringPort) {
    problems.push(`Flags --grpc-port and --monitoring-port must differ (both ${f.grpcPort})`);
  }
  const inCluster = !!env.KUBERNETES_SERVICE_HOST;
  const orchestrator = f.orchConfig || inCluster ? { kubeconfig: f.orchConfig } : null;
  if (!orchestrator && !f.localStorageDir) {
    problems.push(
      "Flag --orch-config is required outside the orchestrator (to run without one, give " +
        "--local-storage-dir)",
    );
  }
  if (orchestrator && f.localStorageDir) {
    warnings.push(
      "--local-storage-dir is ignored with an orchestrator (the CA keeps its root in a Secret)",
    );
  }
  if (orchestrator && f.trustedJwks) {
    problems.push(
      "Flag --trusted-jwks is for running without an orchestrator (with one, tokens are checked " +
        "by a TokenReview)",
    );
  }
  if (f.caStorageNamespace && !NAME.test(f.caStorageNamespace)) {
    problems.push(
      `Invalid value for --ca-storage-namespace: not a valid namespace name: "${f.caStorageNamespace}"`,
    );
  }
  const listened = f.listenedNamespace || env.NAMESPACE || "";
  if (listened && !NAME.test(listened)) {
    problems.push(`Listened namespace "${listened}": not a valid namespace name`);
  }
  const identities = f.grpcHostIdentities.split(",").map((s) => s.trim()).filter(Boolean);
  if (f.grpcHostname !== "mesh-ca") {
    warnings.push("--grpc-hostname is deprecated: use --grpc-host-identities");
    if (f.grpcHostname && !identities.includes(f.grpcHostname)) identities.unshift(f.grpcHostname);
  }
  if (f.grpcPort && !identities.length) {
    problems.push("Invalid value for --grpc-host-identities: name at least one host");
  }
  let customDnsNames = new Map<string, string[]>();
  try {
    customDnsNames = parseCustomDnsNames(f.customDnsNames);
  } catch (e) {
    problems.push(`Flag ${(e as Error).message}`);
  }
  let liveness: CaConfig["liveness"] = null;
  if (f.livenessProbePath || f.livenessProbeInterval) {
    if (!f.livenessProbePath || !(f.livenessProbeInterval > 0)) {
      problems.push(
        "Flags --liveness-probe-path and --liveness-probe-interval go together: give both",
      );
    } else if (!f.grpcPort) {
      problems.push("The liveness probe checks the gRPC API: it needs --grpc-port");
    } else {
      liveness = {
        path: f.livenessProbePath,
        intervalMs: f.livenessProbeInterval,
        checkIntervalMs: f.probeCheckInterval,
      };
    }
  }
  const signingBackend = f.signingBackend as BackendChoice;
  if (!BACKEND_CHOICES.includes(signingBackend)) {
    problems.push(
      `Invalid value for --signing-backend: want one of ${BACKEND_CHOICES.join(", ")}, got ` +
        `"${f.signingBackend}"`,
    );
  }
  if (f.enableProfiling && !f.monitoringPort) {
    warnings.push("--enable-profiling has no effect without --monitoring-port");
  }
  const workers = f.workers ?? 1;
  if (!Number.isInteger(workers) || workers < 0 || workers > MAX_WORKERS) {
    problems.push(
      `Invalid value for --workers: want 0 (one per core) to ${MAX_WORKERS}, got ${workers}`,
    );
  }
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze({
    workers,
    keys: Object.freeze(keys),
    keySize: f.keySize,
    orchestrator,
    localStorageDir: orchestrator ? "" : f.localStorageDir,
    storageNamespace: f.caStorageNamespace,
    listenedNamespace: listened,
    grpcPort: f.grpcPort || null,
    hostIdentities: Object.freeze(identities),
    trustedJwks: f.trustedJwks,
    workloadTtlMs: f.workloadCertTtl,
    maxTtlMs: f.maxWorkloadCertTtl,
    signCaCerts: f.signCaCerts,
    signingBackend,
    libcrypto: env.MESH_CA_LIBCRYPTO ? Object.freeze([env.MESH_CA_LIBCRYPTO]) : undefined,
    appendDnsNames: f.appendDnsNames,
    customDnsNames,
    graceRatio: f.workloadCertGracePeriodRatio,
    minGraceMs: f.workloadCertMinGracePeriod,
    monitoring: f.monitoringPort
      ? {
        port: f.monitoringPort,
        profiling: f.enableProfiling,
        address: f.monitoringAddress || "0.0.0.0",
      }
      : null,
    liveness,
    warnings: Object.freeze(warnings),
  });
}

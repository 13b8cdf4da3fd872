/**
 * sidecar-injector's configuration: flags (and the environment, read once by the CLI) turned
 * into a checked, frozen config by the pure {@link toConfig}.
 * @module
 */

import { ConfigError } from "../../lib/flags/config_error.ts";

/** The flags of the server, as the CLI parsed them (durations in ms). */
export interface InjectorFlags {
  caCertFile: string;
  healthCheckFile: string;
  healthCheckInterval: number;
  injectConfig: string;
  orchconfig: string;
  meshConfig: string;
  port: number;
  tlsCertFile: string;
  tlsKeyFile: string;
  webhookConfigName: string;
  webhookName: string;
}

/** What the server reads from the environment. */
export interface InjectorEnv {
  /** Set inside the orchestrator (in-cluster configuration). */
  KUBERNETES_SERVICE_HOST?: string;
}

/** The checked configuration. */
export interface InjectorConfig {
  readonly port: number;
  /** Address to listen on (default every interface). */
  readonly hostname: string;
  readonly tlsCertFile: string;
  readonly tlsKeyFile: string;
  readonly caCertFile: string;
  readonly injectConfigFile: string;
  readonly meshConfigFile: string;
  /** Kubeconfig path; "" = in-cluster configuration. */
  readonly orchconfig: string;
  readonly webhookConfigName: string;
  readonly webhookName: string;
  /** "" = no health file. */
  readonly healthCheckFile: string;
  readonly healthCheckIntervalMs: number;
}

/** Bad flags: {@link toConfig}'s usage error, shared by every program (lib/flags). */
export { ConfigError };

/**
 * Checks the flags: `--port` 0-65535; `--tlsCertFile`, `--tlsKeyFile`, `--injectConfig` set;
 * `--healthCheckFile` and `--healthCheckInterval` together; outside the orchestrator
 * (`KUBERNETES_SERVICE_HOST` unset) `--orchconfig` is required. Throws {@link ConfigError}.
 */
export function toConfig(flags: InjectorFlags, env: InjectorEnv): InjectorConfig {
  const problems: string[] = [];
  if (!Number.isInteger(flags.port) || flags.port < 0 || flags.port > 65535) {
    problems.push(`--port: must be 0-65535, got ${flags.port}`);
  }
  for (const k of ["tlsCertFile", "tlsKeyFile", "injectConfig", "webhookConfigName"] as const) {
    if (!flags[k]) problems.push(`--${k}: must not be empty`);
  }
  if (!flags.webhookName) problems.push("--webhookName: must not be empty");
  const file = flags.healthCheckFile !== "";
  const interval = flags.healthCheckInterval > 0;
  if (file !== interval) {
    problems.push(
      "--healthCheckFile and --healthCheckInterval must be given together (a file and a " +
        "positive interval)",
    );
  }
  if (!flags.orchconfig && !env.KUBERNETES_SERVICE_HOST) {
    problems.push(
      "--orchconfig is required when not running inside the orchestrator " +
        "(KUBERNETES_SERVICE_HOST is not set)",
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    port: flags.port,
    hostname: "0.0.0.0",
    tlsCertFile: flags.tlsCertFile,
    tlsKeyFile: flags.tlsKeyFile,
    caCertFile: flags.caCertFile,
    injectConfigFile: flags.injectConfig,
    meshConfigFile: flags.meshConfig,
    orchconfig: flags.orchconfig,
    webhookConfigName: flags.webhookConfigName,
    webhookName: flags.webhookName,
    healthCheckFile: flags.healthCheckFile,
    healthCheckIntervalMs: flags.healthCheckInterval,
  });
}

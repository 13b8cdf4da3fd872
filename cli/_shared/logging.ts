/**
 * Turns the logging flags (group L) into lib/log's `LogOptions` and configures logging once per
 * run. The one place where flag values become logging configuration.
 * @module
 */

import { type LogLevel, parseLogLevels, parseLogScopes } from "../../lib/flags/mod.ts";

/** Mirror of lib/log's `LogOptions` (the argument of `configureLogging`). */
export interface LogOptions {
  asJson: boolean;
  caller: string[];
  outputLevels: Record<string, LogLevel>;
  stacktraceLevels: Record<string, LogLevel>;
  rotate: string;
  rotateMaxAgeDays: number;
  rotateMaxBackups: number;
  rotateMaxSizeMB: number;
  targets: string[];
  scopes: string[];
}

/** Values of group L as a command's options object holds them. */
export interface LoggingFlagValues {
  readonly log_as_json: boolean;
  readonly log_caller: string;
  readonly log_output_level: string;
  readonly log_rotate: string;
  readonly log_rotate_max_age: number;
  readonly log_rotate_max_backups: number;
  readonly log_rotate_max_size: number;
  readonly log_stacktrace_level: string;
  readonly log_target: readonly string[];
}

/**
 * Builds `LogOptions` from group L values and the program's scopes.
 * @throws {Error} for a bad level or scope (already rejected while parsing flags).
 */
export function toLogOptions(v: LoggingFlagValues, scopes: readonly string[]): LogOptions {
  return {
    asJson: v.log_as_json,
    caller: parseLogScopes(v.log_caller, scopes, "log_caller"),
    outputLevels: parseLogLevels(v.log_output_level, scopes, "log_output_level"),
    stacktraceLevels: parseLogLevels(v.log_stacktrace_level, scopes, "log_stacktrace_level"),
    rotate: v.log_rotate,
    rotateMaxAgeDays: v.log_rotate_max_age,
    rotateMaxBackups: v.log_rotate_max_backups,
    rotateMaxSizeMB: v.log_rotate_max_size,
    targets: [...v.log_target],
    scopes: [...scopes],
  };
}

/** Handle returned by {@link startLogging}. */
export interface LoggingHandle {
  /** Flushes and closes log sinks. */
  dispose(): Promise<void>;
}

type Configure = (opts: LogOptions) => Promise<LoggingHandle>;

/**
 * Configures logging through lib/log's `configureLogging` (loaded lazily). Adapter: while
 * lib/log does not export `configureLogging`, logging keeps lib/log's built-in behaviour.
 */
export async function startLogging(options: LogOptions): Promise<LoggingHandle> {
  const log = await import("../../lib/log/mod.ts") as Record<string, unknown>;
  const configure = log.configureLogging as Configure | undefined;
  if (typeof configure !== "function") return { dispose: () => Promise.resolve() };
  return await configure(options);
}

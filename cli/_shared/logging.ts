/**
 * Turns the logging flags (group L) into lib/log's `LogOptions` (the runner passes them to
 * `configureLogging` once per run). The one place where flag values become logging
 * configuration.
 * @module
 */

import type { LogOptions } from "../../lib/log/mod.ts";
import { parseLevels, parseScopes } from "../../lib/log/levels.ts";

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
    caller: parseScopes(v.log_caller, [...scopes], "--log_caller"),
    outputLevels: parseLevels(v.log_output_level, [...scopes], "--log_output_level"),
    stacktraceLevels: parseLevels(v.log_stacktrace_level, [...scopes], "--log_stacktrace_level"),
    rotate: v.log_rotate,
    rotateMaxAgeDays: v.log_rotate_max_age,
    rotateMaxBackups: v.log_rotate_max_backups,
    rotateMaxSizeMB: v.log_rotate_max_size,
    targets: [...v.log_target],
    scopes: [...scopes],
  };
}

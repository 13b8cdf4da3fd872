/**
 * Flag groups shared by several programs: logging (group L of the spec, per program scopes),
 * introspection (group I), the probe flags and the version flag; and the `probe` and `version`
 * commands that take them.
 * @module
 */

import { lazyCommand } from "./lazy.ts";
import {
  type AnyFlag,
  bool,
  duration,
  flag,
  int,
  refine,
  string,
  stringArray,
  uint16,
} from "../../lib/flags/mod.ts";
import { parseLevels, parseScopes } from "../../lib/log/levels.ts";
import { command, type CommandSpec } from "./command.ts";

/** A named set of flags that several commands accept (rendered once in the README). */
export interface FlagGroup<F extends readonly AnyFlag[] = readonly AnyFlag[]> {
  /** Short id (`L`, `I`, `probe`, `version`, `meshctl-global`...). */
  readonly id: string;
  /** Title in the README. */
  readonly title: string;
  /** Heading in `--help` (ends with a colon). */
  readonly heading: string;
  /** The flags. */
  readonly flags: F;
}

/** Log scopes of each program (spec, "Scope variants of L"). */
export const LOG_SCOPES = {
  "mesh-discovery": ["ads", "default"],
  "mesh-policy": ["adapters", "api", "attributes", "default"],
  "sidecar-injector": ["default"],
  "mesh-agent": ["default"],
  meshctl: ["default"],
  mesh_ca: ["default"],
} as const;

/** An int flag that must not be negative (the rotation limits, where 0 means "no limit"). */
const nonNegativeInt = refine(int, (v) => {
  if (v < 0) throw new Error(`must not be negative, got ${v}`);
});

/** `--log_target`: each occurrence is `stdout`, `stderr` or a non-empty path. */
const logTargets = refine(stringArray, (v) => {
  if (v.some((t) => t.trim() === "")) {
    throw new Error("empty target (want stdout, stderr or a file path)");
  }
});

/** Logging flags (group L) validating levels and scopes against `scopes`. */
export function loggingGroup(scopes: readonly string[]) {
  const levels = (name: string) =>
    refine(string, (v) => {
      parseLevels(v, [...scopes], `--${name}`);
    });
  const list = scopes.join(", ");
  const levelForm = scopes.length === 1
    ? `a level (debug, info, warn, error, none), or <scope>:<level> pairs (scopes: ${list})`
    : "comma-separated <scope>:<level> pairs; a plain level applies to the scopes not named " +
      `(scopes: ${list}; levels: debug, info, warn, error, none)`;
  const flags = [
    flag({
      name: "log_as_json",
      type: bool,
      default: false,
      help: "Format output as JSON instead of plain console format.",
    }),
    flag({
      name: "log_caller",
      type: refine(string, (v) => {
        parseScopes(v, [...scopes], "--log_caller");
      }),
      default: "",
      help: `Comma-separated scopes for which caller information is included (scopes: ${list}).`,
    }),
    flag({
      name: "log_output_level",
      type: levels("log_output_level"),
      default: "default:info",
      help: `Minimum level of output: ${levelForm}.`,
    }),
    flag({
      name: "log_rotate",
      type: string,
      default: "",
      help: "Path of the optional rotating log file.",
    }),
    flag({
      name: "log_rotate_max_age",
      type: nonNegativeInt,
      default: 30,
      help: "Max age in days before rotation; 0 means no limit.",
    }),
    flag({
      name: "log_rotate_max_backups",
      type: nonNegativeInt,
      default: 1000,
      help: "Max backup files kept; 0 means no limit.",
    }),
    flag({
      name: "log_rotate_max_size",
      type: nonNegativeInt,
      default: 104857600,
      help: "Max size (megabytes) before rotation.",
    }),
    flag({
      name: "log_stacktrace_level",
      type: levels("log_stacktrace_level"),
      default: "default:none",
      help: `Minimum level at which stack traces are captured: ${levelForm}.`,
    }),
    flag({
      name: "log_target",
      type: logTargets,
      default: ["stdout"],
      help: "Output paths; any path, or the special values stdout, stderr.",
    }),
  ] as const;
  return { id: "L", title: "Logging flags (L)", heading: "Logging flags (L):", flags } as const;
}

/** Introspection flags (group I). */
export const introspectionGroup = {
  id: "I",
  title: "Introspection flags (I)",
  heading: "Introspection flags (I):",
  flags: [
    flag({
      name: "ctrlz_address",
      type: string,
      default: "127.0.0.1",
      help: "Address of the introspection facility; * means all IPv4 addresses (0.0.0.0).",
    }),
    flag({
      name: "ctrlz_port",
      type: uint16,
      default: 9876,
      help: "Port of the introspection facility.",
    }),
  ] as const,
} as const;

/** Flags of every `probe` subcommand. */
export const probeGroup = {
  id: "probe",
  title: "Probe flags",
  heading: "Probe flags:",
  flags: [
    flag({
      name: "interval",
      type: duration,
      default: 0,
      help: "Duration used for checking the target file's last-modified time; 0s only checks " +
        "that the file exists.",
    }),
    flag({
      name: "probe-path",
      type: string,
      default: "",
      help: "Path of the file checked for availability.",
    }),
  ] as const,
} as const;

/** Flags of every `version` subcommand. */
export const versionGroup = {
  id: "version",
  title: "Version flags",
  heading: "Version flags:",
  flags: [
    flag({
      name: "short",
      short: "s",
      type: bool,
      default: false,
      help: "Print the short form of the version information.",
    }),
  ] as const,
} as const;

/** The `version` command of every program; it also accepts `groups` (after the version flag). */
export function versionCommand(...groups: readonly FlagGroup[]): CommandSpec {
  return command({
    name: "version",
    summary: "Prints build version information.",
    groups: [versionGroup, ...groups],
    load: lazyCommand<typeof import("./version_cmd.ts")>("./version_cmd.ts", import.meta.url),
  });
}

/** The `probe` command of the servers; it also accepts `groups` (after the probe flags). */
export function probeCommand(...groups: readonly FlagGroup[]): CommandSpec {
  return command({
    name: "probe",
    summary: "Checks the liveness or readiness of a locally running server.",
    groups: [probeGroup, ...groups],
    load: lazyCommand<typeof import("./probe_cmd.ts")>("./probe_cmd.ts", import.meta.url),
  });
}

/**
 * Validation of the logging flag values (`--log_output_level`, `--log_stacktrace_level`,
 * `--log_caller`) against a program's scopes.
 * @module
 */

/** Log levels accepted by the level flags, lowest first. */
export const LOG_LEVELS = ["debug", "info", "warn", "error", "none"] as const;

/** One log level. */
export type LogLevel = typeof LOG_LEVELS[number];

/**
 * Parses `<scope>:<level>,<scope>:<level>,...`; a bare `<level>` applies to scope `default`.
 * Later entries win.
 *
 * @example
 * ```ts
 * import { parseLogLevels } from "./levels.ts";
 * parseLogLevels("ads:debug,default:warn", ["ads", "default"], "log_output_level");
 * // { ads: "debug", default: "warn" }
 * ```
 * @throws {Error} naming the flag and the bad level or scope.
 */
export function parseLogLevels(
  value: string,
  scopes: readonly string[],
  flag: string,
): Record<string, LogLevel> {
  const out: Record<string, LogLevel> = {};
  if (value.trim() === "") return out;
  for (const raw of value.split(",")) {
    const item = raw.trim();
    const colon = item.lastIndexOf(":");
    const scope = colon === -1 ? "default" : item.slice(0, colon);
    const level = colon === -1 ? item : item.slice(colon + 1);
    if (!scopes.includes(scope)) {
      throw new Error(
        `Invalid scope ${JSON.stringify(scope)} in --${flag} ${JSON.stringify(value)}: ` +
          `known scopes are ${scopes.join(", ")}`,
      );
    }
    if (!(LOG_LEVELS as readonly string[]).includes(level)) {
      throw new Error(
        `Invalid level ${JSON.stringify(level)} in --${flag} ${JSON.stringify(value)}: ` +
          `levels are ${LOG_LEVELS.join(", ")}`,
      );
    }
    out[scope] = level as LogLevel;
  }
  return out;
}

/**
 * Parses a comma-separated scope list (`--log_caller`); empty text gives an empty list.
 * @throws {Error} naming the flag and the unknown scope.
 */
export function parseLogScopes(value: string, scopes: readonly string[], flag: string): string[] {
  if (value.trim() === "") return [];
  const out: string[] = [];
  for (const raw of value.split(",")) {
    const scope = raw.trim();
    if (!scopes.includes(scope)) {
      throw new Error(
        `Invalid scope ${JSON.stringify(scope)} in --${flag} ${JSON.stringify(value)}: ` +
          `known scopes are ${scopes.join(", ")}`,
      );
    }
    if (!out.includes(scope)) out.push(scope);
  }
  return out;
}

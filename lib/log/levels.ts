/**
 * Log levels and the parsers for the level and scope flags of group L.
 * @module
 */

/** A log level; `none` silences a scope (as output level) or disables stack traces. */
export type Level = "debug" | "info" | "warn" | "error" | "none";

/** All levels, from the most to the least verbose. */
export const LEVELS: readonly Level[] = ["debug", "info", "warn", "error", "none"];

const RANK: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3, none: 4 };

/** Returns true when `value` names a level. */
export function isLevel(value: unknown): value is Level {
  return typeof value === "string" && Object.hasOwn(RANK, value);
}

/**
 * Returns true when a record of level `record` passes the threshold `min`.
 * Nothing passes `none`.
 */
export function levelEnabled(record: Exclude<Level, "none">, min: Level): boolean {
  return min !== "none" && RANK[record] >= RANK[min];
}

/** The one-line description of a bad level, shared by the flag parser and ctrlz. */
export function unknownLevelMessage(level: string): string {
  return `unknown level "${level}" (want debug, info, warn, error or none)`;
}

/**
 * Parses `--log_output_level` / `--log_stacktrace_level`.
 *
 * Accepts a comma-separated list whose elements are either `<scope>:<level>` or a plain
 * `<level>`. A plain level applies to every scope of `scopes` that the value does not name
 * explicitly, wherever it stands in the list: `debug,ads:info` and `ads:info,debug` both give
 * `ads` info and every other scope debug. When the same scope (or several plain levels) appear
 * more than once, the later element wins. Without a plain level the result holds only the scopes
 * the value names; callers merge it over their defaults (`info` / `none`).
 *
 * @example
 * ```ts
 * parseLevels("ads:debug,default:info", ["ads", "default"], "--log_output_level");
 * // => { ads: "debug", default: "info" }
 * parseLevels("api:debug,warn", ["adapters", "api", "default"], "--log_output_level");
 * // => { adapters: "warn", api: "debug", default: "warn" }
 * ```
 * @throws Error with a one-line message naming `flag` and the problem.
 */
export function parseLevels(value: string, scopes: string[], flag: string): Record<string, Level> {
  const fail = (problem: string): never => {
    throw new Error(`Invalid value "${value}" for ${flag}: ${problem}`);
  };
  const named: Record<string, Level> = {};
  let plain: Level | undefined;
  if (value.trim() === "") fail("empty value");
  for (const raw of value.split(",")) {
    const item = raw.trim();
    if (item === "") fail("empty element");
    const colon = item.lastIndexOf(":");
    const scope = colon >= 0 ? item.slice(0, colon).trim() : undefined;
    const level = (colon >= 0 ? item.slice(colon + 1) : item).trim();
    if (!isLevel(level)) fail(unknownLevelMessage(level));
    if (scope === undefined) {
      plain = level as Level;
    } else {
      if (!scopes.includes(scope)) fail(unknownScopeMessage(scope, scopes));
      named[scope] = level as Level;
    }
  }
  const out: Record<string, Level> = {};
  for (const s of scopes) {
    const level = named[s] ?? plain;
    if (level !== undefined) out[s] = level;
  }
  return out;
}

/**
 * Parses `--log_caller`: a comma-separated list of scopes (empty means none).
 * @throws Error with a one-line message naming `flag` and the unknown scope.
 */
export function parseScopes(value: string, scopes: string[], flag: string): string[] {
  const out: string[] = [];
  for (const raw of value.split(",")) {
    const s = raw.trim();
    if (s === "") continue;
    if (!scopes.includes(s)) {
      throw new Error(`Invalid value "${value}" for ${flag}: ${unknownScopeMessage(s, scopes)}`);
    }
    if (!out.includes(s)) out.push(s);
  }
  return out;
}

/** The one-line description of an unknown scope. */
export function unknownScopeMessage(scope: string, scopes: Iterable<string>): string {
  return `unknown scope "${scope}" (scopes: ${[...scopes].sort().join(", ")})`;
}

/**
 * Flags for every program: value types ({@link FlagType}), a declarative flag spec
 * ({@link FlagSpec}), the typed options object a command receives ({@link OptionsOf}) and a
 * builder that turns a flag table into commander options ({@link addFlags}).
 *
 * @example
 * ```ts
 * import { duration, flag, type OptionsOf, uint16 } from "./mod.ts";
 * const table = [
 *   flag({ name: "ctrlz_port", type: uint16, default: 9876, help: "Port of the introspection facility." }),
 *   flag({ name: "resync", type: duration, default: 60_000, help: "Controller resync interval." }),
 * ] as const;
 * type Options = OptionsOf<typeof table[number]>; // { ctrlz_port: number; resync: number }
 * ```
 * @module
 */

import { Option } from "../deps/commander.ts";
import type { FlagType } from "./types.ts";

export * from "./types.ts";
export { formatDuration, parseDuration } from "./duration.ts";
export { listenHost } from "./listen_host.ts";

/** One flag: exact name (without dashes), optional one-letter short form, type and default. */
export interface FlagSpec<T = unknown, N extends string = string> {
  /** Name exactly as the spec writes it, without leading dashes (`configDir`, `log_target`, `key-size`). */
  readonly name: N;
  /** One-letter short form without the dash (`n` for `-n`). */
  readonly short?: string;
  /** Value type. */
  readonly type: FlagType<T>;
  /** Value used when the flag is not given. */
  readonly default: T;
  /**
   * Default as shown in help and the README when it differs from `type.format(default)` (for
   * example a default computed at run time). Empty string: show no default.
   */
  readonly defaultText?: string;
  /** One-sentence meaning. */
  readonly help: string;
  /** Accepted but not shown in help or the README. */
  readonly hidden?: boolean;
}

// deno-lint-ignore no-explicit-any
export type AnyFlag = FlagSpec<any, string>;

/**
 * Declares a flag, keeping its literal name for {@link OptionsOf}.
 * @example
 * ```ts
 * import { flag, string } from "./mod.ts";
 * flag({ name: "meshNamespace", short: "i", type: string, default: "mesh-system", help: "Mesh system namespace." });
 * ```
 */
export function flag<const N extends string, T>(spec: {
  name: N;
  short?: string;
  type: FlagType<T>;
  default: NoInfer<T>;
  defaultText?: string;
  help: string;
  hidden?: boolean;
}): FlagSpec<T, N> {
  if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(spec.name)) {
    throw new Error(`Invalid flag name ${JSON.stringify(spec.name)}`);
  }
  if (spec.short !== undefined && !/^[A-Za-z]$/.test(spec.short)) {
    throw new Error(`Invalid short form ${JSON.stringify(spec.short)} of flag --${spec.name}`);
  }
  return Object.freeze({ ...spec });
}

/** `probe-path` → `probePath`; snake_case and camelCase names stay as they are. */
export type CamelCase<S extends string> = S extends `${infer A}-${infer B}`
  ? `${A}${Capitalize<CamelCase<B>>}`
  : S;

/** Runtime twin of {@link CamelCase}: the key of a flag in an options object. */
export function optionKey(name: string): string {
  return name.replace(/-([a-zA-Z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * The options object for a union of flag specs: one key per flag (kebab-case names become
 * camelCase: `--probe-path` → `probePath`), typed by the flag's value type. Durations are
 * milliseconds.
 */
export type OptionsOf<S extends AnyFlag> = {
  readonly [F in S as CamelCase<F["name"]>]: F extends FlagSpec<infer T, string> ? T : never;
};

/** The default as help and the README show it; empty when there is nothing worth showing. */
export function defaultText(spec: AnyFlag): string {
  if (spec.defaultText !== undefined) return spec.defaultText;
  if (spec.type.isBool && spec.default === false) return "";
  if (spec.type.name === "string" && spec.default === "") return "";
  return spec.type.format(spec.default);
}

/** Raised for a flag value that does not parse; the message names the flag and the problem. */
export class FlagValueError extends Error {
  /** Creates the error for flag `--name` (or `-x, --name`) and the parser's reason. */
  constructor(readonly flagName: string, reason: string) {
    // Parsers that already name the flag (log levels) are not prefixed twice.
    super(reason.includes(`--${flagName}`) ? reason : `Invalid value for --${flagName}: ${reason}`);
    this.name = "FlagValueError";
  }
}

/** A store for parsed values of one command: filled while parsing, read after. */
export type FlagValues = Map<string, unknown>;

/** Metadata attached to each commander option built by {@link addFlags}, for help rendering. */
export const FLAG_SPEC: unique symbol = Symbol("mesh.flagSpec");

/** A commander option carrying its flag spec. */
export type SpecOption = Option & { [FLAG_SPEC]?: AnyFlag };

/**
 * Builds commander options for a flag table and adds them to `cmd`. Parsed values go into
 * `values` (keyed by flag name); a bad value throws {@link FlagValueError}. Boolean flags are
 * declared with an optional value so `--f=false` works; call {@link normalizeBoolArgs} on the
 * arguments of the command first so a bare `--f` never swallows the next argument.
 *
 * `helpGroup` puts the flags under their own heading in help (`Logging flags (L):`).
 */
export function addFlags(
  cmd: { addOption(option: Option): unknown },
  specs: readonly AnyFlag[],
  values: FlagValues,
  helpGroup?: string,
): void {
  for (const spec of specs) {
    const short = spec.short ? `-${spec.short}, ` : "";
    const value = spec.type.isBool ? "[bool]" : `<${spec.type.name}>`;
    const option: SpecOption = new Option(`${short}--${spec.name} ${value}`, spec.help);
    option.argParser((text: string) => {
      let parsed: unknown;
      try {
        // Bare boolean flags arrive here as "true" (see normalizeBoolArgs).
        parsed = spec.type.parse(text, values.get(spec.name) as never);
      } catch (err) {
        throw new FlagValueError(spec.name, err instanceof Error ? err.message : String(err));
      }
      values.set(spec.name, parsed);
      return parsed;
    });
    if (spec.hidden) option.hideHelp();
    if (helpGroup) option.helpGroup(helpGroup);
    option[FLAG_SPEC] = spec;
    cmd.addOption(option);
  }
}

/**
 * Rewrites the arguments of one command so that bare boolean flags (`--profile`, `-s`) become
 * `--profile=true`, matching Go's flag package: a boolean takes a value only after `=`.
 * Stops at `--`.
 */
export function normalizeBoolArgs(args: readonly string[], specs: readonly AnyFlag[]): string[] {
  const byToken = new Map<string, string>();
  for (const s of specs) {
    if (!s.type.isBool) continue;
    byToken.set(`--${s.name}`, s.name);
    if (s.short) byToken.set(`-${s.short}`, s.name);
  }
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") {
      out.push(...args.slice(i));
      break;
    }
    const name = byToken.get(a);
    out.push(name === undefined ? a : `--${name}=true`);
  }
  return out;
}

/**
 * Fills an options object from parsed values (first map that has a flag wins) and defaults.
 * Keys are {@link optionKey}s.
 */
export function resolveOptions(
  specs: readonly AnyFlag[],
  sources: readonly FlagValues[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const spec of specs) {
    const found = sources.find((m) => m.has(spec.name));
    const value = found ? found.get(spec.name) : spec.default;
    out[optionKey(spec.name)] = Array.isArray(value) ? Object.freeze([...value]) : value;
  }
  return Object.freeze(out);
}

export { ConfigError } from "./config_error.ts";

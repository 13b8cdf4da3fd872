/**
 * Logging for every program (flag group L), built on @logtape/logtape and @logtape/file.
 *
 * - {@link getLogger} returns a scoped logger; it works before {@link configureLogging} (records
 *   of level info and above go to stderr in console format) and after it.
 * - {@link configureLogging} applies the group L options: console or JSON format, caller and
 *   stack trace per scope, several targets (`stdout`, `stderr`, file paths opened for append)
 *   and the optional rotating file.
 * - Levels are per scope and can change at run time ({@link setScopeLevel}, used by ctrlz);
 *   a change applies to the next record.
 *
 * @example
 * ```ts
 * import { configureLogging, defaultLogOptions, getLogger } from "./mod.ts";
 * const logging = await configureLogging({ ...defaultLogOptions(["ads", "default"]), asJson: true });
 * getLogger("ads").info("push", { proxies: 3 });
 * await logging.dispose();
 * ```
 * @module
 */

import {
  configure,
  getLogger as getLogtapeLogger,
  type LogRecord,
  reset,
} from "../deps/logtape.ts";
import type { Logger as LogtapeLogger, LogLevel as LogtapeLevel, Sink } from "../deps/logtape.ts";
import {
  type Entry,
  entryOf,
  formatConsole,
  formatJson,
  META_KEY,
  type RecordLevel,
  type RecordMeta,
} from "./format.ts";
import {
  isLevel,
  type Level,
  levelEnabled,
  unknownLevelMessage,
  unknownScopeMessage,
} from "./levels.ts";
import { callerOf, stackOf } from "./stack.ts";

export { isLevel, type Level, LEVELS, parseLevels, parseScopes } from "./levels.ts";
export { formatConsole, formatJson } from "./format.ts";

/** A scoped logger. `props` are structured fields shown after the message (JSON: extra keys). */
export interface Logger {
  debug(msg: string, props?: Record<string, unknown>): void;
  info(msg: string, props?: Record<string, unknown>): void;
  warn(msg: string, props?: Record<string, unknown>): void;
  error(msg: string, props?: Record<string, unknown>): void;
}

/** The options of flag group L, after parsing. */
export interface LogOptions {
  /** `--log_as_json`: one JSON object per line instead of the console format. */
  asJson: boolean;
  /** `--log_caller`: scopes whose records carry the call site (`file:line`). */
  caller: string[];
  /** `--log_output_level`: minimum level per scope; scopes not listed use `info`. */
  outputLevels: Record<string, Level>;
  /** `--log_stacktrace_level`: records at or above this level carry a stack; default `none`. */
  stacktraceLevels: Record<string, Level>;
  /** `--log_rotate`: path of the rotating log file; empty for none. */
  rotate: string;
  /** `--log_rotate_max_age`: days after which backups are removed; 0 = no limit. */
  rotateMaxAgeDays: number;
  /** `--log_rotate_max_backups`: backups kept; 0 = no limit. */
  rotateMaxBackups: number;
  /** `--log_rotate_max_size`: size in megabytes (MiB) before rotation; 0 means 100. */
  rotateMaxSizeMB: number;
  /** Overrides `rotateMaxSizeMB` with an exact byte count (tests use small files). */
  rotateMaxSizeBytes?: number;
  /** `--log_target`: `stdout`, `stderr` or file paths (appended to). */
  targets: string[];
  /** The program's scopes (e.g. `["ads", "default"]`). */
  scopes: string[];
}

/** The group L defaults of the spec for a program with the given scopes. */
export function defaultLogOptions(scopes: string[]): LogOptions {
  return {
    asJson: false,
    caller: [],
    outputLevels: Object.fromEntries(scopes.map((s) => [s, "info" as Level])),
    stacktraceLevels: Object.fromEntries(scopes.map((s) => [s, "none" as Level])),
    rotate: "",
    rotateMaxAgeDays: 30,
    rotateMaxBackups: 1000,
    rotateMaxSizeMB: 104857600,
    targets: ["stdout"],
    scopes: [...scopes],
  };
}

/** Returned by {@link configureLogging}. */
export interface LoggingHandle {
  /** Flushes and closes every sink; later records go to stderr again. Idempotent. */
  dispose(): Promise<void>;
}

/** A scope and its current settings, as ctrlz shows them. */
export interface ScopeInfo {
  name: string;
  outputLevel: Level;
  stackTraceLevel: Level;
  logCallers: boolean;
}

const LOGTAPE_LEVEL: Record<RecordLevel, LogtapeLevel> = {
  debug: "debug",
  info: "info",
  warn: "warning",
  error: "error",
};
const MiB = 1024 * 1024;
const encoder = new TextEncoder();

const state = {
  output: new Map<string, Level>(),
  stack: new Map<string, Level>(),
  caller: new Set<string>(),
  scopes: new Set<string>(["default"]),
  /** Generation of the active configuration; 0 when unconfigured. */
  active: 0,
  generation: 0,
  logtape: new Map<string, LogtapeLogger>(),
  loggers: new Map<string, Logger>(),
  /** Called after an output level changed at run time ({@link onOutputLevelChange}). */
  levelListeners: new Set<() => void>(),
};

function outputLevel(scope: string): Level {
  return state.output.get(scope) ?? state.output.get("default") ?? "info";
}

function stackTraceLevel(scope: string): Level {
  return state.stack.get(scope) ?? state.stack.get("default") ?? "none";
}

function writeAll(w: { writeSync(p: Uint8Array): number }, text: string): void {
  const data = encoder.encode(text);
  try {
    let off = 0;
    while (off < data.length) off += w.writeSync(data.subarray(off));
  } catch {
    // A closed stdout/stderr must not crash the program that logs.
  }
}

function emit(scope: string, level: RecordLevel, msg: string, props?: Record<string, unknown>) {
  if (!levelEnabled(level, outputLevel(scope))) return;
  const meta: RecordMeta = { scope, level };
  const wantCaller = state.caller.has(scope);
  const wantStack = levelEnabled(level, stackTraceLevel(scope));
  if (wantCaller || wantStack) {
    const trace = new Error().stack;
    if (wantCaller) meta.caller = callerOf(trace);
    if (wantStack) meta.stack = stackOf(trace);
  }
  const time = Date.now();
  if (state.active === 0) {
    const e: Entry = { time, msg, props: props ?? {}, ...meta };
    writeAll(Deno.stderr, formatConsole(e));
    return;
  }
  let lt = state.logtape.get(scope);
  if (!lt) {
    lt = getLogtapeLogger(["mesh", scope]);
    state.logtape.set(scope, lt);
  }
  lt.emit({
    level: LOGTAPE_LEVEL[level],
    message: [msg],
    rawMessage: msg,
    timestamp: time,
    properties: { ...props, [META_KEY]: meta },
  });
}

/** Returns the logger of a scope ("default", "ads", "api", ...). Cheap; call at use sites. */
export function getLogger(scope = "default"): Logger {
  let l = state.loggers.get(scope);
  if (!l) {
    state.scopes.add(scope);
    l = {
      debug: (msg, props) => emit(scope, "debug", msg, props),
      info: (msg, props) => emit(scope, "info", msg, props),
      warn: (msg, props) => emit(scope, "warn", msg, props),
      error: (msg, props) => emit(scope, "error", msg, props),
    };
    state.loggers.set(scope, l);
  }
  return l;
}

/** Makes scopes known (listed by {@link scopeLevels}, changeable at run time). */
export function registerScopes(scopes: Iterable<string>): void {
  for (const s of scopes) state.scopes.add(s);
}

function checkScopeAndLevel(scope: string, level: string): asserts level is Level {
  if (!state.scopes.has(scope)) throw new Error(unknownScopeMessage(scope, state.scopes));
  if (!isLevel(level)) throw new Error(unknownLevelMessage(level));
}

/**
 * Changes the output level of a known scope; applies to the next record.
 * @throws Error when the scope is unknown or the level invalid.
 */
export function setScopeLevel(scope: string, level: Level | string): void {
  checkScopeAndLevel(scope, level);
  state.output.set(scope, level);
  for (const fn of state.levelListeners) fn();
}

/**
 * Calls `fn` after every run-time change of a scope's output level ({@link setScopeLevel}, e.g.
 * from ctrlz), so that loggers elsewhere (worker isolates) can follow; returns the unsubscribe.
 */
export function onOutputLevelChange(fn: () => void): () => void {
  state.levelListeners.add(fn);
  return () => state.levelListeners.delete(fn);
}

/**
 * Changes the stack trace level of a known scope; applies to the next record.
 * @throws Error when the scope is unknown or the level invalid.
 */
export function setStackTraceLevel(scope: string, level: Level | string): void {
  checkScopeAndLevel(scope, level);
  state.stack.set(scope, level);
}

/**
 * Turns caller information on or off for a known scope.
 * @throws Error when the scope is unknown.
 */
export function setScopeCaller(scope: string, on: boolean): void {
  if (!state.scopes.has(scope)) throw new Error(unknownScopeMessage(scope, state.scopes));
  if (on) state.caller.add(scope);
  else state.caller.delete(scope);
}

/** Every known scope with its current levels, sorted by name. */
export function scopeLevels(): ScopeInfo[] {
  return [...state.scopes].sort().map((name) => ({
    name,
    outputLevel: outputLevel(name),
    stackTraceLevel: stackTraceLevel(name),
    logCallers: state.caller.has(name),
  }));
}

/** Checks a LogOptions object; returns the problems, one line each. */
function validate(opts: LogOptions): string[] {
  const problems: string[] = [];
  if (!Array.isArray(opts.scopes) || opts.scopes.length === 0) {
    problems.push("scopes must be a non-empty list");
  }
  const scopes = opts.scopes ?? [];
  for (
    const [field, map] of [
      ["outputLevels", opts.outputLevels],
      ["stacktraceLevels", opts.stacktraceLevels],
    ] as const
  ) {
    for (const [scope, level] of Object.entries(map ?? {})) {
      if (!scopes.includes(scope)) {
        problems.push(`${field}: ${unknownScopeMessage(scope, scopes)}`);
      }
      if (!isLevel(level)) problems.push(`${field}: ${unknownLevelMessage(String(level))}`);
    }
  }
  for (const s of opts.caller ?? []) {
    if (!scopes.includes(s)) problems.push(`caller: ${unknownScopeMessage(s, scopes)}`);
  }
  const nonNegInt = (name: string, v: number) => {
    if (!Number.isInteger(v) || v < 0) {
      problems.push(`${name} must be a non-negative integer, got ${v}`);
    }
  };
  nonNegInt("rotateMaxBackups", opts.rotateMaxBackups);
  if (!Number.isFinite(opts.rotateMaxAgeDays) || opts.rotateMaxAgeDays < 0) {
    problems.push(`rotateMaxAgeDays must be a non-negative number, got ${opts.rotateMaxAgeDays}`);
  }
  if (!Number.isFinite(opts.rotateMaxSizeMB) || opts.rotateMaxSizeMB < 0) {
    problems.push(`rotateMaxSizeMB must be a non-negative number, got ${opts.rotateMaxSizeMB}`);
  }
  if (
    opts.rotateMaxSizeBytes !== undefined &&
    (!Number.isInteger(opts.rotateMaxSizeBytes) || opts.rotateMaxSizeBytes <= 0)
  ) {
    problems.push(
      `rotateMaxSizeBytes must be a positive integer, got ${opts.rotateMaxSizeBytes}`,
    );
  }
  for (const t of opts.targets ?? []) {
    if (typeof t !== "string" || t.trim() === "") problems.push(`targets: empty target`);
  }
  return problems;
}

function streamSink(w: { writeSync(p: Uint8Array): number }, fmt: (e: Entry) => string): Sink {
  return (record: LogRecord) => writeAll(w, fmt(entryOf(record)));
}

/**
 * Applies the group L options: from now on records go to the configured targets in the
 * configured format, filtered by the configured levels. Replaces an earlier configuration.
 *
 * File targets and the rotating file are written synchronously, one record at a time, so a
 * record is on disk when the log call returns.
 *
 * @throws Error when an option is invalid or a target cannot be opened.
 */
export async function configureLogging(opts: LogOptions): Promise<LoggingHandle> {
  const problems = validate(opts);
  if (problems.length > 0) throw new Error(`invalid log options: ${problems.join("; ")}`);
  if (state.active !== 0) {
    state.active = 0;
    await reset();
  }
  const fmt = opts.asJson ? formatJson : formatConsole;
  const recordFmt = (r: LogRecord) => fmt(entryOf(r));
  const sinks: Record<string, Sink> = {};
  const opened: Disposable[] = [];
  const open = (id: string, what: string, make: () => Sink & Disposable) => {
    try {
      const s = make();
      opened.push(s);
      sinks[id] = s;
    } catch (err) {
      for (const d of opened) d[Symbol.dispose]();
      throw new Error(`cannot open ${what}: ${err instanceof Error ? err.message : err}`);
    }
  };
  // File sinks (and @logtape/file) are loaded only when a file target or rotation is asked for.
  const files = opts.targets.some((t) => t !== "stdout" && t !== "stderr");
  const { getFileSink } = files ? await import("../deps/logtape_file.ts") : { getFileSink: null };
  const { getRotatingSink } = opts.rotate !== ""
    ? await import("./rotate.ts")
    : { getRotatingSink: null };
  opts.targets.forEach((t, i) => {
    const id = `target${i}`;
    if (t === "stdout") sinks[id] = streamSink(Deno.stdout, fmt);
    else if (t === "stderr") sinks[id] = streamSink(Deno.stderr, fmt);
    else {open(id, `log target "${t}"`, () =>
        getFileSink!(t, { bufferSize: 0, formatter: recordFmt }));}
  });
  if (opts.rotate !== "") {
    const maxSizeBytes = opts.rotateMaxSizeBytes ??
      Math.max(1, Math.round((opts.rotateMaxSizeMB > 0 ? opts.rotateMaxSizeMB : 100) * MiB));
    open("rotate", `log rotate file "${opts.rotate}"`, () =>
      getRotatingSink!(opts.rotate, {
        maxSizeBytes,
        maxBackups: opts.rotateMaxBackups,
        maxAgeDays: opts.rotateMaxAgeDays,
        formatter: recordFmt,
      }));
  }
  sinks.meta = streamSink(Deno.stderr, formatConsole);
  const ids = Object.keys(sinks).filter((k) => k !== "meta");
  await configure({
    reset: true,
    sinks,
    loggers: [
      { category: ["mesh"], sinks: ids, lowestLevel: "debug", parentSinks: "override" },
      { category: ["logtape", "meta"], sinks: ["meta"], lowestLevel: "warning" },
    ],
  });
  state.logtape.clear();
  registerScopes(opts.scopes);
  state.output.clear();
  state.stack.clear();
  state.caller.clear();
  for (const s of opts.scopes) {
    state.output.set(s, opts.outputLevels[s] ?? "info");
    state.stack.set(s, opts.stacktraceLevels[s] ?? "none");
  }
  for (const s of opts.caller) state.caller.add(s);
  const generation = ++state.generation;
  state.active = generation;
  return {
    async dispose() {
      if (state.active !== generation) return;
      state.active = 0;
      await reset();
    },
  };
}

/** The logger interface grpc-js's `setLogger` accepts (a subset of `console`). */
export interface ConsoleLike {
  error(message?: unknown, ...rest: unknown[]): void;
  info(message?: unknown, ...rest: unknown[]): void;
  debug(message?: unknown, ...rest: unknown[]): void;
}

/**
 * A console-like logger for libraries that log on their own, such as grpc-js
 * (`grpc.setLogger(libraryLogger("ads"))`): each message becomes one `debug` record of `scope`,
 * with `source` as a property, so it shows only at `--log_output_level <scope>:debug` and never
 * as a stray line beside the program's own error.
 */
export function libraryLogger(scope: string, source = "grpc-js"): ConsoleLike {
  const log = getLogger(scope);
  const text = (parts: unknown[]) =>
    parts.map((p) => typeof p === "string" ? p : p instanceof Error ? p.message : Deno.inspect(p))
      .join(" ");
  const emit = (message?: unknown, ...rest: unknown[]) =>
    log.debug(text([message, ...rest]), { source });
  return { error: emit, info: emit, debug: emit };
}

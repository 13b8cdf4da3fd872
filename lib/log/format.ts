/**
 * Record formats of flag group L: the console line and the JSON object.
 * @module
 */

import type { LogRecord } from "../deps/logtape.ts";

/** The level of an emitted record (never `none`). */
export type RecordLevel = "debug" | "info" | "warn" | "error";

/** Key under which lib/log stores its own metadata in a logtape record's properties. */
export const META_KEY = "__mesh";

/** lib/log's metadata attached to every record. */
export interface RecordMeta {
  scope: string;
  level: RecordLevel;
  caller?: string;
  stack?: string;
}

/** Field names of the JSON format that record properties cannot override. */
const RESERVED = new Set(["time", "level", "scope", "caller", "msg", "stack"]);

/** One record as lib/log sees it, independent of logtape. */
export interface Entry {
  time: number;
  level: RecordLevel;
  scope: string;
  msg: string;
  props: Record<string, unknown>;
  caller?: string;
  stack?: string;
}

/** Converts a logtape record produced by lib/log (or by a third-party logtape user). */
export function entryOf(record: LogRecord): Entry {
  const { [META_KEY]: meta, ...props } = record.properties as Record<string, unknown>;
  const m = meta as RecordMeta | undefined;
  const msg = typeof record.rawMessage === "string" && m
    ? record.rawMessage
    : record.message.map((p) => (typeof p === "string" ? p : renderValue(p))).join("");
  return {
    time: record.timestamp,
    level: m?.level ?? levelOfLogtape(record.level),
    scope: m?.scope ?? record.category.slice(record.category[0] === "mesh" ? 1 : 0).join("."),
    msg,
    props,
    caller: m?.caller,
    stack: m?.stack,
  };
}

function levelOfLogtape(level: LogRecord["level"]): RecordLevel {
  switch (level) {
    case "trace":
    case "debug":
      return "debug";
    case "info":
      return "info";
    case "warning":
      return "warn";
    default:
      return "error";
  }
}

/** RFC 3339 UTC time with milliseconds, e.g. `2024-05-01T12:00:00.123Z`. */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * Console format, one line per record (plus indented stack lines):
 * `<time>\t<level>\t<scope>\t[<caller>\t]<msg>[ key=value...]`.
 */
export function formatConsole(e: Entry): string {
  let line = `${formatTime(e.time)}\t${e.level}\t${e.scope}\t`;
  if (e.caller) line += `${e.caller}\t`;
  line += escapeMessage(e.msg);
  for (const [k, v] of Object.entries(e.props)) {
    if (v === undefined) continue;
    const text = renderValue(v);
    const isText = typeof v === "string" || v instanceof Error || v instanceof Date;
    line += ` ${k}=${isText ? quoteIfNeeded(text) : text}`;
  }
  if (e.stack) line += "\n" + e.stack.split("\n").map((l) => "\t" + l).join("\n");
  return line + "\n";
}

/**
 * A message as one console line: newlines, carriage returns and other control characters are
 * written as escapes (`\n`), so that text taken from input cannot forge log lines.
 */
export function escapeMessage(msg: string): string {
  return msg.replace(
    // deno-lint-ignore no-control-regex
    /[\u0000-\u0008\u000a-\u001f\u007f\u2028\u2029]/g,
    (c) =>
      c === "\n"
        ? "\\n"
        : c === "\r"
        ? "\\r"
        : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * JSON format, one object per line: `{time, level, scope, caller?, msg, ...props, stack?}`.
 * A property whose key collides with one of those names is written as `_<key>`.
 */
export function formatJson(e: Entry): string {
  const o: Record<string, unknown> = { time: formatTime(e.time), level: e.level, scope: e.scope };
  if (e.caller) o.caller = e.caller;
  o.msg = e.msg;
  for (const [k, v] of Object.entries(e.props)) {
    if (v === undefined) continue;
    o[RESERVED.has(k) ? `_${k}` : k] = v;
  }
  if (e.stack) o.stack = e.stack;
  return safeStringify(o) + "\n";
}

function jsonReplacer(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) return value.message;
  if (value instanceof Map) return Object.fromEntries(value);
  if (value instanceof Set) return [...value];
  return value;
}

function safeStringify(o: unknown): string {
  try {
    return JSON.stringify(o, jsonReplacer) ?? "null";
  } catch {
    // Circular or otherwise unserializable: fall back field by field.
    if (o && typeof o === "object") {
      const flat: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(o)) {
        try {
          JSON.stringify(v, jsonReplacer);
          flat[k] = v;
        } catch {
          flat[k] = String(v);
        }
      }
      return JSON.stringify(flat, jsonReplacer);
    }
    return JSON.stringify(String(o));
  }
}

/** Renders a property value for the console format (before quoting). */
export function renderValue(v: unknown): string {
  if (typeof v === "string") return v;
  if (v instanceof Error) return v.message;
  if (v instanceof Date) return isNaN(v.getTime()) ? "Invalid Date" : v.toISOString();
  if (v === null || typeof v !== "object") return String(v);
  try {
    return JSON.stringify(v, jsonReplacer) ?? String(v);
  } catch {
    return String(v);
  }
}

function quoteIfNeeded(s: string): string {
  return /^[\w.\-/:@,+%*~[\]]+$/.test(s) ? s : JSON.stringify(s);
}

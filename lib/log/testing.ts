/**
 * Loggers for tests: one that drops everything, and one that records what is logged, one
 * `level message` line per record (the properties as JSON after the message, when given).
 * @module
 */

import type { Logger } from "./mod.ts";

/** A {@link Logger} that drops every record. */
export const quietLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** A {@link Logger} that keeps every record in `lines`. */
export function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const rec = (level: string) => (msg: string, props?: Record<string, unknown>) => {
    lines.push(`${level} ${msg}${props ? " " + JSON.stringify(props) : ""}`);
  };
  return { lines, debug: rec("debug"), info: rec("info"), warn: rec("warn"), error: rec("error") };
}

/**
 * Logging for every program (flag group L). STUB CONTRACT: the API below is fixed; the
 * implementation (logtape sinks, JSON, scopes, rotation, caller, stack traces) is being built.
 * @module
 */

/** A scoped logger. `props` are structured fields shown after the message (JSON: extra keys). */
export interface Logger {
  debug(msg: string, props?: Record<string, unknown>): void;
  info(msg: string, props?: Record<string, unknown>): void;
  warn(msg: string, props?: Record<string, unknown>): void;
  error(msg: string, props?: Record<string, unknown>): void;
}

/** Returns the logger of a scope ("default", "ads", "api", ...). Cheap; call at use sites. */
export function getLogger(scope = "default"): Logger {
  const emit = (level: string) => (msg: string, props?: Record<string, unknown>) => {
    if (level === "debug") return;
    const extra = props && Object.keys(props).length ? " " + JSON.stringify(props) : "";
    console.error(`${new Date().toISOString()}\t${level}\t${scope}\t${msg}${extra}`);
  };
  return { debug: emit("debug"), info: emit("info"), warn: emit("warn"), error: emit("error") };
}

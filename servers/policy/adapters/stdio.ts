/**
 * The `stdio` adapter: log entries (and metrics) as lines, JSON by default, to stdout, stderr,
 * a file, or a size-rotated file.
 * @module
 */

import { getRotatingSink } from "../../../lib/log/rotate.ts";
import type { LogRecord } from "../../../lib/deps/logtape.ts";
import { Params } from "./params.ts";
import type { Adapter, Instance } from "./types.ts";

const LEVELS = ["INFO", "WARNING", "ERROR"] as const;
type Level = typeof LEVELS[number];
const RANK: Record<Level, number> = { INFO: 0, WARNING: 1, ERROR: 2 };

/** Renders an instance value for a log line (dates ISO, addresses dotted, maps as objects). */
export function plain(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (v instanceof Uint8Array) {
    return v.length === 4
      ? [...v].join(".")
      : [...v].map((b) => b.toString(16).padStart(2, "0")).join("");
  }
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

/** stdio: logentry, metric. */
export const stdio: Adapter = {
  kind: "stdio",
  templates: ["logentry", "metric"],
  build(spec, env, object) {
    const p = new Params(spec, object).only([
      "log_stream",
      "severity_levels",
      "metric_level",
      "output_as_json",
      "output_level",
      "output_path",
      "max_megabytes_before_rotation",
      "max_days_before_rotation",
      "max_rotated_files",
    ]);
    const stream = p.enumOf("log_stream", ["STDOUT", "STDERR", "FILE", "ROTATED_FILE"], "STDOUT");
    const severities = p.stringMap("severity_levels");
    for (const [k, v] of Object.entries(severities)) {
      if (!LEVELS.includes(v as Level)) {
        p.fail(`severity_levels.${k}`, `must be one of ${LEVELS.join(", ")}`);
      }
    }
    const metricLevel = p.enumOf("metric_level", LEVELS, "INFO");
    const outputLevel = p.enumOf("output_level", LEVELS, "INFO");
    const json = p.bool("output_as_json", true);
    const path = p.string("output_path", "");
    if ((stream === "FILE" || stream === "ROTATED_FILE") && !path) {
      p.fail("output_path", `is required with log_stream ${stream}`);
    }
    let write: (line: string) => void;
    let close = () => {};
    if (stream === "STDOUT" || stream === "STDERR") {
      const s = stream === "STDOUT" ? "stdout" : "stderr";
      write = (line) => env.write(s, line);
    } else if (stream === "FILE") {
      const file = Deno.openSync(path, { append: true, create: true });
      const enc = new TextEncoder();
      write = (line) => file.writeSync(enc.encode(line + "\n"));
      close = () => file.close();
    } else {
      const sink = getRotatingSink(path, {
        maxSizeBytes: p.number("max_megabytes_before_rotation", 100, 1) * 1024 * 1024,
        maxBackups: p.number("max_rotated_files", 1000, 0),
        maxAgeDays: p.number("max_days_before_rotation", 30, 0),
        formatter: (r) => `${r.message[0]}\n`,
      });
      write = (line) => sink({ message: [line] } as unknown as LogRecord);
      close = () => sink[Symbol.dispose]();
    }
    const line = (i: Instance, level: Level): string => {
      const fields =
        (i.kind === "metric"
          ? { value: plain(i.value.value), ...(plain(i.value.dimensions ?? {}) as object) }
          : plain(i.value.variables ?? {})) as Record<string, unknown>;
      const time = i.value.timestamp instanceof Date ? i.value.timestamp : new Date(env.now());
      if (json) {
        return JSON.stringify({
          level: level.toLowerCase(),
          time: time.toISOString(),
          instance: i.name,
          ...fields,
        });
      }
      const kv = Object.entries(fields).map(([k, v]) =>
        `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`
      );
      return `${time.toISOString()}\t${level.toLowerCase()}\t${i.name}\t${kv.join("\t")}`;
    };
    return {
      report(instances) {
        for (const i of instances) {
          const sev = typeof i.value.severity === "string" ? i.value.severity : "";
          const level: Level = i.kind === "metric"
            ? metricLevel
            : (severities[sev] as Level | undefined) ??
              (LEVELS.includes(sev.toUpperCase() as Level) ? sev.toUpperCase() as Level : "INFO");
          if (RANK[level] >= RANK[outputLevel]) write(line(i, level));
        }
      },
      close,
    };
  },
};

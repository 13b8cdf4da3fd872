/**
 * File-based liveness and readiness probes (Istio's probe files).
 *
 * A server runs {@link startProbeUpdater}: while the server is available the probe file is
 * rewritten every `interval / 2`; when it is not, the file is removed. The `probe` subcommand
 * runs {@link checkProbe}: with an interval of 0 (the `--interval` default, `0s`) the probe
 * passes when the file exists; with a positive interval the file must also have been modified
 * within `interval + PROBE_MARGIN_MS`.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { getLogger } from "../log/mod.ts";

/**
 * Slack added to the interval when checking the file's age (as in Istio), covering the delay
 * between two updates and coarse file time stamps.
 */
export const PROBE_MARGIN_MS = 10;

/** Result of {@link checkProbe}. */
export type ProbeResult = { ok: true } | { ok: false; reason: string };

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}

/**
 * Checks a probe file: ok when it exists and, for `intervalMs > 0`, its modification time is at
 * most `intervalMs + PROBE_MARGIN_MS` old. `intervalMs = 0` means no freshness check: the file
 * only has to exist.
 * @throws Error when `path` is empty or `intervalMs` is negative (usage errors).
 */
export async function checkProbe(
  path: string,
  intervalMs: number,
  now: () => number = Date.now,
): Promise<ProbeResult> {
  if (path === "") throw new Error("probe path is empty (set --probe-path)");
  if (!Number.isFinite(intervalMs) || intervalMs < 0) {
    throw new Error(`invalid probe interval ${intervalMs}ms: must be a non-negative duration`);
  }
  let stat: Deno.FileInfo;
  try {
    stat = await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
      return { ok: false, reason: `probe file "${path}" does not exist` };
    }
    return { ok: false, reason: `cannot stat probe file "${path}": ${(err as Error).message}` };
  }
  if (!stat.isFile) return { ok: false, reason: `probe path "${path}" is not a file` };
  if (intervalMs === 0) return { ok: true };
  const mtime = stat.mtime?.getTime();
  if (mtime === undefined) {
    return { ok: false, reason: `probe file "${path}" has no modification time` };
  }
  const age = now() - mtime;
  const limit = intervalMs + PROBE_MARGIN_MS;
  if (age > limit) {
    return {
      ok: false,
      reason: `probe file "${path}" is stale: last modified ${seconds(age)} ago, want within ${
        seconds(limit)
      }`,
    };
  }
  return { ok: true };
}

/** Options of {@link startProbeUpdater}. */
export interface ProbeUpdaterOptions {
  /** The probe file. */
  path: string;
  /** The probe interval (ms, > 0); the file is refreshed every half interval. */
  intervalMs: number;
  /** Whether the server is currently available; a throw counts as unavailable. */
  available: () => boolean;
}

/** Writes `content` to `path` through a temporary file in the same directory and a rename. */
async function writeAtomic(path: string, content: string): Promise<void> {
  const tmp = join(
    dirname(path),
    `.${basename(path)}.tmp-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`,
  );
  try {
    await Deno.writeTextFile(tmp, content);
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
}

async function removeIfExists(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/**
 * Starts keeping a probe file up to date: the file is written at once and every
 * `intervalMs / 2` while `available()` returns true, and removed while it returns false.
 * `stop()` ends the updates and removes the file. Write errors are logged (once per distinct
 * message) and retried at the next tick.
 * @throws Error when `path` is empty or `intervalMs` is not positive.
 */
export function startProbeUpdater(opts: ProbeUpdaterOptions): { stop(): Promise<void> } {
  if (opts.path === "") throw new Error("probe path is empty");
  if (!Number.isFinite(opts.intervalMs) || opts.intervalMs <= 0) {
    throw new Error(`invalid probe interval ${opts.intervalMs}ms: must be positive`);
  }
  const log = getLogger("default");
  let lastError = "";
  let stopped = false;
  let running: Promise<void> = Promise.resolve();

  const update = async () => {
    let up: boolean;
    try {
      up = opts.available();
    } catch (err) {
      up = false;
      log.warn("probe availability check failed", { path: opts.path, error: err });
    }
    try {
      if (up) await writeAtomic(opts.path, new Date().toISOString() + "\n");
      else await removeIfExists(opts.path);
      lastError = "";
    } catch (err) {
      const msg = (err as Error).message;
      if (msg !== lastError) log.warn("cannot update probe file", { path: opts.path, error: msg });
      lastError = msg;
    }
  };
  const tick = () => {
    // Never overlap two updates: chain them.
    running = running.then(() => (stopped ? undefined : update()));
  };
  tick();
  const timer = setInterval(tick, Math.max(1, Math.floor(opts.intervalMs / 2)));
  return {
    async stop() {
      if (stopped) return running;
      stopped = true;
      clearInterval(timer);
      await running;
      await removeIfExists(opts.path).catch((err) =>
        log.warn("cannot remove probe file", { path: opts.path, error: err })
      );
    },
  };
}

/**
 * Graceful shutdown and readiness helpers for long-running programs.
 *
 * Only `cli/` calls `Deno.exit`; this module returns the exit code instead:
 *
 * ```ts
 * const handle = await start(config, deps);
 * Deno.exit(await runUntilSignal(handle, logging));
 * ```
 * @module
 */

import { getLogger, type Logger } from "../log/mod.ts";

/** Anything that can be shut down (a server handle). */
export interface Shutdownable {
  shutdown(): Promise<void>;
}

/** Anything that flushes logging (the handle returned by configureLogging). */
export interface Disposer {
  dispose(): Promise<void>;
}

/** Options of {@link runUntilSignal}. */
export interface RunOptions {
  /** Logger for the shutdown messages (default: scope `default`). */
  logger?: Logger;
  /** Signals that start a shutdown (default: SIGINT and SIGTERM). */
  signals?: Deno.Signal[];
}

/**
 * Waits for SIGINT or SIGTERM, then calls `handle.shutdown()` once and disposes `logging`
 * (flushing log files). Resolves to the exit code: 0 after a clean shutdown, 1 when shutdown
 * failed, or 1 at once when a second signal arrives before shutdown finished. Signal listeners
 * are removed before the promise resolves.
 *
 * `handle` may be the promise of a server that is still starting: the listeners are installed
 * at once, so a signal that arrives while the server starts shuts it down once it is up (pass
 * `runUntilSignal(start(config))`, not `runUntilSignal(await start(config))`). When that promise
 * rejects, the returned promise rejects with the same error.
 */
export function runUntilSignal(
  handle: Shutdownable | Promise<Shutdownable>,
  logging?: Disposer,
  opts: RunOptions = {},
): Promise<number> {
  const log = opts.logger ?? getLogger("default");
  const signals = opts.signals ?? ["SIGINT", "SIGTERM"];
  const { promise, resolve, reject } = Promise.withResolvers<number>();
  let shuttingDown = false;
  let done = false;
  const removeListeners = () => {
    for (const s of signals) Deno.removeSignalListener(s, listeners.get(s)!);
  };
  const finish = (code: number) => {
    if (done) return;
    done = true;
    removeListeners();
    resolve(code);
  };
  const started = Promise.resolve(handle);
  started.catch((err) => {
    if (done) return;
    done = true;
    removeListeners();
    reject(err);
  });
  const onSignal = (signal: Deno.Signal) => {
    if (shuttingDown) {
      log.error("second signal received, exiting without waiting for shutdown", { signal });
      finish(1);
      return;
    }
    shuttingDown = true;
    log.info("signal received, shutting down", { signal });
    (async () => {
      let code = 0;
      try {
        await (await started).shutdown();
        log.info("shutdown complete");
      } catch (err) {
        code = 1;
        log.error("shutdown failed", { error: err });
      }
      if (done) return;
      try {
        await logging?.dispose();
      } catch {
        // Nothing left to report to.
      }
      finish(code);
    })();
  };
  const listeners = new Map<Deno.Signal, () => void>();
  for (const s of signals) {
    const l = () => onSignal(s);
    listeners.set(s, l);
    Deno.addSignalListener(s, l);
  }
  return promise;
}

/**
 * Waits for `ready` (a server's readiness promise) for at most `timeoutMs`.
 * @throws Error `<what> not ready after <n>s` on timeout, or the rejection of `ready`.
 */
export async function awaitReady<T>(
  ready: Promise<T>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  let timer: number | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} not ready after ${timeoutMs / 1000}s`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([ready, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Polls `check` every `intervalMs` until it returns a truthy value (returned) or `timeoutMs`
 * passes (throws `timed out after <n>s waiting for <what>`).
 */
export async function waitUntil<T>(
  check: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 5000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() >= deadline) {
      throw new Error(
        `timed out after ${timeoutMs / 1000}s waiting for ${opts.what ?? "condition"}`,
      );
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 20));
  }
}

export {
  type CpuProfiling,
  type Profiling,
  startAllocationProfile,
  startCpuProfile,
} from "./profile.ts";
export { SLICE_MS, TimeSlicer } from "./slice.ts";
export { type Cleanup, Cleanups, type CleanupsOptions } from "./cleanups.ts";

/**
 * CPU profiles of this process through `node:inspector` (V8's `.cpuprofile` JSON, readable by
 * Chrome DevTools and `bench/cpuprofile_top.ts`). One profile at a time per process.
 * @module
 */

let running = false;

/** A CPU profile being recorded. */
export interface CpuProfiling {
  /** Stops recording and returns the profile (a V8 `Profile` object). */
  stop(): Promise<Record<string, unknown>>;
}

/** Starts recording a CPU profile; throws when one is already being recorded. */
export async function startCpuProfile(): Promise<CpuProfiling> {
  if (running) throw new Error("A CPU profile is already being recorded");
  running = true;
  const { Session } = await import("node:inspector");
  const s = new Session();
  s.connect();
  const post = (method: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) =>
      s.post(
        method,
        (e: Error | null, r?: unknown) => e ? reject(e) : resolve(r as Record<string, unknown>),
      )
    );
  try {
    await post("Profiler.enable");
    await post("Profiler.start");
  } catch (e) {
    s.disconnect();
    running = false;
    throw e;
  }
  return {
    async stop() {
      try {
        const r = await post("Profiler.stop");
        return r.profile as Record<string, unknown>;
      } finally {
        s.disconnect();
        running = false;
      }
    },
  };
}

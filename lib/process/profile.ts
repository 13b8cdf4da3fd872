/**
 * Profiles of this process through `node:inspector`: CPU profiles (V8's `.cpuprofile` JSON) and
 * allocation profiles (V8's sampling heap profiler, `.heapprofile` JSON), both readable by Chrome
 * DevTools and `bench/cpuprofile_top.ts`. One profile of each kind at a time per process.
 * @module
 */

/** A profile being recorded. */
export interface Profiling {
  /** Stops recording and returns the profile (a V8 `Profile` or `SamplingHeapProfile`). */
  stop(): Promise<Record<string, unknown>>;
}

/** A CPU profile being recorded. */
export type CpuProfiling = Profiling;

const running = new Set<string>();

/**
 * Runs `start` on a new inspector session, marked as the one `kind` (e.g. "A CPU profile") of the
 * process, and returns what `stop` returns when stopped; throws when one of that kind is being
 * recorded.
 */
async function record(
  kind: string,
  start: [string, Record<string, unknown>?][],
  stop: string,
  result: (r: Record<string, unknown>) => Record<string, unknown>,
): Promise<Profiling> {
  if (running.has(kind)) throw new Error(`${kind} is already being recorded`);
  running.add(kind);
  const { Session } = await import("node:inspector");
  const s = new Session();
  s.connect();
  const post = (method: string, params?: Record<string, unknown>) =>
    new Promise<Record<string, unknown>>((resolve, reject) =>
      s.post(
        method,
        params ?? {},
        (e: Error | null, r?: unknown) => e ? reject(e) : resolve(r as Record<string, unknown>),
      )
    );
  try {
    for (const [method, params] of start) await post(method, params);
  } catch (e) {
    s.disconnect();
    running.delete(kind);
    throw e;
  }
  return {
    async stop() {
      try {
        return result(await post(stop));
      } finally {
        s.disconnect();
        running.delete(kind);
      }
    },
  };
}

/** Starts recording a CPU profile; throws when one is already being recorded. */
export function startCpuProfile(): Promise<Profiling> {
  return record(
    "A CPU profile",
    [["Profiler.enable"], ["Profiler.start"]],
    "Profiler.stop",
    (r) => r.profile as Record<string, unknown>,
  );
}

/**
 * Starts recording where this process allocates: V8's sampling heap profiler, one sample about
 * every `samplingInterval` bytes (default 32 kB), counting objects the garbage collector has
 * freed since as well as live ones, so the profile shows allocation, not retention (what Go's
 * `/debug/pprof/allocs` shows). Throws when one is already being recorded.
 */
export function startAllocationProfile(samplingInterval = 32768): Promise<Profiling> {
  if (!Number.isInteger(samplingInterval) || samplingInterval < 1) {
    throw new RangeError(`samplingInterval must be a positive integer, got ${samplingInterval}`);
  }
  return record(
    "An allocation profile",
    [["HeapProfiler.enable"], ["HeapProfiler.startSampling", {
      samplingInterval,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    }]],
    "HeapProfiler.stopSampling",
    (r) => r.profile as Record<string, unknown>,
  );
}

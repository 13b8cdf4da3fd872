/**
 * The event-loop lag metrics (`nodejs_eventloop_lag_*`), measured in JavaScript.
 *
 * prom-client reads them from `perf_hooks.monitorEventLoopDelay`, which in Deno 2.7.14 does not
 * see the JavaScript thread blocked (a 300 ms busy loop left its max at 0.2 ms) and whose `mean`
 * and `stddev` walk every recorded sample: 8-15 ms of the serving thread per scrape at a 15 s
 * interval, longer at longer intervals. Here a timer every {@link LAG_RESOLUTION_MS} records how
 * late it fired (what Node's histogram records) into a log-scale histogram of fixed size: a scrape
 * reads it in microseconds, memory does not grow, and a blocked loop shows. prom-client's
 * histogram is not started.
 * @module
 */
import perfHooks from "node:perf_hooks";
import { setImmediate } from "node:timers";
import type { Registry } from "../deps/prom.ts";

type Prom = typeof import("../deps/prom.ts");

/**
 * How often the sampler's timer fires. A delay is seen to within this much; an idle program pays
 * ~1 % of a core for it (Deno's timers: 1.4 % at 10 ms, 1.0 % at 20 ms, 0.4 % at 50 ms).
 */
export const LAG_RESOLUTION_MS = 20;

/** Sub-buckets per power of two: a percentile is read to within 9 %. */
const PER_OCTAVE = 8;
/** Buckets from 1 µs to 2^36 µs (~19 h): anything later counts in the last. */
const BUCKETS = 36 * PER_OCTAVE;

/**
 * Delays (seconds) since the last {@link reset}: exact count, min, max, mean and standard
 * deviation; percentiles from a log-scale histogram (upper bound of the bucket, within 9 %).
 */
export class LagHistogram {
  #counts = new Float64Array(BUCKETS);
  #n = 0;
  #min = Infinity;
  #max = 0;
  #sum = 0;
  #sumSq = 0;

  /** Records one delay of `seconds` (negative counts as 0). */
  record(seconds: number): void {
    const s = Math.max(0, seconds);
    const us = s * 1e6;
    const i = us < 1 ? 0 : Math.min(BUCKETS - 1, Math.floor(Math.log2(us) * PER_OCTAVE) + 1);
    this.#counts[i]++;
    this.#n++;
    if (s < this.#min) this.#min = s;
    if (s > this.#max) this.#max = s;
    this.#sum += s;
    this.#sumSq += s * s;
  }

  /** Delays recorded. */
  get count(): number {
    return this.#n;
  }
  /** Smallest delay (0 when none). */
  get min(): number {
    return this.#n ? this.#min : 0;
  }
  /** Largest delay. */
  get max(): number {
    return this.#max;
  }
  /** Mean delay (0 when none). */
  get mean(): number {
    return this.#n ? this.#sum / this.#n : 0;
  }
  /** Standard deviation (population) of the delays (0 when none). */
  get stddev(): number {
    if (!this.#n) return 0;
    const m = this.#sum / this.#n;
    return Math.sqrt(Math.max(0, this.#sumSq / this.#n - m * m));
  }

  /** The `p`th percentile (0-100), never above {@link max} (0 when none). */
  percentile(p: number): number {
    const rank = Math.max(1, Math.ceil((p / 100) * this.#n));
    let seen = 0; // none recorded: no bucket reaches the rank, and the max is 0
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.#counts[i];
      if (seen >= rank) {
        const upper = i === 0 ? 0 : 2 ** (i / PER_OCTAVE) / 1e6;
        return Math.max(this.min, Math.min(upper, this.#max));
      }
    }
    return this.#max;
  }

  /** Forgets every delay. */
  reset(): void {
    this.#counts.fill(0);
    this.#n = 0;
    this.#min = Infinity;
    this.#max = 0;
    this.#sum = 0;
    this.#sumSq = 0;
  }
}

/**
 * Records into a new histogram how late a timer every `resolutionMs` fires (unref'd: it never keeps
 * a program alive) until `stop()`.
 */
export function sampleLag(
  resolutionMs = LAG_RESOLUTION_MS,
): { histogram: LagHistogram; stop(): void } {
  const histogram = new LagHistogram();
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    histogram.record((now - last - resolutionMs) / 1000);
    last = now;
  }, resolutionMs);
  Deno.unrefTimer(timer);
  return { histogram, stop: () => clearInterval(timer) };
}

/** The names replaced (prom-client's `eventLoopLag` metrics), with their help texts. */
const LAG_METRICS = {
  nodejs_eventloop_lag_seconds: "Lag of event loop in seconds.",
  nodejs_eventloop_lag_min_seconds: "The minimum recorded event loop delay.",
  nodejs_eventloop_lag_max_seconds: "The maximum recorded event loop delay.",
  nodejs_eventloop_lag_mean_seconds: "The mean of the recorded event loop delays.",
  nodejs_eventloop_lag_stddev_seconds: "The standard deviation of the recorded event loop delays.",
  nodejs_eventloop_lag_p50_seconds: "The 50th percentile of the recorded event loop delays.",
  nodejs_eventloop_lag_p90_seconds: "The 90th percentile of the recorded event loop delays.",
  nodejs_eventloop_lag_p99_seconds: "The 99th percentile of the recorded event loop delays.",
} as const;

/**
 * prom-client's default process metrics on `register`, with the `nodejs_eventloop_lag_*` ones
 * (same names, help and meaning) measured by a timer of this isolate every `resolutionMs`
 * (unref'd: it never keeps a program alive); each scrape reads and resets them, as prom-client's
 * did. Returns what stops the timer.
 */
export function collectProcessMetrics(
  prom: Prom,
  register: Registry,
  resolutionMs = LAG_RESOLUTION_MS,
): { stop(): void; histogram: LagHistogram } {
  // prom-client would start a monitorEventLoopDelay histogram nothing reads (0.5 % of a core
  // when idle): without the function it registers the same gauges over setImmediate, removed here
  const monitor = perfHooks.monitorEventLoopDelay;
  try {
    (perfHooks as { monitorEventLoopDelay?: unknown }).monitorEventLoopDelay = undefined;
    prom.collectDefaultMetrics({ register });
  } finally {
    perfHooks.monitorEventLoopDelay = monitor;
  }
  for (const name of Object.keys(LAG_METRICS)) register.removeSingleMetric(name);
  const { histogram, stop } = sampleLag(resolutionMs);
  const registers = [register];
  type Gauge = InstanceType<Prom["Gauge"]>;
  const gauges = {} as Record<keyof typeof LAG_METRICS, Gauge>;
  // the first gauge's collect sets them all (prom-client collects in registration order)
  const collect = () => {
    const start = performance.now();
    // as prom-client: how long until a setImmediate callback runs, shown at the next scrape
    setImmediate(() => gauges.nodejs_eventloop_lag_seconds.set((performance.now() - start) / 1000));
    gauges.nodejs_eventloop_lag_min_seconds.set(histogram.min);
    gauges.nodejs_eventloop_lag_max_seconds.set(histogram.max);
    gauges.nodejs_eventloop_lag_mean_seconds.set(histogram.mean);
    gauges.nodejs_eventloop_lag_stddev_seconds.set(histogram.stddev);
    gauges.nodejs_eventloop_lag_p50_seconds.set(histogram.percentile(50));
    gauges.nodejs_eventloop_lag_p90_seconds.set(histogram.percentile(90));
    gauges.nodejs_eventloop_lag_p99_seconds.set(histogram.percentile(99));
    histogram.reset();
  };
  for (const [name, help] of Object.entries(LAG_METRICS)) {
    gauges[name as keyof typeof LAG_METRICS] = new prom.Gauge({
      name,
      help,
      registers,
      ...(name === "nodejs_eventloop_lag_seconds" ? { collect } : {}),
    });
  }
  return { stop, histogram };
}

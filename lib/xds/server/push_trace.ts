/**
 * A push timeline for diagnosing the ADS workers (off unless `MESH_XDS_TRACE` names a file):
 * each isolate appends `<epoch ms> <isolate> <event>` lines to that file (a second after the
 * last one, in one write), and records its event-loop stalls of 15 ms or more and every move of
 * its external memory (ArrayBuffer backing stores outside the V8 heap, what V8's "external memory
 * pressure" GCs count) by {@link EXTERNAL_STEP} or more. Epoch times are comparable across
 * isolates, so one push can be followed from the control isolate's flush to each worker's
 * questions, answers and last send.
 * @module
 */

let file: string | undefined;
try {
  file = Deno.env.get("MESH_XDS_TRACE") || undefined;
} catch {
  file = undefined; // no env permission: no trace
}

/** True when `MESH_XDS_TRACE` is set: callers skip building trace text otherwise. */
export const tracing: boolean = file !== undefined;

let who = "?";
let lines: string[] = [];
let timer: number | undefined;
let sampler: number | undefined;
/** V8's external memory in bytes (`node:v8`, loaded only when tracing). */
let externalBytes: (() => number) | undefined;

/** External memory moves of this many bytes or more are traced (`ext <MB> (+/-<MB>)`). */
export const EXTERNAL_STEP = 4 * 1024 * 1024;

/** Names this isolate in the trace ("control", "w0", ...) and starts its stall sampler. */
export function traceIsolate(name: string): void {
  who = name;
  if (!tracing || sampler !== undefined) return;
  // `--trace-gc` times count from the isolate's start, about its time origin
  trace(`origin ${performance.timeOrigin.toFixed(1)}`);
  let last = performance.now();
  let ext = -1;
  import("node:v8").then((v8) => {
    externalBytes = () => v8.getHeapStatistics().external_memory;
    ext = externalBytes();
  }, () => {});
  sampler = setInterval(() => {
    const now = performance.now();
    if (now - last >= 15) traceAt(last, `stall ${(now - last).toFixed(1)}ms`);
    last = now;
    if (externalBytes && ext >= 0) {
      const e = externalBytes();
      if (Math.abs(e - ext) >= EXTERNAL_STEP) {
        traceAt(now, `ext ${mb(e)} (${e > ext ? "+" : ""}${mb(e - ext)})`);
        ext = e;
      }
    }
  }, 2);
  Deno.unrefTimer(sampler);
}

/** Bytes as MB (10^6 bytes) with one decimal. */
const mb = (n: number) => (n / 1e6).toFixed(1);

/**
 * ` ext=<MB>`: this isolate's external memory now, to append to a trace line (empty until the
 * sampler started, and when not {@link tracing}).
 */
export function externalNote(): string {
  return externalBytes ? ` ext=${mb(externalBytes())}` : "";
}

/** Records `what` now (no-op unless {@link tracing}). */
export function trace(what: string): void {
  if (tracing) traceAt(performance.now(), what);
}

/**
 * Runs `f`; when {@link tracing}, records `what(result)` followed by how long `f` took. Without
 * a trace it only runs `f` (no clock reads on the serving path).
 */
export function traced<T>(f: () => T, what: (result: T) => string): T {
  if (!tracing) return f();
  const t0 = performance.now();
  const r = f();
  traceAt(performance.now(), `${what(r)} ${(performance.now() - t0).toFixed(1)}ms`);
  return r;
}

function traceAt(at: number, what: string): void {
  lines.push(`${(performance.timeOrigin + at).toFixed(1)} ${who} ${what}`);
  if (timer !== undefined) return;
  timer = setTimeout(flush, 1000);
  Deno.unrefTimer(timer);
}

function flush(): void {
  if (timer !== undefined) clearTimeout(timer);
  timer = undefined;
  if (!lines.length) return;
  const text = lines.join("\n") + "\n";
  lines = [];
  try {
    Deno.writeTextFileSync(file!, text, { append: true });
  } catch {
    // diagnostics only
  }
}

// the last second's lines, when the program exits (Deno.exit or the end of the event loop)
if (tracing) globalThis.addEventListener("unload", flush);

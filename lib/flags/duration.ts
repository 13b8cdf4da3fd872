/**
 * Go-style durations (`300ms`, `1.5s`, `1m0s`, `2160h0m0s`). Values are numbers of milliseconds
 * (floats, so `1500ns` is `0.0015`); text is parsed like Go's `time.ParseDuration` and printed
 * exactly like Go's `time.Duration.String()`.
 * @module
 */

const NS_PER: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  "µs": 1_000n, // U+00B5 micro sign
  "μs": 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const UNITS_TEXT = "ns, us, µs, ms, s, m, h";
const MAX_NS = (1n << 63n) - 1n;

/**
 * Parses a Go duration into milliseconds.
 *
 * @example
 * ```ts
 * import { parseDuration } from "./duration.ts";
 * parseDuration("1m30s"); // 90000
 * parseDuration("-1.5h"); // -5400000
 * ```
 * @throws {Error} `Cannot parse duration "1x": unknown unit "x"` and similar.
 */
export function parseDuration(text: string): number {
  const fail = (why: string): never => {
    throw new Error(`Cannot parse duration ${JSON.stringify(text)}: ${why}`);
  };
  let s = text;
  let negative = false;
  if (s.startsWith("-") || s.startsWith("+")) {
    negative = s[0] === "-";
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") fail("empty value");
  let totalNs = 0n;
  let fracNs = 0; // sub-nanosecond remainders summed as a float, rounded at the end
  while (s !== "") {
    const m = /^([0-9]*)(?:\.([0-9]*))?/.exec(s)!;
    const intPart = m[1];
    const fracPart = m[2];
    if (intPart === "" && (fracPart === undefined || fracPart === "")) {
      fail(`expected a number at ${JSON.stringify(s)}`);
    }
    s = s.slice(m[0].length);
    const unitMatch = /^[^0-9.]+/.exec(s);
    if (!unitMatch) fail(`missing unit (one of ${UNITS_TEXT})`);
    const unitText = unitMatch![0];
    const unit = NS_PER[unitText];
    if (unit === undefined) fail(`unknown unit ${JSON.stringify(unitText)}`);
    s = s.slice(unitText.length);
    totalNs += BigInt(intPart || "0") * unit;
    if (fracPart) {
      // Exact integer part of the fraction times the unit, plus a float remainder.
      const scale = 10n ** BigInt(fracPart.length);
      const scaled = BigInt(fracPart) * unit;
      totalNs += scaled / scale;
      fracNs += Number(scaled % scale) / Number(scale);
    }
    if (totalNs > MAX_NS) fail("value out of range");
  }
  totalNs += BigInt(Math.round(fracNs));
  if (totalNs > MAX_NS) fail("value out of range");
  const ms = nsToMs(totalNs);
  return negative && ms !== 0 ? -ms : ms;
}

function nsToMs(ns: bigint): number {
  const whole = ns / 1_000_000n;
  const rest = ns % 1_000_000n;
  return Number(whole) + Number(rest) / 1e6;
}

function msToNs(ms: number): bigint {
  const whole = Math.trunc(ms);
  return BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6));
}

/** Formats `v / 10**prec` as ".123" with trailing zeros removed; returns [text, v / 10**prec]. */
function fmtFrac(v: bigint, prec: number): [string, bigint] {
  let digits = "";
  let print = false;
  for (let i = 0; i < prec; i++) {
    const digit = v % 10n;
    print = print || digit !== 0n;
    if (print) digits = digit.toString() + digits;
    v /= 10n;
  }
  return [print ? "." + digits : "", v];
}

/**
 * Formats milliseconds exactly like Go's `time.Duration.String()` (rounded to whole nanoseconds).
 *
 * @example
 * ```ts
 * import { formatDuration } from "./duration.ts";
 * formatDuration(0); // "0s"
 * formatDuration(60_000); // "1m0s"
 * formatDuration(1.5); // "1.5ms"
 * ```
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) throw new Error(`Cannot format duration ${ms}: not a finite number`);
  let u = msToNs(ms);
  const negative = u < 0n;
  if (negative) u = -u;
  let out: string;
  if (u < 1_000_000_000n) {
    if (u === 0n) return "0s";
    let prec: number;
    let unit: string;
    if (u < 1_000n) {
      prec = 0;
      unit = "ns";
    } else if (u < 1_000_000n) {
      prec = 3;
      unit = "µs";
    } else {
      prec = 6;
      unit = "ms";
    }
    const [frac, rest] = fmtFrac(u, prec);
    out = rest.toString() + frac + unit;
  } else {
    const [frac, secondsTotal] = fmtFrac(u, 9);
    out = (secondsTotal % 60n).toString() + frac + "s";
    let minutes = secondsTotal / 60n;
    if (minutes > 0n) {
      out = (minutes % 60n).toString() + "m" + out;
      const hours = minutes / 60n;
      if (hours > 0n) out = hours.toString() + "h" + out;
      minutes = 0n;
    }
  }
  return negative ? "-" + out : out;
}

/**
 * Formats milliseconds as a proto3 JSON `google.protobuf.Duration` (`"10s"`, `"1.500s"`), rounded
 * to the millisecond: the form Envoy's and gRPC's bootstrap files take.
 *
 * @example
 * ```ts
 * import { formatProtoDuration } from "./duration.ts";
 * formatProtoDuration(1500); // "1.500s"
 * ```
 */
export function formatProtoDuration(ms: number): string {
  const total = Math.round(ms);
  const s = Math.floor(total / 1000);
  const rest = total % 1000;
  return rest ? `${s}.${String(rest).padStart(3, "0")}s` : `${s}s`;
}

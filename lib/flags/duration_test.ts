import assert from "node:assert/strict";
import { formatDuration, formatProtoDuration, parseDuration } from "./duration.ts";

Deno.test("parseDuration() reads Go durations as milliseconds", () => {
  const cases: [string, number][] = [
    ["0", 0],
    ["0s", 0],
    ["300ms", 300],
    ["1.5s", 1500],
    ["1m0s", 60_000],
    ["1h2m3.5s", 3_723_500],
    ["2160h0m0s", 2160 * 3_600_000],
    ["8760h0m0s", 8760 * 3_600_000],
    ["1500ns", 0.0015],
    ["2us", 0.002],
    ["2µs", 0.002],
    ["2μs", 0.002],
    [".5s", 500],
    ["5.s", 5000],
    ["+3s", 3000],
    ["-1.5h", -5_400_000],
    ["1h1h", 7_200_000],
  ];
  for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
});

Deno.test("parseDuration() rejects malformed text with a message quoting the value", () => {
  const cases: [string, string][] = [
    ["1x", 'Cannot parse duration "1x": unknown unit "x"'],
    ["1", 'Cannot parse duration "1": missing unit (one of ns, us, µs, ms, s, m, h)'],
    ["", 'Cannot parse duration "": empty value'],
    ["-", 'Cannot parse duration "-": empty value'],
    ["s", 'Cannot parse duration "s": expected a number at "s"'],
    [".s", 'Cannot parse duration ".s": expected a number at ".s"'],
    ["1.5.5s", 'Cannot parse duration "1.5.5s": missing unit (one of ns, us, µs, ms, s, m, h)'],
    ["3000000h", 'Cannot parse duration "3000000h": value out of range'],
    ["1s ", 'Cannot parse duration "1s ": unknown unit "s "'],
  ];
  for (const [text, message] of cases) {
    assert.throws(() => parseDuration(text), { message }, JSON.stringify(text));
  }
});

Deno.test("formatDuration() prints exactly like Go's time.Duration.String()", () => {
  const cases: [number, string][] = [
    [0, "0s"],
    [-0, "0s"],
    [60_000, "1m0s"],
    [2160 * 3_600_000, "2160h0m0s"],
    [8760 * 3_600_000, "8760h0m0s"],
    [1500, "1.5s"],
    [300, "300ms"],
    [1.5, "1.5ms"],
    [0.0015, "1.5µs"],
    [0.000001, "1ns"],
    [30_000, "30s"],
    [600_000, "10m0s"],
    [3_723_500, "1h2m3.5s"],
    [-5_400_000, "-1h30m0s"],
    [3_600_000.000001, "1h0m0.000000001s"],
  ];
  for (const [ms, text] of cases) assert.equal(formatDuration(ms), text, String(ms));
  assert.throws(() => formatDuration(NaN), {
    message: "Cannot format duration NaN: not a finite number",
  });
});

Deno.test("formatDuration() and parseDuration() round trip", () => {
  for (
    const text of ["0s", "1ns", "999ns", "1µs", "1.001ms", "59.999s", "1m0s", "1h0m1s", "-2m3s"]
  ) {
    assert.equal(formatDuration(parseDuration(text)), text);
  }
  for (const ms of [0, 1, 2, 1500, 60_000, 123_456.789, 2160 * 3_600_000]) {
    assert.equal(parseDuration(formatDuration(ms)), ms);
  }
});

Deno.test("formatProtoDuration() writes proto3 JSON durations, rounded to the millisecond", () => {
  assert.equal(formatProtoDuration(0), "0s");
  assert.equal(formatProtoDuration(10_000), "10s");
  assert.equal(formatProtoDuration(1500), "1.500s");
  assert.equal(formatProtoDuration(1), "0.001s");
  assert.equal(formatProtoDuration(1999.6), "2s");
});

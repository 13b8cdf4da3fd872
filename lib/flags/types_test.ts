import assert from "node:assert/strict";
import {
  bool,
  duration,
  float32,
  int,
  refine,
  string,
  stringArray,
  stringSlice,
  uint,
  uint16,
} from "./types.ts";

Deno.test("bool.parse() accepts Go's spellings and rejects others", () => {
  for (const t of ["1", "t", "T", "true", "TRUE", "True"]) {
    assert.equal(bool.parse(t, undefined), true);
  }
  for (const f of ["0", "f", "F", "false", "FALSE", "False"]) {
    assert.equal(bool.parse(f, undefined), false);
  }
  assert.throws(() => bool.parse("yes", undefined), {
    message: 'Cannot parse bool "yes": expected true or false',
  });
  assert.equal(bool.format(true), "true");
});

Deno.test("int, uint and uint16 parse whole numbers within their ranges", () => {
  assert.equal(int.parse("-42", undefined), -42);
  assert.equal(int.parse("+7", undefined), 7);
  assert.equal(int.parse("104857600", undefined), 104857600);
  assert.throws(() => int.parse("abc", undefined), {
    message: 'Cannot parse int "abc": not a whole number',
  });
  assert.throws(() => int.parse("1.5", undefined), { message: /Cannot parse int "1.5"/ });
  assert.throws(() => int.parse("", undefined), { message: /Cannot parse int ""/ });
  assert.throws(() => int.parse("99999999999999999999", undefined), { message: /out of range/ });
  assert.equal(uint.parse("1048576", undefined), 1048576);
  assert.throws(() => uint.parse("-1", undefined), {
    message: 'Cannot parse uint "-1": must not be negative',
  });
  assert.equal(uint16.parse("0", undefined), 0);
  assert.equal(uint16.parse("65535", undefined), 65535);
  assert.throws(() => uint16.parse("70000", undefined), {
    message: 'Cannot parse uint16 "70000": out of range 0..65535',
  });
  assert.throws(() => uint16.parse("-1", undefined), { message: /out of range 0..65535/ });
  assert.equal(uint16.format(9876), "9876");
  assert.equal(int.format(-3), "-3");
});

Deno.test("float32 parses decimals, rounds to float32 and prints the shortest form", () => {
  assert.equal(float32.parse("0.5", undefined), 0.5);
  assert.equal(float32.format(float32.parse("0.1", undefined)), "0.1");
  assert.equal(float32.format(float32.parse("1e-7", undefined)), "1e-07");
  assert.equal(float32.format(float32.parse("1000000", undefined)), "1e+06");
  assert.equal(float32.format(float32.parse("123456", undefined)), "123456");
  assert.equal(float32.format(0.5), "0.5");
  assert.equal(float32.format(0), "0");
  assert.throws(() => float32.parse("half", undefined), {
    message: 'Cannot parse float32 "half": not a number',
  });
  assert.throws(() => float32.parse("1e39", undefined), {
    message: 'Cannot parse float32 "1e39": out of range',
  });
});

Deno.test("duration parses to milliseconds and formats like Go", () => {
  assert.equal(duration.parse("1m0s", undefined), 60_000);
  assert.equal(duration.format(2160 * 3_600_000), "2160h0m0s");
  assert.throws(() => duration.parse("1x", undefined), {
    message: 'Cannot parse duration "1x": unknown unit "x"',
  });
});

Deno.test("stringSlice splits on commas, accumulates repeats and prints [a,b]", () => {
  const once = stringSlice.parse("a,b", undefined);
  assert.deepEqual(once, ["a", "b"]);
  assert.deepEqual(stringSlice.parse("c", once), ["a", "b", "c"]);
  assert.deepEqual(stringSlice.parse('"x,y",z', undefined), ["x,y", "z"]);
  assert.deepEqual(stringSlice.parse("", undefined), []);
  assert.equal(stringSlice.format(["a", "b"]), "[a,b]");
  assert.equal(stringSlice.format([]), "[]");
  assert.throws(() => stringSlice.parse('"open', undefined), {
    message: 'Cannot parse list "\\"open": unterminated quote',
  });
});

Deno.test("stringArray keeps commas, accumulates repeats and prints [stdout]", () => {
  const first = stringArray.parse("a=1,b=2", undefined);
  assert.deepEqual(first, ["a=1,b=2"]);
  assert.deepEqual(stringArray.parse("stderr", first), ["a=1,b=2", "stderr"]);
  assert.equal(stringArray.format(["stdout"]), "[stdout]");
  assert.equal(stringArray.format([]), "[]");
});

Deno.test("string passes text through and refine() adds a check", () => {
  assert.equal(string.parse("", undefined), "");
  const upper = refine(string, (v) => {
    if (v !== v.toUpperCase()) throw new Error(`Value ${JSON.stringify(v)} is not upper case`);
  });
  assert.equal(upper.parse("OK", undefined), "OK");
  assert.throws(() => upper.parse("no", undefined), { message: 'Value "no" is not upper case' });
});

Deno.test("format() and parse() round trip for every type", () => {
  const cases: [{ parse(t: string, p: undefined): unknown; format(v: never): string }, string][] = [
    [bool, "false"],
    [int, "-12"],
    [uint, "1024"],
    [uint16, "9093"],
    [float32, "0.5"],
    [duration, "1h2m3.5s"],
    [string, "mesh-system"],
  ];
  for (const [type, text] of cases) {
    assert.equal(type.format(type.parse(text, undefined) as never), text);
  }
  assert.equal(stringSlice.format(stringSlice.parse("a,b", undefined)), "[a,b]");
  assert.equal(stringArray.format(stringArray.parse("stdout", undefined)), "[stdout]");
});

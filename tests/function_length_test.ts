/**
 * The size rule of STYLE.md: no function in lib/, servers/ or cli/ is longer than
 * {@link MAX_LINES} lines unless a `// long: <reason>` comment above it says why.
 * `deno run -A tests/_function_length.ts` lists the longest functions and files.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { blank, functionLengths, productionFiles } from "./_function_length.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** Longest function allowed without a reason. */
const MAX_LINES = 120;

/**
 * Long functions of files another change is splitting right now (a reason comment there would
 * only conflict with it): `file name` → why. Remove an entry once its split lands.
 */
const BEING_SPLIT: Record<string, string> = {};

Deno.test("functionLengths() measures declarations, methods and arrow bodies from their parameters", () => {
  const text = [
    "export async function start(", // 1
    "  config: Config,",
    "): Promise<{ a: string }> {",
    "  if (config) {",
    "    const f = (x: number): number => {", // 5
    "      return x;",
    "    };",
    "  }",
    "  return { a: `${'}'}` };",
    "}", // 10
    "class C {",
    "  #m(a: string) {",
    "    return /[}]/.test(a);",
    "  }",
    "}", // 15
  ].join("\n");
  assert.deepEqual(
    functionLengths(text).map(({ name, line, lines }) => ({ name, line, lines })),
    [
      { name: "start", line: 1, lines: 10 },
      { name: "f", line: 5, lines: 3 },
      { name: "#m", line: 12, lines: 3 },
    ],
  );
});

Deno.test("functionLengths() takes the reason from a // long: comment above the function or its JSDoc", () => {
  const text = [
    "// long: a table of checks",
    "/** Doc. */",
    "function a() {",
    "}",
    "",
    "function b() {",
    "}",
  ].join("\n");
  assert.deepEqual(functionLengths(text).map((f) => [f.name, f.reason]), [
    ["a", "a table of checks"],
    ["b", undefined],
  ]);
});

Deno.test("blank() keeps code braces and newlines and drops those of strings, comments and regexes", () => {
  const code = blank("a('{', `x${ {b: 1}.b }}`) // }\n/* { */ const r = /{/;");
  assert.equal(code.split("\n").length, 2);
  // left: the `${`, the object literal's braces and the `}` closing the substitution
  assert.equal([...code].filter((c) => c === "{").length, 2);
  assert.equal([...code].filter((c) => c === "}").length, 2);
  assert.ok(!code.includes("//") && !code.includes("/{/"), code);
});

Deno.test(`no function in lib/, servers/ or cli/ is longer than ${MAX_LINES} lines without a reason above it`, async () => {
  const bad: string[] = [];
  const pending = new Set(Object.keys(BEING_SPLIT));
  for (const file of await productionFiles(ROOT, ["lib", "servers", "cli"])) {
    const text = await Deno.readTextFile(join(ROOT, file));
    for (const f of functionLengths(text)) {
      if (f.lines <= MAX_LINES || f.reason) continue;
      if (pending.delete(`${file} ${f.name}`)) continue;
      bad.push(`${file}:${f.line} ${f.name}: ${f.lines} lines`);
    }
  }
  assert.deepEqual(
    bad,
    [],
    `split these functions, or write "// long: <why>" above them`,
  );
  assert.deepEqual([...pending], [], "BEING_SPLIT entries that are short now: remove them");
});

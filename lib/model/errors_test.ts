import assert from "node:assert/strict";
import { parseDocument } from "../deps/yaml.ts";
import { firstErrorLine } from "./errors.ts";

Deno.test("firstErrorLine() keeps the parser's first line without the code-frame colon", () => {
  const doc = parseDocument("a: [1, 2\nb: 3\n");
  const raw = doc.errors[0].message;
  assert.match(raw, /:\n/, "the YAML parser appends a code frame after a colon");
  const line = firstErrorLine(raw);
  assert.ok(!line.includes("\n"));
  assert.ok(!line.endsWith(":"), line);
  assert.match(line, /at line \d+, column \d+$/);
});

/** `applyMutant()` of tests/mutate_retest.ts: Stryker's locations (lines and columns from 1). */
import assert from "node:assert/strict";
import { applyMutant, type Mutant } from "./mutate_retest.ts";

const at = (line: number, column: number) => ({ line, column });
const mutant = (start: [number, number], end: [number, number], replacement: string): Mutant => ({
  id: "1",
  mutatorName: "Test",
  replacement,
  status: "Survived",
  location: { start: at(...start), end: at(...end) },
});

Deno.test("applyMutant() replaces exactly the located text, on one line or across lines", () => {
  const source = "const a = 1;\nif (a < 2) {\n  f();\n}\n";
  assert.equal(
    applyMutant(source, mutant([2, 5], [2, 10], "a <= 2")),
    "const a = 1;\nif (a <= 2) {\n  f();\n}\n",
  );
  assert.equal(applyMutant(source, mutant([2, 12], [4, 2], "{}")), "const a = 1;\nif (a < 2) {}\n");
  assert.equal(
    applyMutant(source, mutant([1, 11], [1, 12], "")),
    "const a = ;\nif (a < 2) {\n  f();\n}\n",
  );
});

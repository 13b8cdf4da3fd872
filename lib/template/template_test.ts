import assert from "node:assert/strict";
import { FUNCTIONS, parseTemplate, TemplateError } from "./mod.ts";

Deno.test("parseTemplate() uses {{ }} by default and the delimiters given in options", () => {
  assert.equal(parseTemplate("a{{ .x }}[[ .x ]]").render({ x: 1 }), "a1[[ .x ]]");
  assert.equal(
    parseTemplate("a{{ .x }}[[ .x ]]", { delims: ["[[", "]]"] }).render({ x: 1 }),
    "a{{ .x }}1",
  );
  assert.equal(parseTemplate("<%- .x -%> y", { delims: ["<%", "%>"] }).render({ x: 1 }), "1y");
});

Deno.test("parseTemplate() prints a missing field as nothing, or fails when missingKey is error", () => {
  assert.equal(parseTemplate("[{{ .a.b }}]").render({}), "[]");
  const strict = parseTemplate("x\n{{ .a.b }}", { missingKey: "error", name: "t.yaml" });
  assert.throws(() => strict.render({ a: {} }), {
    name: "TemplateError",
    message: "t.yaml:2: .a.b is not set",
  });
  assert.equal(strict.render({ a: { b: null } }), "x\n");
  // conditions and functions see a missing field as empty, even when printing it is an error
  const cond = parseTemplate('{{ if .a }}y{{ else }}n{{ end }}{{ .a | default "d" }}', {
    missingKey: "error",
  });
  assert.equal(cond.render({}), "nd");
});

Deno.test("parseTemplate() matches field names exactly unless goFieldNames is set", () => {
  assert.equal(parseTemplate("{{ .Name }}").render({ name: "n" }), "");
  assert.equal(parseTemplate("{{ .Name }}", { goFieldNames: true }).render({ name: "n" }), "n");
});

Deno.test("parseTemplate() calls only the functions given, and names the template in errors", () => {
  const fns = { ...FUNCTIONS, twice: (v: unknown) => `${v}${v}` };
  assert.equal(parseTemplate("{{ .x | twice }}", { functions: fns }).render({ x: "a" }), "aa");
  assert.throws(() => parseTemplate("{{ twice 1 }}"), {
    message: 'template: line 1: function "twice" not defined',
  });
  assert.throws(() => parseTemplate("\n{{ if .x }}", { name: "c.yaml" }), {
    message: "c.yaml:2: if without end",
  });
  assert.throws(() => parseTemplate("{{ .x", { name: "c.yaml" }), TemplateError);
});

Deno.test("parseTemplate() prints maps as JSON, or as block YAML when printObjects is yaml", () => {
  assert.equal(parseTemplate("{{ . }}").render({ k: [1] }), '{"k":[1]}');
  assert.equal(parseTemplate("{{ . }}", { printObjects: "yaml" }).render({ k: [1] }), "k:\n  - 1");
});

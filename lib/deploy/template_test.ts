import assert from "node:assert/strict";
import { renderTemplate, TemplateError } from "./template.ts";

const data = { Values: { hub: "h", n: 3, on: true, off: false, list: ["a"], map: { k: "v" } } };

Deno.test("renderTemplate() substitutes values and pipes them through functions", () => {
  assert.equal(renderTemplate("t", "{{ .Values.hub }}/x:{{ .Values.n }}", data), "h/x:3");
  assert.equal(renderTemplate("t", "{{ .Values.hub | quote }}", data), '"h"');
  assert.equal(renderTemplate("t", '{{ .Values.none | default "d" }}', data), "d");
  assert.equal(renderTemplate("t", "m:{{ toYaml .Values.map | nindent 2 }}", data), "m:\n  k: v");
  assert.equal(
    renderTemplate("t", "{{ not .Values.on }} {{ and .Values.on .Values.off }}", data),
    "false false",
  );
  assert.equal(renderTemplate("t", "{{ x }}", data, { x: () => "fn" }), "fn");
  assert.equal(renderTemplate("t", "{{/* note */}}ok", data), "ok");
});

Deno.test("renderTemplate() if / else if / else, with whitespace trimming", () => {
  const src =
    "a:\n  {{- if .Values.off }} one{{ else if .Values.missing }} two{{ else }} three{{ end }}\nb";
  assert.equal(renderTemplate("t", src, data), "a: three\nb");
  assert.equal(renderTemplate("t", "x\n{{- if .Values.list }}\ny\n{{- end }}\n", data), "x\ny\n");
});

Deno.test("renderTemplate() errors name the template and line", () => {
  assert.throws(() => renderTemplate("t.yaml", "a\nb: {{ .Values.nope }}", data), {
    name: "TemplateError",
    message: "t.yaml:2: .Values.nope is not set",
  });
  assert.throws(
    () => renderTemplate("t.yaml", "{{ if .Values.on }}x", data),
    /t\.yaml:1: if without end/,
  );
  assert.throws(
    () => renderTemplate("t.yaml", '\n{{ include "x" . }}', data),
    { name: "TemplateError", message: 't.yaml:2: function "include" not defined' },
  );
  assert.throws(() => renderTemplate("t.yaml", "{{ frob 1 }}", data), TemplateError);
  assert.throws(() => renderTemplate("t.yaml", "{{ .Values.hub", data), /unclosed action/);
});

Deno.test("renderTemplate() ranges and prints maps as block YAML, as Helm charts do", () => {
  assert.equal(renderTemplate("t", "{{ range .Values.list }}- {{ . }}{{ end }}", data), "- a");
  assert.equal(renderTemplate("t", "{{ .Values.map }}", data), "k: v");
  assert.equal(renderTemplate("t", "{{ with .Values.map }}{{ .k }}{{ end }}", data), "v");
});

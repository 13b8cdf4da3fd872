import assert from "node:assert/strict";
import {
  formatIssues,
  MAX_ALIASES,
  MAX_DEPTH,
  MAX_ISSUES,
  normalizeObject,
  parseDocuments,
  quote,
  QUOTE_MAX,
  shapeProblem,
} from "./mod.ts";

/** Parses one-or-more documents and normalizes each: one line per problem, per document. */
function check(text: string, label = "bad.yaml"): string[] {
  return parseDocuments(text).flatMap((d) => {
    const where = `${label} document ${d.index}`;
    if (d.error !== undefined) return [`${where}: ${d.error}`];
    if (d.value === null) return [];
    const r = normalizeObject(d.value, where);
    return r.issues.length ? formatIssues(r.issues).split("\n") : [];
  });
}

const DP = "apiVersion: config.mesh.io/v1alpha2\nkind: denier\nmetadata: {name: d}\n";

Deno.test("a YAML alias inside its own anchor is one clear problem, not a stack overflow", () => {
  const lines = check(DP + "spec:\n  custom: &c [*c]\n");
  assert.deepEqual(lines, [
    "denier/d: spec.custom[0]: contains itself (a YAML alias inside its own anchor)",
  ]);
});

Deno.test("nesting deeper than MAX_DEPTH is refused with the path where it goes too deep", () => {
  const deep = "[".repeat(MAX_DEPTH + 5) + "]".repeat(MAX_DEPTH + 5);
  const [line, ...rest] = check(DP + `spec: {a: ${deep}}\n`);
  assert.deepEqual(rest, []);
  assert.match(
    line,
    new RegExp(`^denier/d: spec\\.a(\\[0\\])+: is nested deeper than ${MAX_DEPTH}$`),
  );
  // deeper than the YAML parser itself can go: the parser's overflow in plain words
  const deeper = "[".repeat(20_000) + "]".repeat(20_000);
  const lines = check(`---\n${DP}---\nspec: ${deeper}\n`);
  assert.equal(lines.length, 1);
  assert.match(
    lines[0],
    new RegExp(
      `^bad\\.yaml document 2: cannot parse YAML: nested deeper than the parser can read \\(keep documents under ${MAX_DEPTH} levels\\)( at line \\d+, column \\d+)?$`,
    ),
  );
});

Deno.test("alias expansion beyond MAX_ALIASES names the document", () => {
  const laughs = [
    "a: &a [x, x, x, x, x, x, x, x, x, x]",
    "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]",
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]",
    "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]",
  ].join("\n");
  const aliases = Array.from({ length: MAX_ALIASES + 1 }, () => "*a").join(", ");
  assert.deepEqual(check(`${DP}---\n${laughs}\n---\nx: &a 1\ny: [${aliases}]\n`), [
    `bad.yaml document 2: cannot parse YAML: more than ${MAX_ALIASES} aliases (*name) are resolved in this document`,
    `bad.yaml document 3: cannot parse YAML: more than ${MAX_ALIASES} aliases (*name) are resolved in this document`,
  ]);
});

Deno.test("a broken 200 KB flow sequence gives one short line per document, no code frame", () => {
  const lines = check("[" + "a: b, ".repeat(35_000));
  assert.equal(lines.length, 1);
  assert.match(lines[0], /^bad\.yaml document 1: cannot parse YAML: /);
  assert.ok(lines[0].length < 4 * QUOTE_MAX, lines[0]);
});

Deno.test("values from input are quoted and cut in messages: no forged lines, no 1 MB echoes", () => {
  const forged = check(
    'apiVersion: networking.mesh.io/v1alpha3\nkind: "VirtualService\\nError: forged"\n' +
      'metadata: {name: "x\\n2026-01-01T00:00:00Z info forged"}\nspec: {}\n',
  );
  assert.ok(forged.length > 0);
  for (const l of forged) assert.ok(!l.includes("\n"), l);
  assert.match(forged[0], /^"VirtualService\\nError: forged"\/"x\\n2026/);
  const big = "x".repeat(1 << 20);
  const lines = check(
    `apiVersion: networking.mesh.io/v1alpha3\nkind: ServiceEntry\nmetadata: {name: se}\n` +
      `spec: {hosts: [a.com], ports: [{number: 1, name: a, protocol: HTTP}], resolution: ${big}}\n`,
  );
  assert.equal(lines.length, 1);
  assert.ok(lines[0].length < 400, `${lines[0].length} characters`);
  assert.ok(lines[0].includes(quote(big)));
  assert.equal(quote(big).length, QUOTE_MAX + 5);
});

Deno.test("a ServiceEntry host or address that is empty is refused (no empty Envoy address)", () => {
  const lines = check(
    "apiVersion: networking.mesh.io/v1alpha3\nkind: ServiceEntry\nmetadata: {name: se}\n" +
      'spec: {hosts: [""], addresses: [""], ports: [{number: 443, name: https, protocol: HTTPS}], resolution: DNS}\n',
  );
  assert.deepEqual(
    lines,
    [
      "ServiceEntry/default/se: spec.hosts[0]: must not be empty",
      "ServiceEntry/default/se: spec.addresses[0]: must not be empty",
    ].map((l) => l.replace("/default", "")),
  );
});

Deno.test("problems of one document are capped at MAX_ISSUES with a count of the rest", () => {
  const fields = Array.from({ length: 100 }, (_, i) => `f${i}: 1`).join(", ");
  const lines = check(
    `apiVersion: networking.mesh.io/v1alpha3\nkind: VirtualService\nmetadata: {name: v}\nspec: {${fields}}\n`,
  );
  assert.equal(lines.length, MAX_ISSUES);
  assert.match(lines.at(-1)!, /\(and 80 more problems\)$/);
});

Deno.test("shapeProblem() refuses numbers JSON cannot hold and bounds the values counted", () => {
  assert.deepEqual(shapeProblem({ spec: { a: [1, Infinity] } }), {
    path: "spec.a[1]",
    reason: "must be a finite number, got Infinity",
  });
  const shared = Array.from({ length: 1000 }, (_, i) => i);
  const wide = Array.from({ length: 1000 }, () => shared); // a DAG: 1,000,000 values expanded
  assert.match(shapeProblem({ spec: wide })!.reason, /^has more than \d+ values in one document$/);
  assert.equal(shapeProblem({ spec: { a: [1, { b: "c" }] } }), undefined);
});

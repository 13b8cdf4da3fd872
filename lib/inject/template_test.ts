import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { parseTemplate, TemplateError } from "./template.ts";

function assertThrows(fn: () => unknown, cls: typeof TemplateError, part = ""): Error {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof cls)) throw e;
    if (!e.message.includes(part)) {
      throw new Error(`message ${JSON.stringify(e.message)} lacks ${part}`);
    }
    return e;
  }
  throw new Error("did not throw");
}

const render = (src: string, data: unknown) => parseTemplate(src).render(data);

Deno.test("parseTemplate() renders field access, finding Go-style names in JSON objects", () => {
  assertEquals(
    render("[[ .ObjectMeta.Name ]]/[[ .Spec.nodeName ]]", {
      ObjectMeta: { name: "web" },
      Spec: { nodeName: "n1" },
    }),
    "web/n1",
  );
  assertEquals(render("[[ .Missing.Deep ]]|", {}), "|");
});

Deno.test("parseTemplate() handles if / else if / else / end and trim markers", () => {
  const t = parseTemplate(
    "a\n  [[- if eq .X 1 ]] one [[- else if .Y ]] y [[- else ]] none [[- end ]]\n",
  );
  assertEquals(t.render({ X: 1 }), "a one\n");
  assertEquals(t.render({ X: 2, Y: true }), "a y\n");
  assertEquals(t.render({}), "a none\n");
});

Deno.test("parseTemplate() ranges over lists and maps with variables, and with rebinds dot", () => {
  assertEquals(
    render("[[ range $i, $c := .L ]][[ $i ]]=[[ $c.name ]];[[ end ]]", {
      L: [{ name: "a" }, { name: "b" }],
    }),
    "0=a;1=b;",
  );
  assertEquals(render("[[ range .M ]][[ . ]],[[ end ]]", { M: { b: 2, a: 1 } }), "1,2,");
  assertEquals(render("[[ range .L ]]x[[ else ]]empty[[ end ]]", { L: [] }), "empty");
  assertEquals(render("[[ with .A ]][[ .B ]][[ end ]]", { A: { B: "in" } }), "in");
  assertEquals(
    render("[[ $x := .A ]][[ range .L ]][[ $x ]][[ $.A ]][[ end ]]", { A: "a", L: [1] }),
    "aa",
  );
});

Deno.test("parseTemplate() pipes pass the value as the last argument; functions behave", () => {
  const meta = { annotations: { k: "v", empty: "" }, labels: { app: "web" } };
  assertEquals(
    render(
      `[[ annotation .M "k" "d" ]] [[ annotation .M "x" "d" ]] [[ annotation .M "empty" "d" ]]`,
      { M: meta },
    ),
    "v d ",
  );
  assertEquals(render(`[[ valueOrDefault .X "d" ]] [[ .X | default "d2" ]]`, {}), "d d2");
  assertEquals(render(`[[ .L | toJson ]] [[ "a" | quote ]]`, { L: [1, "x"] }), `[1,"x"] "a"`);
  assertEquals(
    render(`[[ toYaml .M | indent 2 ]]`, { M: { a: 1, b: [1] } }),
    "  a: 1\n  b:\n    - 1",
  );
  assertEquals(render(`[[ formatDuration "90s" ]] [[ formatDuration "bad" ]]`, {}), "1m30s 1s");
  assertEquals(
    render(`[[ index .M.labels "app" ]] [[ isset .M.labels "no" ]]`, { M: meta }),
    "web false",
  );
  assertEquals(
    render(`[[ includeInboundPorts .C ]]`, {
      C: [{ ports: [{ containerPort: 80 }, { containerPort: 81 }] }, {}],
    }),
    "80,81",
  );
  assertEquals(
    render(`[[ printf "mesh.%s:%d%%" "a" 1 ]] [[ join "," .L ]] [[ len .L ]]`, { L: ["x", "y"] }),
    "mesh.a:1% x,y 2",
  );
  assertEquals(
    render(`[[ if and .A (not .B) ]]ok[[ end ]][[ if or .B .A ]]!![[ end ]]`, { A: 1 }),
    "ok!!",
  );
  assertEquals(render("[[/* a comment */]]x", {}), "x");
});

Deno.test("parseTemplate() rejects bad templates with the line of the problem", () => {
  const bad: [string, RegExp][] = [
    ["a\n[[ .X ", /line 2: unclosed action/],
    ["[[ if .X ]]", /if without end/],
    ["[[ end ]]", /line 1: unexpected end/],
    ["\n\n[[ exec .X ]]", /line 3: function "exec" not defined/],
    ["[[ .X | .Y ]]", /can't give arguments|non-function/],
    ['[[ "abc ]]', /unclosed action|unterminated string/],
    ["[[ ]]", /empty action/],
    ["[[ (.X ]]", /missing "\)"/],
  ];
  for (const [src, re] of bad) {
    const e = assertThrows(() => parseTemplate(src).render({}), TemplateError);
    if (!re.test(e.message)) throw new Error(`${JSON.stringify(src)}: ${e.message}`);
  }
});

Deno.test("parseTemplate() limits output size and work, and has no way to run code", () => {
  const big = parseTemplate("[[ range .L ]][[ range $.L ]]xxxxxxxxxx[[ end ]][[ end ]]");
  const L = Array.from({ length: 2000 }, (_, i) => i);
  assertThrows(() => big.render({ L }, { maxOutput: 1000 }), TemplateError, "output larger");
  assertThrows(() => big.render({ L }, { maxSteps: 5000 }), TemplateError, "too much work");
  assertEquals(render("[[ .constructor ]][[ .__proto__ ]]", {}), "");
  assertThrows(() => parseTemplate("[[ constructor ]]"), TemplateError, "not defined");
});

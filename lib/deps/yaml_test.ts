import assert from "node:assert/strict";
import process from "node:process";
import { parse, parseAllDocuments, parseDocument, withPlainEnv } from "./yaml.ts";

Deno.test("withPlainEnv() hands the parser a plain process.env with the variables it reads, and puts the real one back", () => {
  const real = process.env;
  Deno.env.set("LOG_STREAM", "");
  try {
    const seen = withPlainEnv(() => {
      assert.notEqual(process.env, real);
      assert.equal(withPlainEnv(() => process.env), process.env, "a nested call keeps it");
      return { ...process.env };
    });
    assert.deepEqual(seen, { LOG_TOKENS: undefined, LOG_STREAM: "" });
    assert.equal(process.env, real);
    assert.throws(() => withPlainEnv(() => assert.fail("boom")), /boom/);
    assert.equal(process.env, real, "put back when the step throws");
    Deno.env.set("MESH_YAML_TEST", "1");
    assert.equal(process.env.MESH_YAML_TEST, "1", "the real environment, live");
  } finally {
    Deno.env.delete("LOG_STREAM");
    Deno.env.delete("MESH_YAML_TEST");
  }
});

Deno.test("yaml's parse functions parse as before, overloads included", () => {
  assert.deepEqual(parse("a: 1\nb: [x]\n"), { a: 1, b: ["x"] });
  assert.deepEqual(parse("a: 1\n", (_k, v) => typeof v === "number" ? v + 1 : v), { a: 2 });
  const docs = parseAllDocuments("a: 1\n---\nb: 2\n");
  assert.ok(Array.isArray(docs));
  assert.deepEqual(docs.map((d) => d.toJS()), [{ a: 1 }, { b: 2 }]);
  assert.deepEqual(parseDocument("c: 3\n").toJS(), { c: 3 });
  assert.equal(parseDocument("a: [\n").errors.length > 0, true);
});

import assert from "node:assert/strict";
import { parse } from "../deps/yaml.ts";
import { toYaml } from "./yaml_emit.ts";

Deno.test("toYaml() output parses back to the same data, quoting what plain YAML would misread", () => {
  const data = {
    a: "plain",
    b: [
      "true",
      "no",
      "~",
      "1337",
      "2s",
      "-p",
      "*",
      "",
      " lead",
      "a: b",
      "x #y",
      "%e",
      "10.0.0.0/8",
      "multi\nline",
      "é",
      "1:20",
      "2001-01-01",
      "0x1F",
      "1e3",
      ".5",
      "--flag",
      "- x",
      `it's "q"`,
      "-",
    ],
    c: [{ name: "x", list: [[1, 2], []], empty: {} }, null, 1.5, true],
    "key: odd": { "sidecar.mesh.io/status": '{"version":"abc","containers":["mesh-proxy"]}' },
    d: [],
    e: {},
    skipped: undefined,
  };
  const text = toYaml(data);
  const { skipped: _, ...expected } = data;
  assert.deepEqual(parse(text), expected);
  assert.match(text, /^a: plain$/m);
  assert.match(text, /^ {2}- "1337"$/m);
  assert.match(text, /^ {2}- --flag$/m);
  assert.match(text, /^ {2}sidecar.mesh.io\/status: '\{"version":"abc",/m);
  assert.equal(toYaml("yes"), '"yes"\n');
});

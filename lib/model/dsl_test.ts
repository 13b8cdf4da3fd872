// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import {
  arr,
  clean,
  duration,
  enumOf,
  host,
  int,
  map,
  obj,
  port,
  str,
  toOpenAPI,
  validate,
} from "./dsl.ts";

const schema = obj({
  name: str(),
  port: port(),
  timeout: duration({ min: 1, max: 30_000 }),
  hosts: arr(host()),
  mode: enumOf(["A", "B"]),
  headers: map(str()),
  pick: obj({ a: obj({ x: int() }), b: str() }, {
    oneofs: [{ fields: ["a", "b"], required: true }],
  }),
}, { required: ["name"] });

Deno.test("validate() reports every problem with its path", () => {
  assert.deepEqual(
    validate(schema, {
      port: 0,
      timeout: "1m",
      hosts: ["ok", "Bad"],
      mode: "C",
      headers: { "x.y": 1 },
      zzz: 1,
    }, "spec"),
    [
      { path: "spec.port", reason: "must be between 1 and 65535, got 0" },
      { path: "spec.timeout", reason: 'duration "1m" must be at most 30s' },
      {
        path: "spec.hosts[1]",
        reason:
          'invalid host "Bad": label "Bad" must consist of lowercase letters, digits and \'-\', start and end with a letter or digit, and be at most 63 characters',
      },
      { path: "spec.mode", reason: 'must be one of A, B, got "C"' },
      { path: 'spec.headers["x.y"]', reason: "must be a string, got number 1" },
      {
        path: "spec.zzz",
        reason: "unknown field (known fields: name, port, timeout, hosts, mode, headers, pick)",
      },
      { path: "spec.name", reason: "is required" },
    ],
  );
});

Deno.test("validate() treats null as not set, except a null oneof message which selects it", () => {
  assert.deepEqual(validate(schema, { name: "n", port: null, pick: { a: null } }, "spec"), []);
  assert.deepEqual(validate(schema, { name: "n", pick: { b: null } }, "spec"), [
    { path: "spec.pick", reason: "one of a, b is required" },
  ]);
  // The selected message is checked as the {} it stands for (and is stored as): its required
  // fields too, so that what is accepted reads back accepted.
  const strict = obj({
    pick: obj({ a: obj({ x: int() }, { required: ["x"] }), b: str() }, {
      oneofs: [{ fields: ["a", "b"], required: true }],
    }),
  });
  assert.deepEqual(validate(strict, { pick: { a: null } }, "spec"), [
    { path: "spec.pick.a.x", reason: "is required" },
  ]);
  assert.deepEqual(validate(strict, { pick: { a: {} } }, "spec"), [
    { path: "spec.pick.a.x", reason: "is required" },
  ]);
});

Deno.test("clean() drops nulls and turns a null oneof message into {}", () => {
  assert.deepEqual(
    clean(schema, { name: "n", port: null, pick: { a: null }, headers: { k: null } }),
    {
      name: "n",
      pick: { a: {} },
      headers: {},
    },
  );
});

Deno.test("toOpenAPI() emits structural schemas with enums, bounds, maps and oneofs", () => {
  const o = toOpenAPI(schema) as any;
  assert.deepEqual(o.required, ["name"]);
  assert.deepEqual(o.properties.mode, { type: "string", enum: ["A", "B"] });
  assert.deepEqual(o.properties.port, {
    type: "integer",
    format: "int32",
    minimum: 1,
    maximum: 65535,
  });
  assert.equal(o.properties.timeout.type, "string");
  assert.ok(new RegExp(o.properties.timeout.pattern).test("1m30s"));
  assert.ok(!new RegExp(o.properties.timeout.pattern).test("5d"));
  assert.deepEqual(o.properties.headers, {
    type: "object",
    additionalProperties: { type: "string" },
  });
  assert.deepEqual(o.properties.pick.oneOf, [{ required: ["a"] }, { required: ["b"] }]);
});

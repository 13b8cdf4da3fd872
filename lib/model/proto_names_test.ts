import assert from "node:assert/strict";
import { camelCase, knownField, protoField, snakeCase, spellings } from "./proto_names.ts";

Deno.test("camelCase() and snakeCase() convert between the jsonpb spellings", () => {
  assert.equal(camelCase("max_amount"), "maxAmount");
  assert.equal(snakeCase("exponentialBuckets"), "exponential_buckets");
  assert.deepEqual(spellings("output_as_json"), ["output_as_json", "outputAsJson"]);
  assert.deepEqual(spellings("name"), ["name"]);
});

Deno.test("protoField() reads either spelling and names both keys when both are given", () => {
  assert.deepEqual(protoField({ maxAmount: 5 }, "max_amount"), { key: "maxAmount", value: 5 });
  assert.deepEqual(protoField({ max_amount: 5 }, "max_amount"), { key: "max_amount", value: 5 });
  assert.deepEqual(protoField({}, "max_amount"), { key: "max_amount", value: undefined });
  assert.deepEqual(protoField({ max_amount: 1, maxAmount: 2 }, "max_amount"), {
    conflict: ["max_amount", "maxAmount"],
  });
});

Deno.test("knownField() maps a key in either spelling to its known name", () => {
  assert.equal(knownField("entryType", ["entry_type", "overrides"]), "entry_type");
  assert.equal(
    knownField("metrics_expiration_policy", ["metricsExpirationPolicy"]),
    "metricsExpirationPolicy",
  );
  assert.equal(knownField("nosuch", ["entry_type"]), undefined);
});

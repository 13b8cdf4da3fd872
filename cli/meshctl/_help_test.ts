import assert from "node:assert/strict";
import { meshctlSchemas } from "../../lib/model/registry.ts";
import { GET_HELP, TYPE_WORDS } from "./_help.ts";

Deno.test("the help's type list is the model's meshctl types with their short names", () => {
  assert.deepEqual(
    TYPE_WORDS,
    meshctlSchemas.map((s) =>
      s.shortNames.length > 0 ? `${s.type} (${s.shortNames.join(", ")})` : s.type
    ),
  );
  assert.match(GET_HELP, /virtualservice \(vs\),/);
});

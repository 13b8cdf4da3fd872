import assert from "node:assert/strict";
import { ConfigError } from "./config_error.ts";

Deno.test("ConfigError lists every problem in its message and keeps them apart", () => {
  const e = new ConfigError(["--port: not a number", "--host: empty"]);
  assert.ok(e instanceof Error);
  assert.equal(e.name, "ConfigError");
  assert.equal(e.message, "--port: not a number; --host: empty");
  assert.deepEqual(e.problems, ["--port: not a number", "--host: empty"]);
});

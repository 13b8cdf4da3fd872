import assert from "node:assert/strict";
import { discoveryFlags } from "./_test_util.ts";
import { ConfigError, toConfig } from "./config.ts";

const FLAGS = discoveryFlags({
  configDir: "/tmp/unused-config-dir",
  registries: ["Mock"],
  secureGrpcAddr: "",
});

Deno.test("toConfig() --workers: 1 when absent, 0 (one per core) to 256 kept", () => {
  assert.equal(toConfig(FLAGS, {}).workers, 1);
  assert.equal(toConfig({ ...FLAGS, workers: 0 }, {}).workers, 0);
  assert.equal(toConfig({ ...FLAGS, workers: 4 }, {}).workers, 4);
});

Deno.test("toConfig() --workers: a negative, fractional or too large count is a usage error naming the flag", () => {
  for (const workers of [-1, 1.5, 257]) {
    assert.throws(
      () => toConfig({ ...FLAGS, workers }, {}),
      (e) =>
        e instanceof ConfigError &&
        /Invalid value for --workers: must be 0 \(one per core\) to 256/.test(e.message),
    );
  }
});

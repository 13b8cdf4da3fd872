/**
 * mesh-policy's `/metrics` tells the state of the API's listeners (`mesh_policy_grpc_*`), with
 * one isolate and with worker isolates (summed over them).
 */
import {
  acceptingThroughFdExhaustion,
  throttleUntilCounted,
} from "../../tests/harness/listener_metrics.ts";
import assert from "node:assert/strict";
import { recordingLogger } from "../../lib/log/testing.ts";
import { startTestServer } from "./_testutil.ts";

for (const workers of [1, 2]) {
  const w = workers > 1 ? ` with workers ${workers}` : "";

  Deno.test(`mesh-policy${w}: connections that keep failing are counted in mesh_policy_grpc_throttled_connections; nothing else moves`, async () => {
    const s = await startTestServer([], { workers });
    try {
      await throttleUntilCounted({
        port: Number(s.handle.addresses.grpc.split(":")[1]),
        monitoring: s.handle.addresses.monitoring!,
        prefix: "mesh_policy_grpc",
      });
    } finally {
      await s.close();
    }
  });

  Deno.test(`mesh-policy${w}: out of file descriptors, mesh_policy_grpc_accepting is 0 and a warning says so; 1 again once they are back`, async () => {
    const log = recordingLogger();
    const s = await startTestServer([], { workers }, { log });
    try {
      await acceptingThroughFdExhaustion(s.handle.addresses.monitoring!, "mesh_policy_grpc");
      const warnings = log.lines.filter((l) => l.startsWith("warn Policy API"));
      assert.match(
        warnings[0],
        /^warn Policy API cannot accept connections: \S/,
        log.lines.join("\n"),
      );
      assert.equal(warnings.at(-1), "warn Policy API accepts connections again");
    } finally {
      await s.close();
    }
  });
}

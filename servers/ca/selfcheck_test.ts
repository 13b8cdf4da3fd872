import assert from "node:assert/strict";
import { freePort, waitUntil, withTempDir } from "../../tests/harness/procs.ts";
import { caFlags, recordingLogger } from "./_testutil.ts";
import { start, toConfig } from "./mod.ts";
import { selfCheckOnce, startSelfCheck } from "./selfcheck.ts";

Deno.test("the self-check passes against the running CA and the probe file is removed while it fails", async () => {
  await withTempDir(async (dir) => {
    const ca = await start(
      toConfig(caFlags({ selfSignedCa: true, localStorageDir: `${dir}/s`, monitoringPort: 0 })),
      { host: "127.0.0.1", grpcPort: 0, log: recordingLogger() },
    );
    try {
      const port = ca.addresses.grpc!.split(":")[1];
      const good = {
        address: `127.0.0.1:${port}`,
        servername: "mesh-ca",
        namespace: "mesh-system",
        ca: () => ca.ca(),
      };
      assert.equal(await selfCheckOnce(good), "");
      const wrongName = await selfCheckOnce({ ...good, servername: "not-the-ca" });
      assert.notEqual(wrongName, "");

      // A CA whose gRPC port does not answer: the probe file never appears.
      const log = recordingLogger();
      const checks: boolean[] = [];
      const sc = startSelfCheck({
        ...good,
        address: `127.0.0.1:${freePort()}`,
        probePath: `${dir}/probe`,
        probeIntervalMs: 200,
        checkIntervalMs: 50,
        log,
        onCheck: (ok) => checks.push(ok),
      });
      await waitUntil(() => checks.length >= 3, 10_000, "three self-checks");
      await sc.stop();
      assert.deepEqual([...new Set(checks)], [false]);
      assert.equal(await Deno.stat(`${dir}/probe`).then(() => true, () => false), false);
      assert.match(log.lines.join("\n"), /liveness self-check failed/);
    } finally {
      await ca.shutdown();
    }
  });
});

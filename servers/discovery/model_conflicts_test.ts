import assert from "node:assert/strict";
import { type ConfigObject } from "../../lib/model/mod.ts";
import { model } from "../../lib/xds/testdata/model.ts";
import { testModel, warningsLogger } from "./_test_util.ts";

const LEGACY: ConfigObject = {
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "ServiceEntry",
  metadata: { name: "legacy", namespace: "default" },
  spec: {
    hosts: ["legacy.example.com"],
    ports: [{ number: 80, name: "tcp", protocol: "TCP" }],
    resolution: "STATIC",
    endpoints: [{ address: "10.9.9.9" }],
  },
};

Deno.test("DiscoveryModel.conflicts() logs a TCP-over-HTTP listener conflict once and counts it", async () => {
  let ctx = model({ serviceEntries: [LEGACY] });
  const warnings: string[] = [];
  const m = await testModel({
    registry: { services: () => ctx.services, instances: () => ctx.instances },
    logger: warningsLogger(warnings),
  });
  assert.equal(m.counts().conflictsTcpOverHttp, 1);
  assert.deepEqual(m.conflicts().map((c) => c.listener), ["0.0.0.0_80"]);
  m.invalidate();
  assert.equal(m.counts().conflictsTcpOverHttp, 1);
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.match(
    warnings[0],
    /^Outbound listener 0\.0\.0\.0_80: TCP port 80 of legacy\.example\.com/,
  );
  // Gone, then back: logged again.
  ctx = model();
  m.invalidate();
  assert.equal(m.counts().conflictsTcpOverHttp, 0);
  ctx = model({ serviceEntries: [LEGACY] });
  m.invalidate();
  m.conflicts();
  assert.equal(warnings.length, 2);
});

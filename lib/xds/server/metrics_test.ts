import assert from "node:assert/strict";
import { typeShortName, XdsCounters } from "./metrics.ts";
import { XDS_TYPES } from "./types.ts";

Deno.test("typeShortName(): Istio's metric labels for the xDS types; other types keep their message name", () => {
  assert.deepEqual(
    [XDS_TYPES.cluster, XDS_TYPES.endpoint, XDS_TYPES.listener, XDS_TYPES.route, XDS_TYPES.secret]
      .map(typeShortName),
    ["cds", "eds", "lds", "rds", "sds"],
  );
  assert.equal(
    typeShortName("type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig"),
    "TypedExtensionConfig",
  );
  assert.equal(typeShortName("Listener"), "lds");
});

Deno.test("XdsCounters: counts per type and reason; observations keep count, sum and the largest", () => {
  const m = new XdsCounters();
  m.connections(3);
  m.pushed(XDS_TYPES.listener);
  m.pushed(XDS_TYPES.listener);
  m.sendError(XDS_TYPES.route, "error");
  m.sendError(XDS_TYPES.route, "timeout");
  m.buildError(XDS_TYPES.secret);
  m.nack(XDS_TYPES.endpoint);
  for (const s of [0.5, 0.25, 0.125]) m.pushDuration(s);
  m.convergence(2);
  m.convergence(1);
  assert.equal(m.connected, 3);
  assert.deepEqual(m.pushes, { lds: 2 });
  assert.deepEqual(m.pushErrors, { rds_senderr: 1, rds_timeout: 1 });
  assert.deepEqual(m.buildErrors, { sds_builderr: 1 });
  assert.deepEqual(m.nacks, { eds: 1 });
  assert.deepEqual(m.pushDurations, { count: 3, sum: 0.875, max: 0.5 });
  assert.deepEqual(m.convergenceTimes, { count: 2, sum: 3, max: 2 });
});

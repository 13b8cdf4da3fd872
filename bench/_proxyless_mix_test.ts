import assert from "node:assert/strict";
import {
  endpointChangeService,
  expects,
  parseShare,
  perPush,
  proxylessWorkload,
  receivedByKind,
  seEditService,
} from "./_proxyless_mix.ts";
import { GrpcSim } from "./_grpc_sim.ts";
import type { LeanHandlers } from "./_h2_lean.ts";

const shape = {
  services: 1000,
  endpoints: 5,
  changes: 3,
  seEdits: 2,
  svcName: (i: number) => `svc-${i}.bench.example`,
};

Deno.test("proxylessWorkload() listens on the last instance address of its service and calls every changed service", () => {
  const w = proxylessWorkload(1251, shape); // service 251: 10.2.1.x
  assert.equal(w.ip, "10.2.1.5");
  assert.deepEqual(w.serverPorts, [8080]);
  const hit = [
    ...[0, 1, 2].map((c) => endpointChangeService(c, 1000)),
    ...[0, 1].map((c) => seEditService(c, 1000)),
  ];
  assert.deepEqual(w.targets, [...new Set(hit)].map((i) => `svc-${i}.bench.example:8080`));
  assert.deepEqual(hit, [11, 48, 85, 0, 37]);
});

Deno.test("parseShare() accepts [0, 1) and names the flag otherwise", () => {
  assert.equal(parseShare("0.5"), 0.5);
  assert.equal(parseShare("0"), 0);
  for (const bad of ["1", "-0.1", "x", ""]) {
    assert.throws(() => parseShare(bad), /^Error: Flag --proxyless-share must be/);
  }
});

Deno.test("expects() waits for every sidecar and for proxyless workloads only on names they watch", () => {
  const session = {
    request: (_p: string, _h: LeanHandlers) => ({ write() {}, close() {} }),
  };
  const w = { ...proxylessWorkload(0, shape), targets: ["a:8080"] };
  const g = new GrpcSim({ session, workload: w, onResponse() {} });
  const sidecar = { ended: undefined, received: { lds: 2, rds: 1, cds: 1, eds: 3 } };
  assert.equal(expects(sidecar, "eds", undefined), true);
  assert.equal(expects(g, "lds", "a:8080"), true);
  assert.equal(expects(g, "eds", "outbound|8080||a"), false);
  assert.equal(expects(g, "rds", undefined), false);
  const r = receivedByKind([sidecar, g]);
  assert.equal(r.sidecar.count, 1);
  assert.equal(r.proxyless.count, 1);
  const later = receivedByKind([{ ...sidecar, received: { lds: 2, rds: 1, cds: 1, eds: 5 } }, g]);
  assert.equal(perPush(r.sidecar, later.sidecar, 2), "LDS 0.00, RDS 0.00, CDS 0.00, EDS 1.00");
});

/**
 * End-to-end: `meshctl -p fs create` with Sidecar, WorkloadEntry, WorkloadGroup and the 1.x
 * RbacConfig kinds as Istio's reference pages write them: every object is stored, with one
 * warning per kind stored but not served and per field accepted but not yet served.
 */

import assert from "node:assert/strict";
import { meshctlProcess, withDir } from "./_meshctl.ts";

const fixture = (name: string) => Deno.readTextFile(new URL(`./testdata/${name}`, import.meta.url));

Deno.test("meshctl create stores Sidecar, WorkloadEntry, WorkloadGroup and RbacConfig, warning about what is not served", async () => {
  await withDir(async (dir) => {
    const fs = ["-p", "fs", "--configDir", dir];
    const r = await meshctlProcess(["create", "-f", "-", ...fs], {
      stdin: await fixture("istio/sidecar-workloads.yaml"),
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split("\n").filter((l) => l.startsWith("Created config ")).length, 8);
    const warnings = r.stderr.trimEnd().split("\n");
    assert.deepEqual(warnings, [
      "Warning: WorkloadGroup is stored as a template but not served: mesh does not auto-register workloads from it; write a WorkloadEntry per VM, selected by a ServiceEntry's workloadSelector (or register it with `meshctl register`)",
      "Warning: RbacConfig is stored but not served: ServiceRoles and ServiceRoleBindings are enforced wherever they apply, as with Istio 0.8 (its mode, inclusion and exclusion do not switch them)",
      "Warning: ClusterRbacConfig is stored but not served: ServiceRoles and ServiceRoleBindings are enforced wherever they apply, as with Istio 0.8 (its mode, inclusion and exclusion do not switch them)",
    ]);
    const get = await meshctlProcess(["get", "sidecars", "--all-namespaces", ...fs]);
    assert.equal(get.code, 0, get.stderr);
    for (const n of ["istio-config", "prod-us1"]) assert.match(get.stdout, new RegExp(n));
    const we = await meshctlProcess(["get", "we", "details-svc", "-o", "yaml", ...fs]);
    assert.equal(we.code, 0, we.stderr);
    assert.match(we.stdout, /^apiVersion: networking\.mesh\.io\/v1alpha3$/m);
    assert.match(we.stdout, /address: 2\.2\.2\.2/);

    const bad = await meshctlProcess(["create", "-f", "-", ...fs], {
      stdin: "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: x}\n" +
        "spec: {egress: [{hosts: [reviews]}]}\n",
    });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /spec\.egress\[0\]\.hosts\[0\]: invalid egress host "reviews"/);
  });
});

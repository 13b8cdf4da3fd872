/**
 * End-to-end: a running mesh-discovery keeps serving while it loads a large configuration. A
 * file of 5000 documents dropped into `--configDir` is read, parsed and validated in slices
 * (lib/store/_slice.ts); `/ready` keeps answering meanwhile. The bound is loose on purpose (a
 * loaded 2-core box): a load that holds the event loop for its whole parse (seconds here) fails
 * it, a sliced one passes with a wide margin.
 */

import assert from "node:assert/strict";
import { waitUntil } from "../harness/procs.ts";
import { http, startDiscovery } from "./discovery_harness.ts";

const DOCUMENTS = 5000;
/** Longest a /ready call may take while the configuration loads. */
const MAX_READY_MS = 1500;

const virtualService = (i: number) =>
  `apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata: {name: vs-${i}, namespace: default}
spec:
  hosts: [svc-${i}.default.svc.cluster.local]
  http:
  - match: [{uri: {prefix: /api/${i}}}]
    route: [{destination: {host: svc-${i}.default.svc.cluster.local, port: {number: 80}}}]
    timeout: 5s
`;

Deno.test(`mesh-discovery answers /ready while it loads a ${DOCUMENTS}-document configuration`, async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-cfgload-" });
  const d = await startDiscovery(["--configDir", dir, "--registries", "Mock"]);
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    const text = Array.from({ length: DOCUMENTS }, (_, i) => virtualService(i)).join("---\n");
    await Deno.writeTextFile(`${dir}/.all.yaml.tmp`, text);
    await Deno.rename(`${dir}/.all.yaml.tmp`, `${dir}/all.yaml`);

    // Probe /ready until the objects are in force, timing every call.
    const slowest = { ms: 0, status: 200 };
    let loaded = false;
    const prober = (async () => {
      while (!loaded) {
        const t = performance.now();
        const res = await http(`http://${d.http}/ready`);
        const ms = performance.now() - t;
        if (ms > slowest.ms) Object.assign(slowest, { ms, status: res.status });
        assert.equal(res.status, 200, `/ready during the load: ${res.status} ${res.body}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      await waitUntil(
        async () => {
          const res = await http(`http://${d.http}/debug/configz`);
          return JSON.parse(res.body).length === DOCUMENTS + 1; // the listing ends with {}
        },
        120_000,
        "the configuration in force",
        500,
      );
    } finally {
      loaded = true;
      await prober;
    }
    assert.ok(
      slowest.ms < MAX_READY_MS,
      `/ready took ${Math.round(slowest.ms)} ms during the load (at most ${MAX_READY_MS})`,
    );
  } finally {
    await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

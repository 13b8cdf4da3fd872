/**
 * What `tests/e2e/discovery_config_load_test.ts` and `deno task bench config_load` share: the
 * documents of a large configuration, and the prober that times `/ready`, REST CDS and ADS CDS
 * while a running mesh-discovery loads it.
 * @module
 */

import assert from "node:assert/strict";
import { waitUntil } from "../harness/procs.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { adsClient } from "./_ads_client.ts";
import { http, post, type RunningDiscovery } from "./discovery_harness.ts";

/** The node the REST and ADS probes ask for. */
export const NODE = "sidecar~127.0.1.1~hello-v1.default~default.svc.cluster.local";

/** VirtualService `i` (~330 bytes, one HTTP route). */
export const virtualService = (i: number): string =>
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

/** A kind of probe. */
export type Probe = "ready" | "rest" | "ads";

/** How {@linkcode probeUntil} probes. */
export interface ProbeOptions {
  /** What `done` waits for (in the timeout's message). */
  what: string;
  kinds?: readonly Probe[];
  /** Pause between rounds of probes, ms. */
  pauseMs: number;
  /** How long `done` may take, and how often it is asked, ms. */
  deadlineMs: number;
  pollMs: number;
  /** How long an ADS probe waits for its CDS, ms. */
  adsTimeoutMs: number;
  /** Every answer must be a success (a test); otherwise only timed (a bench). */
  check: boolean;
}

/**
 * Probes `/ready`, REST CDS and ADS CDS in turn until `done()` holds, each timed; returns the
 * slowest of each.
 */
export async function probeUntil(
  d: RunningDiscovery,
  done: () => Promise<boolean>,
  o: ProbeOptions,
): Promise<Record<Probe, number>> {
  const kinds = o.kinds ?? ["ready", "rest", "ads"];
  const slowest: Record<Probe, number> = { ready: 0, rest: 0, ads: 0 };
  const ads = adsClient(d.grpc);
  const time = async (p: Probe, f: () => Promise<void>) => {
    const t = performance.now();
    await f();
    slowest[p] = Math.max(slowest[p], performance.now() - t);
  };
  let finished = false;
  const prober = (async () => {
    while (!finished) {
      if (kinds.includes("ready")) {
        await time("ready", async () => {
          const res = await http(`http://${d.http}/ready`);
          if (o.check) {
            assert.equal(res.status, 200, `/ready during the load: ${res.status} ${res.body}`);
          }
        });
      }
      if (kinds.includes("rest")) {
        await time("rest", async () => {
          const res = await post(`http://${d.http}/v3/discovery:clusters`, { node: { id: NODE } });
          if (o.check) {
            assert.equal(res.status, 200, `REST CDS during the load: ${res.status} ${res.body}`);
          }
        });
      }
      if (kinds.includes("ads")) {
        await time("ads", async () => {
          const stream = ads.open();
          try {
            stream.send({ node: { id: NODE }, type_url: TYPE_URLS.cluster });
            const cds = await stream.next(TYPE_URLS.cluster, o.adsTimeoutMs);
            if (o.check) assert.ok(cds.resources.length > 0, "ADS CDS during the load");
          } finally {
            await stream.close();
          }
        });
      }
      await new Promise((r) => setTimeout(r, o.pauseMs));
    }
  })();
  try {
    await waitUntil(done, o.deadlineMs, o.what, o.pollMs);
  } finally {
    finished = true;
    await prober.finally(() => ads.close());
  }
  return slowest;
}

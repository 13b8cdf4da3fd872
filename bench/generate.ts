/**
 * xDS generation benchmark: a sidecar's whole view (clusters, listeners, routes, assignments) of
 * 1000 services × 5 endpoints, generated and then encoded as protobuf. The baseline, measured in
 * the same run, is `JSON.stringify` of the same resources (a plain pass over the same data: how
 * fast this machine is right now). Every figure is the median of `--runs` runs after one warm-up.
 * Target: generation under 1 s (it was an assertion of lib/xds/scale_test.ts before).
 *
 * `deno task bench generate [--runs N] [--services N] [--endpoints N]`
 * @module
 */

import { parseArgs } from "node:util";
import { wholeNumber } from "./_flags.ts";
import {
  buildClusters,
  buildEndpoints,
  buildListeners,
  buildRoutes,
  encodeAny,
  loadXdsProtos,
  parseNodeId,
  TYPE_URLS,
} from "../lib/xds/mod.ts";
import { bigContext } from "../lib/xds/testdata/big.ts";

const HELP = `Usage: deno task bench generate [--runs N] [--services N] [--endpoints N]

Generates and encodes a sidecar's xDS view of N services (3 ports each) with N endpoints per
service port; prints median times and a JSON.stringify baseline of the same resources.
  --runs N        measured runs after one warm-up (default 5)
  --services N    services (default 1000)
  --endpoints N   endpoints per service port (default 5)`;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Runs the bench with `args` (`--help` prints the usage and returns). */
export async function main(args: string[] = []): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      help: { type: "boolean", default: false },
      runs: { type: "string", default: "5" },
      services: { type: "string", default: "1000" },
      endpoints: { type: "string", default: "5" },
    },
    strict: false,
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const runs = wholeNumber("runs", values.runs);
  const ctx = bigContext(
    wholeNumber("services", values.services),
    wholeNumber("endpoints", values.endpoints),
  );
  const proxy = parseNodeId("sidecar~172.16.0.1~a.ns0~ns0.svc.cluster.local");
  await loadXdsProtos();
  const gen: number[] = [], enc: number[] = [], base: number[] = [];
  let counts = "", coldGen = 0, coldEnc = 0;
  for (let r = 0; r <= runs; r++) {
    const t0 = performance.now();
    const clusters = buildClusters(ctx, proxy);
    const listeners = buildListeners(ctx, proxy);
    const routes = buildRoutes(ctx, proxy, ["80", "7070"]);
    const eds = clusters.filter((c) => c.type === "EDS").map((c) => c.name as string);
    const endpoints = buildEndpoints(ctx, eds);
    const t1 = performance.now();
    for (const c of clusters) encodeAny(TYPE_URLS.cluster, c);
    for (const l of listeners) encodeAny(TYPE_URLS.listener, l);
    for (const x of routes) encodeAny(TYPE_URLS.route, x);
    for (const e of endpoints) encodeAny(TYPE_URLS.endpoint, e);
    const t2 = performance.now();
    JSON.stringify([clusters, listeners, routes, endpoints]);
    const t3 = performance.now();
    if (r === 0) {
      coldGen = t1 - t0;
      coldEnc = t2 - t1;
      counts = `${clusters.length} clusters, ${listeners.length} listeners, ` +
        `${routes.length} routes, ${endpoints.length} assignments`;
      continue; // the first run, with cold JIT and caches: reported on its own
    }
    gen.push(t1 - t0);
    enc.push(t2 - t1);
    base.push(t3 - t2);
  }
  const ms = (xs: number[]) => `${median(xs).toFixed(0)} ms`;
  console.log(`view: ${counts} (median of ${runs} runs)`);
  console.log(`generate, first run ${coldGen.toFixed(0).padStart(5)} ms   target < 1000 ms`);
  console.log(`encode, first run   ${coldEnc.toFixed(0).padStart(5)} ms`);
  console.log(`generate            ${ms(gen).padStart(8)}   target < 1000 ms`);
  console.log(`encode (protobuf)   ${ms(enc).padStart(8)}`);
  console.log(`baseline: JSON.stringify of the same resources ${ms(base)}`);
}

if (import.meta.main) await main(Deno.args);

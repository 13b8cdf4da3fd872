/**
 * One ADS worker isolate of mesh-discovery (`--workers` > 1): it serves ADS on the `--grpcAddr`
 * port shared with the other workers (SO_REUSEPORT) and owns the streams it accepts; the
 * resources come from the control isolate (`lib/xds/server/worker_ads.ts`). See `mod.ts`.
 * @module
 */
/// <reference lib="deno.worker" />

import { serveControl } from "../../../lib/workers/mod.ts";
import { type NodeIdentity, proxyFromNode } from "../../../lib/xds/mod.ts";
import { type AdsServerHandle, startAdsServer } from "../../../lib/xds/server/mod.ts";
import { traceIsolate } from "../../../lib/xds/server/push_trace.ts";
import { WorkerAds, type WorkerPush } from "../../../lib/xds/server/worker_ads.ts";
import { hostPort } from "../listen.ts";
import type { DiscoveryWorkerInit } from "./mod.ts";

let ads: WorkerAds | undefined;
let listener: AdsServerHandle | undefined;

serveControl<DiscoveryWorkerInit>(async ({ arg, index, count }, link) => {
  traceIsolate(`w${index}`);
  const log = link.logger("ads");
  ads = new WorkerAds({
    channel: link.channel,
    log,
    proxyKey: (node) => proxyFromNode(node as NodeIdentity).ip,
    knownTypes: arg.knownTypes,
    transport: () => ({
      accepting: listener?.accepting ?? true,
      refused: listener?.refused ?? 0,
      throttled: listener?.throttled ?? 0,
    }),
  });
  listener = await startAdsServer({
    address: hostPort(arg.host, arg.port),
    server: ads.server,
    logger: log,
    transport: arg.transport,
    reusePort: { index, of: count, connections: arg.connections, addresses: arg.addresses },
    // node:net by default, as the main isolate: its synchronous writes cost half of Deno.Conn's
    // async op, and with mesh-discovery's 1 MiB young generation the buffers of its reads no
    // longer pile up into major GCs (docs/benchmarks.md, "ADS workers on node:net").
    nativeReads: arg.reusedReads,
  });
  return { port: listener.port };
}, {
  push: (a) => ads?.push(a as WorkerPush),
  flush: () => ads?.server.flush(),
  connections: () => ads?.connections() ?? [],
  async close() {
    ads?.close();
    await listener?.shutdown();
  },
});

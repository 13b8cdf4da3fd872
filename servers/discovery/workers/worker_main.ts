/**
 * One ADS worker isolate of mesh-discovery (`--workers` > 1): it serves ADS on the `--grpcAddr`
 * port (and `--secureGrpcAddr`, once it started) shared with the other workers (SO_REUSEPORT)
 * and owns the streams it accepts; the resources come from the control isolate
 * (`lib/xds/server/worker_ads.ts`). See `mod.ts`.
 * @module
 */
/// <reference lib="deno.worker" />

import { serveControl } from "../../../lib/workers/mod.ts";
import { type NodeIdentity, proxyFromNode } from "../../../lib/xds/mod.ts";
import {
  type AdsServerHandle,
  startAdsServer,
  sumListenerStates,
} from "../../../lib/xds/server/mod.ts";
import { traceIsolate } from "../../../lib/xds/server/push_trace.ts";
import { WorkerAds, type WorkerPush } from "../../../lib/xds/server/worker_ads.ts";
import { hostPort } from "../listen.ts";
import type { DiscoveryWorkerInit, SecurePort, SharedPort } from "./mod.ts";

let ads: WorkerAds | undefined;
let listener: AdsServerHandle | undefined;
let secure: AdsServerHandle | undefined;
let securing: Promise<unknown> = Promise.resolve();
/** Opens a listener of this worker on a shared port (TLS with `tls`). */
let open: ((share: SharedPort, tls?: SecurePort["certs"]) => Promise<AdsServerHandle>) | undefined;

serveControl<DiscoveryWorkerInit>(async ({ arg, index, count }, link) => {
  traceIsolate(`w${index}`);
  const log = link.logger("ads");
  const listeners = () => [listener, secure].filter((l) => l !== undefined);
  ads = new WorkerAds({
    channel: link.channel,
    log,
    proxyKey: (node) => proxyFromNode(node as NodeIdentity).ip,
    knownTypes: arg.knownTypes,
    transport: () => sumListenerStates(listeners()),
  });
  const server = ads.server;
  open = (share, certs) =>
    startAdsServer({
      address: hostPort(share.host, share.port),
      server,
      logger: log,
      transport: arg.transport,
      reusePort: { index, of: count, connections: share.connections, addresses: share.addresses },
      acceptLoops: arg.acceptLoops,
      // Client certificates are verified when presented (proxies without one stay anonymous).
      ...(certs ? { tls: { ...certs, requireClientCert: false } } : {}),
      // node:net by default, as the main isolate: its synchronous writes cost half of Deno.Conn's
      // async op, and with mesh-discovery's 1 MiB young generation the buffers of its reads no
      // longer pile up into major GCs (docs/benchmarks.md, "ADS workers on node:net").
      nativeReads: !certs && arg.reusedReads,
    });
  listener = await open(arg.plain);
  if (arg.secure) secure = await open(arg.secure, arg.secure.certs);
  return { port: listener.port };
}, {
  push: (a) => ads?.push(a as WorkerPush),
  flush: () => ads?.server.flush(),
  connections: () => ads?.connections() ?? [],
  /** Opens the TLS port, or gives it new certificates for new connections (one at a time). */
  secure(a) {
    const share = a as SecurePort;
    const next = securing.then(async () => {
      if (secure) secure.setTls(share.certs);
      else secure = await open!(share, share.certs);
      return true;
    });
    securing = next.catch(() => {});
    return next;
  },
  async close() {
    ads?.close();
    await Promise.all([listener?.shutdown(), secure?.shutdown()]);
  },
});

/**
 * A worker isolate of `bench/xds.ts --client-workers K`: opens its share of the simulated sidecars
 * on sessions of its own and follows the sustained churn on them (`_churn.ts`), so that no one
 * isolate reads thousands of sockets (one isolate with 5,005 connections leaves some of them
 * unread for seconds: docs/benchmarks.md). Messages from the bench:
 * - `{ open }`: connect `sotw` SotW and `delta` delta sidecars ({@link OpenMessage}), answered
 *   by `{ ready }` once every one has CDS, EDS, LDS and RDS;
 * - `{ post: [svc, epochMs] }`: the next churn change (in order: the worker numbers them as the
 *   bench does);
 * - and every 100 ms once ready it sends `{ delivered, live }`;
 * - `{ end }`: answered by `{ result }` (the tracker's figures and this isolate's event-loop lag),
 *   then every proxy is closed.
 * @module
 */

import { type ClientKind, connectSession, SimProxy } from "./_ads_sim.ts";
import { type ChurnPart, ChurnTracker } from "./_churn.ts";
import { sampleLag } from "../lib/monitoring/event_loop_lag.ts";
import type { LeanSession } from "./_h2_lean.ts";
import type http2 from "node:http2";

/** What the bench sends to open the proxies. */
export interface OpenMessage {
  port: number;
  /** Node id numbers of the first SotW and the first delta sidecar. */
  firstSotw: number;
  firstDelta: number;
  sotw: number;
  delta: number;
  perSession: number;
  client: ClientKind;
}

/** The node id of simulated sidecar `i` (the bench's own numbering). */
export function sidecarNodeId(i: number): string {
  return `sidecar~10.${200 + Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${i % 250}` +
    `~proxy-${i}.bench~bench.svc.cluster.local`;
}

/** The worker's side: returns what handles one message (exported for the test). */
export function churnWorker(send: (m: unknown) => void): (m: Record<string, unknown>) => void {
  const tracker = new ChurnTracker();
  const proxies: SimProxy[] = [];
  const sessions: (http2.ClientHttp2Session | LeanSession)[] = [];
  let lag: ReturnType<typeof sampleLag> | undefined;
  let tracking = false;
  const open = async (o: OpenMessage) => {
    const n = o.sotw + o.delta;
    for (let i = 0; i < n; i++) {
      if (i % o.perSession === 0) sessions.push(await connectSession(o.port, o.client));
      proxies.push(
        new SimProxy({
          session: sessions[sessions.length - 1],
          nodeId: sidecarNodeId(i < o.sotw ? o.firstSotw + i : o.firstDelta + i - o.sotw),
          delta: i >= o.sotw,
          routeNames: ["8080"],
          onResponse: (p, r) => {
            // from the first change on, as the bench's own tracker (not the initial sync)
            if (r.type === "eds" && tracking) tracker.received(p, r.section, performance.now());
          },
        }),
      );
    }
    while (!proxies.every((p) => p.synced || p.ended)) {
      await new Promise((r) => setTimeout(r, 50));
    }
    send({ ready: live() });
    counter = setInterval(() => send({ delivered: tracker.delivered, live: live() }), 100);
  };
  const live = () => proxies.filter((p) => !p.ended).length;
  let counter: number | undefined;
  return (m) => {
    if (m.open) {
      open(m.open as OpenMessage).catch((e) => send({ error: String(e) }));
    } else if (m.post) {
      const [svc, epochMs] = m.post as [number, number];
      if (!tracking) {
        tracking = true;
        lag = sampleLag();
      }
      tracker.post(svc, epochMs - performance.timeOrigin);
    } else if (m.end) {
      clearInterval(counter);
      lag?.stop();
      const part: ChurnPart = tracker.part();
      const h = lag?.histogram;
      send({ result: { part, lagP99: h?.percentile(99) ?? 0, lagMax: h?.max ?? 0 } });
      for (const p of proxies) p.close();
      for (const s of sessions) s.destroy();
    }
  };
}

// In a worker isolate (the bench's main thread, and a test importing this, have no such scope)
if (typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope === "function") {
  const scope = globalThis as unknown as {
    onmessage: ((e: MessageEvent) => void) | null;
    postMessage(m: unknown): void;
  };
  const handle = churnWorker((m) => scope.postMessage(m));
  scope.onmessage = (e) => handle(e.data);
}

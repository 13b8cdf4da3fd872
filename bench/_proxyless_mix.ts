/**
 * The proxyless mix of the xDS benchmark (`bench/xds.ts --proxyless-share`): which workloads the
 * simulated proxyless gRPC clients (`_grpc_sim.ts`) stand for, and which of them a sample waits
 * for.
 *
 * Proxyless workload `j` is an xDS server listening on port 8080 of an instance address of bench
 * service `j mod services` (so its server Listener exists), and a client with one `xds:///`
 * channel to each service the benchmark's endpoint changes and ServiceEntry edits touch (so every
 * measured change is pushed to every proxyless workload, as to every sidecar). A new service (full
 * push) is nothing a proxyless workload subscribed to: those samples wait for sidecars only.
 * @module
 */

import { GrpcSim, type ProxylessWorkload } from "./_grpc_sim.ts";
import type { TypeName } from "./_ads_sim.ts";

/** The bench service the endpoint change `c` of a series adds an instance to. */
export function endpointChangeService(c: number, services: number): number {
  return (c * 37 + 11) % services;
}

/** The bench service the ServiceEntry edit `c` of a series edits. */
export function seEditService(c: number, services: number): number {
  return (c * 37) % services;
}

/** Parses `--proxyless-share`: a fraction in [0, 1). */
export function parseShare(v: unknown): number {
  const n = Number(v);
  if (v === "" || !Number.isFinite(n) || n < 0 || n >= 1) {
    throw new Error(`Flag --proxyless-share must be a number >= 0 and < 1, got "${v}"`);
  }
  return n;
}

/** What the bench's services look like, for {@link proxylessWorkload}. */
export interface MixShape {
  services: number;
  endpoints: number;
  /** Endpoint changes per series (the targets cover every one). */
  changes: number;
  /** ServiceEntry edits per series. */
  seEdits: number;
  /** Host name of bench service `i`. */
  svcName: (i: number) => string;
}

/** The workload proxyless client `j` stands for (see the module comment). */
export function proxylessWorkload(j: number, s: MixShape): ProxylessWorkload {
  const k = j % s.services;
  const a = 1 + Math.floor(k / 250), b = k % 250;
  // endpoint e of a bench service is 10.a.b.(e+1); edits move endpoint 0, so listen on the last
  const ip = `10.${a}.${b}.${s.endpoints}`;
  const hit = new Set<number>();
  for (let c = 0; c < s.changes; c++) hit.add(endpointChangeService(c, s.services));
  for (let c = 0; c < s.seEdits; c++) hit.add(seEditService(c, s.services));
  return {
    ip,
    pod: `grpc-${j}`,
    namespace: "bench",
    serverPorts: [8080],
    targets: [...hit].map((i) => `${s.svcName(i)}:8080`),
  };
}

/**
 * Whether a sample waits for `p` to receive the target (`type`, resource `name`): every sidecar
 * does; a proxyless workload only when it subscribed to that name.
 */
export function expects(p: object, type: TypeName, name: string | undefined): boolean {
  return !(p instanceof GrpcSim) || (name !== undefined && p.watches(type, name));
}

/** Whether `p` is a simulated proxyless workload. */
export function isProxyless(p: object): p is GrpcSim {
  return p instanceof GrpcSim;
}

/** Responses received per type, summed over one kind of proxy, and how many proxies. */
export interface Received {
  count: number;
  byType: Record<TypeName, number>;
}

/** {@link Received} of the live sidecars and of the live proxyless workloads among `proxies`. */
export function receivedByKind(
  proxies: readonly { ended: string | undefined; received: Record<TypeName, number> }[],
): { sidecar: Received; proxyless: Received } {
  const zero = (): Received => ({ count: 0, byType: { lds: 0, rds: 0, cds: 0, eds: 0 } });
  const out = { sidecar: zero(), proxyless: zero() };
  for (const p of proxies) {
    if (p.ended) continue;
    const r = isProxyless(p) ? out.proxyless : out.sidecar;
    r.count++;
    for (const t of Object.keys(r.byType) as TypeName[]) r.byType[t] += p.received[t];
  }
  return out;
}

/** Responses per proxy per push between two {@link receivedByKind} snapshots: "EDS 1.0, LDS 0.0". */
export function perPush(before: Received, after: Received, pushes: number): string {
  const n = Math.max(1, after.count) * pushes;
  return (Object.keys(after.byType) as TypeName[]).map((t) =>
    `${t.toUpperCase()} ${((after.byType[t] - before.byType[t]) / n).toFixed(2)}`
  ).join(", ");
}

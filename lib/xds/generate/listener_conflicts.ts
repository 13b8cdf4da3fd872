/**
 * Outbound listener conflicts: a TCP service port without its own IP address (no address, or
 * CIDR addresses) takes the shared listener `0.0.0.0_<port>`, and the outbound HTTP listener of
 * that port — the one every HTTP service on the port uses — is then not generated (TCP listeners
 * are built first and the first listener of a name wins). Istio counts the same case as
 * `pilot_conflict_outbound_listener_tcp_over_current_http`.
 * @module
 */

import type { PushContext } from "../types.ts";
import { indexOf } from "./context.ts";
import { outboundTcpListenerName } from "./listeners.ts";
import { isHttpProtocol } from "./util.ts";

/** One conflict on a shared outbound listener. */
export interface OutboundListenerConflict {
  /** `0.0.0.0_<port>`. */
  listener: string;
  port: number;
  /** Hosts whose TCP (or other non-HTTP) port took the listener, sorted. */
  tcpHosts: string[];
  /** Hosts whose HTTP port on the same number lost it (no HTTP routing for them), sorted. */
  httpHosts: string[];
}

/** The TCP-over-HTTP conflicts of a push context, by port. */
export function outboundListenerConflicts(ctx: PushContext): OutboundListenerConflict[] {
  const tcpByPort = new Map<number, Set<string>>();
  const httpByPort = new Map<number, Set<string>>();
  const note = (m: Map<number, Set<string>>, port: number, host: string) => {
    const s = m.get(port);
    if (s) s.add(host);
    else m.set(port, new Set([host]));
  };
  for (const svc of indexOf(ctx).services) {
    for (const sp of svc.ports) {
      if (sp.protocol === "UDP") continue;
      if (isHttpProtocol(sp.protocol)) note(httpByPort, sp.port, svc.hostname);
      else if (outboundTcpListenerName(svc, sp) === `0.0.0.0_${sp.port}`) {
        note(tcpByPort, sp.port, svc.hostname);
      }
    }
  }
  const out: OutboundListenerConflict[] = [];
  for (const port of [...tcpByPort.keys()].sort((a, b) => a - b)) {
    const http = httpByPort.get(port);
    if (!http) continue;
    out.push({
      listener: `0.0.0.0_${port}`,
      port,
      tcpHosts: [...tcpByPort.get(port)!].sort(),
      httpHosts: [...http].sort(),
    });
  }
  return out;
}

/** Up to `max` hosts, then how many more (`a, b, c and 7 more`). */
function hostList(hosts: readonly string[], max = 5): string {
  return hosts.length <= max
    ? hosts.join(", ")
    : `${hosts.slice(0, max).join(", ")} and ${hosts.length - max} more`;
}

/** One log line for a conflict (at most 5 hosts of each side named; /debug/conflictz has all). */
export function describeConflict(c: OutboundListenerConflict): string {
  return `Outbound listener ${c.listener}: TCP port ${c.port} of ${hostList(c.tcpHosts)} ` +
    `(no address of its own) takes the shared listener, so HTTP port ${c.port} of ` +
    `${hostList(c.httpHosts)} gets no HTTP routing through it (give the TCP service an ` +
    "address, another port number, or an http port name)";
}

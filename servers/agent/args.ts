/**
 * The proxy's command line (Envoy's flags), as Istio 0.8's agent built it.
 * @module
 */

import type { AgentConfig } from "./config.ts";

/**
 * `-c <file> --restart-epoch <n> --drain-time-s <s> --parent-shutdown-time-s <s>
 * --service-cluster <cluster> --service-node <node id> -l <level> [--concurrency n]
 * [--service-zone az]`; durations are rounded up to whole seconds.
 */
export function proxyArgs(c: AgentConfig, epoch: number, file: string): string[] {
  const secs = (ms: number) => String(Math.ceil(ms / 1000));
  const args = [
    "-c",
    file,
    "--restart-epoch",
    String(epoch),
    "--drain-time-s",
    secs(c.drainDurationMs),
    "--parent-shutdown-time-s",
    secs(c.parentShutdownDurationMs),
    "--service-cluster",
    c.serviceCluster,
    "--service-node",
    c.nodeId,
    "-l",
    c.proxyLogLevel,
  ];
  if (c.concurrency > 0) args.push("--concurrency", String(c.concurrency));
  if (c.availabilityZone) args.push("--service-zone", c.availabilityZone);
  return args;
}

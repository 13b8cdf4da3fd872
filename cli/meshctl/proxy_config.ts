/**
 * `meshctl proxy-config <endpoint|discovery> <pod-name|mesh> [<configuration-type>]`.
 *
 * `discovery`: asks mesh-discovery what it serves the proxy `<pod>.<namespace>` (`mesh`: every
 * proxy) through its debug pages (types `ads`, `eds`, `syncz`, `all`; default `all`).
 * With `--platform fs` the discovery monitoring address is `$MESH_DISCOVERY_ADDR` (default
 * `127.0.0.1:9093`); with `--platform orch` every pod labelled `app=mesh-discovery` in
 * `--meshNamespace` is asked at `<pod IP>:<port>`, the port being the pod's container port named
 * `http-monitoring` (or `monitoring`), else 9093. For one proxy the first instance that knows it
 * answers; for `mesh` each instance's answer is printed under a `<pod> <type>` line.
 *
 * `endpoint` (the proxy's own admin interface) is not implemented yet (exit 1).
 * @module
 */

import { type CliContext, UsageError } from "../_shared/context.ts";
import {
  debugPages,
  fetchDebug,
  localDiscoveryAddr,
  NOT_CONNECTED,
  printDebug,
} from "../mesh-discovery/debug.ts";
import type { CommonOptions } from "./flags.ts";

/** Monitoring port of discovery pods. */
export const DISCOVERY_MONITORING_PORT = 9093;
/** Label selecting discovery pods. */
export const DISCOVERY_POD_SELECTOR = "app=mesh-discovery";
/** Names of the container port that carries discovery's monitoring HTTP, in order of preference. */
const MONITORING_PORT_NAMES = ["http-monitoring", "monitoring"];

/** The monitoring port of a discovery pod: its named container port, else the default 9093. */
export function monitoringPort(
  pod: { spec?: { containers?: { ports?: { name?: string; containerPort: number }[] }[] } },
): number {
  const ports = (pod.spec?.containers ?? []).flatMap((c) => c.ports ?? []);
  for (const name of MONITORING_PORT_NAMES) {
    const p = ports.find((p) => p.name === name);
    if (p) return p.containerPort;
  }
  return DISCOVERY_MONITORING_PORT;
}

/** Runs `proxy-config`. */
export async function run(opts: CommonOptions, args: string[], ctx: CliContext) {
  const [location, pod, type = "all"] = args;
  if (location === "endpoint") {
    throw new Error("meshctl proxy-config endpoint is not implemented yet");
  }
  if (location !== "discovery") {
    throw new UsageError(`"${location}" debug not supported: want endpoint or discovery`);
  }
  // an unknown type is a usage error before any I/O (listing pods); fetchDebug checks it too
  debugPages(type);
  const proxyID = pod === "mesh" ? "all" : `${pod}.${opts.namespace || "default"}`;
  if (opts.platform !== "orch") {
    await printDebug(await fetchDebug(localDiscoveryAddr(ctx.env), proxyID, type), ctx);
    return 0;
  }
  const { kubeClient, loadKubeConfig } = await import("../../lib/kube/mod.ts");
  const { inClusterEnv } = await import("./_config_io.ts");
  const kc = await loadKubeConfig(opts.orchconfig, undefined, inClusterEnv(ctx));
  const k8s = await kubeClient();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let pods;
  try {
    pods = await core.listNamespacedPod({
      namespace: opts.meshNamespace,
      labelSelector: DISCOVERY_POD_SELECTOR,
    });
  } catch (e) {
    throw new Error(
      `Cannot list discovery pods in ${opts.meshNamespace}: ${(e as Error).message.split("\n")[0]}`,
    );
  }
  const instances = (pods.items ?? []).filter((p) => p.status?.podIP);
  if (!instances.length) throw new Error("unable to find any discovery instances");
  for (const p of instances) {
    const addr = `${p.status!.podIP}:${monitoringPort(p)}`;
    const results = await fetchDebug(addr, proxyID, type);
    if (pod === "mesh") {
      await ctx.stdout.write(`${p.metadata?.name} ${type}\n`);
      await printDebug(results, ctx);
      continue;
    }
    if (results.some((r) => "body" in r)) {
      await printDebug(results.filter((r) => "body" in r), ctx);
      return 0;
    }
  }
  if (pod !== "mesh") await ctx.stderr.write(NOT_CONNECTED + "\n");
  return 0;
}

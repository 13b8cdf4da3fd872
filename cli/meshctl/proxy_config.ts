/**
 * `meshctl proxy-config <endpoint|discovery> <pod-name|mesh> [<configuration-type>]`.
 *
 * `discovery`: asks mesh-discovery what it serves the proxy `<pod>.<namespace>` (`mesh`: every
 * proxy) through its debug pages (types `ads`, `eds`, `syncz`, `all`; default `all`).
 * With `--platform fs` the discovery monitoring address is `--discovery-address`, else
 * `$MESH_DISCOVERY_ADDR` (default `127.0.0.1:9093`); with `--platform orch` every pod labelled `app=mesh-discovery` in
 * `--meshNamespace` is asked at `<pod IP>:<port>`, the port being the pod's container port named
 * `http-monitoring` (or `monitoring`), else 9093. For one proxy the first instance that knows it
 * answers; for `mesh` each instance's answer is printed under a `<pod> <type>` line.
 *
 * `endpoint`: the proxy's own admin interface, as `mesh-agent debug` prints it (types `clusters`,
 * `listeners`, `routes`, `static`, `all`; default `all`; `static` only through `mesh-agent debug`
 * in the pod). With `--platform fs` the admin address is `--admin-address` (default
 * `127.0.0.1:15000`); with `--platform orch` the pod `<pod-name>` in `-n` (default `default`) is
 * looked up and its proxy container (`ingress`, `ingressgateway`, `egressgateway`, else
 * `mesh-proxy`) asked at `<pod IP>:<--proxyAdminPort of that container, else 15000>`.
 * @module
 */

import { type CliContext, UsageError } from "../_shared/context.ts";
import {
  debugPages,
  discoveryAddrHint,
  fetchDebug,
  localDiscoveryAddr,
  NOT_CONNECTED,
  printDebug,
} from "../mesh-discovery/debug.ts";
import type { ProxyConfigOptions } from "./flags.ts";

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
export async function run(opts: ProxyConfigOptions, args: string[], ctx: CliContext) {
  const [location, pod, type = "all"] = args;
  if (location === "endpoint") return await endpoint(opts, pod, type, ctx);
  if (location !== "discovery") {
    throw new UsageError(`"${location}" debug not supported: want endpoint or discovery`);
  }
  // an unknown type is a usage error before any I/O (listing pods); fetchDebug checks it too
  debugPages(type);
  const proxyID = pod === "mesh" ? "all" : `${pod}.${opts.namespace || "default"}`;
  if (opts.platform !== "orch") {
    const addr = localDiscoveryAddr(ctx.env, opts.discoveryAddress);
    const hint = discoveryAddrHint("--discovery-address");
    await printDebug(await fetchDebug(addr, proxyID, type, hint), ctx);
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

/** Types `proxy-config endpoint` accepts. */
export const ENDPOINT_TYPES = ["clusters", "listeners", "routes", "config_dump", "all"];
/** Proxy containers, in order of preference (Istio's rule). */
const PROXY_CONTAINERS = ["ingress", "ingressgateway", "egressgateway", "mesh-proxy"];

interface PodLike {
  spec?: { containers?: { name: string; args?: string[] }[] };
  status?: { podIP?: string };
}

/** `<pod IP>:<admin port>` of a pod's proxy, or an error naming what is missing. */
export function proxyAdminAddress(pod: PodLike, name: string): string {
  const containers = pod.spec?.containers ?? [];
  const c = PROXY_CONTAINERS.map((n) => containers.find((x) => x.name === n)).find((x) => x);
  if (!c) throw new Error(`pod ${name} has no proxy container (${PROXY_CONTAINERS.join(", ")})`);
  if (!pod.status?.podIP) throw new Error(`pod ${name} has no IP yet`);
  const args = c.args ?? [];
  let port = "15000";
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--proxyAdminPort" && i + 1 < args.length) port = args[i + 1];
    else if (args[i].startsWith("--proxyAdminPort=")) port = args[i].split("=")[1];
  }
  const ip = pod.status.podIP.includes(":") ? `[${pod.status.podIP}]` : pod.status.podIP;
  return `${ip}:${port}`;
}

async function endpoint(opts: ProxyConfigOptions, pod: string, type: string, ctx: CliContext) {
  const admin = await import("../../lib/proxyadmin/mod.ts");
  let t;
  try {
    t = admin.checkProxyConfigType(type, ENDPOINT_TYPES);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  let addr = opts.adminAddress || "127.0.0.1:15000";
  if (opts.platform === "orch") {
    const { kubeClient, loadKubeConfig } = await import("../../lib/kube/mod.ts");
    const kc = await loadKubeConfig(opts.orchconfig);
    const k8s = await kubeClient();
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const namespace = opts.namespace || "default";
    let p;
    try {
      p = await core.readNamespacedPod({ name: pod, namespace });
    } catch (e) {
      throw new Error(
        `Cannot get pod ${pod} in ${namespace}: ${(e as Error).message.split("\n")[0]}`,
      );
    }
    addr = proxyAdminAddress(p as PodLike, pod);
  }
  const sections = await admin.proxyConfig(addr, t);
  const warning = admin.standinWarning(addr, sections);
  if (warning) await ctx.stderr.write(warning);
  await ctx.stdout.write(admin.formatSections(sections));
  return 0;
}

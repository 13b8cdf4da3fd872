/**
 * `--ingressStatus`: mesh-discovery keeps the `status.loadBalancer` of the mesh's Ingresses equal
 * to the ingress gateway service's addresses.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";
import type { MeshConfig } from "../../lib/model/mod.ts";
import type { Cleanups } from "../../lib/process/mod.ts";
import type { IngressWatcher } from "../../lib/registry/ingress.ts";
import type { DiscoveryConfig } from "./config.ts";

/** How often the Ingress status is checked against the gateway service (also after changes). */
const INGRESS_STATUS_PERIOD_MS = 10_000;

/**
 * `--ingressStatus`: keeps `status.loadBalancer` of the mesh's Ingresses equal to the addresses of
 * the ingress gateway service (mesh config `ingressService`, in `--namespace`), after every change
 * of the selected Ingresses and every 10 s. Needs the Orchestrator registry (the Ingress watcher).
 * Of several replicas only the leader writes: the one holding the Lease `--leaseName`
 * (lib/kube/leader.ts); another takes over within `--leaseDuration` when it goes away.
 */
export async function startIngressStatus(
  watcher: IngressWatcher | undefined,
  meshConfig: MeshConfig,
  config: DiscoveryConfig,
  log: Logger,
  cleanups: Cleanups,
): Promise<void> {
  const service = meshConfig.ingressService;
  if (!watcher || !service) {
    log.warn(
      `--ingressStatus: not started (${
        !watcher ? "needs the Orchestrator registry" : "the mesh config sets no ingressService"
      })`,
    );
    return;
  }
  const { loadKubeConfig } = await import("../../lib/kube/mod.ts");
  const { syncIngressStatus } = await import("../../lib/registry/ingress_status.ts");
  const kc = await loadKubeConfig(config.orchconfig, undefined, config.inCluster);
  const namespace = config.namespace || "mesh-system";
  let running = false;
  let again = false;
  let leading = false;
  const sync = async () => {
    if (!leading) return;
    if (running) return void (again = true);
    running = true;
    try {
      do {
        again = false;
        if (!watcher.apiVersion || !leading) continue;
        const ingresses = watcher.ingresses().map((o) => ({
          name: o.metadata.name,
          namespace: o.metadata.namespace ?? "default",
        }));
        const n = await syncIngressStatus({
          kubeConfig: kc,
          apiVersion: watcher.apiVersion,
          service: { name: service, namespace },
          ingresses,
        });
        if (n) log.info(`Ingress status: updated ${n} Ingress${n === 1 ? "" : "es"}`);
      } while (again);
    } finally {
      running = false;
    }
  };
  watcher.onChange(() => void sync());
  const timer = setInterval(() => void sync(), INGRESS_STATUS_PERIOD_MS);
  cleanups.push(() => clearInterval(timer));
  const { LeaderElector } = await import("../../lib/kube/leader.ts");
  const { kubeLeaseClient } = await import("../../lib/kube/lease_client.ts");
  const elector = new LeaderElector({
    client: await kubeLeaseClient(kc),
    name: config.lease.name,
    namespace: config.lease.namespace,
    identity: config.lease.identity,
    leaseDurationMs: config.lease.durationMs,
    log,
    onStartedLeading: () => {
      leading = true;
      void sync();
    },
    onStoppedLeading: () => void (leading = false),
  });
  elector.start();
  cleanups.push(() => elector.stop());
}

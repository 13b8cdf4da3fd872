/**
 * Which proxies hear of a change: registry and config events of mesh-discovery turned into the
 * ADS server's pushes (the push scope rules of docs/mesh-discovery.md).
 * @module
 */

import type { Proxy } from "../../lib/xds/mod.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import type { XdsServer } from "../../lib/xds/server/mod.ts";
import type { RestCache } from "./rest_xds.ts";
import {
  affectedClusters,
  changedKeys,
  type DiscoveryModel,
  type DiscoveryRegistry,
  instanceFingerprints,
} from "./model.ts";

/**
 * Routes changes to pushes. Its state is the instance fingerprints of the last registry event,
 * from which an endpoints-only change finds the `host|port` keys that changed.
 */
export class PushRouter {
  readonly #registry: DiscoveryRegistry;
  readonly #model: DiscoveryModel;
  readonly #server: XdsServer<Proxy>;
  readonly #restCache: RestCache | null;
  #fingerprints: ReturnType<typeof instanceFingerprints>;

  constructor(opts: {
    registry: DiscoveryRegistry;
    model: DiscoveryModel;
    server: XdsServer<Proxy>;
    restCache: RestCache | null;
  }) {
    this.#registry = opts.registry;
    this.#model = opts.model;
    this.#server = opts.server;
    this.#restCache = opts.restCache;
    this.#fingerprints = instanceFingerprints(this.#registry.instances());
  }

  /** Config (or Ingress) changed: everything is recomputed, every proxy may hear of it. */
  configChanged(): void {
    this.#model.invalidate();
    this.#restCache?.clear();
    this.#server.push({ kind: "config" });
  }

  /**
   * The registries changed. A service change is a config change; an endpoints-only change
   * rebuilds only the affected clusters' assignments (a DNS service's change rebuilds all) and
   * pushes EDS for them, plus CDS and LDS when a DNS service or a proxy's own instances changed.
   */
  registryChanged(kind: "services" | "endpoints"): void {
    const next = instanceFingerprints(this.#registry.instances());
    const changed = changedKeys(this.#fingerprints, next);
    this.#fingerprints = next;
    if (kind === "services") return this.configChanged();
    this.#model.updateEndpoints(changed);
    this.#restCache?.clear();
    const server = this.#server;
    const watched = server.watchedNames(TYPE_URLS.endpoint);
    const proxyIps = new Set(server.proxies().map((p) => p.ip));
    const clusters = affectedClusters(watched, changed);
    if (clusters.length) server.push({ kind: "eds", clusters });
    // Clusters and listeners also depend on instances for DNS services and a proxy's own
    // instances: recompute those (only proxies whose output changed are sent anything).
    const ctx = this.#model.context();
    const dns = new Set(
      ctx.services.filter((s) => s.resolution === "DNSLB").map((s) => s.hostname),
    );
    const touchesProxy = ctx.instances.some((i) =>
      proxyIps.has(i.address) && changed.has(`${i.hostname}|${i.servicePort.port}`)
    );
    if ([...changed].some((k) => dns.has(k.split("|")[0])) || touchesProxy) {
      server.push({ kind: "config", types: [TYPE_URLS.cluster, TYPE_URLS.listener] });
    }
  }

  /** Registries and config store synced: a full recomputation and push to every proxy. */
  synced(): void {
    this.#model.invalidate();
    this.#fingerprints = instanceFingerprints(this.#registry.instances());
    this.#server.push({ kind: "full" });
  }
}

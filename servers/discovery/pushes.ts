/**
 * Which proxies hear of a change: registry and config events of mesh-discovery turned into the
 * ADS server's pushes (the push scope rules of docs/mesh-discovery.md).
 * @module
 */

import type { ConfigObject, ServiceInstance } from "../../lib/model/mod.ts";
import { instancesOnlyChange } from "../../lib/registry/mod.ts";
import type { StoreEvent } from "../../lib/store/mod.ts";
import type { Proxy } from "../../lib/xds/mod.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import type { XdsServerView } from "../../lib/xds/server/worker_control.ts";
import type { RestCache } from "./rest_xds.ts";
import type { DiscoveryMetrics, PushTrigger } from "./metrics.ts";
import { TimeSlicer } from "../../lib/process/slice.ts";
import {
  affectedClusters,
  changedKeys,
  type DiscoveryModel,
  type DiscoveryRegistry,
  instanceFingerprints,
} from "./model.ts";

/**
 * Routes changes to pushes. Its state is the instance fingerprints of the last registry event,
 * from which an endpoints-only change finds the `host|port` keys that changed, and the instances
 * of that event (a proxy whose own endpoint left is one of them no longer).
 */
export class PushRouter {
  readonly #registry: DiscoveryRegistry;
  readonly #model: DiscoveryModel;
  readonly #server: XdsServerView<Proxy>;
  readonly #restCache: RestCache | null;
  #fingerprints: ReturnType<typeof instanceFingerprints>;
  /** Addresses of the instances of each `host|port` key, as of the last registry event. */
  #addressesByKey: Map<string, Set<string>>;
  /** When endpoint events were last handled (ms, performance.now). */
  #lastEndpointsAt = -Infinity;
  /** The timer of endpoint events held back (see {@link registryChanged}). */
  #endpointsTimer: number | undefined;
  /**
   * The hostnames whose instances the endpoint events held back changed (null: one of them did
   * not say, so every instance is compared).
   */
  #pendingHosts: Set<string> | null = new Set();
  readonly #trigger: (type: PushTrigger) => void;

  constructor(opts: {
    registry: DiscoveryRegistry;
    model: DiscoveryModel;
    server: XdsServerView<Proxy>;
    restCache: RestCache | null;
    /** Counts what set off each push ({@link DiscoveryMetrics.trigger}). */
    metrics?: Pick<DiscoveryMetrics, "trigger">;
    /**
     * After a config change, build the new push context ahead of the first request in slices
     * of this many ms ({@link DiscoveryModel.prepare}); null or absent: the first read builds it.
     */
    prepareSliceMs?: number | null;
  }) {
    this.#prepareSliceMs = opts.prepareSliceMs ?? null;
    this.#registry = opts.registry;
    this.#model = opts.model;
    this.#server = opts.server;
    this.#restCache = opts.restCache;
    this.#trigger = opts.metrics ? (t) => opts.metrics!.trigger(t) : () => {};
    this.#fingerprints = instanceFingerprints(this.#registry.instances());
    this.#addressesByKey = addressesByKey(this.#registry.instances());
  }

  /**
   * Config (or Ingress) changed: everything is recomputed, every proxy may hear of it. The
   * changes of one task (a file of 5000 documents delivers 5000 events in a row) make one push
   * event, queued at the end of the task (the push is debounced anyway).
   */
  configChanged(): void {
    this.#trigger("config");
    this.#recompute();
  }

  /**
   * The config store changed an object (`previous` before the event). WorkloadEntries and
   * ServiceEntry edits of endpoints only reach the proxies through the ServiceEntry registry's
   * event (an endpoints push when its services are the same), as in Istio; any other change is a
   * config change.
   */
  storeChanged(ev: StoreEvent, previous: ConfigObject | undefined): void {
    if (!instancesOnlyChange(ev, previous)) this.configChanged();
  }

  /** Everything is recomputed and pushed to every proxy (a config change or a services event). */
  #recompute(): void {
    if (this.#prepareSliceMs === null) this.#model.invalidate();
    else this.#model.invalidateLater();
    this.#restCache?.clear();
    if (this.#configPushQueued) return;
    this.#configPushQueued = true;
    queueMicrotask(() => {
      this.#configPushQueued = false;
      if (this.#model.stale) this.#prepare();
      else this.#server.push({ kind: "config" });
    });
  }

  /** Slice length of {@link DiscoveryModel.prepare} runs (null: none). */
  readonly #prepareSliceMs: number | null;
  /** Whether a preparation is scheduled or running. */
  #preparing = false;
  #closed = false;

  /**
   * With `prepareSliceMs`: the model keeps serving the context in force while the next one is
   * built in slices ({@link DiscoveryModel.prepare}), starting in the next macrotask (the task
   * that delivered the change may have been long: requests go first); each context put in force
   * is pushed. One preparation runs at a time and goes on while changes keep coming.
   */
  #prepare(): void {
    if (this.#preparing || this.#closed) return;
    this.#preparing = true;
    const slicer = new TimeSlicer(this.#prepareSliceMs);
    const pause = () => this.#closed ? Promise.reject(new Error("closed")) : slicer.pause();
    this.#prepareTimer = setTimeout(async () => {
      this.#prepareTimer = undefined;
      try {
        do {
          try {
            await this.#model.prepare(pause);
          } catch {
            if (this.#closed) return;
            this.#model.invalidate(); // the next read rebuilds it in one step, as without slices
          }
          if (this.#closed) return;
          this.#restCache?.clear();
          this.#server.push({ kind: "config" });
        } while (this.#model.stale);
      } finally {
        this.#preparing = false;
      }
    }, 0);
  }
  #prepareTimer: number | undefined;

  /** A config push event is queued for the end of the task ({@link configChanged}). */
  #configPushQueued = false;

  /**
   * The registries changed. A service change is a config change; an endpoints-only change
   * rebuilds only the affected clusters' assignments (a DNS service's change rebuilds all) and
   * pushes EDS for them, plus CDS and LDS when a DNS service or a proxy's own instances changed.
   */
  registryChanged(kind: "services" | "endpoints", hosts?: ReadonlySet<string>): void {
    this.#trigger(kind === "endpoints" ? "endpoint" : "service");
    if (kind === "endpoints") {
      if (!hosts) this.#pendingHosts = null;
      else if (this.#pendingHosts) { for (const h of hosts) this.#pendingHosts.add(h); }
      // Each event compares the instances of its hosts (all of them when it does not name its
      // hosts) and refreshes the model's endpoint index: under continuous churn (tens of events
      // a second) events that come within ENDPOINT_BATCH_MS of the last handled one are handled
      // together once that time is up. An isolated event is handled at once; the push itself is
      // debounced by the server.
      const wait = this.#lastEndpointsAt + ENDPOINT_BATCH_MS - performance.now();
      if (wait > 0) {
        this.#endpointsTimer ??= setTimeout(() => {
          this.#endpointsTimer = undefined;
          this.#handle("endpoints");
        }, wait);
        return;
      }
    }
    this.#handle(kind);
  }

  /** Stops holding back endpoint events (shutdown). */
  close(): void {
    this.#closed = true;
    if (this.#prepareTimer !== undefined) clearTimeout(this.#prepareTimer);
    this.#prepareTimer = undefined;
    if (this.#endpointsTimer !== undefined) clearTimeout(this.#endpointsTimer);
    this.#endpointsTimer = undefined;
  }

  #handle(kind: "services" | "endpoints"): void {
    if (this.#endpointsTimer !== undefined) {
      // a services event handles pending endpoint events too (it compares every instance)
      clearTimeout(this.#endpointsTimer);
      this.#endpointsTimer = undefined;
    }
    if (kind === "endpoints") this.#lastEndpointsAt = performance.now();
    const hosts = kind === "endpoints" ? this.#pendingHosts : null;
    this.#pendingHosts = new Set();
    const instances = this.#registry.instances();
    const { changed, before, compared } = this.#refresh(instances, hosts);
    if (kind === "services") return this.#recompute();
    this.#model.updateEndpoints(changed, instances, compared);
    this.#restCache?.clear();
    const server = this.#server;
    // Watched names come from the server's reverse index of subscriptions (no scan of streams).
    const clusters = affectedClusters(server.watchedNames(TYPE_URLS.endpoint), changed);
    if (clusters.length) server.push({ kind: "eds", clusters });
    // Clusters and listeners also depend on instances for DNS services and a proxy's own
    // instances (one that joined or left): recompute those (only proxies whose output changed
    // are sent anything). A connected proxy is looked up by the address of each changed
    // instance, before and after (no scan of the proxies or the instances).
    const touchesProxy = [...changed].some((k) =>
      [...before.get(k) ?? [], ...this.#addressesByKey.get(k) ?? []].some((a) => server.hasProxy(a))
    );
    const ctx = this.#model.context();
    const dns = new Set(
      ctx.services.filter((s) => s.resolution === "DNSLB").map((s) => s.hostname),
    );
    if (touchesProxy || [...changed].some((k) => dns.has(k.slice(0, k.lastIndexOf("|"))))) {
      server.push({ kind: "config", types: [TYPE_URLS.cluster, TYPE_URLS.listener] });
    }
  }

  /**
   * Brings the fingerprints and addresses up to date with `instances` for the keys of `hosts`
   * (every key when null: the work is then in proportion to all instances, else to those of
   * `hosts`); returns the keys whose instances changed, the addresses of each key before, and
   * the instances compared (every changed key's are among them).
   */
  #refresh(
    instances: readonly ServiceInstance[],
    hosts: ReadonlySet<string> | null,
  ): {
    changed: Set<string>;
    before: ReadonlyMap<string, Set<string>>;
    compared: readonly ServiceInstance[];
  } {
    if (!hosts) {
      const next = instanceFingerprints(instances);
      const changed = changedKeys(this.#fingerprints, next);
      const before = this.#addressesByKey;
      this.#fingerprints = next;
      this.#addressesByKey = addressesByKey(instances);
      return { changed, before, compared: instances };
    }
    const theirs = this.#registry.instancesOf?.(hosts) ??
      instances.filter((i) => hosts.has(i.hostname));
    const next = instanceFingerprints(theirs);
    const old = new Map<string, string>();
    for (const [k, v] of this.#fingerprints) {
      if (hosts.has(k.slice(0, k.lastIndexOf("|")))) old.set(k, v);
    }
    const changed = changedKeys(old, next);
    const before = new Map<string, Set<string>>();
    for (const k of changed) {
      const addrs = this.#addressesByKey.get(k);
      if (addrs) before.set(k, addrs);
    }
    for (const k of old.keys()) {
      this.#fingerprints.delete(k);
      this.#addressesByKey.delete(k);
    }
    for (const [k, v] of next) this.#fingerprints.set(k, v);
    for (const [k, v] of addressesByKey(theirs)) this.#addressesByKey.set(k, v);
    return { changed, before, compared: theirs };
  }

  /** Registries and config store synced: a full recomputation and push to every proxy. */
  synced(): void {
    this.#model.invalidate();
    this.#fingerprints = instanceFingerprints(this.#registry.instances());
    this.#addressesByKey = addressesByKey(this.#registry.instances());
    this.#server.push({ kind: "full" });
  }
}

/**
 * Slice length of the context preparation after a config change, ms: as short as the file
 * store's rescan slices (lib/store/file.ts), for the same reason (a request takes several turns).
 */
export const PREPARE_SLICE_MS = 10;

/** Endpoint events within this long of the last handled one are handled together, ms. */
export const ENDPOINT_BATCH_MS = 50;

/** The addresses of `instances` by `host|port` key. */
function addressesByKey(instances: readonly ServiceInstance[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const i of instances) {
    const k = `${i.hostname}|${i.servicePort.port}`;
    let addrs = out.get(k);
    if (!addrs) out.set(k, addrs = new Set());
    addrs.add(i.address);
  }
  return out;
}

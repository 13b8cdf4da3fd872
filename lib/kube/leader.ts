/**
 * Leader election with a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection` does:
 * replicas race to create or take over the Lease; the holder renews `spec.renewTime` every retry
 * period; a candidate takes over a Lease whose record has not changed for `leaseDurationSeconds`
 * (measured on its own clock from when it last saw the record change, so clock skew between
 * replicas does not matter). Every write is conditional on the `resourceVersion` read, so of two
 * candidates only one wins (the other gets 409 Conflict). A leader that stops releases the Lease
 * (empty `holderIdentity`) so that another replica takes over at once.
 * @module
 */

import type { Logger } from "../log/mod.ts";
import { apiErrorStatus } from "./mod.ts";

/** The `spec` of a Lease (what leader election reads and writes). */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/** A `coordination.k8s.io/v1` Lease as stored by the API server. */
export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/**
 * Access to Leases. `create` and `replace` throw an error with `code: 409` when the Lease exists
 * already or the `resourceVersion` is stale (see {@link kubeLeaseClient}).
 */
export interface LeaseClient {
  /** The Lease, or null when it does not exist. */
  get(namespace: string, name: string): Promise<Lease | null>;
  create(lease: Lease): Promise<Lease>;
  /** Replaces the Lease; conditional on `lease.metadata.resourceVersion`. */
  replace(lease: Lease): Promise<Lease>;
}

/** Options of {@link LeaderElector}. */
export interface LeaderElectorOptions {
  client: LeaseClient;
  namespace: string;
  name: string;
  /** This candidate's identity (`holderIdentity`): unique per replica (pod name). */
  identity: string;
  /** How long a Lease not renewed stays held (default 15 s). */
  leaseDurationMs?: number;
  /** How long a leader keeps leading without a successful renewal (default 2/3 of the lease). */
  renewDeadlineMs?: number;
  /** How often candidates try to acquire and the leader renews (default 1/7.5 of the lease). */
  retryPeriodMs?: number;
  /** Monotonic clock in ms (tests). */
  now?: () => number;
  /** Wall clock for `acquireTime`/`renewTime` (tests). */
  wallClock?: () => Date;
  log?: Logger;
  /** Called when this candidate becomes the leader. */
  onStartedLeading?: () => void;
  /** Called when it stops being the leader (lost the Lease, could not renew, or stop()). */
  onStoppedLeading?: () => void;
}

/** A Lease time in the API's MicroTime form (`2006-01-02T15:04:05.000000Z`). */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

function conflictOrExists(err: unknown): boolean {
  return apiErrorStatus(err)?.code === 409;
}

/**
 * Elects one leader among replicas through a Lease.
 *
 * @example
 * ```ts ignore
 * const el = new LeaderElector({
 *   client: await kubeLeaseClient(kc), namespace: "mesh-system", name: "mesh-discovery-leader",
 *   identity: "discovery-1", onStartedLeading: () => writer.start(), onStoppedLeading: () => writer.stop(),
 * });
 * el.start();
 * await el.stop(); // releases the Lease when leading
 * ```
 */
export class LeaderElector {
  readonly #o: LeaderElectorOptions;
  readonly #leaseMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryMs: number;
  readonly #now: () => number;
  #leading = false;
  /** The last record seen (JSON of spec + resourceVersion) and when it was seen to change. */
  #observed = "";
  #observedAt = 0;
  #lastRenew = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(opts: LeaderElectorOptions) {
    if (!opts.identity) throw new Error("LeaderElector: identity is empty");
    if (!opts.name || !opts.namespace) {
      throw new Error("LeaderElector: the Lease name and namespace must not be empty");
    }
    this.#o = opts;
    this.#leaseMs = opts.leaseDurationMs ?? 15_000;
    if (!(this.#leaseMs >= 1000)) {
      throw new Error(`LeaderElector: lease duration ${this.#leaseMs}ms is under 1s`);
    }
    this.#renewDeadlineMs = opts.renewDeadlineMs ?? Math.round(this.#leaseMs * 2 / 3);
    this.#retryMs = opts.retryPeriodMs ?? Math.round(this.#leaseMs / 7.5);
    this.#now = opts.now ?? (() => performance.now());
  }

  /** True while this candidate holds the Lease. */
  get isLeader(): boolean {
    return this.#leading;
  }

  /** Starts campaigning (and renewing once leading) every retry period. */
  start(): void {
    if (this.#running || this.#stopped) return;
    const loop = async () => {
      await this.tick();
      if (!this.#stopped) this.#timer = setTimeout(() => this.#running = loop(), this.#retryMs);
    };
    this.#running = loop();
  }

  /** Stops campaigning; a leader releases the Lease (and `onStoppedLeading` is called). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
    const wasLeading = this.#leading;
    if (wasLeading) this.#setLeading(false);
    // Also when not (yet) leading: a round in flight may have just acquired the Lease.
    try {
      const lease = await this.#o.client.get(this.#o.namespace, this.#o.name);
      if (lease?.spec?.holderIdentity !== this.#o.identity) return;
      const now = microTime(this.#wall());
      await this.#o.client.replace({
        ...lease,
        spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: now },
      });
    } catch (err) {
      if (wasLeading) {
        this.#o.log?.warn(`Leader election: cannot release Lease ${this.#ref()}: ${msg(err)}`);
      }
    }
  }

  /** One round: try to acquire or renew, and update the leading state. */
  async tick(): Promise<void> {
    let ok = false;
    try {
      ok = await this.tryAcquireOrRenew();
    } catch (err) {
      this.#o.log?.warn(`Leader election: Lease ${this.#ref()}: ${msg(err)}`);
    }
    if (this.#stopped) return;
    if (ok) {
      this.#lastRenew = this.#now();
      if (!this.#leading) this.#setLeading(true);
    } else if (this.#leading && this.#now() - this.#lastRenew >= this.#renewDeadlineMs) {
      this.#o.log?.warn(`Leader election: lost Lease ${this.#ref()}`);
      this.#setLeading(false);
    } else if (this.#leading && this.#observedHolder !== this.#o.identity) {
      this.#o.log?.warn(`Leader election: Lease ${this.#ref()} taken by ${this.#observedHolder}`);
      this.#setLeading(false);
    }
  }

  #observedHolder = "";

  /**
   * Creates the Lease, renews it when held by this candidate, or takes it over when it expired
   * (not changed for its duration) or was released. True when this candidate holds it after.
   */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { client, namespace, name, identity } = this.#o;
    const now = microTime(this.#wall());
    const durationS = Math.ceil(this.#leaseMs / 1000);
    const lease = await client.get(namespace, name);
    if (!lease) {
      try {
        await client.create({
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: durationS,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: 0,
          },
        });
      } catch (err) {
        if (conflictOrExists(err)) return false;
        throw err;
      }
      this.#observe(identity);
      return true;
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    const record = JSON.stringify([spec, lease.metadata.resourceVersion]);
    if (record !== this.#observed) {
      this.#observed = record;
      this.#observedAt = this.#now();
    }
    this.#observedHolder = holder;
    const heldMs = (spec.leaseDurationSeconds ?? durationS) * 1000;
    if (holder && holder !== identity && this.#now() - this.#observedAt < heldMs) return false;
    const mine = holder === identity;
    const next: LeaseSpec = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds: durationS,
      renewTime: now,
      acquireTime: mine && spec.acquireTime ? spec.acquireTime : now,
      leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
    };
    try {
      await client.replace({ ...lease, spec: next });
    } catch (err) {
      if (conflictOrExists(err)) return false;
      throw err;
    }
    this.#observe(identity);
    return true;
  }

  #observe(holder: string): void {
    this.#observedHolder = holder;
    this.#observed = "";
    this.#observedAt = this.#now();
  }

  #setLeading(v: boolean): void {
    this.#leading = v;
    this.#o.log?.info(
      `Leader election: ${this.#o.identity} ${v ? "became" : "is no longer"} the leader ` +
        `(Lease ${this.#ref()})`,
    );
    try {
      (v ? this.#o.onStartedLeading : this.#o.onStoppedLeading)?.();
    } catch (err) {
      this.#o.log?.error(`Leader election: callback failed: ${msg(err)}`);
    }
  }

  #wall(): Date {
    return this.#o.wallClock?.() ?? new Date();
  }

  #ref(): string {
    return `${this.#o.namespace}/${this.#o.name}`;
  }
}

/** One line: the API server's Status message and code, else the error's message. */
function msg(err: unknown): string {
  const st = apiErrorStatus(err);
  if (st) return `${st.message} (HTTP ${st.code})`;
  return err instanceof Error ? err.message : String(err);
}

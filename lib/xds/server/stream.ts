/**
 * The xDS server state machine, independent of gRPC: streams (SotW and delta ADS), per-type
 * subscription state, ACK/NACK tracking, debounced pushes, per-client send queues and
 * introspection. Transports feed requests through {@link XdsStreamHandle} and receive responses
 * through {@link XdsTransport}. See docs/ads.md.
 * @module
 */

import { getLogger, type Logger } from "../../log/mod.ts";
import { Debouncer, type MergedPush } from "./debounce.ts";
import { Held } from "./held.ts";
import { markShared, sameBytes } from "./wire.ts";
import { typeShortName } from "./metrics.ts";
import {
  type Clock,
  DEFAULT_WILDCARD_TYPES,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
  type NamedResource,
  type PushEvent,
  type ResourceEntry,
  type ResourceMap,
  type ResourcesFor,
  Status,
  type StreamEnd,
  systemClock,
  XDS_TYPES,
  type XdsMetrics,
  type XdsNode,
  type XdsTransport,
} from "./types.ts";

/** Default time a single send may take before the stream is closed, in ms (Istio: 5 s). */
export const DEFAULT_SEND_TIMEOUT_MS = 5000;

/** Options of {@link XdsServer}. */
export interface XdsServerOptions<P> {
  /** Parses the node of a stream's first request; throws (message = reason) when invalid. */
  parseNode(node: XdsNode): P;
  /** The generator: what `proxy` sees of a type. */
  resourcesFor: ResourcesFor<P>;
  /** Quiet period before a push, ms (default 100, like PILOT_DEBOUNCE_AFTER). */
  debounceAfter?: number;
  /** Longest delay of a push after its first event, ms (default 1000). */
  debounceMax?: number;
  /** Longest time one send may take before the stream is closed, ms (default 5000). */
  sendTimeout?: number;
  /** Types where an empty subscription is a wildcard and SotW responses list everything. */
  wildcardTypes?: readonly string[];
  /**
   * Types the generator serves (default: every type of `XDS_TYPES`). Requests for other types are
   * ignored, with one warning per stream and type.
   */
  knownTypes?: readonly string[];
  /** Metrics hooks. */
  metrics?: XdsMetrics;
  /** Injected clock (tests). */
  clock?: Clock;
  /** Logger (default `getLogger("ads")`). */
  logger?: Logger;
  /** `control_plane.identifier` put in every response (omitted when empty). */
  controlPlaneId?: string;
}

/** Feeds one stream's requests to the server. */
export interface XdsStreamHandle<Req> {
  /** Handles one request from the client. */
  receive(request: Req): void;
  /** The client went away (end, cancel, error): forget the stream. */
  close(): void;
}

/** Introspection of one type on one stream. */
export interface TypeStatus {
  typeUrl: string;
  /** Wildcard subscription (empty names on Listener/Cluster, or `*`). */
  wildcard: boolean;
  /** Explicitly subscribed names, sorted. */
  subscribed: string[];
  /** Names the client was sent (SotW) or is known to have (delta), with versions. */
  resources: Record<string, string>;
  lastSent?: { version: string; nonce: string; time: string; resources: number };
  lastAcked?: { version: string; nonce: string; time: string };
  lastNack?: { version: string; nonce: string; error: string; time: string };
}

/** Introspection of one stream (for /debug/adsz and /debug/syncz). */
export interface ConnectionStatus<P> {
  /** Node id + "-" + a server-wide counter. */
  conId: string;
  nodeId: string;
  proxy: P;
  node: XdsNode;
  mode: "sotw" | "delta";
  peer: string;
  peerIdentities: string[];
  connectedAt: string;
  types: Record<string, TypeStatus>;
}

interface Dirty {
  /** Recompute every subscribed name (else only `names`). */
  all: boolean;
  names: Set<string>;
  /** Respond even when nothing changed (first/re-init request; subscription change on full-state types). */
  force: boolean;
}

/** An explicit subscription: the names and the same names as the query array (stable identity). */
interface Subscription {
  readonly set: ReadonlySet<string>;
  readonly list: readonly string[];
  /** Interning key (interned SotW subscriptions only). */
  readonly key?: string;
  /**
   * Interned SotW subscriptions: the encoded `resource_names` of a request that listed exactly
   * these names (no duplicates, no `*`), once one arrived; requests with the same bytes need no
   * decoding or set comparison.
   */
  raw?: Uint8Array;
}

const NO_NAMES: Subscription = Object.freeze({
  set: new Set<string>(),
  list: Object.freeze([]) as readonly string[],
});

interface TypeState {
  typeUrl: string;
  wildcard: boolean;
  /** Delta: wildcard implied by an empty first subscription; ends when names are subscribed. */
  legacyWildcard: boolean;
  /** Interned: shared by every stream subscribing to the same names. */
  sub: Subscription;
  /** SotW: name → version last sent; delta: name → version the client has. */
  held: Held;
  /** Delta: newly subscribed names to report in removed_resources when they do not exist. */
  notFound: Set<string>;
  nonce?: string;
  nonceVersion?: string;
  lastSent?: TypeStatus["lastSent"];
  lastAcked?: TypeStatus["lastAcked"];
  lastNack?: TypeStatus["lastNack"];
}

/** What changed from one shared view to another (see XdsServer#diff). */
interface ViewDiff {
  /** Entries of the next view that are new or have another version (shared; do not mutate). */
  readonly changed: NamedResource[];
  /** Their names. */
  readonly names: ReadonlySet<string>;
  /** Names of the previous view that the next one lacks, sorted. */
  readonly removed: readonly string[];
  /** Both views hold the same names with the same versions. */
  readonly unchanged: boolean;
}

interface PushRecord {
  firstEventAt: number;
  startedAt: number;
  remaining: Set<Connection<unknown>>;
  done: () => void;
}

class Connection<P> {
  readonly types = new Map<string, TypeState>();
  /** Unknown type URLs already warned about. */
  warned?: Set<string>;
  readonly dirty = new Map<string, Dirty>();
  /** True while the send loop runs (set and cleared synchronously). */
  draining = false;
  /** The running send loop (for flush()). */
  drained: Promise<void> = Promise.resolve();
  closed = false;
  waiters: PushRecord[] = [];
  /** While a send is in flight: when it times out (clock ms), and its type. 0 = none. */
  sendDeadline = 0;
  sendType = "";
  /** The send in flight timed out (the stream was ended by the sweep). */
  sendTimedOut = false;
  /** Ends the stream with a status and forgets the connection. */
  endStream: (e: StreamEnd) => void = () => {};
  constructor(
    readonly conId: string,
    readonly node: XdsNode,
    readonly proxy: P,
    readonly mode: "sotw" | "delta",
    readonly transport: XdsTransport<DiscoveryResponse> | XdsTransport<DeltaDiscoveryResponse>,
    readonly connectedAt: string,
  ) {}
}

/** Push order: clusters before endpoints, listeners before routes (Envoy's recommended order). */
const TYPE_ORDER: string[] = [
  XDS_TYPES.cluster,
  XDS_TYPES.endpoint,
  XDS_TYPES.listener,
  XDS_TYPES.route,
  XDS_TYPES.secret,
];

function typeRank(t: string): number {
  const i = TYPE_ORDER.indexOf(t);
  return i < 0 ? TYPE_ORDER.length : i;
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

function newTypeState(typeUrl: string): TypeState {
  return {
    typeUrl,
    wildcard: false,
    legacyWildcard: false,
    sub: NO_NAMES,
    held: new Held(),
    notFound: new Set(),
  };
}

let bootSeq = 0;

/** Stands for a wildcard subscription in XdsServer#checked. */
const WILDCARD = Symbol("wildcard");

/** How many subscriptions with raw names are compared with a request's names (see #byRaw). */
const RECENT_RAW = 8;

/**
 * The transport-independent xDS server.
 *
 * @example
 * ```ts ignore
 * const cache = new ResourceCache();
 * const server = new XdsServer({
 *   parseNode: (node) => parseNodeId(node.id),
 *   resourcesFor: (_proxy, typeUrl, names) => cache.select(typeUrl, names),
 * });
 * const { port, shutdown } = await startAdsServer({ address: "127.0.0.1:15010", server });
 * cache.set(XDS_TYPES.cluster, "c1", bytes);
 * server.push({ kind: "config", types: [XDS_TYPES.cluster] });
 * ```
 */
export class XdsServer<P = unknown> {
  readonly #opts: XdsServerOptions<P>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: XdsMetrics;
  readonly #wildcardTypes: ReadonlySet<string>;
  readonly #knownTypes: ReadonlySet<string>;
  /** Interned SotW subscriptions: key → subscription and the number of type states using it. */
  readonly #subs = new Map<string, { sub: Subscription; refs: number }>();
  /** Interned subscriptions with raw names, most recent first (at most RECENT_RAW). */
  readonly #recentRaw: Subscription[] = [];
  readonly #sendTimeout: number;
  readonly #debouncer: Debouncer;
  readonly #conns = new Map<string, Connection<P>>();
  readonly #inflight = new Set<Promise<void>>();
  readonly #typeSeq = new Map<string, number>();
  /** Generator maps known to hold only names of a subscription (or of a wildcard one). */
  readonly #checked = new WeakMap<ResourceMap, Subscription | typeof WILDCARD>();
  /** The last time formatted by #iso. */
  #isoAt = NaN;
  #isoText = "";
  /** Response lists of shared views (see #list). */
  readonly #lists = new WeakMap<ResourceMap, NamedResource[]>();
  /** Diffs between shared views: previous view → next view → diff (see #diff). */
  readonly #diffs = new WeakMap<ResourceMap, WeakMap<ResourceMap, ViewDiff>>();
  readonly #noncePrefix: string;
  #nonceSeq = 0;
  #conSeq = 0;
  #closed = false;

  constructor(opts: XdsServerOptions<P>) {
    if (typeof opts.parseNode !== "function") throw new Error("XdsServer: parseNode is required");
    if (typeof opts.resourcesFor !== "function") {
      throw new Error("XdsServer: resourcesFor is required");
    }
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger ?? getLogger("ads");
    this.#metrics = opts.metrics ?? {};
    this.#wildcardTypes = new Set(opts.wildcardTypes ?? DEFAULT_WILDCARD_TYPES);
    this.#knownTypes = new Set(opts.knownTypes ?? Object.values(XDS_TYPES));
    this.#sendTimeout = opts.sendTimeout ?? DEFAULT_SEND_TIMEOUT_MS;
    if (!Number.isFinite(this.#sendTimeout) || this.#sendTimeout <= 0) {
      throw new Error(`Invalid sendTimeout ${this.#sendTimeout}: must be a number > 0`);
    }
    this.#debouncer = new Debouncer((p) => this.#flush(p), {
      after: opts.debounceAfter,
      max: opts.debounceMax,
      clock: this.#clock,
    });
    this.#noncePrefix = `${(Math.floor(this.#clock.now()) % 0x1000000).toString(36)}${
      (bootSeq++).toString(36)
    }`;
  }

  // ---- streams --------------------------------------------------------------------------------

  /** Opens a state-of-the-world ADS stream (`StreamAggregatedResources`). */
  openSotw(transport: XdsTransport<DiscoveryResponse>): XdsStreamHandle<DiscoveryRequest> {
    return this.#open("sotw", transport, (c, r) => this.#onSotw(c, r as DiscoveryRequest));
  }

  /** Opens an incremental ADS stream (`DeltaAggregatedResources`). */
  openDelta(
    transport: XdsTransport<DeltaDiscoveryResponse>,
  ): XdsStreamHandle<DeltaDiscoveryRequest> {
    return this.#open("delta", transport, (c, r) => this.#onDelta(c, r as DeltaDiscoveryRequest));
  }

  #open<Req extends DiscoveryRequest | DeltaDiscoveryRequest>(
    mode: "sotw" | "delta",
    transport: XdsTransport<DiscoveryResponse> | XdsTransport<DeltaDiscoveryResponse>,
    onRequest: (c: Connection<P>, r: Req) => void,
  ): XdsStreamHandle<Req> {
    let conn: Connection<P> | undefined;
    let ended = false;
    const end = (e: StreamEnd) => {
      if (ended) return;
      ended = true;
      this.#log.warn(`ADS: closing stream from ${transport.peer}: ${e.message}`);
      transport.end(e);
      if (conn) this.#forget(conn);
    };
    return {
      receive: (req: Req) => {
        if (ended) return;
        if (this.#closed) {
          return end({ code: Status.UNAVAILABLE, message: "Server is shutting down" });
        }
        if (!conn) {
          const node = req.node;
          if (!node || typeof node.id !== "string" || node.id === "") {
            return end({
              code: Status.INVALID_ARGUMENT,
              message:
                "Invalid first request: node.id is missing (the first request must carry node)",
            });
          }
          let proxy: P;
          try {
            proxy = this.#opts.parseNode(node);
          } catch (e) {
            return end({
              code: Status.INVALID_ARGUMENT,
              message: `Invalid node id "${node.id}": ${(e as Error).message}`,
            });
          }
          conn = new Connection(
            `${node.id}-${++this.#conSeq}`,
            node,
            proxy,
            mode,
            transport,
            this.#iso(),
          );
          const c = conn;
          c.endStream = end;
          this.#conns.set(c.conId, c);
          this.#metrics.connections?.(this.#conns.size);
          this.#log.info(`ADS: new ${mode} connection ${c.conId} from ${transport.peer}`);
        }
        try {
          onRequest(conn, req);
        } catch (e) {
          end({ code: Status.INVALID_ARGUMENT, message: (e as Error).message });
        }
      },
      close: () => {
        ended = true;
        if (conn) this.#forget(conn);
      },
    };
  }

  #forget(conn: Connection<P>): void {
    if (conn.closed) return;
    conn.closed = true;
    conn.dirty.clear();
    for (const st of conn.types.values()) this.#unref(st.sub);
    this.#conns.delete(conn.conId);
    this.#metrics.connections?.(this.#conns.size);
    this.#log.info(`ADS: connection ${conn.conId} closed`);
    const ws = conn.waiters;
    conn.waiters = [];
    for (const w of ws) this.#release(w, conn);
  }

  #endConn(conn: Connection<P>, e: StreamEnd): void {
    conn.endStream(e);
  }

  /** The shared subscription for `names` (one per distinct name set, reference-counted). */
  #intern(names: ReadonlySet<string>): Subscription {
    if (names.size === 0) return NO_NAMES;
    const list = [...names].sort();
    let key = "";
    for (const n of list) key += `${n.length}:${n}`;
    const hit = this.#subs.get(key);
    if (hit) {
      hit.refs++;
      return hit.sub;
    }
    const sub: Subscription = { set: new Set(list), list: Object.freeze(list), key };
    this.#subs.set(key, { sub, refs: 1 });
    return sub;
  }

  #unref(sub: Subscription): void {
    if (sub.key === undefined) return;
    const hit = this.#subs.get(sub.key);
    if (hit?.sub === sub && --hit.refs <= 0) {
      this.#subs.delete(sub.key);
      const i = this.#recentRaw.indexOf(sub);
      if (i >= 0) this.#recentRaw.splice(i, 1);
    }
  }

  /** A live interned subscription whose names were encoded as `raw` (recent ones only). */
  #byRaw(raw: Uint8Array): Subscription | undefined {
    for (const sub of this.#recentRaw) if (sameBytes(raw, sub.raw!)) return sub;
    return undefined;
  }

  /** True when `typeUrl` is served; warns once per stream and type when it is not. */
  #known(conn: Connection<P>, typeUrl: string): boolean {
    if (this.#knownTypes.has(typeUrl)) return true;
    conn.warned ??= new Set();
    if (!conn.warned.has(typeUrl)) {
      conn.warned.add(typeUrl);
      this.#log.warn(
        `ADS: ${conn.conId}: unknown type ${typeUrl} requested; ignoring its requests`,
        { conId: conn.conId, type: typeUrl },
      );
    }
    return false;
  }

  // ---- requests -------------------------------------------------------------------------------

  /**
   * The state of the type a request is for (created by the first request), or undefined when the
   * request is ignored: no type URL, or one the server does not serve.
   */
  #requestState(
    conn: Connection<P>,
    typeUrl: string,
    what: string,
  ): { st: TypeState; first: boolean } | undefined {
    if (!typeUrl) {
      this.#log.warn(`ADS: ${conn.conId}: ${what} without type_url ignored`);
      return undefined;
    }
    if (!this.#known(conn, typeUrl)) return undefined;
    let st = conn.types.get(typeUrl);
    const first = !st;
    if (!st) conn.types.set(typeUrl, st = newTypeState(typeUrl));
    return { st, first };
  }

  #onSotw(conn: Connection<P>, req: DiscoveryRequest): void {
    const typeUrl = req.type_url ?? "";
    const state = this.#requestState(conn, typeUrl, "request");
    if (!state) return;
    const { st, first } = state;
    const nonce = req.response_nonce ?? "";
    if (nonce !== "" && nonce === st.nonce) {
      this.#ackOrNack(conn, st, req.version_info ?? "", nonce, req.error_detail);
    } else if (nonce !== "") {
      this.#log.debug(`ADS: ${conn.conId}: stale nonce for ${typeShortName(typeUrl)}`, { nonce });
    }
    const reinit = nonce === "";
    const raw = req.resource_names_raw;
    // An ACK repeating the subscribed names byte for byte: nothing else to do.
    if (!first && !reinit && raw && st.sub.raw && !st.wildcard && sameBytes(raw, st.sub.raw)) {
      return;
    }
    let changed: boolean, wildcard: boolean;
    const known = raw && this.#byRaw(raw);
    if (known) {
      // The names of a subscription another stream sent in the same bytes (e.g. every proxy
      // subscribing to a new cluster list after a push): no decoding, sorting or interning.
      wildcard = false;
      changed = first || st.wildcard || st.sub !== known;
      if (st.sub !== known) {
        const old = st.sub;
        this.#subs.get(known.key!)!.refs++;
        st.sub = known;
        this.#unref(old);
      }
    } else {
      const names = req.resource_names ?? [];
      const canWildcard = this.#wildcardTypes.has(typeUrl);
      wildcard = canWildcard && (names.length === 0 || names.includes("*"));
      const explicit = new Set(names.filter((n) => n !== "*"));
      changed = first || wildcard !== st.wildcard || !sameSet(explicit, st.sub.set);
      if (changed && !sameSet(explicit, st.sub.set)) {
        const old = st.sub;
        st.sub = this.#intern(explicit);
        this.#unref(old);
      }
      if (raw && !st.sub.raw && st.sub.key !== undefined && names.length === st.sub.set.size) {
        // A copy (`raw` views the received message, whose buffer the transport reuses). Not
        // `raw.slice()`: on a node Buffer that is a view, not a copy.
        st.sub.raw = new Uint8Array(raw);
        this.#recentRaw.unshift(st.sub);
        if (this.#recentRaw.length > RECENT_RAW) this.#recentRaw.pop();
      }
    }
    if (!changed && !reinit) return;
    st.wildcard = wildcard;
    if (reinit) st.held.clear(); // (re)initial request: the client holds nothing from us
    if (!wildcard) st.held.retain(st.sub.set);
    this.#markDirty(conn, typeUrl, { all: true, names: new Set(), force: true });
    this.#drain(conn);
  }

  #onDelta(conn: Connection<P>, req: DeltaDiscoveryRequest): void {
    const typeUrl = req.type_url ?? "";
    const state = this.#requestState(conn, typeUrl, "delta request");
    if (!state) return;
    const { st, first } = state;
    const nonce = req.response_nonce ?? "";
    if (nonce !== "" && nonce === st.nonce) {
      this.#ackOrNack(conn, st, st.nonceVersion ?? "", nonce, req.error_detail);
    }
    const subscribe = req.resource_names_subscribe ?? [];
    const unsubscribe = req.resource_names_unsubscribe ?? [];
    let changed = false;
    // Copied only when the subscription may change (not for plain ACKs).
    const names =
      (subscribe.length || unsubscribe.length ? new Set(st.sub.set) : st.sub.set) as Set<string>;
    if (first) {
      for (const [n, v] of Object.entries(req.initial_resource_versions ?? {})) st.held.set(n, v);
      if (subscribe.length === 0 && this.#wildcardTypes.has(typeUrl)) {
        st.wildcard = true;
        st.legacyWildcard = true;
      }
    }
    for (const n of subscribe) {
      if (n === "*") {
        st.wildcard = true;
        st.legacyWildcard = false;
        changed = true;
        continue;
      }
      if (st.legacyWildcard) {
        // Subscribing to names ends a legacy (implicit) wildcard subscription.
        st.legacyWildcard = false;
        st.wildcard = subscribe.includes("*");
      }
      if (names.has(n) && !first) st.held.delete(n); // re-subscribe: send it again
      names.add(n);
      st.notFound.add(n);
      changed = true;
    }
    for (const n of unsubscribe) {
      if (n === "*") {
        st.wildcard = false;
        st.legacyWildcard = false;
      } else {
        names.delete(n);
        st.notFound.delete(n);
      }
      changed = true;
    }
    if (names !== st.sub.set && !sameSet(names, st.sub.set)) {
      // Interned like SotW subscriptions: streams subscribing to the same names pass the same
      // query array to the generator, which can then return one shared view for all of them.
      const old = st.sub;
      st.sub = this.#intern(names);
      this.#unref(old);
    }
    if (changed && !st.wildcard) st.held.retain(st.sub.set);
    if (!first && !changed) return;
    this.#markDirty(conn, typeUrl, { all: true, names: new Set(), force: first });
    this.#drain(conn);
  }

  #ackOrNack(
    conn: Connection<P>,
    st: TypeState,
    version: string,
    nonce: string,
    error: { code?: number; message?: string } | null | undefined,
  ): void {
    const time = this.#iso();
    if (error) {
      const message = error.message || `code ${error.code ?? "unknown"}`;
      st.lastNack = { version, nonce, error: message, time };
      this.#metrics.nack?.(st.typeUrl);
      this.#log.warn(
        `ADS: NACK from ${conn.conId} for ${typeShortName(st.typeUrl)}: ${message}`,
        { conId: conn.conId, type: st.typeUrl, version, nonce },
      );
    } else {
      st.lastAcked = { version, nonce, time };
    }
  }

  // ---- pushes ---------------------------------------------------------------------------------

  /**
   * Requests a push. Events are debounced and merged; `full` and `config` recompute the named
   * types (all when omitted) for every client and send what changed for that client; `eds`
   * recomputes only the named clusters' endpoints for the clients watching them.
   */
  push(ev: PushEvent): void {
    if (this.#closed) return;
    if (ev.kind === "eds" && !Array.isArray(ev.clusters)) {
      throw new Error("push(): eds event needs a clusters array");
    }
    this.#debouncer.push(ev);
  }

  /**
   * Flushes a pending debounced push now and resolves when every push in flight has been sent to
   * every affected client (or the client went away).
   */
  async flush(): Promise<void> {
    this.#debouncer.flushNow();
    for (;;) {
      const busy = [...this.#inflight];
      for (const c of this.#conns.values()) if (c.draining) busy.push(c.drained);
      if (!busy.length) return;
      await Promise.all(busy);
    }
  }

  #flush(p: MergedPush): void {
    let done!: () => void;
    const promise = new Promise<void>((r) => done = r);
    const rec: PushRecord = {
      firstEventAt: p.firstEventAt,
      startedAt: this.#clock.now(),
      remaining: new Set(),
      done: () => {},
    };
    rec.done = () => {
      const now = this.#clock.now();
      this.#metrics.pushDuration?.((now - rec.startedAt) / 1000);
      this.#metrics.convergence?.((now - rec.firstEventAt) / 1000);
      this.#inflight.delete(promise);
      done();
    };
    this.#inflight.add(promise);
    const eds = XDS_TYPES.endpoint;
    for (const conn of this.#conns.values()) {
      let marked = false;
      for (const t of conn.types.keys()) {
        if (p.full || p.types.has(t)) {
          this.#markDirty(conn, t, { all: true, names: new Set(), force: false });
          marked = true;
        }
      }
      const st = conn.types.get(eds);
      if (st && p.edsClusters.size && !p.full && !p.types.has(eds)) {
        const names = new Set(
          [...p.edsClusters].filter((c) => st.wildcard || st.sub.set.has(c) || st.held.has(c)),
        );
        if (names.size) {
          this.#markDirty(conn, eds, { all: false, names, force: false });
          marked = true;
        }
      }
      if (marked) {
        rec.remaining.add(conn as Connection<unknown>);
        conn.waiters.push(rec);
        this.#drain(conn);
      }
    }
    this.#log.debug("ADS: push", {
      full: p.full,
      types: [...p.types],
      edsClusters: p.edsClusters.size,
      events: p.events,
      clients: rec.remaining.size,
    });
    if (rec.remaining.size === 0) rec.done();
  }

  #release(rec: PushRecord, conn: Connection<P>): void {
    if (rec.remaining.delete(conn as Connection<unknown>) && rec.remaining.size === 0) rec.done();
  }

  #markDirty(conn: Connection<P>, typeUrl: string, d: Dirty): void {
    const old = conn.dirty.get(typeUrl);
    if (!old) {
      conn.dirty.set(typeUrl, d);
      return;
    }
    old.all ||= d.all;
    old.force ||= d.force;
    for (const n of d.names) old.names.add(n);
  }

  // ---- per-connection send queue ----------------------------------------------------------------

  #drain(conn: Connection<P>): void {
    if (conn.draining || conn.closed) return;
    conn.draining = true;
    conn.drained = this.#drainLoop(conn);
  }

  async #drainLoop(conn: Connection<P>): Promise<void> {
    try {
      for (;;) {
        if (conn.closed) return;
        let next: string | undefined;
        for (const t of conn.dirty.keys()) {
          if (next === undefined || typeRank(t) < typeRank(next)) next = t;
        }
        if (next === undefined) break;
        const d = conn.dirty.get(next)!;
        conn.dirty.delete(next);
        const st = conn.types.get(next)!;
        let res: DiscoveryResponse | DeltaDiscoveryResponse | null;
        try {
          res = conn.mode === "sotw"
            ? await this.#buildSotw(conn, st, d)
            : await this.#buildDelta(conn, st, d);
        } catch (e) {
          this.#metrics.buildError?.(next);
          this.#log.error(
            `ADS: building ${typeShortName(next)} for ${conn.conId} failed: ${
              (e as Error).message
            }`,
          );
          continue;
        }
        if (!res || conn.closed) continue;
        if (!await this.#send(conn, next, res)) return;
      }
    } catch (e) {
      this.#log.error(`ADS: send loop of ${conn.conId} failed: ${(e as Error).message}`);
      this.#endConn(conn, { code: Status.INTERNAL, message: (e as Error).message });
      return;
    } finally {
      conn.draining = false;
    }
    const ws = conn.waiters;
    conn.waiters = [];
    for (const w of ws) this.#release(w, conn);
  }

  async #send(
    conn: Connection<P>,
    typeUrl: string,
    res: DiscoveryResponse | DeltaDiscoveryResponse,
  ): Promise<boolean> {
    // One sweep timer checks every send in flight (a timer per send cost ~8% of a full push).
    conn.sendDeadline = this.#clock.now() + this.#sendTimeout;
    conn.sendType = typeUrl;
    this.#armSendSweep();
    try {
      await (conn.transport as XdsTransport<typeof res>).send(res);
      if (conn.sendTimedOut) return false;
      this.#metrics.pushed?.(typeUrl);
      return true;
    } catch (e) {
      if (conn.sendTimedOut) return false;
      this.#metrics.sendError?.(typeUrl, "error");
      this.#log.warn(
        `ADS: sending ${typeShortName(typeUrl)} to ${conn.conId} failed: ${(e as Error).message}`,
      );
      this.#endConn(conn, {
        code: Status.UNAVAILABLE,
        message: `Send failed: ${(e as Error).message}`,
      });
      return false;
    } finally {
      conn.sendDeadline = 0;
    }
  }

  #sendSweep: unknown;

  /** Runs {@link #sweepSends} every tenth of the send timeout while sends are in flight. */
  #armSendSweep(): void {
    if (this.#sendSweep !== undefined || this.#closed) return;
    this.#sendSweep = this.#clock.setTimeout(() => {
      this.#sendSweep = undefined;
      if (this.#sweepSends()) this.#armSendSweep();
    }, Math.max(5, Math.min(1000, this.#sendTimeout / 10)));
  }

  /** Ends the streams whose send is past its deadline; true while other sends are in flight. */
  #sweepSends(): boolean {
    const now = this.#clock.now();
    let pending = false;
    for (const conn of this.#conns.values()) {
      if (!conn.sendDeadline) continue;
      if (now < conn.sendDeadline) {
        pending = true;
        continue;
      }
      conn.sendTimedOut = true;
      conn.sendDeadline = 0;
      this.#metrics.sendError?.(conn.sendType, "timeout");
      this.#endConn(conn, {
        code: Status.DEADLINE_EXCEEDED,
        message: `Sending ${
          typeShortName(conn.sendType)
        } to ${conn.conId} timed out after ${this.#sendTimeout} ms`,
      });
    }
    return pending;
  }

  async #query(
    conn: Connection<P>,
    st: TypeState,
    d: Dirty,
    scoped: boolean,
  ): Promise<{ query: readonly string[] | null; complete: boolean; visible: ResourceMap } | null> {
    const sub = st.sub;
    let query: readonly string[] | null = st.wildcard ? null : sub.list;
    const complete = !(scoped && !d.all);
    if (!complete) {
      query = [...d.names].filter((n) => st.wildcard || sub.set.has(n));
    }
    if (query !== null && query.length === 0) return { query, complete, visible: new Map() };
    const got = await this.#opts.resourcesFor(conn.proxy, st.typeUrl, query);
    if (conn.closed) return null;
    // Keep the generator's (shared) map unless it holds names outside the query; a shared map
    // already checked against the whole subscription (or wildcard) is not checked again.
    const scope = st.wildcard ? WILDCARD : sub;
    const whole = query === null || query === sub.list;
    if (whole && this.#checked.get(got) === scope) return { query, complete, visible: got };
    const inQuery = whole ? null : new Set(query);
    const ok = (name: string) =>
      (st.wildcard || sub.set.has(name)) && (!inQuery || inQuery.has(name));
    let clean = true;
    for (const name of got.keys()) {
      if (!ok(name)) {
        clean = false;
        break;
      }
    }
    if (clean) {
      if (whole) this.#checked.set(got, scope);
      return { query, complete, visible: got };
    }
    const visible = new Map<string, ResourceEntry>();
    for (const [name, entry] of got) if (ok(name)) visible.set(name, entry);
    return { query, complete, visible };
  }

  async #buildSotw(
    conn: Connection<P>,
    st: TypeState,
    d: Dirty,
  ): Promise<DiscoveryResponse | null> {
    const fullState = this.#wildcardTypes.has(st.typeUrl);
    if (!st.wildcard && st.sub.set.size === 0 && !(fullState && d.force)) return null;
    const q = await this.#query(conn, st, d, !fullState);
    if (!q) return null;
    const held = st.held;
    let resources: NamedResource[];
    if (fullState) {
      // Clients holding a shared view compare it with the new one through a diff computed once.
      const same = held.view && held.view !== q.visible && !held.overrides?.size
        ? this.#diff(held.view, q.visible).unchanged
        : held.sameAs(q.visible);
      if (same && !d.force) return null;
      held.replace(q.visible);
      resources = this.#list(q.visible);
    } else {
      if (q.visible === held.view && !held.overrides?.size) return null; // shared, unchanged
      const whole = q.complete && q.query === st.sub.list;
      if (whole && held.view) {
        // What changed between the shared views (computed once), adjusted for this client's
        // own differences from its view (scoped EDS pushes).
        const diff = this.#diff(held.view, q.visible);
        if (!held.overrides?.size) resources = diff.changed;
        else {
          resources = diff.changed.filter((r) => held.version(r.name) !== r.entry.version);
          for (const [name] of held.overrides) {
            const entry = q.visible.get(name);
            if (entry && held.version(name) !== entry.version && !diff.names.has(name)) {
              resources.push({ name, entry });
            }
          }
        }
      } else {
        resources = [];
        for (const [name, entry] of q.visible) {
          if (held.version(name) !== entry.version) resources.push({ name, entry });
        }
      }
      if (resources.length === 0) return null;
      if (whole) held.replace(q.visible);
      else for (const r of resources) held.set(r.name, r.entry.version);
    }
    const { version, nonce } = this.#stamp(st, resources.length);
    const res: DiscoveryResponse = {
      version_info: version,
      type_url: st.typeUrl,
      nonce,
      resources,
    };
    if (this.#opts.controlPlaneId) res.control_plane = { identifier: this.#opts.controlPlaneId };
    return res;
  }

  /** A new version and nonce for the next response of `st`, recorded as its last sent. */
  #stamp(st: TypeState, count: number): { version: string; nonce: string } {
    const version = this.#nextVersion(st.typeUrl);
    const nonce = this.#nextNonce();
    st.nonce = nonce;
    st.nonceVersion = version;
    st.lastSent = { version, nonce, time: this.#iso(), resources: count };
    return { version, nonce };
  }

  /** Every entry of a shared view as a response list, built once per view (and marked shared). */
  #list(view: ResourceMap): NamedResource[] {
    let list = this.#lists.get(view);
    if (!list) {
      list = [];
      for (const [name, entry] of view) list.push({ name, entry });
      markShared(list);
      this.#lists.set(view, list);
    }
    return list;
  }

  /**
   * The difference between two views, computed once per pair: entries of `next` that are new or
   * have another version than in `prev`, and whether both hold the same names and versions.
   */
  #diff(prev: ResourceMap, next: ResourceMap): ViewDiff {
    let byNext = this.#diffs.get(prev);
    if (!byNext) this.#diffs.set(prev, byNext = new WeakMap());
    let diff = byNext.get(next);
    if (!diff) {
      const changed: NamedResource[] = [];
      for (const [name, entry] of next) {
        if (prev.get(name)?.version !== entry.version) changed.push({ name, entry });
      }
      markShared(changed);
      const removed: string[] = [];
      if (prev.size + changed.length > next.size) {
        for (const name of prev.keys()) if (!next.has(name)) removed.push(name);
        removed.sort();
      }
      diff = {
        changed,
        names: new Set(changed.map((r) => r.name)),
        removed,
        unchanged: changed.length === 0 && removed.length === 0,
      };
      byNext.set(next, diff);
    }
    return diff;
  }

  async #buildDelta(
    conn: Connection<P>,
    st: TypeState,
    d: Dirty,
  ): Promise<DeltaDiscoveryResponse | null> {
    const q = await this.#query(conn, st, d, true);
    if (!q) return null;
    const held = st.held;
    // The response covers everything the client subscribes to (not a scoped EDS push).
    const whole = q.complete && (q.query === null || q.query === st.sub.list);
    let resources: NamedResource[];
    let removed: string[];
    /** After this response the client holds exactly `q.visible`. */
    let exact: boolean;
    if (whole && held.view) {
      // What changed between the client's shared view and the new one (computed once per pair,
      // shared by every client holding that view), adjusted for its own differences (scoped EDS
      // pushes, unsubscribed names).
      const diff = this.#diff(held.view, q.visible);
      const ov = held.overrides;
      if (!ov?.size) {
        resources = diff.changed;
        removed = diff.removed as string[];
        exact = true;
      } else {
        resources = diff.changed.filter((r) => held.version(r.name) !== r.entry.version);
        removed = diff.removed.filter((n) => held.has(n));
        exact = true;
        const inQuery = q.query === null ? null : st.sub.set;
        for (const [name, v] of ov) {
          if (inQuery && !inQuery.has(name)) {
            if (v !== null) exact = false; // held outside the subscription: kept, not reported
            continue;
          }
          const entry = q.visible.get(name);
          if (entry) {
            if (v !== entry.version && !diff.names.has(name)) resources.push({ name, entry });
          } else if (v !== null && !diff.removed.includes(name)) removed.push(name);
        }
        removed.sort();
      }
    } else if (whole && !held.view && !held.overrides?.size) {
      // The client holds nothing (first response without initial_resource_versions): the whole
      // shared view.
      resources = this.#list(q.visible);
      removed = [];
      exact = true;
    } else {
      resources = [];
      for (const [name, entry] of q.visible) {
        if (held.version(name) !== entry.version) resources.push({ name, entry });
      }
      const rm = new Set<string>();
      if (q.query === null) {
        for (const n of held.names()) if (!q.visible.has(n)) rm.add(n);
        exact = true;
      } else {
        for (const n of q.query) if (held.has(n) && !q.visible.has(n)) rm.add(n);
        exact = whole; // then also when nothing is held outside the subscription
        if (whole) {
          for (const n of held.names()) {
            if (!st.sub.set.has(n)) {
              exact = false;
              break;
            }
          }
        }
      }
      removed = [...rm].sort();
    }
    if (st.notFound.size) {
      // Newly subscribed names that do not exist are reported as removed (once).
      const extra: string[] = [];
      const inQuery = q.query === null ? null : new Set(q.query);
      for (const n of [...st.notFound]) {
        if (inQuery && !inQuery.has(n)) continue;
        if (!q.visible.has(n) && !removed.includes(n)) extra.push(n);
        st.notFound.delete(n);
      }
      if (extra.length) removed = [...removed, ...extra].sort();
    }
    if (resources.length === 0 && removed.length === 0 && !(d.force && st.wildcard)) {
      if (exact && whole) held.replace(q.visible); // same names and versions: share the view
      return null;
    }
    if (exact && whole) held.replace(q.visible);
    else {
      for (const r of resources) held.set(r.name, r.entry.version);
      for (const n of removed) held.delete(n);
    }
    const { version, nonce } = this.#stamp(st, resources.length);
    const res: DeltaDiscoveryResponse = {
      system_version_info: version,
      type_url: st.typeUrl,
      nonce,
      resources,
      removed_resources: removed,
    };
    if (this.#opts.controlPlaneId) res.control_plane = { identifier: this.#opts.controlPlaneId };
    return res;
  }

  #nextVersion(typeUrl: string): string {
    const n = (this.#typeSeq.get(typeUrl) ?? 0) + 1;
    this.#typeSeq.set(typeUrl, n);
    return `${this.#iso()}/${n}`;
  }

  #nextNonce(): string {
    return `${this.#noncePrefix}-${(++this.#nonceSeq).toString(36)}`;
  }

  #iso(): string {
    const now = Math.floor(this.#clock.now());
    if (now !== this.#isoAt) {
      this.#isoAt = now;
      this.#isoText = new Date(now).toISOString();
    }
    return this.#isoText;
  }

  // ---- introspection and lifecycle --------------------------------------------------------------

  /** Number of connected streams. */
  get connectionCount(): number {
    return this.#conns.size;
  }

  /** A snapshot of every connected stream, sorted by conId (for /debug/adsz, /debug/syncz). */
  connections(): ConnectionStatus<P>[] {
    return [...this.#conns.values()]
      .sort((a, b) => a.conId < b.conId ? -1 : a.conId > b.conId ? 1 : 0)
      .map((c) => ({
        conId: c.conId,
        nodeId: c.node.id,
        proxy: c.proxy,
        node: c.node,
        mode: c.mode,
        peer: c.transport.peer,
        peerIdentities: [...(c.transport.peerIdentities ?? [])],
        connectedAt: c.connectedAt,
        types: Object.fromEntries(
          [...c.types.values()].map((st) => [st.typeUrl, {
            typeUrl: st.typeUrl,
            wildcard: st.wildcard,
            subscribed: [...st.sub.set].sort(),
            resources: Object.fromEntries(
              [...st.held.entries()].sort(([a], [b]) => a < b ? -1 : 1),
            ),
            ...(st.lastSent ? { lastSent: { ...st.lastSent } } : {}),
            ...(st.lastAcked ? { lastAcked: { ...st.lastAcked } } : {}),
            ...(st.lastNack ? { lastNack: { ...st.lastNack } } : {}),
          }]),
        ),
      }));
  }

  /** The parsed proxy of every connected stream (cheap: no snapshot). */
  proxies(): P[] {
    return [...this.#conns.values()].map((c) => c.proxy);
  }

  /**
   * Names of `typeUrl` that some stream subscribes to or holds (cheap: subscriptions and views
   * shared between streams are visited once).
   */
  watchedNames(typeUrl: string): Set<string> {
    const out = new Set<string>();
    const seen = new Set<unknown>();
    for (const c of this.#conns.values()) {
      const st = c.types.get(typeUrl);
      if (!st) continue;
      if (!seen.has(st.sub)) {
        seen.add(st.sub);
        for (const n of st.sub.list) out.add(n);
      }
      this.#eachHeld(st.held, seen, (n) => out.add(n));
    }
    return out;
  }

  /**
   * Calls `fn(typeUrl, name, version)` for what the streams hold (may repeat or include a few
   * names no longer held; views shared between streams are visited once). For cache cleanup.
   */
  forEachHeld(fn: (typeUrl: string, name: string, version: string) => void): void {
    const seen = new Set<unknown>();
    for (const c of this.#conns.values()) {
      for (const st of c.types.values()) {
        this.#eachHeld(st.held, seen, (n, v) => fn(st.typeUrl, n, v));
      }
    }
  }

  #eachHeld(h: Held, seen: Set<unknown>, fn: (name: string, version: string) => void): void {
    if (h.view && !seen.has(h.view)) {
      seen.add(h.view);
      for (const [n, e] of h.view) fn(n, e.version);
    }
    for (const [n, v] of h.overrides ?? []) if (v !== null) fn(n, v);
  }

  /**
   * Stops pushing and ends every stream with UNAVAILABLE ("Server is shutting down"). Pending
   * debounced events are dropped.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#debouncer.stop();
    if (this.#sendSweep !== undefined) this.#clock.clearTimeout(this.#sendSweep);
    this.#sendSweep = undefined;
    for (const c of [...this.#conns.values()]) {
      this.#endConn(c, { code: Status.UNAVAILABLE, message: "Server is shutting down" });
    }
  }
}

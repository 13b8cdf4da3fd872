/**
 * The xDS server, independent of gRPC: streams (SotW and delta ADS), ACK/NACK tracking, versions
 * and nonces, and introspection, over the pieces of go-control-plane's split: the SotW and delta
 * state machines (`sotw.ts`, `delta.ts`), per-stream state and interned subscriptions
 * (`state.ts`), shared views (`views.ts`) and push scheduling (`push.ts`). Transports feed
 * requests through {@link XdsStreamHandle} and receive responses through {@link XdsTransport}.
 * See docs/ads.md.
 * @module
 */

import { getLogger, type Logger } from "../../log/mod.ts";
import { adsDebounce } from "./debounce.ts";
import { Held } from "./held.ts";
import { typeShortName } from "./metrics.ts";
import { buildDelta, onDeltaRequest } from "./delta.ts";
import { PushScheduler } from "./push.ts";
import { SubscriberIndex } from "./subscribers.ts";
import { buildSotw, onSotwRequest } from "./sotw.ts";
import {
  Connection,
  newTypeState,
  Subscriptions,
  type TypeState,
  type XdsContext,
} from "./state.ts";
import { SharedViews } from "./views.ts";
import {
  type Clock,
  DEFAULT_WILDCARD_TYPES,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
  type PushEvent,
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

/** What a stream's first request tells besides its node: its ADS flavour and its peer. */
export interface StreamInfo {
  mode: "sotw" | "delta";
  peer: string;
}

/** Options of {@link XdsServer}. */
export interface XdsServerOptions<P> {
  /**
   * Parses the node of a stream's first request; throws (message = reason) when invalid.
   * `stream` says which ADS flavour the stream speaks and who its peer is.
   */
  parseNode(node: XdsNode, stream: StreamInfo): P;
  /** The generator: what `proxy` sees of a type. */
  resourcesFor: ResourcesFor<P>;
  /** Quiet period before a push, ms (default 100, like PILOT_DEBOUNCE_AFTER). */
  debounceAfter?: number;
  /** Longest delay of a push after its first event, ms (default 1000). */
  debounceMax?: number;
  /**
   * Longest delay of an endpoints-only push after its first event, ms (default 250, at most
   * `debounceMax`): under continuous endpoint churn a stream then hears of a change within about
   * this delay plus its push.
   */
  debounceMaxEds?: number;
  /** Send loops running at once; the other streams wait in a FIFO queue (default 256). */
  maxConcurrentPushes?: number;
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
  /**
   * A key of a parsed proxy (e.g. its IP) counted over the connected streams, so that
   * {@link XdsServer.hasProxy} answers without a scan.
   */
  proxyKey?: (proxy: P) => string;
}

/** Feeds one stream's requests to the server. */
export interface XdsStreamHandle<Req> {
  /** Handles one request from the client. */
  receive(request: Req): void;
  /**
   * SotW: the encoded names of the stream's subscriptions, for the decoder of its next request
   * (`decodeDiscoveryRequest`'s hints); the same array while they stay the same.
   */
  namesHints?(): readonly (Uint8Array | undefined)[];
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

let bootSeq = 0;

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
  readonly #knownTypes: ReadonlySet<string>;
  readonly #conns = new Map<string, Connection<P>>();
  /** Connected streams by {@link XdsServerOptions.proxyKey}. */
  readonly #proxyKeys = new Map<string, number>();
  /** Streams by subscribed name, per type (see subscribers.ts). */
  readonly #index = new SubscriberIndex<P>();
  /** What the SotW and delta state machines use (see state.ts). */
  readonly #ctx: XdsContext<P>;
  readonly #pushes: PushScheduler<P>;
  /** The last time formatted by #iso. */
  #isoAt = NaN;
  #isoText = "";
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
    this.#knownTypes = new Set(opts.knownTypes ?? Object.values(XDS_TYPES));
    const sendTimeout = opts.sendTimeout ?? DEFAULT_SEND_TIMEOUT_MS;
    if (!Number.isFinite(sendTimeout) || sendTimeout <= 0) {
      throw new Error(`Invalid sendTimeout ${sendTimeout}: must be a number > 0`);
    }
    this.#ctx = {
      controlPlaneId: opts.controlPlaneId,
      log: this.#log,
      metrics: this.#metrics,
      wildcardTypes: new Set(opts.wildcardTypes ?? DEFAULT_WILDCARD_TYPES),
      subs: new Subscriptions(),
      views: new SharedViews((proxy, typeUrl, names) => opts.resourcesFor(proxy, typeUrl, names)),
      requestState: (conn, typeUrl, what) => this.#requestState(conn, typeUrl, what),
      ackOrNack: (conn, st, version, nonce, error) =>
        this.#ackOrNack(conn, st, version, nonce, error),
      stamp: (st, count, version) => this.#stamp(st, count, version),
      schedule: (conn, typeUrl, d) => {
        this.#pushes.markDirty(conn, typeUrl, d);
        this.#pushes.drain(conn, true); // the client waits for this answer: before queued pushes
      },
    };
    const debounce = adsDebounce(opts);
    this.#pushes = new PushScheduler({
      conns: this.#conns,
      build: (conn, st, d) =>
        conn.mode === "sotw"
          ? buildSotw(this.#ctx, conn, st, d)
          : buildDelta(this.#ctx, conn, st, d),
      clock: this.#clock,
      log: this.#log,
      metrics: this.#metrics,
      sendTimeout,
      debounceAfter: debounce.after,
      debounceMax: debounce.max,
      debounceMaxEds: debounce.maxEds,
      index: this.#index,
      maxConcurrent: opts.maxConcurrentPushes,
    });
    this.#noncePrefix = `${(Math.floor(this.#clock.now()) % 0x1000000).toString(36)}${
      (bootSeq++).toString(36)
    }`;
  }

  // ---- streams --------------------------------------------------------------------------------

  /** Opens a state-of-the-world ADS stream (`StreamAggregatedResources`). */
  openSotw(transport: XdsTransport<DiscoveryResponse>): XdsStreamHandle<DiscoveryRequest> {
    return this.#open(
      "sotw",
      transport,
      (c, r) => onSotwRequest(this.#ctx, c, r as DiscoveryRequest),
    );
  }

  /** Opens an incremental ADS stream (`DeltaAggregatedResources`). */
  openDelta(
    transport: XdsTransport<DeltaDiscoveryResponse>,
  ): XdsStreamHandle<DeltaDiscoveryRequest> {
    return this.#open(
      "delta",
      transport,
      (c, r) => onDeltaRequest(this.#ctx, c, r as DeltaDiscoveryRequest),
    );
  }

  #open<Req extends DiscoveryRequest | DeltaDiscoveryRequest>(
    mode: "sotw" | "delta",
    transport: XdsTransport<DiscoveryResponse> | XdsTransport<DeltaDiscoveryResponse>,
    onRequest: (c: Connection<P>, r: Req) => void,
  ): XdsStreamHandle<Req> {
    let conn: Connection<P> | undefined;
    let ended = false;
    let hints: Uint8Array[] = [];
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
            proxy = this.#opts.parseNode(node, { mode, peer: transport.peer });
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
          if (this.#opts.proxyKey) {
            const k = this.#opts.proxyKey(proxy);
            this.#proxyKeys.set(k, (this.#proxyKeys.get(k) ?? 0) + 1);
          }
          this.#metrics.connections?.(this.#conns.size);
          this.#log.info(`ADS: new ${mode} connection ${c.conId} from ${transport.peer}`);
        }
        try {
          onRequest(conn, req);
        } catch (e) {
          end({ code: Status.INVALID_ARGUMENT, message: (e as Error).message });
        }
        const st = conn.types.get(req.type_url ?? "");
        if (st && !conn.closed) this.#index.update(conn, st);
      },
      close: () => {
        ended = true;
        if (conn) this.#forget(conn);
      },
      ...(mode === "sotw"
        ? {
          namesHints: () => {
            if (!conn) return hints;
            // the same array while the subscriptions stay (every ACK): nothing allocated
            let i = 0, same = true;
            for (const st of conn.types.values()) {
              if (!st.sub.raw) continue;
              if (hints[i++] !== st.sub.raw) same = false;
            }
            if (same && i === hints.length) return hints;
            hints = [];
            for (const st of conn.types.values()) if (st.sub.raw) hints.push(st.sub.raw);
            return hints;
          },
        }
        : {}),
    };
  }

  #forget(conn: Connection<P>): void {
    if (conn.closed) return;
    conn.closed = true;
    conn.dirty.clear();
    this.#index.remove(conn);
    for (const st of conn.types.values()) this.#ctx.subs.unref(st.sub);
    this.#conns.delete(conn.conId);
    if (this.#opts.proxyKey) {
      const k = this.#opts.proxyKey(conn.proxy);
      const n = (this.#proxyKeys.get(k) ?? 0) - 1;
      if (n > 0) this.#proxyKeys.set(k, n);
      else this.#proxyKeys.delete(k);
    }
    this.#metrics.connections?.(this.#conns.size);
    this.#log.info(`ADS: connection ${conn.conId} closed`);
    const ws = conn.waiters;
    conn.waiters = [];
    for (const w of ws) this.#pushes.release(w, conn);
  }

  #endConn(conn: Connection<P>, e: StreamEnd): void {
    conn.endStream(e);
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
      // Updated in place, with the strings of what was sent when they match: a push to many
      // streams leaves no new record per stream to survive until the next one (GC at scale).
      const v = version === st.nonceVersion ? st.nonceVersion : version;
      const n = nonce === st.nonce ? st.nonce : nonce;
      const a = st.lastAcked;
      if (a) {
        a.version = v;
        a.nonce = n;
        a.time = time;
      } else st.lastAcked = { version: v, nonce: n, time };
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
    this.#pushes.push(ev);
  }

  /**
   * Flushes a pending debounced push now and resolves when every push in flight has been sent to
   * every affected client (or the client went away).
   */
  flush(): Promise<void> {
    return this.#pushes.flush();
  }

  /** A nonce for the next response of `st` (content `version`), recorded as its last sent. */
  #stamp(st: TypeState, count: number, version: string): { version: string; nonce: string } {
    const nonce = this.#nextNonce();
    st.nonce = nonce;
    st.nonceVersion = version;
    const time = this.#iso();
    const s = st.lastSent; // updated in place (see #ackOrNack)
    if (s) {
      s.version = version;
      s.nonce = nonce;
      s.time = time;
      s.resources = count;
    } else st.lastSent = { version, nonce, time, resources: count };
    return { version, nonce };
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

  /** True when a connected stream's proxy has `key` (see {@link XdsServerOptions.proxyKey}). */
  hasProxy(key: string): boolean {
    return this.#proxyKeys.has(key);
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
    // Explicit subscriptions from the reverse index (no scan of the streams); wildcard streams
    // watch what they hold. A stream holds no name outside its explicit subscription once a
    // request set it (see sotw.ts, delta.ts), and names held outside it are never pushed.
    const out = new Set<string>(this.#index.subscribedNames(typeUrl));
    const seen = new Set<unknown>();
    for (const c of this.#index.wildcardStreams(typeUrl)) {
      const st = c.types.get(typeUrl);
      if (st) this.#eachHeld(st.held, seen, (n) => out.add(n));
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
    this.#pushes.stop();
    for (const c of [...this.#conns.values()]) {
      this.#endConn(c, { code: Status.UNAVAILABLE, message: "Server is shutting down" });
    }
  }
}

/**
 * The state the xDS server keeps per stream and per type (subscriptions, what the client holds,
 * nonces, what waits to be sent), and the interning of subscriptions that lets streams with the
 * same names share one query array and one generator view. Shared by the SotW (`sotw.ts`) and
 * delta (`delta.ts`) state machines and the push scheduler (`push.ts`).
 * @module
 */

import type { Logger } from "../../log/mod.ts";
import { Buffer } from "node:buffer";
import { Held } from "./held.ts";
import { sameBytes } from "./wire.ts";
import type { TypeStatus } from "./stream.ts";
import {
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
  type StreamEnd,
  XDS_TYPES,
  type XdsMetrics,
  type XdsNode,
  type XdsTransport,
} from "./types.ts";
import type { SharedViews } from "./views.ts";

/** What of a type waits to be recomputed for a stream. */
export interface Dirty {
  /** Recompute every subscribed name (else only `names`). */
  readonly all: boolean;
  readonly names: ReadonlySet<string>;
  /** Respond even when nothing changed (first/re-init request; subscription change on full-state types). */
  readonly force: boolean;
}

/** An explicit subscription: the names and the same names as the query array (stable identity). */
export interface Subscription {
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

/** The empty subscription. */
export const NO_NAMES: Subscription = Object.freeze({
  set: new Set<string>(),
  list: Object.freeze([]) as readonly string[],
});

/** The state of one type on one stream. */
export interface TypeState {
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
  /**
   * SotW: the `version_info` of the stream's first request (what a client reconnecting from
   * another stream or replica says it holds), until the first response is built.
   */
  claimed?: string;
  nonce?: string;
  nonceVersion?: string;
  lastSent?: TypeStatus["lastSent"];
  lastAcked?: TypeStatus["lastAcked"];
  lastNack?: TypeStatus["lastNack"];
}

/** A push in flight: the streams it still waits for (see push.ts). */
export interface PushRecord {
  firstEventAt: number;
  startedAt: number;
  /** Streams not done with the push yet (each holds the record in its `waiters` once). */
  remaining: number;
  done: () => void;
}

/** One xDS stream (SotW or delta) of one client. */
export class Connection<P> {
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
  /** A push holds the reading of this stream's connection (see `PushScheduler.#push`). */
  readHeld = false;
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

/** The push order rank of a type. */
export function typeRank(t: string): number {
  const i = TYPE_ORDER.indexOf(t);
  return i < 0 ? TYPE_ORDER.length : i;
}

/** True when both sets hold the same names. */
export function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

/** The state of a type before its first request was handled. */
export function newTypeState(typeUrl: string): TypeState {
  return {
    typeUrl,
    wildcard: false,
    legacyWildcard: false,
    sub: NO_NAMES,
    held: new Held(),
    notFound: new Set(),
  };
}

/** How many subscriptions with raw names are compared with a request's names (see byRaw). */
const RECENT_RAW = 8;

/** Interned SotW and delta subscriptions: one per distinct name set, reference-counted. */
export class Subscriptions {
  /** Interned subscriptions: key → subscription and the number of type states using it. */
  readonly #subs = new Map<string, { sub: Subscription; refs: number }>();
  /** Interned subscriptions with raw names, most recent first (at most RECENT_RAW). */
  readonly #recentRaw: Subscription[] = [];

  /** The shared subscription for `names` (one per distinct name set, reference-counted). */
  intern(names: ReadonlySet<string>): Subscription {
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

  /** One more type state uses the interned `sub`. */
  ref(sub: Subscription): void {
    this.#subs.get(sub.key!)!.refs++;
  }

  /** A type state no longer uses `sub`. */
  unref(sub: Subscription): void {
    if (sub.key === undefined) return;
    const hit = this.#subs.get(sub.key);
    if (hit?.sub === sub && --hit.refs <= 0) {
      this.#subs.delete(sub.key);
      const i = this.#recentRaw.indexOf(sub);
      if (i >= 0) this.#recentRaw.splice(i, 1);
    }
  }

  /** A live interned subscription whose names were encoded as `raw` (recent ones only). */
  byRaw(raw: Uint8Array): Subscription | undefined {
    for (const sub of this.#recentRaw) if (sameBytes(raw, sub.raw!)) return sub;
    return undefined;
  }

  /** Remembers that `raw` encodes exactly the names of the interned `sub`. */
  rememberRaw(sub: Subscription, raw: Uint8Array): void {
    // A copy (`raw` views the received message, whose buffer the transport reuses). Not
    // `raw.slice()`: on a node Buffer that is a view, not a copy. A Buffer, so that comparing
    // each ACK with it needs no Buffer view of it (sameBytes).
    sub.raw = Buffer.from(raw);
    this.#recentRaw.unshift(sub);
    if (this.#recentRaw.length > RECENT_RAW) this.#recentRaw.pop();
  }
}

/** What the SotW and delta state machines use of their server. */
export interface XdsContext<P> {
  /** `control_plane.identifier` of responses (omitted when empty). */
  readonly controlPlaneId?: string;
  readonly log: Logger;
  readonly metrics: XdsMetrics;
  /** Types where an empty subscription is a wildcard and SotW responses list everything. */
  readonly wildcardTypes: ReadonlySet<string>;
  readonly subs: Subscriptions;
  readonly views: SharedViews<P>;
  /**
   * The state of the type a request is for (created by the first request), or undefined when the
   * request is ignored: no type URL, or one the server does not serve.
   */
  requestState(
    conn: Connection<P>,
    typeUrl: string,
    what: string,
  ): { st: TypeState; first: boolean } | undefined;
  /** Records an ACK or (with `error`) a NACK of `st`'s last response. */
  ackOrNack(
    conn: Connection<P>,
    st: TypeState,
    version: string,
    nonce: string,
    error: { code?: number; message?: string } | null | undefined,
  ): void;
  /**
   * A nonce for the next response of `st`, whose content version (see content_version.ts) is
   * `version`; both are recorded as its last sent.
   */
  stamp(st: TypeState, count: number, version: string): { version: string; nonce: string };
  /** Marks a type of a stream for recomputation and starts the stream's send loop. */
  schedule(conn: Connection<P>, typeUrl: string, d: Dirty): void;
}

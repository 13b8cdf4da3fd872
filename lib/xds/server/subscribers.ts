/**
 * The reverse index of subscriptions: per type, which streams subscribe to a resource name (through
 * their interned subscription, shared by every stream with the same names) and which subscribe to
 * everything (wildcard). A push of a few changed resources finds its streams here in time
 * proportional to those streams, not by scanning every stream.
 * @module
 */

import type { Connection, Subscription, TypeState } from "./state.ts";

/** What the index recorded for one type state (to undo it when the subscription changes). */
interface Entry {
  sub: Subscription;
  wildcard: boolean;
}

/** The index of one type. */
class TypeIndex<P> {
  /** Streams by interned subscription (explicit names). */
  readonly bySub = new Map<Subscription, Set<Connection<P>>>();
  /** Subscriptions by the names they hold (only subscriptions some stream uses). */
  readonly byName = new Map<string, Set<Subscription>>();
  /** Streams with a wildcard subscription. */
  readonly wildcard = new Set<Connection<P>>();

  add(conn: Connection<P>, e: Entry): void {
    if (e.wildcard) {
      this.wildcard.add(conn);
      return;
    }
    if (e.sub.set.size === 0) return;
    let conns = this.bySub.get(e.sub);
    if (!conns) {
      this.bySub.set(e.sub, conns = new Set());
      for (const n of e.sub.set) {
        let subs = this.byName.get(n);
        if (!subs) this.byName.set(n, subs = new Set());
        subs.add(e.sub);
      }
    }
    conns.add(conn);
  }

  remove(conn: Connection<P>, e: Entry): void {
    if (e.wildcard) {
      this.wildcard.delete(conn);
      return;
    }
    const conns = this.bySub.get(e.sub);
    if (!conns?.delete(conn) || conns.size) return;
    this.bySub.delete(e.sub);
    for (const n of e.sub.set) {
      const subs = this.byName.get(n);
      if (subs?.delete(e.sub) && subs.size === 0) this.byName.delete(n);
    }
  }
}

/**
 * Streams by subscribed name, per type. Call {@link update} after a request may have changed a
 * type state's subscription and {@link remove} when a stream goes away.
 */
export class SubscriberIndex<P> {
  readonly #types = new Map<string, TypeIndex<P>>();
  readonly #entries = new WeakMap<TypeState, Entry>();

  #type(typeUrl: string): TypeIndex<P> {
    let t = this.#types.get(typeUrl);
    if (!t) this.#types.set(typeUrl, t = new TypeIndex());
    return t;
  }

  /** Records `st`'s current subscription (a no-op when it did not change). */
  update(conn: Connection<P>, st: TypeState): void {
    const old = this.#entries.get(st);
    if (old && old.sub === st.sub && old.wildcard === st.wildcard) return;
    const t = this.#type(st.typeUrl);
    if (old) t.remove(conn, old);
    const e = { sub: st.sub, wildcard: st.wildcard };
    t.add(conn, e);
    this.#entries.set(st, e);
  }

  /** Forgets every type state of `conn`. */
  remove(conn: Connection<P>): void {
    for (const st of conn.types.values()) {
      const e = this.#entries.get(st);
      if (!e) continue;
      this.#type(st.typeUrl).remove(conn, e);
      this.#entries.delete(st);
    }
  }

  /**
   * Calls `fn` once for every distinct subscription of `typeUrl` that holds one of `names`, with
   * its streams, then once with `null` and the wildcard streams (when there are any).
   */
  forEachSubscriber(
    typeUrl: string,
    names: Iterable<string>,
    fn: (sub: Subscription | null, conns: ReadonlySet<Connection<P>>) => void,
  ): void {
    const t = this.#types.get(typeUrl);
    if (!t) return;
    const seen = new Set<Subscription>();
    for (const n of names) {
      for (const sub of t.byName.get(n) ?? []) {
        if (seen.has(sub)) continue;
        seen.add(sub);
        fn(sub, t.bySub.get(sub)!);
      }
    }
    if (t.wildcard.size) fn(null, t.wildcard);
  }

  /** Names of `typeUrl` that some stream subscribes to explicitly. */
  subscribedNames(typeUrl: string): IterableIterator<string> {
    return (this.#types.get(typeUrl)?.byName ?? new Map<string, never>()).keys();
  }

  /** Streams with a wildcard subscription of `typeUrl`. */
  wildcardStreams(typeUrl: string): ReadonlySet<Connection<P>> {
    return this.#types.get(typeUrl)?.wildcard ?? new Set();
  }
}

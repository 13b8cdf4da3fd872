/**
 * Shared views: what the generator returns for a subscription is usually one map shared by every
 * stream with the same names. Its response list, its diff to the view a stream held before, and
 * the check that it holds only subscribed names are computed once per view (or pair of views),
 * not once per stream.
 * @module
 */

import { markShared } from "./wire.ts";
import type { Connection, Dirty, TypeState } from "./state.ts";
import type { NamedResource, ResourceEntry, ResourceMap, ResourcesFor } from "./types.ts";

/** What changed from one shared view to another (see {@link SharedViews.diff}). */
export interface ViewDiff {
  /** Entries of the next view that are new or have another version (shared; do not mutate). */
  readonly changed: NamedResource[];
  /** Their names. */
  readonly names: ReadonlySet<string>;
  /** Names of the previous view that the next one lacks, sorted. */
  readonly removed: readonly string[];
  /** Both views hold the same names with the same versions. */
  readonly unchanged: boolean;
}

/** What the generator gave for one recomputation of a type on a stream. */
export interface Query {
  /** The names asked for (null: everything, a wildcard subscription). */
  query: readonly string[] | null;
  /**
   * The query covers the whole subscription (not a scoped EDS push), which is still the stream's
   * (an answer that comes after the subscription changed is dropped).
   */
  complete: boolean;
  /** The generator's entries the stream may see (the generator's shared map when it can). */
  visible: ResourceMap;
}

/** Stands for a wildcard subscription in SharedViews#checked. */
const WILDCARD = Symbol("wildcard");

/** The generator's views and what is computed once per view. */
export class SharedViews<P> {
  /** Generator maps known to hold only names of a subscription (or of a wildcard one). */
  readonly #checked = new WeakMap<ResourceMap, object | typeof WILDCARD>();
  /** Response lists of shared views (see list). */
  readonly #lists = new WeakMap<ResourceMap, NamedResource[]>();
  /** Diffs between shared views: previous view → next view → diff (see diff). */
  readonly #diffs = new WeakMap<ResourceMap, WeakMap<ResourceMap, ViewDiff>>();

  /** Views of the generator `resourcesFor`. */
  constructor(readonly resourcesFor: ResourcesFor<P>) {}

  /**
   * Asks the generator for what `st` subscribes to (only the dirty names of a scoped push when
   * `scoped`), and keeps of its answer only subscribed names; null when the stream closed or its
   * subscription changed meanwhile. Answers at once (no promise) when the generator does: a push
   * to thousands of streams then allocates no promise per stream here.
   */
  query(
    conn: Connection<P>,
    st: TypeState,
    d: Dirty,
    scoped: boolean,
  ): Query | null | Promise<Query | null> {
    const sub = st.sub;
    let query: readonly string[] | null = st.wildcard ? null : sub.list;
    // A scoped push (a few changed names) to a stream that holds exactly a shared view asks for
    // the whole subscription instead: the generator answers it with the shared view every stream
    // of that subscription gets, so the diff, the response list and its encoding are computed once
    // for all of them, and the stream's held state stays one shared reference (no per-stream
    // copies that grow with every change).
    const complete = !(scoped && !d.all) ||
      (st.held.view !== undefined && !st.held.overrides?.size);
    if (!complete) {
      query = [...d.names].filter((n) => st.wildcard || sub.set.has(n));
    }
    if (query !== null && query.length === 0) return { query, complete, visible: new Map() };
    const got = this.resourcesFor(conn.proxy, st.typeUrl, query);
    if (!(got instanceof Promise)) return this.#visible(conn, st, sub, query, complete, got);
    return got.then((g) =>
      // The names changed while the generator answered: the answer is for names the client no
      // longer asks for (or misses some it now asks for). Nothing is sent from it; the request that
      // changed them scheduled a response of its own. (A wildcard turned on or off alone needs no
      // such care: #visible keeps what the stream subscribes to now, and what it lacks follows.)
      st.sub === sub ? this.#visible(conn, st, sub, query, complete, g) : null
    );
  }

  /** What the generator answered to `query` (see {@link query}), as the stream may see it. */
  #visible(
    conn: Connection<P>,
    st: TypeState,
    sub: TypeState["sub"],
    query: readonly string[] | null,
    complete: boolean,
    got: ResourceMap,
  ): Query | null {
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

  /** Every entry of a shared view as a response list, built once per view (and marked shared). */
  list(view: ResourceMap): NamedResource[] {
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
  diff(prev: ResourceMap, next: ResourceMap): ViewDiff {
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
}

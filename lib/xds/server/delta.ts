/**
 * The incremental ADS state machine (`DeltaAggregatedResources`): requests subscribe and
 * unsubscribe names (and `*`), a first request may say which versions the client holds, and a
 * response carries the resources that changed and the names that were removed.
 * @module
 */

import { heldVersion } from "./content_version.ts";
import { type Connection, type Dirty, sameSet, type TypeState, type XdsContext } from "./state.ts";
import type { DeltaDiscoveryRequest, DeltaDiscoveryResponse, NamedResource } from "./types.ts";
import type { Query } from "./views.ts";

/** Handles one delta request of a stream. */
export function onDeltaRequest<P>(
  ctx: XdsContext<P>,
  conn: Connection<P>,
  req: DeltaDiscoveryRequest,
): void {
  const typeUrl = req.type_url ?? "";
  const state = ctx.requestState(conn, typeUrl, "delta request");
  if (!state) return;
  const { st, first } = state;
  const nonce = req.response_nonce ?? "";
  if (nonce !== "" && nonce === st.nonce) {
    ctx.ackOrNack(conn, st, st.nonceVersion ?? "", nonce, req.error_detail);
  }
  const subscribe = req.resource_names_subscribe ?? [];
  const unsubscribe = req.resource_names_unsubscribe ?? [];
  let changed = false;
  // Copied only when the subscription may change (not for plain ACKs).
  const names = (subscribe.length || unsubscribe.length ? new Set(st.sub.set) : st.sub.set) as Set<
    string
  >;
  if (first) {
    for (const [n, v] of Object.entries(req.initial_resource_versions ?? {})) st.held.set(n, v);
    if (subscribe.length === 0 && ctx.wildcardTypes.has(typeUrl)) {
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
      // Subscribing to names ends a legacy (implicit) wildcard subscription; a '*' later in the
      // same request makes it an explicit one.
      st.legacyWildcard = false;
      st.wildcard = false;
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
    st.sub = ctx.subs.intern(names);
    ctx.subs.unref(old);
  }
  if (changed && !st.wildcard) st.held.retain(st.sub.set);
  if (!first && !changed) return;
  // A first request that lists the versions the client holds (a stream moved from another
  // replica) is answered only with what differs: nothing when it is up to date.
  const claims = first && Object.keys(req.initial_resource_versions ?? {}).length > 0;
  ctx.schedule(conn, typeUrl, { all: true, names: new Set(), force: first && !claims });
}

/**
 * The delta response of a dirty type of a stream, or null when there is nothing to send; at once
 * when the generator answers at once, else a promise of it.
 */
export function buildDelta<P>(
  ctx: XdsContext<P>,
  conn: Connection<P>,
  st: TypeState,
  d: Dirty,
): DeltaDiscoveryResponse | null | Promise<DeltaDiscoveryResponse | null> {
  const q = ctx.views.query(conn, st, d, true);
  return q instanceof Promise
    ? q.then((q) => deltaResponse(ctx, st, d, q))
    : deltaResponse(ctx, st, d, q);
}

/** The response of {@link buildDelta} for what the generator answered. */
function deltaResponse<P>(
  ctx: XdsContext<P>,
  st: TypeState,
  d: Dirty,
  q: Query | null,
): DeltaDiscoveryResponse | null {
  if (!q) return null;
  const held = st.held;
  // The response covers everything the client subscribes to (not a scoped EDS push). The
  // subscription is the one queried: SharedViews.query drops an answer that comes after it changed.
  const whole = q.complete;
  let resources: NamedResource[];
  let removed: string[];
  /** After this response the client holds exactly `q.visible`. */
  let exact: boolean;
  if (whole && held.view) {
    // What changed between the client's shared view and the new one (computed once per pair,
    // shared by every client holding that view), adjusted for its own differences (scoped EDS
    // pushes, unsubscribed names).
    const diff = ctx.views.diff(held.view, q.visible);
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
    resources = ctx.views.list(q.visible);
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
  const { version, nonce } = ctx.stamp(st, resources.length, heldVersion(held));
  const res: DeltaDiscoveryResponse = {
    system_version_info: version,
    type_url: st.typeUrl,
    nonce,
    resources,
    removed_resources: removed,
  };
  if (ctx.controlPlaneId) res.control_plane = { identifier: ctx.controlPlaneId };
  return res;
}

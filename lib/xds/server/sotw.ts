/**
 * The state-of-the-world ADS state machine (`StreamAggregatedResources`): a request sets a type's
 * subscription (ACK/NACK by nonce, re-init by an empty nonce); a response carries every subscribed
 * resource that changed, or the whole list on full-state types (Listener, Cluster).
 * @module
 */

import { sameBytes } from "./wire.ts";
import { typeShortName } from "./metrics.ts";
import { heldVersion, viewVersion } from "./content_version.ts";
import { type Connection, type Dirty, sameSet, type TypeState, type XdsContext } from "./state.ts";
import type { DiscoveryRequest, DiscoveryResponse, NamedResource } from "./types.ts";
import type { Query } from "./views.ts";

/** Handles one SotW request of a stream. */
export function onSotwRequest<P>(
  ctx: XdsContext<P>,
  conn: Connection<P>,
  req: DiscoveryRequest,
): void {
  const typeUrl = req.type_url ?? "";
  const state = ctx.requestState(conn, typeUrl, "request");
  if (!state) return;
  const { st, first } = state;
  const nonce = req.response_nonce ?? "";
  if (first && nonce === "" && req.version_info) st.claimed = req.version_info;
  if (nonce !== "" && nonce === st.nonce) {
    ctx.ackOrNack(conn, st, req.version_info ?? "", nonce, req.error_detail);
  } else if (nonce !== "") {
    ctx.log.debug(`ADS: ${conn.conId}: stale nonce for ${typeShortName(typeUrl)}`, { nonce });
  }
  const reinit = nonce === "";
  const raw = req.resource_names_raw;
  // An ACK repeating the subscribed names byte for byte: nothing else to do.
  if (!first && !reinit && raw && st.sub.raw && !st.wildcard && sameBytes(raw, st.sub.raw)) {
    return;
  }
  let changed: boolean, wildcard: boolean;
  const known = raw && ctx.subs.byRaw(raw);
  if (known) {
    // The names of a subscription another stream sent in the same bytes (e.g. every proxy
    // subscribing to a new cluster list after a push): no decoding, sorting or interning.
    wildcard = false;
    changed = first || st.wildcard || st.sub !== known;
    if (st.sub !== known) {
      const old = st.sub;
      ctx.subs.ref(known);
      st.sub = known;
      ctx.subs.unref(old);
    }
  } else {
    const names = req.resource_names ?? [];
    const canWildcard = ctx.wildcardTypes.has(typeUrl);
    wildcard = canWildcard && (names.length === 0 || names.includes("*"));
    const explicit = new Set(names.filter((n) => n !== "*"));
    changed = first || wildcard !== st.wildcard || !sameSet(explicit, st.sub.set);
    if (changed && !sameSet(explicit, st.sub.set)) {
      const old = st.sub;
      st.sub = ctx.subs.intern(explicit);
      ctx.subs.unref(old);
    }
    if (raw && !st.sub.raw && st.sub.key !== undefined && names.length === st.sub.set.size) {
      ctx.subs.rememberRaw(st.sub, raw);
    }
  }
  if (!changed && !reinit) return;
  st.wildcard = wildcard;
  if (reinit) st.held.clear(); // (re)initial request: the client holds nothing from us
  if (!wildcard) st.held.retain(st.sub.set);
  ctx.schedule(conn, typeUrl, { all: true, names: new Set(), force: true });
}

/**
 * The SotW response of a dirty type of a stream, or null when there is nothing to send; at once
 * when the generator answers at once, else a promise of it.
 */
export function buildSotw<P>(
  ctx: XdsContext<P>,
  conn: Connection<P>,
  st: TypeState,
  d: Dirty,
): DiscoveryResponse | null | Promise<DiscoveryResponse | null> {
  const fullState = ctx.wildcardTypes.has(st.typeUrl);
  if (!st.wildcard && st.sub.set.size === 0 && !(fullState && d.force)) return null;
  const q = ctx.views.query(conn, st, d, !fullState);
  return q instanceof Promise
    ? q.then((q) => sotwResponse(ctx, st, d, fullState, q))
    : sotwResponse(ctx, st, d, fullState, q);
}

/** The response of {@link buildSotw} for what the generator answered. */
function sotwResponse<P>(
  ctx: XdsContext<P>,
  st: TypeState,
  d: Dirty,
  fullState: boolean,
  q: Query | null,
): DiscoveryResponse | null {
  if (!q) return null;
  const held = st.held;
  const claimed = st.claimed;
  st.claimed = undefined;
  if (claimed !== undefined && st.wildcard && fullState && viewVersion(q.visible) === claimed) {
    // A client new to this stream (reconnected, maybe to another replica) already holds exactly
    // what it would be sent: the response versions are content hashes, identical in every
    // replica. Safe for wildcard full-state types only (see docs/ads.md).
    held.replace(q.visible);
    return null;
  }
  let resources: NamedResource[];
  if (fullState) {
    // Clients holding a shared view compare it with the new one through a diff computed once.
    const same = held.view && held.view !== q.visible && !held.overrides?.size
      ? ctx.views.diff(held.view, q.visible).unchanged
      : held.sameAs(q.visible);
    if (same && !d.force) return null;
    held.replace(q.visible);
    resources = ctx.views.list(q.visible);
  } else {
    if (q.visible === held.view && !held.overrides?.size) return null; // shared, unchanged
    // The subscription is the one queried (SharedViews.query drops an answer that comes after
    // it changed): a complete query is the whole subscription.
    const whole = q.complete;
    if (whole && held.view) {
      // What changed between the shared views (computed once), adjusted for this client's
      // own differences from its view (scoped EDS pushes).
      const diff = ctx.views.diff(held.view, q.visible);
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
    } else if (whole && !held.view && !held.overrides?.size) {
      // The client holds nothing (a first response): the whole shared view, as one list that
      // every new stream of that view shares (encoded once, not once per stream).
      resources = ctx.views.list(q.visible);
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
  const { version, nonce } = ctx.stamp(st, resources.length, heldVersion(held));
  const res: DiscoveryResponse = {
    version_info: version,
    type_url: st.typeUrl,
    nonce,
    resources,
  };
  if (ctx.controlPlaneId) res.control_plane = { identifier: ctx.controlPlaneId };
  return res;
}

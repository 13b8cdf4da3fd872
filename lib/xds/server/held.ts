/**
 * What one client holds of one type, kept small: a reference to a shared, immutable view (the map
 * the generator returned and the server sent in full) plus the few names where the client differs
 * from it. Clients that were sent the same view share it, so per-client memory does not grow with
 * the number of resources.
 * @module
 */

import type { ResourceMap } from "./types.ts";

/** name → version the client holds; `null` in `overrides` = "not held" (hides the view's entry). */
export class Held {
  /** Shared view (never mutated). */
  view: ResourceMap | undefined = undefined;
  /** Per-client differences from `view`. */
  overrides: Map<string, string | null> | undefined = undefined;

  /** Version the client holds for `name`, if any. */
  version(name: string): string | undefined {
    const o = this.overrides?.get(name);
    if (o !== undefined) return o ?? undefined;
    return this.view?.get(name)?.version;
  }

  has(name: string): boolean {
    return this.version(name) !== undefined;
  }

  set(name: string, version: string): void {
    if (this.view?.get(name)?.version === version) {
      this.overrides?.delete(name);
      return;
    }
    (this.overrides ??= new Map()).set(name, version);
  }

  delete(name: string): void {
    if (this.view?.has(name)) (this.overrides ??= new Map()).set(name, null);
    else this.overrides?.delete(name);
  }

  /** Forgets everything. */
  clear(): void {
    this.view = undefined;
    this.overrides = undefined;
  }

  /** The client now holds exactly `view` (shared, not copied). */
  replace(view: ResourceMap): void {
    this.view = view;
    this.overrides = undefined;
  }

  /** True when the client holds exactly the entries (names and versions) of `m`. */
  sameAs(m: ResourceMap): boolean {
    if (m === this.view && !this.overrides?.size) return true;
    let n = 0;
    for (const [name, e] of m) {
      if (this.version(name) !== e.version) return false;
      n++;
    }
    return n === this.size;
  }

  /** Number of names held. */
  get size(): number {
    let n = 0;
    for (const _ of this.names()) n++;
    return n;
  }

  /** Names held. */
  *names(): IterableIterator<string> {
    for (const [n] of this.entries()) yield n;
  }

  /** `[name, version]` pairs held. */
  *entries(): IterableIterator<[string, string]> {
    if (this.view) {
      for (const [n, e] of this.view) {
        if (!this.overrides?.has(n)) yield [n, e.version];
      }
    }
    if (this.overrides) { for (const [n, v] of this.overrides) if (v !== null) yield [n, v]; }
  }

  /** Drops every name not in `keep`. */
  retain(keep: ReadonlySet<string>): void {
    if (this.view && viewWithin(this.view, keep)) {
      // Only names outside the shared view can be outside `keep`.
      for (const [n, v] of [...(this.overrides ?? [])]) {
        if (v !== null && !keep.has(n)) this.overrides!.delete(n);
      }
      return;
    }
    for (const n of [...this.names()]) if (!keep.has(n)) this.delete(n);
  }
}

/** Whether every name of a shared view is in a (shared, immutable) set, computed once per pair. */
const within = new WeakMap<ResourceMap, WeakMap<ReadonlySet<string>, boolean>>();

function viewWithin(view: ResourceMap, keep: ReadonlySet<string>): boolean {
  let bySet = within.get(view);
  if (!bySet) within.set(view, bySet = new WeakMap());
  let r = bySet.get(keep);
  if (r === undefined) {
    r = true;
    for (const n of view.keys()) {
      if (!keep.has(n)) {
        r = false;
        break;
      }
    }
    bySet.set(keep, r);
  }
  return r;
}

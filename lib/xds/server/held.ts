/**
 * What one client holds of one type, kept small: a reference to a shared, immutable view (the map
 * the generator returned and the server sent in full) plus the few names where the client differs
 * from it. Clients that were sent the same view share it, so per-client memory does not grow with
 * the number of resources.
 * @module
 */

import { pairHash } from "./content_version.ts";
import type { ResourceMap } from "./types.ts";

/** name → version the client holds; `null` in `overrides` = "not held" (hides the view's entry). */
export class Held {
  /** Shared view (never mutated). */
  view: ResourceMap | undefined = undefined;
  /** Per-client differences from `view`. Mutated only through this class's methods. */
  overrides: Map<string, string | null> | undefined = undefined;
  /**
   * XOR of what `overrides` change in the content hash of `view` (content_version.ts), kept up to
   * date by every change so that the version of what is held costs no scan of the overrides.
   */
  hashA = 0;
  hashB = 0;

  /** XORs the contribution of the override of `name` (if any) into the hash adjustment. */
  #toggle(name: string): void {
    const o = this.overrides?.get(name);
    if (o === undefined) return;
    const inView = this.view?.get(name);
    if (inView) {
      const [x, y] = pairHash(name, inView.version);
      this.hashA ^= x;
      this.hashB ^= y;
    }
    if (o !== null) {
      const [x, y] = pairHash(name, o);
      this.hashA ^= x;
      this.hashB ^= y;
    }
  }

  #setOverride(name: string, v: string | null): void {
    this.#toggle(name);
    (this.overrides ??= new Map()).set(name, v);
    this.#toggle(name);
  }

  #dropOverride(name: string): void {
    this.#toggle(name);
    this.overrides?.delete(name);
  }

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
      this.#dropOverride(name);
      return;
    }
    this.#setOverride(name, version);
  }

  delete(name: string): void {
    if (this.view?.has(name)) this.#setOverride(name, null);
    else this.#dropOverride(name);
  }

  /** Forgets everything. */
  clear(): void {
    this.view = undefined;
    this.overrides = undefined;
    this.hashA = this.hashB = 0;
  }

  /** The client now holds exactly `view` (shared, not copied). */
  replace(view: ResourceMap): void {
    this.view = view;
    this.overrides = undefined;
    this.hashA = this.hashB = 0;
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
        if (v !== null && !keep.has(n)) this.#dropOverride(n);
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

/**
 * The resource cache: per type URL, a map key → shared, pre-serialized resource. A resource is
 * serialized once per change by the generator and the same bytes go to every client that sees it.
 * @module
 */

import { createHash } from "node:crypto";
import type { ResourceEntry } from "./types.ts";

/** A cached resource: its name (as sent to clients), content version and encoded bytes. */
export interface CachedResource extends ResourceEntry {
  readonly name: string;
}

/** Content version of encoded bytes: the first 16 hex digits of their SHA-256. */
export function contentVersion(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex").slice(0, 16);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Resources per type URL. Keys are structural and chosen by the generator: by default the
 * resource name, or a composite key when proxies see different resources under one name
 * (`"80|ns=default"` for a per-namespace route configuration named `80`).
 *
 * Setting identical bytes keeps the existing entry (same object, same version), so comparing
 * versions tells whether a client's view changed.
 *
 * @example
 * ```ts ignore
 * const cache = new ResourceCache();
 * const e = cache.set(XDS_TYPES.cluster, "c1", encodeAny(XDS_TYPES.cluster, { name: "c1" }).value);
 * cache.select(XDS_TYPES.cluster, ["c1"]); // Map { "c1" => e }
 * ```
 */
export class ResourceCache {
  #types = new Map<string, Map<string, CachedResource>>();

  #type(typeUrl: string): Map<string, CachedResource> {
    let m = this.#types.get(typeUrl);
    if (!m) this.#types.set(typeUrl, m = new Map());
    return m;
  }

  /**
   * Stores `bytes` as resource `name` under `key` (default: the name). Returns the entry: the
   * existing one when the bytes are identical, else a new one with a new version.
   */
  set(typeUrl: string, name: string, bytes: Uint8Array, key: string = name): CachedResource {
    if (!name) throw new Error(`Resource name is empty (type "${typeUrl}")`);
    const m = this.#type(typeUrl);
    const old = m.get(key);
    if (old && old.name === name && sameBytes(old.bytes, bytes)) return old;
    const entry: CachedResource = Object.freeze({ name, bytes, version: contentVersion(bytes) });
    m.set(key, entry);
    return entry;
  }

  /**
   * Replaces every resource of a type (keys absent from `resources` are deleted). Returns the keys
   * whose entry changed and those removed.
   */
  replaceType(
    typeUrl: string,
    resources: Iterable<{ key?: string; name: string; bytes: Uint8Array }>,
  ): { changed: string[]; removed: string[] } {
    const m = this.#type(typeUrl);
    const seen = new Set<string>();
    const changed: string[] = [];
    for (const r of resources) {
      const key = r.key ?? r.name;
      seen.add(key);
      const before = m.get(key);
      if (this.set(typeUrl, r.name, r.bytes, key) !== before) changed.push(key);
    }
    const removed: string[] = [];
    for (const key of m.keys()) {
      if (!seen.has(key)) removed.push(key);
    }
    for (const key of removed) m.delete(key);
    return { changed, removed };
  }

  /** Removes one key; true when it existed. */
  delete(typeUrl: string, key: string): boolean {
    return this.#types.get(typeUrl)?.delete(key) ?? false;
  }

  /** The entry under `key`, if any. */
  get(typeUrl: string, key: string): CachedResource | undefined {
    return this.#types.get(typeUrl)?.get(key);
  }

  /** Keys of a type. */
  keys(typeUrl: string): string[] {
    return [...(this.#types.get(typeUrl)?.keys() ?? [])];
  }

  /** Number of resources of a type. */
  size(typeUrl: string): number {
    return this.#types.get(typeUrl)?.size ?? 0;
  }

  /**
   * Builds a per-proxy view: name → entry for the given keys (`null` = every key of the type).
   * Missing keys are skipped. The entries are the shared ones.
   */
  select(typeUrl: string, keys: Iterable<string> | null): Map<string, CachedResource> {
    const m = this.#types.get(typeUrl);
    const out = new Map<string, CachedResource>();
    if (!m) return out;
    if (keys === null) {
      for (const e of m.values()) out.set(e.name, e);
      return out;
    }
    for (const k of keys) {
      const e = m.get(k);
      if (e) out.set(e.name, e);
    }
    return out;
  }
}

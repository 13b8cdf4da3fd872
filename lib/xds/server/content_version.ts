/**
 * Content-derived response versions. A resource's version is already a hash of its bytes (see
 * `contentVersion` in cache.ts); the version of a response (SotW `version_info`, delta
 * `system_version_info`) is derived from what the client holds of the type after it: the XOR of a
 * 64-bit hash of every `name` + resource version pair. It is the same in every replica given the
 * same configuration, so a client that reconnects to another replica and presents the version it
 * holds can be recognised as up to date. XOR makes it order-independent and lets a client that
 * differs from a shared view by a few names be versioned in time proportional to those names.
 * @module
 */

import type { Held } from "./held.ts";
import type { ResourceMap } from "./types.ts";

/** A 64-bit hash as two unsigned 32-bit halves. */
type H64 = [number, number];

/**
 * 64-bit hash of a name and a resource version (two 32-bit FNV-1a variants, deterministic), as
 * two unsigned 32-bit halves.
 */
export function pairHash(name: string, version: string): H64 {
  let a = 0x811c9dc5, b = 0x9747b28c;
  const s = `${name}\n${version}`;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  // Final mixing so that near-identical inputs differ in many bits.
  a = Math.imul(a ^ (a >>> 16), 0x85ebca6b);
  a = Math.imul(a ^ (a >>> 13), 0xc2b2ae35);
  b = Math.imul(b ^ (b >>> 16), 0x27d4eb2f);
  b = Math.imul(b ^ (b >>> 13), 0x165667b1);
  return [(a ^ (a >>> 16)) >>> 0, (b ^ (b >>> 16)) >>> 0];
}

/** Hashes of shared views, computed once per view. */
const viewHashes = new WeakMap<ResourceMap, H64>();

function viewHash(view: ResourceMap): H64 {
  let h = viewHashes.get(view);
  if (!h) {
    let a = 0, b = 0;
    for (const [name, e] of view) {
      const [x, y] = pairHash(name, e.version);
      a ^= x;
      b ^= y;
    }
    h = [a >>> 0, b >>> 0];
    viewHashes.set(view, h);
  }
  return h;
}

function format([a, b]: H64): string {
  return a.toString(16).padStart(8, "0") + b.toString(16).padStart(8, "0");
}

/**
 * The content version of a set of resources (name → entry): 16 hex digits, identical in every
 * process for the same names and resource versions, computed once per (shared, immutable) map.
 *
 * @example
 * ```ts ignore
 * viewVersion(new Map([["c1", { version: "ab12", bytes }]])); // "3f0c…" (16 hex digits)
 * ```
 */
export function viewVersion(view: ResourceMap): string {
  let v = viewVersions.get(view);
  if (v === undefined) viewVersions.set(view, v = format(viewHash(view)));
  return v;
}

/** Formatted versions of shared views (every stream holding one gets the same string). */
const viewVersions = new WeakMap<ResourceMap, string>();

/**
 * The content version of what a client holds: {@link viewVersion} of the names and versions it
 * holds, from its shared view's (cached) hash and the adjustment its `Held` keeps for its own
 * differences (no scan).
 */
export function heldVersion(held: Held): string {
  if (held.view && held.hashA === 0 && held.hashB === 0) return viewVersion(held.view);
  const [a, b] = held.view ? viewHash(held.view) : [0, 0];
  return format([(a ^ held.hashA) >>> 0, (b ^ held.hashB) >>> 0]);
}

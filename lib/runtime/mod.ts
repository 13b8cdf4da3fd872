/**
 * Facts about the Deno runtime mesh runs on: the pinned version and the known
 * runtime bug that makes other versions unsafe for gRPC servers.
 *
 * mesh is built and tested on Deno {@linkcode PINNED_DENO}. Deno 2.8.0 through
 * 2.9.6 implement `node:http2` on libnghttp2 and abort the whole process
 * (`free(): invalid pointer`, SIGSEGV or an nghttp2 assertion) when an HTTP/2
 * session that carried a few hundred streams receives GOAWAY — for example when
 * a grpc-js client closes its channel after many unary calls. JavaScript cannot
 * catch the abort (denoland/deno#36788).
 *
 * @example Warn at start-up of a gRPC-serving program
 * ```ts
 * import { goawayWarning } from "./mod.ts";
 *
 * const warning = goawayWarning();
 * if (warning !== null) console.error(warning);
 * ```
 *
 * @module
 */

/** The exact Deno version mesh is built, tested and released with. */
export const PINNED_DENO = "2.7.14";

/** The upstream issue that tracks the HTTP/2 GOAWAY abort. */
export const GOAWAY_ISSUE = "denoland/deno#36788";

/** A parsed `major.minor.patch` version (pre-release and build suffixes dropped). */
export interface DenoVersion {
  /** Major version. */
  major: number;
  /** Minor version. */
  minor: number;
  /** Patch version. */
  patch: number;
}

const VERSION_RE = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/;

/**
 * Parses a Deno version string such as `2.7.14`, `v2.9.6` or `2.10.0-rc.1`.
 *
 * @param version The version text, e.g. `Deno.version.deno`.
 * @returns The numeric parts.
 * @throws {TypeError} When the text is not `major.minor.patch`.
 *
 * @example
 * ```ts
 * import { parseDenoVersion } from "./mod.ts";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseDenoVersion("2.7.14"), { major: 2, minor: 7, patch: 14 });
 * ```
 */
export function parseDenoVersion(version: string): DenoVersion {
  const m = VERSION_RE.exec(version.trim());
  if (m === null) {
    throw new TypeError(`Cannot parse Deno version "${version}": expected major.minor.patch`);
  }
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) };
}

/** Compares two versions: negative when `a < b`, 0 when equal, positive when `a > b`. */
export function compareDenoVersions(a: DenoVersion, b: DenoVersion): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

const GOAWAY_FIRST = { major: 2, minor: 8, patch: 0 };
const GOAWAY_LAST_KNOWN = { major: 2, minor: 9, patch: 6 };

/**
 * Reports whether a Deno version is known to abort on HTTP/2 GOAWAY
 * ({@linkcode GOAWAY_ISSUE}).
 *
 * The range is the measured one: 2.8.0 up to and including 2.9.6 (2.8.0 moved
 * `node:http2` onto libnghttp2; 2.9.6 is the newest version probed). Versions
 * before 2.8.0 are not affected. Versions after 2.9.6 have not been measured
 * and are reported as not affected: mesh pins {@linkcode PINNED_DENO} and
 * refuses other runtimes at build time, so this check only serves people who
 * run the sources on a runtime of their own choosing. Widen the range here if
 * a newer release is found to abort too.
 *
 * @param version The Deno version to check; defaults to the running one.
 * @returns `true` when the version is in the affected range.
 * @throws {TypeError} When `version` is not `major.minor.patch`.
 *
 * @example
 * ```ts
 * import { affectedByGoawayBug } from "./mod.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(affectedByGoawayBug("2.7.14"), false);
 * assert.equal(affectedByGoawayBug("2.9.6"), true);
 * ```
 */
export function affectedByGoawayBug(version: string = Deno.version.deno): boolean {
  const v = parseDenoVersion(version);
  return compareDenoVersions(v, GOAWAY_FIRST) >= 0 &&
    compareDenoVersions(v, GOAWAY_LAST_KNOWN) <= 0;
}

/**
 * A one-line warning for gRPC-serving programs to print (to stderr) at start
 * when the runtime is affected by {@linkcode GOAWAY_ISSUE}.
 *
 * @param version The Deno version to check; defaults to the running one.
 * @returns The warning, or `null` when the runtime is not affected.
 *
 * @example
 * ```ts
 * import { goawayWarning } from "./mod.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(goawayWarning("2.7.14"), null);
 * assert.match(goawayWarning("2.9.0")!, /denoland\/deno#36788/);
 * ```
 */
export function goawayWarning(version: string = Deno.version.deno): string | null {
  if (!affectedByGoawayBug(version)) return null;
  return `Warning: Deno ${version} aborts the process when an HTTP/2 connection that carried ` +
    `many streams receives GOAWAY (${GOAWAY_ISSUE}); gRPC servers can die when clients ` +
    `disconnect. Run mesh on Deno ${PINNED_DENO}.`;
}

/**
 * Reports whether a version is exactly the pinned one ({@linkcode PINNED_DENO}).
 *
 * @param version The Deno version to check; defaults to the running one.
 * @returns `true` only for `2.7.14` (a build suffix such as `+abc` is ignored).
 */
export function isPinnedDeno(version: string = Deno.version.deno): boolean {
  const text = version.trim();
  // A pre-release (`2.7.14-rc.1`) is not the release.
  if (!VERSION_RE.test(text) || /^v?\d+\.\d+\.\d+-/.test(text)) return false;
  return compareDenoVersions(parseDenoVersion(text), parseDenoVersion(PINNED_DENO)) === 0;
}

/**
 * Build version information for the `version` subcommands, ctrlz and `/version` endpoints.
 *
 * Where the values come from:
 * - A compiled program: `compile.ts` builds with an import map that redirects
 *   `lib/version/stamp.ts` to a copy rendered by {@link renderStamp}, so that `STAMP` holds the
 *   version, git revision and build time (the checkout's `stamp.ts` is never rewritten).
 * - A checkout (`STAMP` is null): version = {@link VERSION}; git revision = the commit of `HEAD`
 *   read from the `.git` files (else {@link checkoutRevision}: `git rev-parse HEAD`, with a
 *   `-dirty` suffix when `git status --porcelain` lists changes, when running `git` is
 *   permitted); `unknown` when this module is not loaded from a `file:` URL or neither works;
 *   build time = `unknown`.
 * - Runtime versions always come from `Deno.version`.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { STAMP } from "./stamp.ts";
import type { Stamp } from "./types.ts";

export type { Stamp } from "./types.ts";

/** The version of an unstamped checkout. */
export const VERSION = "0.1.0-dev";

/** Build and runtime versions of the running program. */
export interface VersionInfo {
  version: string;
  gitRevision: string;
  buildTime: string;
  deno: string;
  v8: string;
  typescript: string;
}

let cached: VersionInfo | undefined;

/** Returns the version information of this program (computed once, then cached). */
export function versionInfo(): VersionInfo {
  cached ??= buildVersionInfo(STAMP, import.meta.url);
  return { ...cached };
}

/**
 * Computes version information from a stamp (or null) and the URL of this module. Exposed for
 * tests; programs use {@link versionInfo}.
 */
export function buildVersionInfo(stamp: Stamp | null, moduleUrl: string): VersionInfo {
  const runtime = {
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
  };
  if (stamp) return { ...stamp, ...runtime };
  return {
    version: VERSION,
    gitRevision: gitRevision(moduleUrl),
    buildTime: "unknown",
    ...runtime,
  };
}

function gitRevision(moduleUrl: string): string {
  const root = new URL("../../", moduleUrl);
  if (root.protocol !== "file:") return "unknown";
  const dir = fileURLToPath(root);
  // HEAD from the .git files, without -dirty: `git status` would double `version`'s time
  // (compile.ts stamps builds with checkoutRevision(), which marks uncommitted changes).
  const head = headFromFiles(dir);
  if (head) return head;
  try {
    if (Deno.permissions.querySync({ name: "run", command: "git" }).state !== "granted") {
      return "unknown";
    }
  } catch {
    return "unknown";
  }
  return checkoutRevision(dir);
}

function git(dir: string, args: string[]): string | null {
  const out = new Deno.Command("git", {
    args,
    cwd: dir,
    stdout: "piped",
    stderr: "null",
    stdin: "null",
  }).outputSync();
  return out.success ? new TextDecoder().decode(out.stdout) : null;
}

/**
 * The commit `HEAD` of the checkout at `dir` names, read from the `.git` files (a linked worktree's
 * `gitdir:` file, a symbolic ref, loose or packed refs) without running git (a process start is
 * a tenth of `version`'s time); null when anything is unusual, and the caller asks git.
 */
function headFromFiles(dir: string): string | null {
  try {
    let gitDir = join(dir, ".git");
    if (Deno.statSync(gitDir).isFile) {
      const m = /^gitdir: (.+)$/m.exec(Deno.readTextFileSync(gitDir));
      if (!m) return null;
      gitDir = resolve(dir, m[1].trim());
    }
    const head = Deno.readTextFileSync(join(gitDir, "HEAD")).trim();
    const hash = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;
    if (hash.test(head)) return head;
    const ref = /^ref: (refs\/\S+)$/.exec(head)?.[1];
    if (!ref) return null;
    let common = gitDir;
    try {
      common = resolve(gitDir, Deno.readTextFileSync(join(gitDir, "commondir")).trim());
    } catch { /* not a linked worktree */ }
    for (const d of [gitDir, common]) {
      try {
        const rev = Deno.readTextFileSync(join(d, ref)).trim();
        return hash.test(rev) ? rev : null;
      } catch { /* not a loose ref here */ }
    }
    for (const line of Deno.readTextFileSync(join(common, "packed-refs")).split("\n")) {
      const [rev, name] = line.trim().split(" ");
      if (name === ref && hash.test(rev)) return rev;
    }
    return null;
  } catch {
    return null;
  }
}

/**
 * The git revision of the checkout at `dir`: the full hash of `HEAD`, plus `-dirty` when
 * `git status --porcelain` reports changes (modified, staged or untracked files); `unknown` when
 * `dir` is not a git checkout or `git` cannot run. Needs permission to run `git`; callers check.
 */
export function checkoutRevision(dir: string): string {
  try {
    const rev = headFromFiles(dir) ?? git(dir, ["rev-parse", "HEAD"])?.trim() ?? "";
    if (!/^[0-9a-f]{7,64}$/.test(rev)) return "unknown";
    const status = git(dir, ["status", "--porcelain"]);
    return status !== null && status.trim() !== "" ? `${rev}-dirty` : rev;
  } catch {
    return "unknown";
  }
}

/**
 * Formats version information. Short form: the version alone (`0.1.0-dev`). Long form: one
 * `Key: value` line per field, in the style of Istio 0.8's `version` output:
 *
 * ```text
 * Version: 0.1.0-dev
 * GitRevision: 29bb6f6...
 * BuildTime: unknown
 * DenoVersion: 2.7.14
 * V8Version: 14.7.173.20-rusty
 * TypeScriptVersion: 5.9.2
 * ```
 *
 * The result has no trailing newline.
 */
export function formatVersion(info: VersionInfo, short: boolean): string {
  if (short) return info.version;
  return [
    `Version: ${info.version}`,
    `GitRevision: ${info.gitRevision}`,
    `BuildTime: ${info.buildTime}`,
    `DenoVersion: ${info.deno}`,
    `V8Version: ${info.v8}`,
    `TypeScriptVersion: ${info.typescript}`,
  ].join("\n");
}

/**
 * Returns the source text of a stamped `stamp.ts` for a compiled build; `compile.ts` writes it
 * outside the checkout and points `lib/version/stamp.ts` at it with an import map.
 * @throws Error when a field is empty or contains a line break.
 */
export function renderStamp(stamp: Stamp): string {
  for (const [k, v] of Object.entries(stamp)) {
    if (typeof v !== "string" || v === "" || /[\r\n]/.test(v)) {
      throw new Error(`invalid stamp field ${k}: ${JSON.stringify(v)}`);
    }
  }
  const value = JSON.stringify(
    { version: stamp.version, gitRevision: stamp.gitRevision, buildTime: stamp.buildTime },
    null,
    2,
  );
  // Self-contained (no imports), so the stamped copy may live in any directory.
  return `/**
 * Build stamp, generated by compile.ts. Do not edit.
 * @module
 */

/** Values fixed at build time, or null in a checkout. */
export const STAMP: { version: string; gitRevision: string; buildTime: string } | null = ${value};
`;
}

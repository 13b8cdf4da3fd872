/**
 * Live mesh configuration: mesh-discovery re-reads `--meshConfig` (on the orchestrator, the
 * `mesh` config map mounted as that file: the kubelet swaps the file when the map changes) and
 * applies a valid edit without a restart. Each applied edit logs one line naming what changed;
 * an invalid edit, or a file that disappears, keeps the last good configuration and logs why,
 * once per distinct content.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";
import { type MeshConfig, parseMeshConfig } from "../../lib/model/mod.ts";

/** Top-level mesh configuration fields the xDS generators read: they apply live. */
export const LIVE_MESH_FIELDS: ReadonlySet<string> = new Set([
  "authPolicy",
  "connectTimeout",
  "proxyListenPort",
  "ingressClass",
  "ingressControllerMode",
  "accessLogFile",
  "outboundTrafficPolicy",
  "mtlsExcludedServices",
]);

/** Options of {@link watchMeshConfig}. */
export interface MeshConfigWatchOptions {
  /** The mesh configuration file. */
  path: string;
  /** The configuration in force (read at start-up). */
  initial: MeshConfig;
  /** Called with a new valid configuration and the names of the top-level fields that differ. */
  onChange(mc: MeshConfig, changed: string[]): void;
  logger: Logger;
  /** How often the file is read (ms, default 500). */
  intervalMs?: number;
}

/** A running watch. */
export interface MeshConfigWatch {
  /** Reads the file now and applies a change (what the timer does). */
  check(): Promise<void>;
  /** Stops watching. */
  close(): void;
}

function show(v: unknown): string {
  const s = typeof v === "string" ? (v === "" ? '""' : v) : JSON.stringify(v);
  return s.length > 60 ? s.slice(0, 57) + "..." : s;
}

/** Top-level fields whose values differ between two configurations, sorted. */
export function changedMeshFields(a: MeshConfig, b: MeshConfig): string[] {
  const ra = a as unknown as Record<string, unknown>;
  const rb = b as unknown as Record<string, unknown>;
  const keys = new Set([...Object.keys(ra), ...Object.keys(rb)]);
  return [...keys].filter((k) => JSON.stringify(ra[k]) !== JSON.stringify(rb[k])).sort();
}

/**
 * The log line of an applied change:
 * `Mesh configuration <file> changed: authPolicy NONE → MUTUAL_TLS (applied live)`; fields the
 * generators do not read are named as needing a restart.
 */
export function describeMeshChange(
  path: string,
  before: MeshConfig,
  after: MeshConfig,
  changed: readonly string[],
): string {
  const rb = before as unknown as Record<string, unknown>;
  const ra = after as unknown as Record<string, unknown>;
  const part = (k: string) => `${k} ${show(rb[k])} → ${show(ra[k])}`;
  const live = changed.filter((k) => LIVE_MESH_FIELDS.has(k));
  const other = changed.filter((k) => !LIVE_MESH_FIELDS.has(k));
  const parts: string[] = [];
  if (live.length) parts.push(`${live.map(part).join(", ")} (applied live)`);
  if (other.length) parts.push(`${other.map(part).join(", ")} (takes effect after a restart)`);
  return `Mesh configuration ${path} changed: ${parts.join("; ")}`;
}

/**
 * Watches the mesh configuration file by reading it every `intervalMs` (a content comparison:
 * works for edits in place, renames and the kubelet's symlink swaps alike).
 */
export function watchMeshConfig(opts: MeshConfigWatchOptions): MeshConfigWatch {
  const log = opts.logger;
  let current = opts.initial;
  /** Content last acted on (undefined: not read yet; null: the file was missing). */
  let lastText: string | null | undefined;
  /** The read error said last, while reads fail (what follows is compared with lastText). */
  let lastError: string | undefined;
  let timer: number | undefined;
  let closed = false;
  let running: Promise<void> | undefined;

  const read = async (): Promise<string | null> => {
    try {
      return await Deno.readTextFile(opts.path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
  };

  const once = async () => {
    let text: string | null;
    try {
      text = await read();
    } catch (e) {
      const msg = `Cannot read mesh configuration ${opts.path}: ${(e as Error).message}`;
      if (lastError !== msg) log.warn(`${msg}; keeping the last good configuration`);
      lastError = msg;
      return;
    }
    lastError = undefined;
    if (text === lastText) return;
    const first = lastText === undefined;
    lastText = text;
    let next: MeshConfig;
    if (text === null) {
      // Missing at start-up means defaults (already in force); gone later keeps what we have.
      if (!first) {
        log.warn(
          `Mesh configuration ${opts.path} disappeared; keeping the last good configuration`,
        );
      }
      return;
    }
    try {
      next = parseMeshConfig(text, opts.path);
    } catch (e) {
      log.warn(`${(e as Error).message}; keeping the last good configuration`);
      return;
    }
    const changed = changedMeshFields(current, next);
    if (!changed.length) return;
    log.info(describeMeshChange(opts.path, current, next, changed));
    current = next;
    opts.onChange(next, changed);
  };

  const check = () => {
    running ??= once().finally(() => (running = undefined));
    return running;
  };
  const tick = () => {
    if (closed) return;
    check().finally(() => {
      if (!closed) timer = setTimeout(tick, opts.intervalMs ?? 500);
    });
  };
  // the start-up read already happened: the first check, one interval later, records the content
  // (and applies it if it changed since start-up: it is compared with what is in force)
  timer = setTimeout(tick, opts.intervalMs ?? 500);
  return {
    check,
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}

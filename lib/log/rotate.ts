/**
 * The `--log_rotate` sink: size rotation by @logtape/file's rotating sink, plus the parts of
 * group L it lacks (unlimited backups, removal of backups older than a maximum age).
 *
 * Files: `<path>` is the live file; `<path>.1` is the newest backup, `<path>.N` the oldest.
 * @module
 */

import { basename, dirname, join } from "node:path";
import type { LogRecord, Sink } from "../deps/logtape.ts";
import { getRotatingFileSink } from "../deps/logtape_file.ts";

/** Options of {@link getRotatingSink}. */
export interface RotatingSinkOptions {
  /** Rotate before a write would make the live file larger than this (bytes, > 0). */
  maxSizeBytes: number;
  /** Backups kept; the oldest beyond this are removed. 0 keeps every backup. */
  maxBackups: number;
  /** Backups whose last write is older than this many days are removed. 0 = no limit. */
  maxAgeDays: number;
  /** Formats one record (including its trailing newline). */
  formatter: (record: LogRecord) => string;
  /** Clock, for tests. */
  now?: () => number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const encoder = new TextEncoder();

/** Lists the numbered backups of `path` as [index, file path], oldest (highest index) first. */
export function listBackups(path: string): Array<[number, string]> {
  const dir = dirname(path);
  const prefix = basename(path) + ".";
  const out: Array<[number, string]> = [];
  let entries: Iterable<Deno.DirEntry>;
  try {
    entries = Deno.readDirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!e.isFile || !e.name.startsWith(prefix)) continue;
    const suffix = e.name.slice(prefix.length);
    if (/^[1-9]\d*$/.test(suffix)) out.push([Number(suffix), join(dir, e.name)]);
  }
  return out.sort((a, b) => b[0] - a[0]);
}

function removeQuietly(p: string): void {
  try {
    Deno.removeSync(p);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/** Removes backups beyond `maxBackups` (when > 0) and older than `maxAgeDays` (when > 0). */
export function pruneBackups(
  path: string,
  maxBackups: number,
  maxAgeDays: number,
  now: number = Date.now(),
): void {
  const cutoff = maxAgeDays > 0 ? now - maxAgeDays * DAY_MS : undefined;
  for (const [index, file] of listBackups(path)) {
    if (maxBackups > 0 && index > maxBackups) {
      removeQuietly(file);
      continue;
    }
    if (cutoff !== undefined) {
      try {
        const mtime = Deno.statSync(file).mtime?.getTime();
        if (mtime !== undefined && mtime < cutoff) removeQuietly(file);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
    }
  }
}

/**
 * Returns a synchronous sink writing to a rotating file. Each record is written (and synced)
 * before the sink returns, so the live file never exceeds `maxSizeBytes` unless a single
 * record does. Old backups are pruned when the sink opens and after every rotation.
 */
export function getRotatingSink(path: string, opts: RotatingSinkOptions): Sink & Disposable {
  const now = opts.now ?? Date.now;
  pruneBackups(path, opts.maxBackups, opts.maxAgeDays, now());
  let offset = 0;
  try {
    offset = Deno.statSync(path).size;
  } catch {
    // A new file.
  }
  let pending = "";
  const inner = getRotatingFileSink(path, {
    maxSize: opts.maxSizeBytes,
    // @logtape/file shifts <path>.1..<path>.(maxFiles-1) up by one and renames the live file to
    // <path>.1. For "unlimited" we shift every backup ourselves and let it rename only the live
    // file (maxFiles 1); maxFiles <= 0 would mean "no backups at all" to it.
    maxFiles: opts.maxBackups === 0 ? 1 : opts.maxBackups,
    bufferSize: 0,
    formatter: () => pending,
  });
  const sink = (record: LogRecord): void => {
    pending = opts.formatter(record);
    const bytes = encoder.encode(pending).length;
    // The same test @logtape/file applies before its write.
    const rotates = offset + bytes > opts.maxSizeBytes;
    if (rotates && opts.maxBackups === 0) {
      for (const [index, file] of listBackups(path)) Deno.renameSync(file, `${path}.${index + 1}`);
    }
    inner(record);
    offset = rotates ? bytes : offset + bytes;
    if (rotates) pruneBackups(path, opts.maxBackups, opts.maxAgeDays, now());
  };
  return Object.assign(sink, { [Symbol.dispose]: () => inner[Symbol.dispose]() });
}

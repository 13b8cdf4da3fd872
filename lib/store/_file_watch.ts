/**
 * How the file store hears of changes: `Deno.watchFs` notifications trigger a rescan (debounced
 * 10 ms) with a safety-net rescan every `rescanMs`; without notifications (unavailable, or
 * stopped) the directory is rescanned every `pollMs`.
 * @module
 */
import type { Logger } from "../log/mod.ts";

/** Options of {@link DirectoryWatch}. */
export interface DirectoryWatchOptions {
  dir: string;
  log: Logger;
  pollMs: number;
  rescanMs: number;
  /** Runs a scan (resolves when done). */
  rescan(): Promise<void>;
  /**
   * Filled with the files (paths relative to `dir`) renamed into place since they were last
   * created, written or removed: an atomic write (a temporary file renamed over the target) is
   * whole, so a scan need not wait for it to settle.
   */
  renamed: Set<string>;
}

/** Notifications and the rescan timer of one directory. */
export class DirectoryWatch {
  readonly #o: DirectoryWatchOptions;
  #pollTimer: number | undefined;
  #fsWatcher: Deno.FsWatcher | undefined;
  #watchLoop: Promise<void> | undefined;
  #debounce: number | undefined;
  /** Whether notifications currently work (the rescan is then only a safety net). */
  #notifying = false;
  #closed = false;

  constructor(options: DirectoryWatchOptions) {
    this.#o = options;
  }

  /** Starts notifications (before the first scan, so that a change made during it is seen). */
  listen(): void {
    const { dir, log } = this.#o;
    try {
      const w = this.#fsWatcher = Deno.watchFs(dir, { recursive: true });
      this.#notifying = true;
      this.#watchLoop = (async () => {
        try {
          for await (const ev of w) {
            if (this.#closed) break;
            this.#note(ev);
            if (this.#debounce === undefined) {
              this.#debounce = setTimeout(() => {
                this.#debounce = undefined;
                this.#o.rescan();
              }, 10);
            }
          }
          if (!this.#closed) this.#stopped("the watcher ended");
        } catch (err) {
          if (!this.#closed) this.#stopped((err as Error).message);
        }
      })();
    } catch (err) {
      log.warn(`No file notifications for "${dir}" (polling only): ${(err as Error).message}`);
    }
  }

  /** Keeps {@link DirectoryWatchOptions.renamed} up to date with a notification. */
  #note(ev: Deno.FsEvent): void {
    const renamed = this.#o.renamed;
    this.#roots ??= rootsOf(this.#o.dir);
    const rel = (p: string) => {
      const root = this.#roots!.find((r) => p.startsWith(r));
      return root === undefined ? undefined : p.slice(root.length);
    };
    // a rename names its target last (alone, or after the file it came from)
    const target = ev.kind === "rename" ? ev.paths.at(-1) : undefined;
    for (const p of ev.paths) {
      const r = rel(p);
      if (r === undefined) continue;
      if (p === target) renamed.add(r);
      else if (ev.kind !== "access" && ev.kind !== "other") renamed.delete(r);
    }
  }
  /** Prefixes of the paths notifications name under the directory (as given, absolute, real). */
  #roots: string[] | undefined;

  /** Starts the periodic rescan (every `rescanMs` while notifications work, else `pollMs`). */
  poll(): void {
    this.#pollTimer = setTimeout(() => {
      this.#pollTimer = undefined;
      this.#o.rescan().then(() => {
        if (!this.#closed) this.poll();
      });
    }, this.#notifying ? this.#o.rescanMs : this.#o.pollMs);
  }

  /** Stops notifications and timers; resolves once the notification loop ended. */
  async close(): Promise<void> {
    this.#closed = true;
    this.clearTimers();
    try {
      this.#fsWatcher?.close();
    } catch {
      // already closed
    }
    await this.#watchLoop;
  }

  /** Clears the timers (again after the last scan, which may have set them). */
  clearTimers(): void {
    if (this.#pollTimer !== undefined) clearTimeout(this.#pollTimer);
    if (this.#debounce !== undefined) clearTimeout(this.#debounce);
  }

  /** Falls back to polling every `pollMs` when notifications stop. */
  #stopped(why: string): void {
    this.#notifying = false;
    this.#o.log.warn(
      `File notifications for "${this.#o.dir}" stopped (polling every ${this.#o.pollMs} ms): ${why}`,
    );
    // re-arm a waiting timer with the shorter period (a running poll re-arms itself)
    if (this.#pollTimer !== undefined) {
      clearTimeout(this.#pollTimer);
      this.poll();
    }
  }
}

/** `dir/` as given, made absolute and with its links resolved (the forms notifications use). */
function rootsOf(dir: string): string[] {
  const roots = new Set([dir]);
  try {
    roots.add(dir.startsWith("/") ? dir : `${Deno.cwd()}/${dir}`);
    roots.add(Deno.realPathSync(dir));
  } catch {
    // the directory went away: the paths as given only
  }
  return [...roots].map((r) => r.replace(/\/+$/, "") + "/");
}

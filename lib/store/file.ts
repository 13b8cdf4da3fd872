/**
 * File config store (`--configDir`, `fs://<dir>`): a directory tree of multi-document YAML/JSON
 * files. See docs/stores.md for the layout convention and the error behaviour.
 * @module
 */
import type { Logger } from "../log/mod.ts";
import { allSchemas } from "../model/mod.ts";
import type { ConfigObject, TypeSchema } from "../model/types.ts";
import {
  alreadyExists,
  attempt,
  byNsName,
  mustCheck,
  notFound,
  SchemaSet,
  staleVersion,
  storeLogger,
  Watchers,
} from "./_common.ts";
import {
  type FileState,
  key,
  scanFiles,
  type ScanHooks,
  type ScanSettings,
  SETTLE_MS,
  walkConfigFiles,
} from "./_file_scan.ts";
import { mergeView, type ViewEntry } from "./_file_view.ts";
import { TimeSlicer } from "./_slice.ts";
import { DirectoryWatch } from "./_file_watch.ts";
import { atomicWrite, documentText, exists, hasDocuments, segments } from "./_file_write.ts";
import { type ConfigStore, ConflictError, type StoreEvent } from "./types.ts";

/**
 * Work a rescan does between two pauses, ms. Shorter than the push's 20 ms: a request to a
 * server takes several turns of the event loop (accept, read, answer), each waiting for the
 * slice in progress. A pause is a timer (the only one that lets sockets in), which is not free:
 * with 5 ms slices 12,500 documents loaded in 8.1-9.2 s against 5.0-8.7 s with 20 ms. Measured
 * (`deno task bench config_load`, 12,500 documents, 3.8 MB): the slowest probe 204-294 ms with
 * 20 ms slices, 44-220 ms with 10 ms, at the same load time (docs/benchmarks.md).
 */
const SCAN_SLICE_MS = 10;

/** Options of {@link createFileStore}. */
export interface FileStoreOptions {
  /** The directory holding the config files (walked recursively). */
  dir: string;
  /** Types this store holds (default: every schema of the model). Other kinds are skipped. */
  schemas?: readonly TypeSchema[];
  /**
   * Rescan period in milliseconds while file-system notifications are unavailable (`watchFs:
   * false`, or `Deno.watchFs` failed or stopped); default 100.
   */
  pollMs?: number;
  /**
   * Safety-net rescan period in milliseconds while notifications work (they trigger a rescan
   * within ~10 ms themselves; this catches the changes they miss, e.g. to files behind symbolic
   * links pointing outside the directory); default 2000.
   */
  rescanMs?: number;
  /** Namespace given to objects without one (default "default"). */
  defaultNamespace?: string;
  /** Use `Deno.watchFs` notifications for fast pick-up (default true). */
  watchFs?: boolean;
  /**
   * Keep watching the directory after the first scan (default true). `false` reads it once, as
   * a one-shot reader (meshctl) wants: no notifications, no timers; `sync()` and writes still
   * rescan.
   */
  watch?: boolean;
  /**
   * Where the store logs file problems (`Config file error ...`), skipped kinds and watch
   * failures: a logger, or `false` for none (the caller reads `errors()` instead, as meshctl
   * does). Default: the `default` scope of lib/log.
   */
  log?: Logger | false;
  /** Largest config file read, in bytes (default {@link MAX_CONFIG_FILE_BYTES}). */
  maxFileBytes?: number;
  /** Quiet period before documents removed from a file go (default {@link REMOVAL_QUIET_MS}). */
  removalQuietMs?: number;
}

/** A current problem with one file (or the directory itself when `file` is ""). */
export interface FileStoreError {
  /** Path relative to the store directory (`team/bad.yaml`). */
  file: string;
  /** 1-based document index within the file, when the problem is in one document. */
  document?: number;
  /** One line: `bad.yaml document 2: VirtualService/default/x: spec.http[0]...: ...`. */
  message: string;
}

/** A {@link ConfigStore} backed by a directory, with its current file errors. */
export interface FileStore extends ConfigStore {
  /** The directory (as given). */
  readonly dir: string;
  /** The current file errors (parse, validation, duplicates); empty when every file is good. */
  errors(): FileStoreError[];
  /** Rescans the directory now; resolves when the scan (and its watch events) is done. */
  sync(): Promise<void>;
  /**
   * Why the store's view is not being kept up to date, or `undefined` when it is: the directory
   * cannot be read, the last scan failed, or a scan has made no progress for more than 10 s (a
   * long scan pauses every few ms to let other work run: each pause is progress).
   */
  stalled(): string | undefined;
}

/**
 * Largest config file read (bytes); a larger file is an error naming it, its previous objects
 * stay in force. Option `maxFileBytes` of {@link createFileStore}.
 */
export const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;

/**
 * Quiet period before documents that disappeared from a rewritten file are removed: a writer
 * that truncates then writes (or pauses between documents) must not make objects vanish from
 * the proxies meanwhile. Objects added or changed apply at once; a removed file, and this store's
 * own (atomic) writes, apply at once too. Option `removalQuietMs` of {@link createFileStore}.
 */
export const REMOVAL_QUIET_MS = 2000;

/**
 * Opens a file store on `dir` and loads it; resolves once the first scan is done.
 *
 * Reading: every `.yaml`, `.yml` and `.json` file below `dir` (dot-files and dot-directories are
 * skipped, symbolic links followed), in sorted path order, each a stream of documents
 * `{apiVersion, kind, metadata, spec}`. Changes are picked up within ~100 ms: notifications
 * trigger a rescan, with a safety-net rescan every `rescanMs` (2 s); without notifications the
 * directory is rescanned every `pollMs` (100 ms). `watch: false` reads it once (no watcher, no
 * timer). A file that fails to read, parse or validate keeps its previously loaded
 * objects in force; its problems are logged once per change and listed by `errors()`. Unknown
 * kinds are skipped with a warning. When two documents define the same object, the first in path
 * order wins and the other is reported.
 *
 * Writing: created objects go to `<dir>/<namespace>/<plural>/<name>.yaml`; update and delete
 * rewrite the file that holds the object (only that document changes). Every write goes to a temp
 * file in the same directory, renamed over the target.
 *
 * `resourceVersion` is derived from the object's content ({@link contentVersion}: the same in every
 * process, changed by any edit, on disk or through the store); update fails with
 * {@link ConflictError} when the given one differs from the stored object's.
 */
export async function createFileStore(options: FileStoreOptions): Promise<FileStore> {
  const pollMs = options.pollMs ?? 100;
  const rescanMs = options.rescanMs ?? 2000;
  if (!Number.isFinite(pollMs) || pollMs <= 0) {
    throw new Error(`Invalid file store pollMs ${pollMs}: must be a positive number`);
  }
  if (!Number.isFinite(rescanMs) || rescanMs <= 0) {
    throw new Error(`Invalid file store rescanMs ${rescanMs}: must be a positive number`);
  }
  const dir = options.dir.replace(/\/+$/, "") || "/";
  try {
    const st = await Deno.stat(dir);
    if (!st.isDirectory) throw new Error("not a directory");
  } catch (err) {
    throw new Error(`Cannot use config directory "${options.dir}": ${(err as Error).message}`);
  }
  const store = new DirectoryStore(options, dir, pollMs, rescanMs);
  await store.open(options.watch ?? true, options.watchFs ?? true);
  return store;
}

/** The file store: its fields are the files read, the view in force and the scan/write state. */
class DirectoryStore implements FileStore {
  readonly dir: string;
  readonly schemas: readonly TypeSchema[];
  readonly #set: SchemaSet;
  readonly #settings: ScanSettings;
  readonly #hooks: ScanHooks;
  readonly #log: Logger;
  readonly #watchers: Watchers;
  readonly #watch?: DirectoryWatch;

  // ---- what was read
  #files = new Map<string, FileState>();
  #view = new Map<string, ViewEntry>();
  #dirError: FileStoreError | undefined;
  #dupErrors: FileStoreError[] = [];
  #reportedDups = new Set<string>();

  // ---- scanning
  /** Whether scans use blocking file calls (the first scan; every scan with `watch: false`). */
  #syncIO = true;
  /** Whether the last scan left a file aside because it was still being written. */
  #unsettled = false;
  #running: Promise<void> | null = null;
  #pending: Promise<void> | null = null;
  /** When the running scan started or last made progress (0: none), and why the last one failed. */
  #scanProgressAt = 0;
  #scanFailure: string | undefined;
  #settleTimer: number | undefined;
  #holdTimer: number | undefined;

  // ---- writing
  #writeChain: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(options: FileStoreOptions, dir: string, pollMs: number, rescanMs: number) {
    this.dir = options.dir;
    this.schemas = options.schemas ?? allSchemas;
    this.#set = new SchemaSet(this.schemas);
    this.#log = storeLogger(options.log);
    this.#watchers = new Watchers(this.#log);
    const watching = options.watch ?? true;
    this.#settings = {
      dir,
      set: this.#set,
      defaultNamespace: options.defaultNamespace ?? "default",
      log: this.#log,
      maxFileBytes: options.maxFileBytes ?? MAX_CONFIG_FILE_BYTES,
      removalQuietMs: options.removalQuietMs ?? REMOVAL_QUIET_MS,
      watching,
    };
    const renamed = new Set<string>();
    this.#hooks = { ownWrites: new Map(), renamed, holdUntil: (at) => this.#holdUntil(at) };
    if (watching) {
      this.#watch = new DirectoryWatch({
        dir,
        log: this.#log,
        pollMs,
        rescanMs,
        rescan: () => this.#requestScan(),
        renamed,
      });
    }
  }

  /** Notifications first (a change made during the first scan is not missed), then the scan. */
  async open(watching: boolean, watchFs: boolean): Promise<void> {
    if (watchFs) this.#watch?.listen();
    await this.#syncSettled();
    // Later scans run beside other work (servers): non-blocking calls, unless nobody else runs.
    this.#syncIO = !watching;
    this.#watch?.poll();
  }

  // ---- reading ---------------------------------------------------------------------------

  async #scanOnce(sync: boolean): Promise<void> {
    let paths: string[];
    try {
      paths = await walkConfigFiles(this.#settings.dir, sync);
    } catch (err) {
      const message = `Cannot read config directory "${this.dir}": ${(err as Error).message}`;
      if (this.#dirError?.message !== message) this.#log.error(message);
      this.#dirError = { file: "", message };
      return; // keep everything in force
    }
    this.#dirError = undefined;
    // blocking scans (the first, one-shot readers) run alone; later ones share the event loop
    const slicer = new TimeSlicer(
      sync ? null : SCAN_SLICE_MS,
      () => this.#scanProgressAt = Date.now(),
    );
    const { files: next, unsettled } = await scanFiles(
      this.#settings,
      this.#hooks,
      paths,
      this.#files,
      sync,
      slicer,
    );
    // The merged view depends only on the documents in force, file by file: when none changed
    // (the usual rescan), there is nothing to merge or emit.
    const same = next.size === this.#files.size &&
      [...next].every(([rel, fs]) => this.#files.get(rel)?.docs === fs.docs);
    if (same) this.#files = next;
    else await this.#merge(next, slicer);
    this.#unsettled = unsettled;
    if (unsettled && !this.#closed && this.#settleTimer === undefined) {
      this.#settleTimer = setTimeout(() => {
        this.#settleTimer = undefined;
        this.#requestScan();
      }, SETTLE_MS);
    }
  }

  /** Rescans once the quiet period of a held removal is over. */
  #holdUntil(at: number): void {
    if (this.#closed || this.#holdTimer !== undefined) return;
    this.#holdTimer = setTimeout(() => {
      this.#holdTimer = undefined;
      this.#requestScan();
    }, Math.max(10, at - Date.now() + 10));
  }

  /**
   * Builds the merged view of `files` (then in force, with the view: both change together), logs
   * new duplicates, emits the events.
   */
  async #merge(files: Map<string, FileState>, slicer: TimeSlicer): Promise<void> {
    const { view, duplicates, events } = await mergeView(files, this.#view, slicer);
    // the watchers' copies are made in slices too; the view and its events then change at once
    const deliver = await this.#watchers.prepare(events, slicer);
    this.#files = files;
    const nowReported = new Set<string>();
    for (const d of duplicates) {
      nowReported.add(d.message);
      if (!this.#reportedDups.has(d.message)) this.#log.error(`Config file error: ${d.message}`);
    }
    this.#reportedDups = nowReported;
    this.#dupErrors = duplicates;
    this.#view = view;
    deliver();
  }

  // ---- scan scheduling -------------------------------------------------------------------

  /** Runs a scan now, or once the running one is done (one more at most is queued). */
  #requestScan(): Promise<void> {
    if (this.#closed) return this.#running ?? Promise.resolve();
    if (!this.#running) {
      this.#scanProgressAt = Date.now();
      this.#running = this.#scanOnce(this.#syncIO)
        .then(() => (this.#scanFailure = undefined))
        .catch((err) => {
          const message = `Config directory scan failed: ${(err as Error).message}`;
          if (message !== this.#scanFailure) this.#log.error(message);
          this.#scanFailure = message;
        })
        .finally(() => {
          this.#running = null;
          this.#scanProgressAt = 0;
        });
      return this.#running;
    }
    this.#pending ??= this.#running.then(() => {
      this.#pending = null;
      return this.#requestScan();
    });
    return this.#pending;
  }

  /** Scans until no file is left aside as possibly still being written (at most ~1 s). */
  async #syncSettled(): Promise<void> {
    await this.#requestScan();
    for (let i = 0; this.#unsettled && !this.#closed && i < 40; i++) {
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      await this.#requestScan();
    }
  }

  // ---- writing ---------------------------------------------------------------------------

  #serialized<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.#writeChain.then(() => {
      if (this.#closed) throw new Error("Config store is closed");
      return fn();
    });
    this.#writeChain = p.catch(() => {});
    return p;
  }

  /** Writes a file of the store, remembered as its own (complete: no settling). */
  #write(rel: string, text: string): Promise<void> {
    this.#hooks.ownWrites.set(rel, text);
    return atomicWrite(`${this.#settings.dir}/${rel}`, text);
  }

  /** Finds the current entry for a write and checks that its file is unchanged and healthy. */
  async #locate(schema: TypeSchema, name: string, namespace: string) {
    for (let attempt = 0;; attempt++) {
      await this.#requestScan();
      const entry = this.#view.get(key(schema.type, namespace, name));
      if (!entry) {
        throw notFound(schema.kind, name, namespace);
      }
      const fs = this.#files.get(entry.file)!;
      if (fs.holding) {
        throw new ConflictError(`${entry.file} is being rewritten by another writer; try again`);
      }
      if (fs.errors.length > 0) {
        throw new Error(
          `Cannot change ${schema.kind} "${name}" in namespace "${namespace}": its file ` +
            `${entry.file} has errors (fix it first): ${fs.errors[0].message}`,
        );
      }
      const text = await Deno.readTextFile(`${this.#settings.dir}/${entry.file}`).catch(() =>
        undefined
      );
      if (text === fs.text) return { entry, text };
      if (attempt >= 3) {
        throw new ConflictError(`${entry.file} keeps changing; try again`);
      }
    }
  }

  #stored(schema: TypeSchema, ns: string, name: string): ConfigObject {
    const e = this.#view.get(key(schema.type, ns, name));
    if (!e) {
      throw new Error(
        `${schema.kind} "${name}" in namespace "${ns}" was written but is not in force ` +
          `(see the store errors)`,
      );
    }
    return structuredClone(e.object);
  }

  // ---- FileStore -------------------------------------------------------------------------

  errors(): FileStoreError[] {
    const out: FileStoreError[] = this.#dirError ? [this.#dirError] : [];
    for (const fs of this.#files.values()) out.push(...fs.errors);
    out.push(...this.#dupErrors);
    return structuredClone(out);
  }

  sync(): Promise<void> {
    return this.#syncSettled();
  }

  stalled(): string | undefined {
    if (this.#dirError) return this.#dirError.message;
    if (this.#scanFailure) return this.#scanFailure;
    const progress = this.#scanProgressAt;
    if (progress && Date.now() - progress > 10_000) {
      return `Config directory scan of "${this.dir}" has made no progress for ${
        Math.round((Date.now() - progress) / 1000)
      } s`;
    }
    return undefined;
  }

  get(type: string, name: string, namespace: string): Promise<ConfigObject | undefined> {
    return attempt(() => {
      const s = this.#set.require(type);
      const e = this.#view.get(key(s.type, namespace, name));
      return e && structuredClone(e.object);
    });
  }

  list(type: string, namespace?: string): Promise<ConfigObject[]> {
    return attempt(() => {
      const s = this.#set.require(type);
      const out: ConfigObject[] = [];
      for (const e of this.#view.values()) {
        if (
          e.schema === s && (namespace === undefined || e.object.metadata.namespace === namespace)
        ) {
          out.push(structuredClone(e.object));
        }
      }
      return out.sort(byNsName);
    });
  }

  create(raw: unknown): Promise<ConfigObject> {
    return this.#serialized(async () => {
      const { object, schema } = mustCheck(raw, this.#set, this.#settings.defaultNamespace);
      const ns = object.metadata.namespace!;
      const name = object.metadata.name;
      await this.#requestScan();
      if (this.#view.has(key(schema.type, ns, name))) {
        throw alreadyExists(schema.kind, name, ns);
      }
      const dir = this.#settings.dir;
      const folder = `${ns}/${schema.plural}`;
      await Deno.mkdir(`${dir}/${folder}`, { recursive: true });
      let rel = `${folder}/${name}.yaml`;
      for (let i = 1; await exists(`${dir}/${rel}`); i++) rel = `${folder}/${name}-${i}.yaml`;
      await this.#write(rel, documentText(rel, object));
      await this.#requestScan();
      return this.#stored(schema, ns, name);
    });
  }

  update(raw: unknown): Promise<ConfigObject> {
    return this.#serialized(async () => {
      const { object, schema } = mustCheck(raw, this.#set, this.#settings.defaultNamespace);
      const ns = object.metadata.namespace!;
      const name = object.metadata.name;
      const { entry, text } = await this.#locate(schema, name, ns);
      const given = object.metadata.resourceVersion;
      if (given && given !== entry.object.metadata.resourceVersion) {
        throw staleVersion(schema.kind, name, ns, given, entry.object.metadata.resourceVersion);
      }
      const { prefix, segs } = segments(text);
      const i = entry.index - 1;
      const marker = i > 0 || segs[i].startsWith("---") ? "---\n" : "";
      segs[i] = marker + documentText(entry.file, object);
      await this.#write(entry.file, prefix + segs.join(""));
      await this.#requestScan();
      return this.#stored(schema, ns, name);
    });
  }

  delete(type: string, name: string, namespace: string): Promise<void> {
    return this.#serialized(async () => {
      const schema = this.#set.require(type);
      const { entry, text } = await this.#locate(schema, name, namespace);
      const { prefix, segs } = segments(text);
      segs.splice(entry.index - 1, 1);
      const rest = prefix + segs.join("");
      if (hasDocuments(rest)) await this.#write(entry.file, rest);
      else await Deno.remove(`${this.#settings.dir}/${entry.file}`);
      await this.#requestScan();
    });
  }

  watch(handler: (event: StoreEvent) => void, kinds?: readonly string[]): { close(): void } {
    return this.#watchers.add(handler, kinds);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#watch?.close();
    await this.#writeChain;
    await this.#running;
    await this.#pending;
    this.#watch?.clearTimers();
    if (this.#settleTimer !== undefined) clearTimeout(this.#settleTimer);
    if (this.#holdTimer !== undefined) clearTimeout(this.#holdTimer);
    this.#watchers.clear();
  }
}

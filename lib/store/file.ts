/**
 * File config store (`--configDir`, `fs://<dir>`): a directory tree of multi-document YAML/JSON
 * files. See docs/stores.md for the layout convention and the error behaviour.
 * @module
 */
import { parseAllDocuments, stringify } from "../deps/yaml.ts";
import type { Logger } from "../log/mod.ts";
import { allSchemas, escapeControl, parseDocuments, quote } from "../model/mod.ts";
import type { ConfigObject, TypeSchema } from "../model/types.ts";
import {
  alreadyExists,
  attempt,
  byNsName,
  checkObject,
  contentVersion,
  describe,
  issuesText,
  mustCheck,
  notFound,
  sameContent,
  SchemaSet,
  staleVersion,
  storeLogger,
  Watchers,
} from "./_common.ts";
import { type ConfigStore, ConflictError, type StoreEvent } from "./types.ts";

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
   * cannot be read, the last scan failed, or a scan has been running for more than 10 s.
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
 * A file modified less than this long ago may still be being written (non-atomic writers
 * truncate then write): its change is taken once it has been quiet this long.
 */
const SETTLE_MS = 25;

/** Text of a file state whose file could not be read (never equal to real content). */
const UNREAD = "\u0000unreadable";

/** File names the store reads. */
const CONFIG_FILE = /\.(ya?ml|json)$/i;

interface DocEntry {
  /** 1-based index of the document in its file. */
  index: number;
  object: ConfigObject;
  schema: TypeSchema;
}

interface FileState {
  stamp: string;
  mtimeMs: number;
  text: string;
  /** The documents in force: those of the last good content of the file. */
  docs: DocEntry[];
  /** Errors of the current content (empty when the current content is the one in force). */
  errors: FileStoreError[];
  /** Whether `docs` still holds documents the current content lacks (REMOVAL_QUIET_MS). */
  holding?: boolean;
}

interface ViewEntry {
  object: ConfigObject;
  schema: TypeSchema;
  file: string;
  index: number;
}

const key = (type: string, ns: string, name: string) => `${type}\u0000${ns}\u0000${name}`;

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
  const dir = options.dir.replace(/\/+$/, "") || "/";
  const schemas = options.schemas ?? allSchemas;
  const set = new SchemaSet(schemas);
  const pollMs = options.pollMs ?? 100;
  const rescanMs = options.rescanMs ?? 2000;
  const watching = options.watch ?? true;
  const defaultNamespace = options.defaultNamespace ?? "default";
  const log = storeLogger(options.log);
  const maxFileBytes = options.maxFileBytes ?? MAX_CONFIG_FILE_BYTES;
  const removalQuietMs = options.removalQuietMs ?? REMOVAL_QUIET_MS;
  if (!Number.isFinite(pollMs) || pollMs <= 0) {
    throw new Error(`Invalid file store pollMs ${pollMs}: must be a positive number`);
  }
  if (!Number.isFinite(rescanMs) || rescanMs <= 0) {
    throw new Error(`Invalid file store rescanMs ${rescanMs}: must be a positive number`);
  }
  try {
    const st = await Deno.stat(dir);
    if (!st.isDirectory) throw new Error("not a directory");
  } catch (err) {
    throw new Error(`Cannot use config directory "${options.dir}": ${(err as Error).message}`);
  }

  const watchers = new Watchers(log);
  let files = new Map<string, FileState>();
  let view = new Map<string, ViewEntry>();
  let dirError: FileStoreError | undefined;
  let dupErrors: FileStoreError[] = [];
  let reportedDups = new Set<string>();
  let closed = false;
  let settleTimer: number | undefined;
  /** Whether the last scan left a file aside because it was still being written. */
  let unsettled = false;
  /** Whether scans use blocking file calls (the first scan; every scan with `watch: false`). */
  let syncIO = true;
  /** Text of files this store just wrote (complete by construction: no settling needed). */
  const ownWrites = new Map<string, string>();
  /** When the running scan started (0: none), and why the last one failed. */
  let scanStartedAt = 0;
  let scanFailure: string | undefined;
  let holdTimer: number | undefined;

  // ---- reading ---------------------------------------------------------------------------

  /**
   * The config files below `dir`, sorted. `sync` uses blocking calls: much cheaper per file than
   * async ones (no thread hop and promise per call), used where blocking is fine (the first scan,
   * one-shot readers).
   */
  async function walk(sync: boolean): Promise<string[]> {
    const out: string[] = [];
    const seenDirs = new Set<string>();
    async function visit(rel: string) {
      const abs = rel ? `${dir}/${rel}` : dir;
      const entries: Deno.DirEntry[] = [];
      try {
        const real = sync ? Deno.realPathSync(abs) : await Deno.realPath(abs);
        if (seenDirs.has(real)) return;
        seenDirs.add(real);
        if (sync) entries.push(...Deno.readDirSync(abs));
        else for await (const e of Deno.readDir(abs)) entries.push(e);
      } catch (err) {
        // a subdirectory removed while walking is simply gone
        if (rel && err instanceof Deno.errors.NotFound) return;
        throw err;
      }
      for (const e of entries) {
        if (e.name.startsWith(".")) continue;
        const childRel = rel ? `${rel}/${e.name}` : e.name;
        let isDir = e.isDirectory;
        let isFile = e.isFile;
        if (e.isSymlink) {
          try {
            const st = sync
              ? Deno.statSync(`${dir}/${childRel}`)
              : await Deno.stat(`${dir}/${childRel}`);
            isDir = st.isDirectory;
            isFile = st.isFile;
          } catch {
            continue; // dangling link
          }
        }
        if (isDir) await visit(childRel);
        else if (isFile && CONFIG_FILE.test(e.name)) out.push(childRel);
      }
    }
    await visit("");
    return out.sort();
  }

  /** Parses one file's text into documents in force, or errors. */
  function parseFile(rel: string, text: string): { docs: DocEntry[]; errors: FileStoreError[] } {
    const docs: DocEntry[] = [];
    const errors: FileStoreError[] = [];
    // a file name is input too: a newline in it must not forge log lines
    const name = escapeControl(rel);
    const fail = (index: number, msg: string) =>
      errors.push({ file: rel, document: index, message: `${name} document ${index}: ${msg}` });
    for (const doc of parseDocuments(text)) {
      const index = doc.index;
      if (doc.error !== undefined) {
        fail(index, doc.error);
        continue;
      }
      const raw = doc.value;
      if (raw === null || raw === undefined) continue; // empty document
      if (typeof raw !== "object" || Array.isArray(raw)) {
        fail(index, "must be an object with apiVersion, kind, metadata and spec");
        continue;
      }
      const label = `document ${index}`;
      const res = checkObject(raw, set, label, defaultNamespace);
      if (!res.ok) {
        const r = raw as { apiVersion?: unknown; kind?: unknown };
        if (res.unknownKind) {
          log.warn(
            `Skipping ${name} document ${index}: unknown kind ${quote(r.kind)} ` +
              `(apiVersion ${quote(r.apiVersion ?? "")})`,
          );
        } else if (res.notHeld) {
          log.debug(`Skipping ${name} document ${index}: kind ${quote(r.kind)} is not held here`);
        } else {
          fail(index, issuesText(res.issues, label));
        }
        continue;
      }
      delete res.object.metadata.resourceVersion;
      docs.push({ index, object: res.object, schema: res.schema });
    }
    return { docs, errors };
  }

  async function scanOnce(sync: boolean): Promise<void> {
    let paths: string[];
    try {
      paths = await walk(sync);
    } catch (err) {
      const message = `Cannot read config directory "${options.dir}": ${(err as Error).message}`;
      if (dirError?.message !== message) log.error(message);
      dirError = { file: "", message };
      return; // keep everything in force
    }
    dirError = undefined;
    const next = new Map<string, FileState>();
    let settleAgain = false;
    for (const rel of paths) {
      const abs = `${dir}/${rel}`;
      const prev = files.get(rel);
      let st: Deno.FileInfo;
      try {
        st = sync ? Deno.statSync(abs) : await Deno.stat(abs);
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) continue;
        keepWithError(
          next,
          rel,
          prev,
          `${escapeControl(rel)}: cannot read: ${(err as Error).message}`,
        );
        continue;
      }
      const mtimeMs = st.mtime?.getTime() ?? 0;
      const stamp = `${mtimeMs}:${st.size}:${st.ino ?? ""}`;
      if (st.size > maxFileBytes) {
        keepWithError(
          next,
          rel,
          prev,
          `${escapeControl(rel)}: ${st.size} bytes is more than the ${maxFileBytes}-byte limit ` +
            `of a config file (split it into several files)`,
        );
        continue;
      }
      if (prev && !prev.holding && prev.stamp === stamp && Date.now() - mtimeMs > 2000) {
        next.set(rel, prev);
        continue;
      }
      let text: string;
      try {
        text = await readCapped(abs, maxFileBytes, sync);
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) continue;
        keepWithError(next, rel, prev, `${escapeControl(rel)}: ${(err as Error).message}`);
        continue;
      }
      if (prev && prev.text === text && !prev.holding) {
        next.set(rel, { ...prev, stamp, mtimeMs });
        continue;
      }
      const age = Date.now() - mtimeMs;
      if (age >= 0 && age < SETTLE_MS && ownWrites.get(rel) !== text) {
        // possibly still being written: look again once it has settled
        if (prev) next.set(rel, prev);
        settleAgain = true;
        continue;
      }
      const own = ownWrites.get(rel) === text;
      ownWrites.delete(rel);
      const { docs, errors } = parseFile(rel, text);
      if (errors.length > 0) {
        const keep = prev?.docs.length
          ? "its previous content stays in force"
          : "nothing of it applies";
        for (const e of errors) log.error(`Config file error (${keep}): ${e.message}`);
        next.set(rel, { stamp, mtimeMs, text, docs: prev?.docs ?? [], errors });
      } else {
        if (prev?.errors.length) log.info(`Config file ${escapeControl(rel)} is valid again`);
        // documents gone from a file changed moments ago (not by us) stay until it is quiet
        const held = watching && !own && prev && age >= 0 && age < removalQuietMs
          ? missingDocs(prev.docs, docs)
          : [];
        if (prev && held.length > 0) {
          holdUntil(mtimeMs + removalQuietMs);
          const all = [...docs, ...held];
          const same = prev.holding && sameDocs(prev.docs, all);
          next.set(rel, {
            stamp,
            mtimeMs,
            text,
            errors: [],
            holding: true,
            docs: same ? prev.docs : all,
          });
        } else next.set(rel, { stamp, mtimeMs, text, docs, errors: [] });
      }
    }
    // The merged view depends only on the documents in force, file by file: when none changed
    // (the usual rescan), there is nothing to merge or emit.
    const same = next.size === files.size &&
      [...next].every(([rel, fs]) => files.get(rel)?.docs === fs.docs);
    files = next;
    if (!same) merge();
    unsettled = settleAgain;
    if (settleAgain && !closed && settleTimer === undefined) {
      settleTimer = setTimeout(() => {
        settleTimer = undefined;
        requestScan();
      }, SETTLE_MS);
    }
  }

  /** Documents of `before` (by type, namespace, name) that `after` lacks. */
  function missingDocs(before: DocEntry[], after: DocEntry[]): DocEntry[] {
    const docKey = (d: DocEntry) =>
      key(d.schema.type, d.object.metadata.namespace!, d.object.metadata.name);
    const now = new Set(after.map(docKey));
    return before.filter((d) => !now.has(docKey(d)));
  }

  function sameDocs(a: DocEntry[], b: DocEntry[]): boolean {
    return a.length === b.length && a.every((d, i) => sameContent(d.object, b[i].object));
  }

  /** Rescans once the quiet period of a held removal is over. */
  function holdUntil(at: number) {
    if (closed || holdTimer !== undefined) return;
    holdTimer = setTimeout(() => {
      holdTimer = undefined;
      requestScan();
    }, Math.max(10, at - Date.now() + 10));
  }

  function keepWithError(
    next: Map<string, FileState>,
    rel: string,
    prev: FileState | undefined,
    message: string,
  ) {
    if (prev?.errors[0]?.message !== message) log.error(message);
    next.set(rel, {
      stamp: "",
      mtimeMs: 0,
      text: UNREAD,
      docs: prev?.docs ?? [],
      errors: [{ file: rel, message }],
    });
  }

  /** Builds the merged view from the files in force, diffs it with the old one, emits events. */
  function merge() {
    const merged = new Map<string, ViewEntry>();
    const dups: FileStoreError[] = [];
    for (const [rel, fs] of files) {
      for (const d of fs.docs) {
        const k = key(d.schema.type, d.object.metadata.namespace!, d.object.metadata.name);
        const first = merged.get(k);
        if (first) {
          dups.push({
            file: rel,
            document: d.index,
            message: `${rel} document ${d.index}: ${describe(d.object)}: ` +
              `duplicate of ${first.file} document ${first.index} (ignored)`,
          });
          continue;
        }
        merged.set(k, { object: d.object, schema: d.schema, file: rel, index: d.index });
      }
    }
    const nowReported = new Set<string>();
    for (const d of dups) {
      nowReported.add(d.message);
      if (!reportedDups.has(d.message)) log.error(`Config file error: ${d.message}`);
    }
    reportedDups = nowReported;
    dupErrors = dups;

    const events: { type: StoreEvent["type"]; entry: ViewEntry; k: string }[] = [];
    for (const [k, e] of merged) {
      const old = view.get(k);
      if (old && sameContent(old.object, e.object)) {
        e.object = old.object; // keeps the resourceVersion and identity
        continue;
      }
      e.object = { ...e.object, metadata: { ...e.object.metadata, resourceVersion: "" } };
      events.push({ type: old ? "MODIFIED" : "ADDED", entry: e, k });
    }
    for (const [k, old] of view) {
      if (!merged.has(k)) events.push({ type: "DELETED", entry: old, k });
    }
    events.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
    for (const ev of events) {
      if (ev.type !== "DELETED") {
        ev.entry.object.metadata.resourceVersion = contentVersion(ev.entry.object);
      }
    }
    view = merged;
    for (const ev of events) watchers.emit(ev.type, ev.entry.object);
  }

  // ---- scan scheduling -------------------------------------------------------------------

  let running: Promise<void> | null = null;
  let pending: Promise<void> | null = null;
  function requestScan(): Promise<void> {
    if (closed) return running ?? Promise.resolve();
    if (!running) {
      scanStartedAt = Date.now();
      running = scanOnce(syncIO)
        .then(() => (scanFailure = undefined))
        .catch((err) => {
          const message = `Config directory scan failed: ${(err as Error).message}`;
          if (message !== scanFailure) log.error(message);
          scanFailure = message;
        })
        .finally(() => {
          running = null;
          scanStartedAt = 0;
        });
      return running;
    }
    pending ??= running.then(() => {
      pending = null;
      return requestScan();
    });
    return pending;
  }

  /** Scans until no file is left aside as possibly still being written (at most ~1 s). */
  async function syncSettled(): Promise<void> {
    await requestScan();
    for (let i = 0; unsettled && !closed && i < 40; i++) {
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      await requestScan();
    }
  }

  // Notifications first, so that a change made during the first scan is not missed.
  let pollTimer: number | undefined;
  let fsWatcher: Deno.FsWatcher | undefined;
  let watchLoop: Promise<void> | undefined;
  let debounce: number | undefined;
  /** Whether notifications currently work (the rescan is then only a safety net). */
  let notifying = false;
  /** Falls back to polling every `pollMs` when notifications stop. */
  const notificationsStopped = (why: string) => {
    notifying = false;
    log.warn(`File notifications for "${dir}" stopped (polling every ${pollMs} ms): ${why}`);
    // re-arm a waiting timer with the shorter period (a running poll re-arms itself)
    if (pollTimer !== undefined) {
      clearTimeout(pollTimer);
      poll();
    }
  };
  if (watching && (options.watchFs ?? true)) {
    try {
      fsWatcher = Deno.watchFs(dir, { recursive: true });
      notifying = true;
      const w = fsWatcher;
      watchLoop = (async () => {
        try {
          for await (const _ of w) {
            if (closed) break;
            if (debounce === undefined) {
              debounce = setTimeout(() => {
                debounce = undefined;
                requestScan();
              }, 10);
            }
          }
          if (!closed) notificationsStopped("the watcher ended");
        } catch (err) {
          if (!closed) notificationsStopped((err as Error).message);
        }
      })();
    } catch (err) {
      log.warn(`No file notifications for "${dir}" (polling only): ${(err as Error).message}`);
    }
  }

  await syncSettled();
  // Later scans run beside other work (servers): non-blocking calls, unless nobody else runs.
  syncIO = !watching;

  function poll() {
    pollTimer = setTimeout(() => {
      pollTimer = undefined;
      requestScan().then(() => {
        if (!closed) poll();
      });
    }, notifying ? rescanMs : pollMs);
  }
  if (watching) poll();

  // ---- writing ---------------------------------------------------------------------------

  let writeChain: Promise<unknown> = Promise.resolve();
  function serialized<T>(fn: () => Promise<T>): Promise<T> {
    const p = writeChain.then(() => {
      if (closed) throw new Error("Config store is closed");
      return fn();
    });
    writeChain = p.catch(() => {});
    return p;
  }

  async function atomicWrite(path: string, text: string): Promise<void> {
    ownWrites.set(path.slice(dir.length + 1), text);
    const slash = path.lastIndexOf("/");
    const parent = path.slice(0, slash);
    const tmp = `${parent}/.${path.slice(slash + 1)}.tmp-${crypto.randomUUID().slice(0, 8)}`;
    try {
      let mode: number | undefined;
      try {
        mode = (await Deno.stat(path)).mode ?? undefined;
      } catch {
        // new file
      }
      await Deno.writeTextFile(tmp, text, mode !== undefined ? { mode: mode & 0o777 } : {});
      if (mode !== undefined) await Deno.chmod(tmp, mode & 0o777);
      await Deno.rename(tmp, path);
    } catch (err) {
      await Deno.remove(tmp).catch(() => {});
      throw err;
    }
  }

  function fileObject(obj: ConfigObject): Record<string, unknown> {
    const { resourceVersion: _rv, ...meta } = obj.metadata;
    return JSON.parse(JSON.stringify({ ...obj, metadata: meta }));
  }

  function documentText(rel: string, obj: ConfigObject): string {
    const o = fileObject(obj);
    return /\.json$/i.test(rel) ? JSON.stringify(o, null, 2) + "\n" : stringify(o);
  }

  /** Splits a file into its prefix and one source segment per document. */
  function segments(text: string): { prefix: string; segs: string[] } {
    const parsed = parseAllDocuments(text);
    const list = Array.isArray(parsed) ? parsed : [];
    const starts = list.map((d) => d.range[0]);
    const segs = starts.map((s, i) => text.slice(s, starts[i + 1] ?? text.length));
    return { prefix: text.slice(0, starts[0] ?? text.length), segs };
  }

  /** Finds the current entry for a write and checks that its file is unchanged and healthy. */
  async function locate(schema: TypeSchema, name: string, namespace: string) {
    for (let attempt = 0;; attempt++) {
      await requestScan();
      const entry = view.get(key(schema.type, namespace, name));
      if (!entry) {
        throw notFound(schema.kind, name, namespace);
      }
      const fs = files.get(entry.file)!;
      if (fs.holding) {
        throw new ConflictError(`${entry.file} is being rewritten by another writer; try again`);
      }
      if (fs.errors.length > 0) {
        throw new Error(
          `Cannot change ${schema.kind} "${name}" in namespace "${namespace}": its file ` +
            `${entry.file} has errors (fix it first): ${fs.errors[0].message}`,
        );
      }
      const text = await Deno.readTextFile(`${dir}/${entry.file}`).catch(() => undefined);
      if (text === fs.text) return { entry, text };
      if (attempt >= 3) {
        throw new ConflictError(`${entry.file} keeps changing; try again`);
      }
    }
  }

  function stored(schema: TypeSchema, ns: string, name: string): ConfigObject {
    const e = view.get(key(schema.type, ns, name));
    if (!e) {
      throw new Error(
        `${schema.kind} "${name}" in namespace "${ns}" was written but is not in force ` +
          `(see the store errors)`,
      );
    }
    return structuredClone(e.object);
  }

  return {
    dir: options.dir,
    schemas,
    errors() {
      const out: FileStoreError[] = dirError ? [dirError] : [];
      for (const fs of files.values()) out.push(...fs.errors);
      out.push(...dupErrors);
      return structuredClone(out);
    },
    sync: () => syncSettled(),
    stalled() {
      if (dirError) return dirError.message;
      if (scanFailure) return scanFailure;
      if (scanStartedAt && Date.now() - scanStartedAt > 10_000) {
        return `Config directory scan of "${options.dir}" has been running for ${
          Math.round((Date.now() - scanStartedAt) / 1000)
        } s`;
      }
      return undefined;
    },
    get(type, name, namespace) {
      return attempt(() => {
        const s = set.require(type);
        const e = view.get(key(s.type, namespace, name));
        return e && structuredClone(e.object);
      });
    },
    list(type, namespace) {
      return attempt(() => {
        const s = set.require(type);
        const out: ConfigObject[] = [];
        for (const e of view.values()) {
          if (
            e.schema === s && (namespace === undefined || e.object.metadata.namespace === namespace)
          ) {
            out.push(structuredClone(e.object));
          }
        }
        return out.sort(byNsName);
      });
    },
    create(raw) {
      return serialized(async () => {
        const { object, schema } = mustCheck(raw, set, defaultNamespace);
        const ns = object.metadata.namespace!;
        const name = object.metadata.name;
        await requestScan();
        if (view.has(key(schema.type, ns, name))) {
          throw alreadyExists(schema.kind, name, ns);
        }
        const folder = `${ns}/${schema.plural}`;
        await Deno.mkdir(`${dir}/${folder}`, { recursive: true });
        let rel = `${folder}/${name}.yaml`;
        for (let i = 1; await exists(`${dir}/${rel}`); i++) rel = `${folder}/${name}-${i}.yaml`;
        await atomicWrite(`${dir}/${rel}`, documentText(rel, object));
        await requestScan();
        return stored(schema, ns, name);
      });
    },
    update(raw) {
      return serialized(async () => {
        const { object, schema } = mustCheck(raw, set, defaultNamespace);
        const ns = object.metadata.namespace!;
        const name = object.metadata.name;
        const { entry, text } = await locate(schema, name, ns);
        const given = object.metadata.resourceVersion;
        if (given && given !== entry.object.metadata.resourceVersion) {
          throw staleVersion(schema.kind, name, ns, given, entry.object.metadata.resourceVersion);
        }
        const { prefix, segs } = segments(text);
        const i = entry.index - 1;
        const marker = i > 0 || segs[i].startsWith("---") ? "---\n" : "";
        segs[i] = marker + documentText(entry.file, object);
        await atomicWrite(`${dir}/${entry.file}`, prefix + segs.join(""));
        await requestScan();
        return stored(schema, ns, name);
      });
    },
    delete(type, name, namespace) {
      return serialized(async () => {
        const schema = set.require(type);
        const { entry, text } = await locate(schema, name, namespace);
        const { prefix, segs } = segments(text);
        segs.splice(entry.index - 1, 1);
        const rest = prefix + segs.join("");
        const remaining = parseAllDocuments(rest);
        const left = Array.isArray(remaining) &&
          remaining.some((d) => d.toJS() !== null && d.toJS() !== undefined);
        if (left) await atomicWrite(`${dir}/${entry.file}`, rest);
        else await Deno.remove(`${dir}/${entry.file}`);
        await requestScan();
      });
    },
    watch(handler: (event: StoreEvent) => void) {
      return watchers.add(handler);
    },
    async close() {
      if (closed) return;
      closed = true;
      if (pollTimer !== undefined) clearTimeout(pollTimer);
      if (debounce !== undefined) clearTimeout(debounce);
      try {
        fsWatcher?.close();
      } catch {
        // already closed
      }
      await watchLoop;
      await writeChain;
      await running;
      await pending;
      if (debounce !== undefined) clearTimeout(debounce);
      if (pollTimer !== undefined) clearTimeout(pollTimer);
      if (settleTimer !== undefined) clearTimeout(settleTimer);
      if (holdTimer !== undefined) clearTimeout(holdTimer);
      watchers.clear();
    },
  };
}

/**
 * The text of a file, reading at most `max` bytes (a file that grew past it since its stat is an
 * error, never a huge read).
 */
async function readCapped(path: string, max: number, sync: boolean): Promise<string> {
  const f = sync ? Deno.openSync(path) : await Deno.open(path);
  try {
    const buf = new Uint8Array(Math.min(max + 1, 64 * 1024));
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const n = sync ? f.readSync(buf) : await f.read(buf);
      if (n === null) break;
      total += n;
      if (total > max) {
        throw new Error(`more than the ${max}-byte limit of a config file (split it)`);
      }
      chunks.push(buf.slice(0, n));
    }
    const all = new Uint8Array(total);
    let at = 0;
    for (const c of chunks) {
      all.set(c, at);
      at += c.length;
    }
    return new TextDecoder().decode(all);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) throw err;
    throw new Error(`cannot read: ${(err as Error).message}`);
  } finally {
    f.close();
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Reading a config directory: the files it holds, their text (bounded), their documents, and the
 * state each file is in after a scan (what applies, what is held, what waits to settle).
 * @module
 */
import type { Logger } from "../log/mod.ts";
import { documentsOf, escapeControl, quote } from "../model/mod.ts";
import type { ConfigObject, TypeSchema } from "../model/types.ts";
import { checkObject, issuesText, sameContent, type SchemaSet } from "./_common.ts";
import type { FileStoreError } from "./file.ts";
import { TimeSlicer } from "./_slice.ts";

/**
 * A file modified less than this long ago may still be being written (non-atomic writers
 * truncate then write): its change is taken once it has been quiet this long.
 */
export const SETTLE_MS = 25;

/**
 * Largest YAML document parsed (characters between two `---` lines). The YAML parser takes a
 * document in one synchronous step (the store pauses only between documents), at roughly 2.5 s
 * per MB on a loaded 2-core box, so one enormous document would stall every server beside the
 * store; it is refused, naming its line, and the file's previous content stays in force.
 */
export const MAX_DOCUMENT_BYTES = 256 * 1024;

/**
 * The first document of `text` longer than `max` characters: its 1-based index and first line.
 * Documents are cut at `---` lines (a document marker at column 0 ends any YAML content, so this
 * is an upper bound of each document's size); text before the first marker is a document when it
 * holds more than blanks and comments.
 */
export function oversizeDocument(
  text: string,
  max: number,
): { index: number; line: number; size: number } | undefined {
  if (text.length <= max) return undefined;
  const marker = /^---(?=[ \t\r\n]|$)/gm;
  let start = 0;
  let index = 0;
  let line = 1;
  const check = (end: number, explicit: boolean) => {
    const body = text.slice(start, end);
    const counts = explicit || /^[ \t]*[^ \t\r\n#]/m.test(body);
    if (counts) index++;
    if (counts && end - start > max) {
      return { index, line, size: new TextEncoder().encode(body).length };
    }
    return undefined;
  };
  let explicit = false;
  for (const m of text.matchAll(marker)) {
    const found = check(m.index, explicit);
    if (found) return found;
    for (
      let i = text.indexOf("\n", start);
      i !== -1 && i < m.index;
      i = text.indexOf("\n", i + 1)
    ) line++;
    start = m.index;
    explicit = true;
  }
  return check(text.length, explicit);
}

/** Text of a file state whose file could not be read (never equal to real content). */
const UNREAD = "\u0000unreadable";

/** File names the store reads. */
const CONFIG_FILE = /\.(ya?ml|json)$/i;

/** One valid document of a file. */
export interface DocEntry {
  /** 1-based index of the document in its file. */
  index: number;
  object: ConfigObject;
  schema: TypeSchema;
}

/** What the store knows of one file after a scan. */
export interface FileState {
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

/** The key of an object in the store's view. */
export const key = (type: string, ns: string, name: string): string =>
  `${type}\u0000${ns}\u0000${name}`;

/**
 * The config files below `dir`, sorted. `sync` uses blocking calls: much cheaper per file than
 * async ones (no thread hop and promise per call), used where blocking is fine (the first scan,
 * one-shot readers).
 */
export async function walkConfigFiles(dir: string, sync: boolean): Promise<string[]> {
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

/** What parsing and scanning need: the store's schemas, settings and logger. */
export interface ScanSettings {
  dir: string;
  set: SchemaSet;
  defaultNamespace: string;
  log: Logger;
  maxFileBytes: number;
  /** Largest document parsed (default {@link MAX_DOCUMENT_BYTES}). */
  maxDocumentBytes?: number;
  removalQuietMs: number;
  /** Whether the store keeps watching (removals are held only then). */
  watching: boolean;
}

/**
 * Parses one file's text into documents in force, or errors; pauses between documents when
 * `slicer` says so (a large file does not hold the event loop for its whole parse).
 */
export async function parseConfigFile(
  s: ScanSettings,
  rel: string,
  text: string,
  slicer: TimeSlicer = new TimeSlicer(null),
): Promise<{ docs: DocEntry[]; errors: FileStoreError[] }> {
  const docs: DocEntry[] = [];
  const errors: FileStoreError[] = [];
  // a file name is input too: a newline in it must not forge log lines
  const name = escapeControl(rel);
  const fail = (index: number, msg: string) =>
    errors.push({ file: rel, document: index, message: `${name} document ${index}: ${msg}` });
  const big = oversizeDocument(text, s.maxDocumentBytes ?? MAX_DOCUMENT_BYTES);
  if (big) {
    fail(
      big.index,
      `${big.size} bytes (from line ${big.line}) is more than the ` +
        `${s.maxDocumentBytes ?? MAX_DOCUMENT_BYTES}-byte limit of one document ` +
        `(a document is parsed in one step; split it into several documents)`,
    );
    return { docs, errors };
  }
  for (const doc of documentsOf(text)) {
    await slicer.pause();
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
    const res = checkObject(raw, s.set, label, s.defaultNamespace);
    if (!res.ok) {
      const r = raw as { apiVersion?: unknown; kind?: unknown };
      if (res.unknownKind) {
        s.log.warn(
          `Skipping ${name} document ${index}: unknown kind ${quote(r.kind)} ` +
            `(apiVersion ${quote(r.apiVersion ?? "")})`,
        );
      } else if (res.notHeld) {
        s.log.debug(`Skipping ${name} document ${index}: kind ${quote(r.kind)} is not held here`);
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

/** The next state of the files of a directory, from {@link scanFiles}. */
export interface ScanResult {
  files: Map<string, FileState>;
  /** Whether a file was left aside because it may still be being written. */
  unsettled: boolean;
}

/** What a scan reads besides the settings: the store's own writes and the removal timer. */
export interface ScanHooks {
  /** Text of files this store just wrote (complete by construction: no settling needed). */
  ownWrites: Map<string, string>;
  /** Files renamed into place since their last write (whole: no settling needed). */
  renamed: ReadonlySet<string>;
  /** Asks for a rescan at `at` (ms since the epoch), when a held removal's quiet period ends. */
  holdUntil(at: number): void;
}

/**
 * The next state of every file in `paths`, from the previous states `files`; the work pauses
 * when `slicer` says so.
 */
export async function scanFiles(
  s: ScanSettings,
  hooks: ScanHooks,
  paths: string[],
  files: ReadonlyMap<string, FileState>,
  sync: boolean,
  slicer: TimeSlicer,
): Promise<ScanResult> {
  const next = new Map<string, FileState>();
  let unsettled = false;
  for (const rel of paths) {
    await slicer.pause();
    const prev = files.get(rel);
    const state = await nextFileState(s, hooks, rel, prev, sync, slicer);
    if (state === "gone") continue;
    if (state === "unsettled") {
      // possibly still being written: look again once it has settled
      if (prev) next.set(rel, prev);
      unsettled = true;
      continue;
    }
    next.set(rel, state);
  }
  return { files: next, unsettled };
}

/**
 * The state of one file after this scan: unchanged, newly parsed (or held: documents gone from a
 * file changed moments ago, not by this store, stay until it is quiet), kept with an error,
 * `"gone"`, or `"unsettled"` while it may still be being written.
 */
async function nextFileState(
  s: ScanSettings,
  hooks: ScanHooks,
  rel: string,
  prev: FileState | undefined,
  sync: boolean,
  slicer: TimeSlicer,
): Promise<FileState | "gone" | "unsettled"> {
  const abs = `${s.dir}/${rel}`;
  let st: Deno.FileInfo;
  try {
    st = sync ? Deno.statSync(abs) : await Deno.stat(abs);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return "gone";
    return keptWithError(
      s,
      rel,
      prev,
      `${escapeControl(rel)}: cannot read: ${(err as Error).message}`,
    );
  }
  const mtimeMs = st.mtime?.getTime() ?? 0;
  const stamp = `${mtimeMs}:${st.size}:${st.ino ?? ""}`;
  if (st.size > s.maxFileBytes) {
    return keptWithError(
      s,
      rel,
      prev,
      `${escapeControl(rel)}: ${st.size} bytes is more than the ${s.maxFileBytes}-byte limit ` +
        `of a config file (split it into several files)`,
    );
  }
  if (prev && !prev.holding && prev.stamp === stamp && Date.now() - mtimeMs > 2000) return prev;
  let text: string;
  try {
    text = await readCapped(abs, s.maxFileBytes, sync);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return "gone";
    return keptWithError(s, rel, prev, `${escapeControl(rel)}: ${(err as Error).message}`);
  }
  if (prev && prev.text === text && !prev.holding) return { ...prev, stamp, mtimeMs };
  const age = Date.now() - mtimeMs;
  if (
    age >= 0 && age < SETTLE_MS && hooks.ownWrites.get(rel) !== text && !hooks.renamed.has(rel)
  ) return "unsettled";
  const own = hooks.ownWrites.get(rel) === text;
  hooks.ownWrites.delete(rel);
  const { docs, errors } = await parseConfigFile(s, rel, text, slicer);
  if (errors.length > 0) {
    const keep = prev?.docs.length
      ? "its previous content stays in force"
      : "nothing of it applies";
    for (const e of errors) s.log.error(`Config file error (${keep}): ${e.message}`);
    return { stamp, mtimeMs, text, docs: prev?.docs ?? [], errors };
  }
  if (prev?.errors.length) s.log.info(`Config file ${escapeControl(rel)} is valid again`);
  // documents gone from a file changed moments ago (not by us) stay until it is quiet
  const held = s.watching && !own && prev && age >= 0 && age < s.removalQuietMs
    ? missingDocs(prev.docs, docs)
    : [];
  if (!prev || held.length === 0) return { stamp, mtimeMs, text, docs, errors: [] };
  hooks.holdUntil(mtimeMs + s.removalQuietMs);
  const all = [...docs, ...held];
  const same = prev.holding && sameDocs(prev.docs, all);
  return { stamp, mtimeMs, text, errors: [], holding: true, docs: same ? prev.docs : all };
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

/** A file that cannot be used now: its previous documents stay, with the error (logged once). */
function keptWithError(
  s: ScanSettings,
  rel: string,
  prev: FileState | undefined,
  message: string,
): FileState {
  if (prev?.errors[0]?.message !== message) s.log.error(message);
  return {
    stamp: "",
    mtimeMs: 0,
    text: UNREAD,
    docs: prev?.docs ?? [],
    errors: [{ file: rel, message }],
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

/**
 * Writing config files: the atomic write (temp file in the same directory, renamed over the
 * target, mode kept), a document's text, and the source segments of a multi-document file.
 * @module
 */
import { parseAllDocuments, stringify } from "../deps/yaml.ts";
import type { ConfigObject } from "../model/types.ts";

/** Writes `text` to `path` through a temp file renamed over it (keeping an existing file's mode). */
export async function atomicWrite(path: string, text: string): Promise<void> {
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

/** The text of `obj` as a document of the file `rel` (JSON or YAML by its name). */
export function documentText(rel: string, obj: ConfigObject): string {
  const o = fileObject(obj);
  return /\.json$/i.test(rel) ? JSON.stringify(o, null, 2) + "\n" : stringify(o);
}

/** Splits a file into its prefix and one source segment per document. */
export function segments(text: string): { prefix: string; segs: string[] } {
  const parsed = parseAllDocuments(text);
  const list = Array.isArray(parsed) ? parsed : [];
  const starts = list.map((d) => d.range[0]);
  const segs = starts.map((s, i) => text.slice(s, starts[i + 1] ?? text.length));
  return { prefix: text.slice(0, starts[0] ?? text.length), segs };
}

/** Whether `text` still holds a non-empty document. */
export function hasDocuments(text: string): boolean {
  const remaining = parseAllDocuments(text);
  return Array.isArray(remaining) &&
    remaining.some((d) => d.toJS() !== null && d.toJS() !== undefined);
}

/** Whether anything (a dangling link too) is at `path`. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The file store's view: the objects in force, merged from the files in path order (the first
 * definition of an object wins), and the watch events that turn the old view into the new one.
 * @module
 */
import type { ConfigObject, TypeSchema } from "../model/types.ts";
import { contentVersion, describe, sameContent } from "./_common.ts";
import { type FileState, key } from "./_file_scan.ts";
import type { FileStoreError } from "./file.ts";
import type { StoreEvent } from "./types.ts";

/** One object in force and the document that defines it. */
export interface ViewEntry {
  object: ConfigObject;
  schema: TypeSchema;
  file: string;
  index: number;
}

/** The outcome of {@link mergeView}. */
export interface MergedView {
  view: Map<string, ViewEntry>;
  /** Definitions ignored because an earlier file defines the same object. */
  duplicates: FileStoreError[];
  /** Events from the old view to the new one, in key order. */
  events: { type: StoreEvent["type"]; object: ConfigObject }[];
}

/**
 * Builds the view from the files in force and diffs it with `old`: unchanged objects keep their
 * identity and `resourceVersion`, changed and new ones get their content version.
 */
export function mergeView(
  files: ReadonlyMap<string, FileState>,
  old: ReadonlyMap<string, ViewEntry>,
): MergedView {
  const merged = new Map<string, ViewEntry>();
  const duplicates: FileStoreError[] = [];
  for (const [rel, fs] of files) {
    for (const d of fs.docs) {
      const k = key(d.schema.type, d.object.metadata.namespace!, d.object.metadata.name);
      const first = merged.get(k);
      if (first) {
        duplicates.push({
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
  const events: { type: StoreEvent["type"]; entry: ViewEntry; k: string }[] = [];
  for (const [k, e] of merged) {
    const was = old.get(k);
    if (was && sameContent(was.object, e.object)) {
      e.object = was.object; // keeps the resourceVersion and identity
      continue;
    }
    e.object = { ...e.object, metadata: { ...e.object.metadata, resourceVersion: "" } };
    events.push({ type: was ? "MODIFIED" : "ADDED", entry: e, k });
  }
  for (const [k, was] of old) {
    if (!merged.has(k)) events.push({ type: "DELETED", entry: was, k });
  }
  events.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  for (const ev of events) {
    if (ev.type !== "DELETED") {
      ev.entry.object.metadata.resourceVersion = contentVersion(ev.entry.object);
    }
  }
  return {
    view: merged,
    duplicates,
    events: events.map((ev) => ({ type: ev.type, object: ev.entry.object })),
  };
}

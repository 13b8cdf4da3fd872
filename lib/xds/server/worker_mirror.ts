/**
 * Resource maps mirrored from a control isolate into worker isolates (mesh-discovery's
 * `--workers`). The control isolate's generator returns shared maps (streams with the same inputs
 * get the same map object); {@link MirrorEncoder} gives each distinct map and entry an id and
 * sends a worker the contents only of those it does not hold yet; {@link MirrorDecoder} (in the
 * worker) turns ids back into maps, so that streams sharing a map in the control isolate share
 * one in the worker too (the state machine's per-view work stays once per view).
 *
 * Entries cross as one transferred buffer of their bytes. Each side forgets what was not used
 * for {@link MIRROR_KEEP_EPOCHS} epochs (one epoch per push); the control isolate tells the
 * worker which ids it forgot in the same order as its other messages, so both agree.
 * @module
 */

import type { ResourceEntry, ResourceMap } from "./types.ts";

/** Epochs (pushes) an unused map or entry stays known to a worker. */
export const MIRROR_KEEP_EPOCHS = 3;

/** New maps and entries for a worker, and the ids it may forget. */
export interface MirrorDelta {
  /** New maps: id, then its names and the ids of their entries (same order). */
  maps: [id: number, names: string[], entries: number[]][];
  /** New entries: ids, versions, and byte lengths into `bytes`. */
  entryIds: number[];
  versions: string[];
  lengths: number[];
  /** The new entries' bytes, back to back. */
  bytes: ArrayBuffer;
}

/** Ids a worker forgets. */
export interface MirrorDrop {
  maps: number[];
  entries: number[];
}

interface Known {
  id: number;
  epoch: number;
}

/** Ids of maps and entries, the same for every worker (kept as long as the objects live). */
export class MirrorIds {
  #next = 1;
  readonly #ids = new WeakMap<object, number>();
  /** The id of `o` (a map or an entry). */
  of(o: object): number {
    let id = this.#ids.get(o);
    if (id === undefined) this.#ids.set(o, id = this.#next++);
    return id;
  }
}

/** How much of the mirror one worker holds: maps, entries, and the entries' encoded bytes. */
export interface MirrorStats {
  maps: number;
  entries: number;
  bytes: number;
}

/** The control isolate's record of what one worker holds. */
export class MirrorEncoder {
  readonly #maps = new Map<ResourceMap, Known>();
  readonly #entries = new Map<ResourceEntry, Known>();
  #epoch = 0;
  #newMaps: MirrorDelta["maps"] = [];
  #newEntries: ResourceEntry[] = [];
  #newEntryIds: number[] = [];

  /** Over ids shared by every worker's encoder. */
  constructor(readonly ids: MirrorIds) {}

  /** The id of `map` for this worker; its contents (and new entries) join the next delta. */
  add(map: ResourceMap): number {
    const had = this.#maps.get(map);
    if (had) {
      if (had.epoch !== this.#epoch) {
        had.epoch = this.#epoch;
        // The entries of a map in use are in use (once per map and epoch): they are forgotten
        // with the last map holding them, not while it lives, so a new map that shares them (the
        // next view after one change) does not send them again.
        for (const e of map.values()) {
          const k = this.#entries.get(e);
          if (k) k.epoch = this.#epoch;
        }
      }
      return had.id;
    }
    const { id } = this.#use(this.#maps, map);
    const names: string[] = [];
    const entries: number[] = [];
    for (const [name, entry] of map) {
      names.push(name);
      entries.push(this.#entry(entry));
    }
    this.#newMaps.push([id, names, entries]);
    return id;
  }

  #entry(entry: ResourceEntry): number {
    const { id, known } = this.#use(this.#entries, entry);
    if (known) return id;
    this.#newEntries.push(entry);
    this.#newEntryIds.push(id);
    return id;
  }

  /** Marks `o` used in this epoch; `known`: the worker already holds it (else it is recorded now). */
  #use<K extends object>(table: Map<K, Known>, o: K): { id: number; known: boolean } {
    const known = table.get(o);
    if (known) {
      known.epoch = this.#epoch;
      return { id: known.id, known: true };
    }
    const id = this.ids.of(o);
    table.set(o, { id, epoch: this.#epoch });
    return { id, known: false };
  }

  /** What this worker holds, as the control isolate records it (for `/debug/mirrorz`). */
  stats(): MirrorStats {
    let bytes = 0;
    for (const e of this.#entries.keys()) bytes += e.bytes.length;
    return { maps: this.#maps.size, entries: this.#entries.size, bytes };
  }

  /** The maps and entries added since the last call (its `bytes` is meant to be transferred). */
  take(): MirrorDelta {
    let size = 0;
    for (const e of this.#newEntries) size += e.bytes.length;
    const bytes = new Uint8Array(size);
    const versions: string[] = [];
    const lengths: number[] = [];
    let at = 0;
    for (const e of this.#newEntries) {
      bytes.set(e.bytes, at);
      at += e.bytes.length;
      versions.push(e.version);
      lengths.push(e.bytes.length);
    }
    const out: MirrorDelta = {
      maps: this.#newMaps,
      entryIds: this.#newEntryIds,
      versions,
      lengths,
      bytes: bytes.buffer,
    };
    this.#newMaps = [];
    this.#newEntries = [];
    this.#newEntryIds = [];
    return out;
  }

  /**
   * Starts an epoch (a push): forgets what was not used for {@link MIRROR_KEEP_EPOCHS}; the
   * worker is told with the next answer ({@link takeDrop}).
   */
  nextEpoch(): void {
    this.#epoch++;
    const old = this.#epoch - MIRROR_KEEP_EPOCHS;
    const drop = this.#drop;
    for (const [m, k] of this.#maps) {
      if (k.epoch < old) {
        this.#maps.delete(m);
        drop.maps.push(k.id);
      }
    }
    for (const [e, k] of this.#entries) {
      if (k.epoch < old) {
        this.#entries.delete(e);
        drop.entries.push(k.id);
      }
    }
  }

  #drop: MirrorDrop = { maps: [], entries: [] };

  /** The ids forgotten since the last call (null: none); the worker drops them first. */
  takeDrop(): MirrorDrop | null {
    const d = this.#drop;
    if (!d.maps.length && !d.entries.length) return null;
    this.#drop = { maps: [], entries: [] };
    return d;
  }

  /** Maps this worker holds. */
  get size(): number {
    return this.#maps.size;
  }
}

/** A worker's mirror of the maps the control isolate sent it. */
export class MirrorDecoder {
  readonly #maps = new Map<number, ResourceMap>();
  readonly #entries = new Map<number, ResourceEntry>();

  /** Takes in new maps and entries. @throws Error when the delta refers to an unknown entry. */
  apply(d: MirrorDelta): void {
    const all = new Uint8Array(d.bytes);
    let at = 0;
    for (let i = 0; i < d.entryIds.length; i++) {
      const bytes = all.subarray(at, at += d.lengths[i]);
      this.#entries.set(d.entryIds[i], { version: d.versions[i], bytes });
    }
    for (const [id, names, entries] of d.maps) {
      const map = new Map<string, ResourceEntry>();
      for (let i = 0; i < names.length; i++) {
        const e = this.#entries.get(entries[i]);
        if (!e) throw new Error(`mirror: map ${id} refers to unknown entry ${entries[i]}`);
        map.set(names[i], e);
      }
      this.#maps.set(id, map);
    }
  }

  /** Forgets ids (maps already handed out stay valid). */
  drop(d: MirrorDrop): void {
    for (const id of d.maps) this.#maps.delete(id);
    for (const id of d.entries) this.#entries.delete(id);
  }

  /** The map of `id`. @throws Error when unknown. */
  map(id: number): ResourceMap {
    const m = this.#maps.get(id);
    if (!m) throw new Error(`mirror: unknown map ${id}`);
    return m;
  }

  /** Maps held. */
  get size(): number {
    return this.#maps.size;
  }
}

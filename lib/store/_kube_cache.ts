/**
 * The orchestrator store's watch cache: one {@link TypeCache} per type (valid objects, invalid
 * ones left out with their problem, the list error), and the waiters of writes that wait for the
 * cache to show them.
 * @module
 */
import type { Logger } from "../log/mod.ts";
import type { ConfigObject, TypeSchema } from "../model/types.ts";
import { sameContent, type Watchers } from "./_common.ts";
import type { ConvertedObject } from "./_kube_convert.ts";

/** The objects of one type, as the watch shows them. */
export class TypeCache {
  readonly schema: TypeSchema;
  /** Valid objects by `namespace/name`. */
  readonly items = new Map<string, ConfigObject>();
  /** Why the objects left out are invalid, by `namespace/name`. */
  readonly invalid = new Map<string, string>();
  /** Why the type cannot be listed (logged once per message). */
  listError?: string;
  readonly #watchers: Watchers;
  readonly #log: Logger;

  constructor(schema: TypeSchema, watchers: Watchers, log: Logger) {
    this.schema = schema;
    this.#watchers = watchers;
    this.#log = log;
  }

  /** Applies one object (valid or not), emitting an event when its content changed. */
  upsert(c: ConvertedObject): void {
    if (!c.object) {
      const msg = c.problem ?? "invalid object";
      if (this.invalid.get(c.key) !== msg) {
        this.#log.error(
          `Invalid ${this.schema.plural} object in the orchestrator (ignored): ` +
            `${this.schema.kind}/${c.key}: ${msg}`,
        );
      }
      this.invalid.set(c.key, msg);
      return;
    }
    this.invalid.delete(c.key);
    const old = this.items.get(c.key);
    this.items.set(c.key, c.object);
    if (!old) this.#watchers.emit("ADDED", c.object);
    else if (!sameContent(old, c.object)) this.#watchers.emit("MODIFIED", c.object);
  }

  /** Removes an object, emitting DELETED when a valid one was there. */
  delete(key: string): void {
    this.invalid.delete(key);
    const old = this.items.get(key);
    if (!old) return;
    this.items.delete(key);
    this.#watchers.emit("DELETED", old);
  }

  /** Replaces the content with a complete list, emitting only the differences. */
  replace(items: (ConvertedObject | undefined)[]): void {
    const seen = new Set<string>();
    for (const c of items) {
      if (!c) continue;
      seen.add(c.key);
      this.upsert(c);
    }
    for (const k of [...this.items.keys()]) if (!seen.has(k)) this.delete(k);
    for (const k of [...this.invalid.keys()]) if (!seen.has(k)) this.invalid.delete(k);
  }
}

/** Writes waiting (up to `waitMs`) for the cache to show them. */
export class WriteWaiters {
  readonly #waiters = new Set<() => void>();
  readonly #waitMs: number;
  #closed = false;

  constructor(waitMs: number) {
    this.#waitMs = waitMs;
  }

  /** Re-checks every waiter (after the cache changed). */
  notify(): void {
    for (const w of [...this.#waiters]) w();
  }

  /** Releases every waiter now and later ones at once. */
  close(): void {
    this.#closed = true;
    this.notify();
  }

  /** Resolves when `cond()` holds, the waiters are closed, or `waitMs` passed. */
  waitFor(cond: () => boolean): Promise<void> {
    if (cond() || this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      const check = () => {
        if (cond() || this.#closed) done();
      };
      const timer = setTimeout(done, this.#waitMs);
      this.#waiters.add(check);
    });
  }
}

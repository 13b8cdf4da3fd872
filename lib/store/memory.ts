/**
 * In-memory config store (`mem://`): full {@link ConfigStore} semantics without persistence.
 * @module
 */
import { allSchemas } from "../model/mod.ts";
import type { ConfigObject, TypeSchema } from "../model/types.ts";
import {
  alreadyExists,
  attempt,
  byNsName,
  mustCheck,
  notFound,
  nsName,
  SchemaSet,
  staleVersion,
  Watchers,
} from "./_common.ts";
import type { ConfigStore, StoreEvent } from "./types.ts";

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** Namespace given to objects without one (default "default"). */
  defaultNamespace?: string;
}

/**
 * Creates an in-memory store holding `schemas` (default: every schema of the model).
 *
 * - `resourceVersion` is a store-wide counter (a decimal string) bumped on every write.
 * - create → {@link ConflictError} when the object exists; update → ConflictError when the given
 *   `metadata.resourceVersion` is stale; update/delete of a missing object → {@link NotFoundError}.
 * - Every object is validated on the way in (ValidationError listing every issue).
 * - Watch handlers get ADDED/MODIFIED/DELETED synchronously, in write order.
 * - Objects handed out are copies: mutating them never changes the store.
 */
export function createMemoryStore(
  schemas: readonly TypeSchema[] = allSchemas,
  options: MemoryStoreOptions = {},
): ConfigStore {
  const set = new SchemaSet(schemas);
  const defaultNamespace = options.defaultNamespace ?? "default";
  const data = new Map<string, Map<string, ConfigObject>>(schemas.map((s) => [s.type, new Map()]));
  const watchers = new Watchers();
  let counter = 0;
  let closed = false;

  const table = (type: string) => {
    set.require(type);
    return data.get(type)!;
  };
  const assertOpen = () => {
    if (closed) throw new Error("Config store is closed");
  };

  return {
    schemas,
    get(type, name, namespace) {
      return attempt(() => {
        const o = table(type).get(nsName(namespace, name));
        return o && structuredClone(o);
      });
    },
    list(type, namespace) {
      return attempt(() =>
        [...table(type).values()]
          .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
          .sort(byNsName)
          .map((o) => structuredClone(o))
      );
    },
    create(raw) {
      return attempt(() => {
        assertOpen();
        const { object, schema } = mustCheck(raw, set, defaultNamespace);
        const t = data.get(schema.type)!;
        const key = nsName(object.metadata.namespace!, object.metadata.name);
        if (t.has(key)) {
          throw alreadyExists(schema.kind, object.metadata.name, object.metadata.namespace!);
        }
        object.metadata.resourceVersion = String(++counter);
        t.set(key, object);
        watchers.emit("ADDED", object);
        return structuredClone(object);
      });
    },
    update(raw) {
      return attempt(() => {
        assertOpen();
        const { object, schema } = mustCheck(raw, set, defaultNamespace);
        const t = data.get(schema.type)!;
        const key = nsName(object.metadata.namespace!, object.metadata.name);
        const old = t.get(key);
        if (!old) {
          throw notFound(schema.kind, object.metadata.name, object.metadata.namespace!);
        }
        const given = object.metadata.resourceVersion;
        if (given && given !== old.metadata.resourceVersion) {
          throw staleVersion(
            schema.kind,
            object.metadata.name,
            object.metadata.namespace!,
            given,
            old.metadata.resourceVersion,
          );
        }
        object.metadata.resourceVersion = String(++counter);
        t.set(key, object);
        watchers.emit("MODIFIED", object);
        return structuredClone(object);
      });
    },
    delete(type, name, namespace) {
      return attempt(() => {
        assertOpen();
        const t = table(type);
        const key = nsName(namespace, name);
        const old = t.get(key);
        if (!old) {
          throw notFound(set.require(type).kind, name, namespace);
        }
        t.delete(key);
        watchers.emit("DELETED", old);
      });
    },
    watch(handler: (event: StoreEvent) => void, kinds?: readonly string[]) {
      return watchers.add(handler, kinds);
    },
    close() {
      closed = true;
      watchers.clear();
      return Promise.resolve();
    },
  };
}

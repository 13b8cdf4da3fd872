/**
 * The config store contract: one interface, three implementations (file, orchestrator, memory).
 * @module
 */
import type { ConfigObject, TypeSchema } from "../model/types.ts";

/** A change seen by a watch. */
export interface StoreEvent {
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: ConfigObject;
}

/** Optimistic-concurrency failure: the stored resourceVersion differs, or the object already exists. */
export class ConflictError extends Error {
  override name = "ConflictError";
}

/** The object does not exist. */
export class NotFoundError extends Error {
  override name = "NotFoundError";
}

/** The object failed validation; `issues` lists every problem. */
export class ValidationError extends Error {
  override name = "ValidationError";
  constructor(
    message: string,
    readonly issues: { object: string; path: string; reason: string }[],
  ) {
    super(message);
  }
}

/** Orders objects by (namespace, name): the order of every store's list(). */
export function byNsName(a: ConfigObject, b: ConfigObject): number {
  const an = a.metadata.namespace ?? "";
  const bn = b.metadata.namespace ?? "";
  if (an !== bn) return an < bn ? -1 : 1;
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

/**
 * A configuration store. `type` arguments are schema type names (`virtualservice`).
 * `namespace` undefined in list() means all namespaces; list() returns objects in
 * {@link byNsName} order.
 */
export interface ConfigStore {
  /** The types this store holds. */
  readonly schemas: readonly TypeSchema[];
  get(type: string, name: string, namespace: string): Promise<ConfigObject | undefined>;
  list(type: string, namespace?: string): Promise<ConfigObject[]>;
  /** Creates; fails with ConflictError when it exists. Returns the stored object (with resourceVersion). */
  create(obj: ConfigObject): Promise<ConfigObject>;
  /** Updates; `metadata.resourceVersion` must match the stored one (ConflictError) when given. */
  update(obj: ConfigObject): Promise<ConfigObject>;
  /** Deletes; NotFoundError when missing. */
  delete(type: string, name: string, namespace: string): Promise<void>;
  /**
   * Delivers every later change, in order; with `kinds` (e.g. `["ServiceEntry"]`), only the
   * changes of those kinds (a store may deliver others too: a handler still checks the kind).
   * Returns a handle to stop.
   */
  watch(handler: (event: StoreEvent) => void, kinds?: readonly string[]): { close(): void };
  /** Stops background work (file polling, orchestrator watches). */
  close(): Promise<void>;
  /**
   * Why this store's view is not being kept up to date (e.g. its directory cannot be read), or
   * `undefined`; stores that cannot tell leave it out. Readiness reports it.
   */
  stalled?(): string | undefined;
}

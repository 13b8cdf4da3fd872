/**
 * Private helpers shared by the store implementations.
 * @module
 */
import { getLogger, type Logger } from "../log/mod.ts";
import { deepEqual, escapeControl, MAX_DEPTH, normalizeObject, quote } from "../model/mod.ts";
import type { ConfigObject, TypeSchema, ValidationIssue } from "../model/types.ts";
import { ConflictError, NotFoundError, type StoreEvent, ValidationError } from "./types.ts";

/** `<Kind>/<namespace>/<name>` of an object. */
export function describe(obj: ConfigObject): string {
  return escapeControl(`${obj.kind}/${obj.metadata.namespace ?? ""}/${obj.metadata.name}`);
}

/** The map key of an object within one type. */
export function nsName(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** Equality of two config objects ignoring `metadata.resourceVersion`. */
export function sameContent(a: ConfigObject, b: ConfigObject): boolean {
  const strip = (o: ConfigObject) => ({
    ...o,
    metadata: { ...o.metadata, resourceVersion: undefined },
  });
  return deepEqual(strip(a), strip(b));
}

/** A logger that drops every record (stores opened with `log: false`). */
const SILENT_LOGGER: Logger = Object.freeze({
  debug() {},
  info() {},
  warn() {},
  error() {},
});

/**
 * The logger a store uses: the injected one, none for `false` (the caller reports problems itself,
 * e.g. meshctl through `errors()`), else the `default` scope of lib/log.
 */
export function storeLogger(log: Logger | false | undefined): Logger {
  if (log === false) return SILENT_LOGGER;
  return log ?? getLogger("default");
}

/**
 * JSON text of a value with object keys sorted (undefined members dropped), for hashing. Objects
 * here passed validation (nesting bounded by MAX_DEPTH); deeper ones throw a clear error, never
 * a stack overflow.
 */
export function canonicalJson(v: unknown, depth = 0): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (depth > 4 * MAX_DEPTH) throw new Error(`object is nested deeper than ${4 * MAX_DEPTH}`);
  if (Array.isArray(v)) {
    return `[${v.map((x) => canonicalJson(x === undefined ? null : x, depth + 1)).join(",")}]`;
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k], depth + 1)}`).join(",")}}`;
}

/**
 * A resourceVersion derived from an object's content: the low 12 hex digits of a 53-bit hash (cyrb53) of
 * its canonical JSON without `metadata.resourceVersion`. The same content gives the same value in
 * every process, so a value read by one run stays valid for the next until the object changes.
 */
export function contentVersion(obj: ConfigObject): string {
  const text = canonicalJson({ ...obj, metadata: { ...obj.metadata, resourceVersion: undefined } });
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  const n = 4294967296 * (2097151 & h2) + (h1 >>> 0);
  return n.toString(16).padStart(14, "0").slice(-12);
}

/**
 * Fan-out of store events to watch handlers; a throwing handler is logged, never breaks others.
 * Each handler gets its own deep copy of each event's object, and only of the kinds it watches.
 */
export class Watchers {
  /** Each handler, and the kinds it watches (undefined: every kind). */
  #handlers = new Map<(event: StoreEvent) => void, ReadonlySet<string> | undefined>();

  /** `log` receives the failures of handlers (default: the `default` scope). */
  constructor(readonly log: Logger = getLogger("default")) {}

  /**
   * Registers a handler for events of `kinds` (every kind when undefined); the returned handle
   * removes it.
   */
  add(handler: (event: StoreEvent) => void, kinds?: readonly string[]): { close(): void } {
    const h = (e: StoreEvent) => handler(e);
    this.#handlers.set(h, kinds && new Set(kinds));
    return { close: () => void this.#handlers.delete(h) };
  }

  /** The handlers watching `kind`, in registration order. */
  #watching(kind: string): ((event: StoreEvent) => void)[] {
    const out = [];
    for (const [h, kinds] of this.#handlers) if (!kinds || kinds.has(kind)) out.push(h);
    return out;
  }

  /** Delivers one event (a deep copy per handler) to every handler, in registration order. */
  emit(type: StoreEvent["type"], object: ConfigObject): void {
    for (const h of this.#watching(object.kind)) {
      this.#call(h, { type, object: structuredClone(object) });
    }
  }

  /**
   * Makes the copies of many events for the current handlers, pausing when `slicer` says so, and
   * returns what delivers them all at once (as many {@link emit} calls in a row: handlers never
   * see part of the batch). A handler added meanwhile gets copies made at delivery; one removed
   * gets nothing.
   */
  async prepare(
    events: readonly StoreEvent[],
    slicer: { pause(): Promise<void> },
  ): Promise<() => void> {
    const copies = new Map<(e: StoreEvent) => void, (StoreEvent | undefined)[]>();
    for (const h of this.#handlers.keys()) copies.set(h, []);
    for (const ev of events) {
      for (const [h, list] of copies) {
        const kinds = this.#handlers.get(h);
        list.push(
          !kinds || kinds.has(ev.object.kind)
            ? { type: ev.type, object: structuredClone(ev.object) }
            : undefined,
        );
      }
      await slicer.pause();
    }
    return () => {
      const byKind = new Map<string, ((event: StoreEvent) => void)[]>();
      for (const [i, ev] of events.entries()) {
        let watching = byKind.get(ev.object.kind);
        if (!watching) byKind.set(ev.object.kind, watching = this.#watching(ev.object.kind));
        for (const h of watching) {
          if (!this.#handlers.has(h)) continue; // closed by a handler meanwhile
          this.#call(
            h,
            copies.get(h)?.[i] ?? { type: ev.type, object: structuredClone(ev.object) },
          );
        }
      }
    };
  }

  #call(h: (event: StoreEvent) => void, ev: StoreEvent): void {
    try {
      h(ev);
    } catch (err) {
      this.log.error(
        `Config store watch handler failed on ${ev.type} ${describe(ev.object)}: ${
          (err as Error).message
        }`,
      );
    }
  }

  /** Drops every handler. */
  clear(): void {
    this.#handlers.clear();
  }
}

/** Lookup of a store's schemas by type name. */
export class SchemaSet {
  readonly byType: ReadonlyMap<string, TypeSchema>;

  constructor(readonly schemas: readonly TypeSchema[]) {
    this.byType = new Map(schemas.map((s) => [s.type, s]));
  }

  /** The schema of `type`; throws Error naming the type when this store does not hold it. */
  require(type: string): TypeSchema {
    const s = this.byType.get(type);
    if (!s) {
      throw new Error(
        `Unknown config type "${type}" (this store holds: ${[...this.byType.keys()].join(", ")})`,
      );
    }
    return s;
  }
}

/** Result of {@link checkObject}. `schema` is the model's type when apiVersion/kind are known. */
export type CheckResult =
  | { ok: true; object: ConfigObject; schema: TypeSchema }
  | {
    ok: false;
    issues: ValidationIssue[];
    schema?: TypeSchema;
    unknownKind?: boolean;
    notHeld?: boolean;
  };

/**
 * Validates and normalises a raw object for a store: the namespace defaults to `defaultNamespace`,
 * the group is rewritten to ours, the type must be one the store holds. `unknownKind` tells that
 * the model does not know the kind at all.
 */
export function checkObject(
  raw: unknown,
  set: SchemaSet,
  label: string,
  defaultNamespace: string,
): CheckResult {
  const res = normalizeObject(raw, label, { defaultNamespace });
  const held = res.schema ? set.byType.get(res.schema.type) : undefined;
  if (res.issues.length > 0 || !res.object) {
    const issues = res.issues.length
      ? res.issues
      : [{ object: label, path: "", reason: "invalid object" }];
    const unknownKind = !res.schema &&
      issues.some((i) => i.path === "kind" && i.reason.startsWith("unknown kind"));
    return { ok: false, issues, schema: held, unknownKind };
  }
  if (!held) {
    return {
      ok: false,
      notHeld: true,
      issues: [{
        object: label,
        path: "kind",
        reason: `kind ${res.object.kind} (${res.object.apiVersion}) is not held by this store`,
      }],
    };
  }
  res.object.metadata.namespace ??= defaultNamespace;
  return { ok: true, object: res.object, schema: held };
}

/** One-line text of validation issues: `Kind/ns/name: spec.x: reason; ...`. */
export function issuesText(issues: readonly ValidationIssue[], omitObject?: string): string {
  return issues
    .map((i) =>
      `${i.object === omitObject ? "" : i.object + ": "}${i.path ? i.path + ": " : ""}${i.reason}`
    )
    .join("; ");
}

/** Like {@link checkObject} but throws {@link ValidationError} listing every issue. */
export function mustCheck(
  raw: unknown,
  set: SchemaSet,
  defaultNamespace: string,
): { object: ConfigObject; schema: TypeSchema } {
  const label = labelOf(raw);
  const r = checkObject(raw, set, label, defaultNamespace);
  if (!r.ok) throw new ValidationError(`Invalid config: ${issuesText(r.issues)}`, r.issues);
  return { object: r.object, schema: r.schema };
}

/** A label for an object before validation: `Kind/ns/name` when readable, else `object`. */
function labelOf(raw: unknown): string {
  if (typeof raw !== "object" || raw === null) return "object";
  const r = raw as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } };
  // input: anything odd (newlines, spaces, long values) is quoted so it cannot forge lines
  const safe = (v: unknown) =>
    typeof v === "string" && /^[\w.:-]{0,253}$/.test(v) ? v : typeof v === "string" ? quote(v) : "";
  const kind = typeof r.kind === "string" ? safe(r.kind) : "object";
  const name = safe(r.metadata?.name);
  const ns = safe(r.metadata?.namespace);
  return name ? `${kind}/${ns}/${name}` : kind;
}

/** The error of every store for an object that does not exist. */
export function notFound(kind: string, name: string, namespace: string): NotFoundError {
  return new NotFoundError(`${kind} "${name}" not found in namespace "${namespace}"`);
}

/** The error of every store for a create of an object that exists. */
export function alreadyExists(kind: string, name: string, namespace: string): ConflictError {
  return new ConflictError(`${kind} "${name}" already exists in namespace "${namespace}"`);
}

/** The error of every store for an update whose `resourceVersion` is not the current one. */
export function staleVersion(
  kind: string,
  name: string,
  namespace: string,
  given: string,
  current: string | undefined,
): ConflictError {
  return new ConflictError(
    `${kind} "${name}" in namespace "${namespace}" was modified: resourceVersion ` +
      `"${given}" is stale (current "${current}")`,
  );
}

export { byNsName } from "./types.ts";

/** Runs `fn` and returns its result as a promise (a throw becomes a rejection). */
export function attempt<T>(fn: () => T | Promise<T>): Promise<T> {
  return new Promise<T>((resolve) => resolve(fn()));
}

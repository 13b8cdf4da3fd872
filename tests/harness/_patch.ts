/**
 * Patch algorithms used by the fake Kubernetes API server: JSON merge patch (RFC 7386),
 * JSON patch (RFC 6902) and a practical subset of Kubernetes strategic merge patch.
 *
 * @module
 */

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** Thrown when a patch document cannot be applied; the message is user-facing. */
export class PatchError extends Error {
  /** HTTP status the server should answer with (400, 409 or 422). */
  readonly code: number;
  constructor(message: string, code = 400) {
    super(message);
    this.name = "PatchError";
    this.code = code;
  }
}

/** True when `v` is a plain JSON object (not an array, not null). */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Deep copy of a JSON value. */
export function clone<T>(v: T): T {
  return structuredClone(v);
}

/** Structural equality of two JSON values (object key order ignored). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

/** Applies an RFC 7386 JSON merge patch to `target` and returns the result (inputs untouched). */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function unescapePointer(token: string): string {
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}

function parsePointer(pointer: unknown, field: string): string[] {
  if (typeof pointer !== "string") {
    throw new PatchError(`json patch: "${field}" must be a string`);
  }
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) {
    throw new PatchError(`json patch: invalid pointer "${pointer}": must start with "/"`);
  }
  return pointer.slice(1).split("/").map(unescapePointer);
}

function arrayIndex(arr: Json[], token: string, forInsert: boolean, pointer: string): number {
  if (forInsert && token === "-") return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) {
    throw new PatchError(`json patch: invalid array index "${token}" in "${pointer}"`);
  }
  const i = Number(token);
  if (i > arr.length || (!forInsert && i === arr.length)) {
    throw new PatchError(`json patch: array index ${i} out of range in "${pointer}"`);
  }
  return i;
}

function getAt(doc: Json, path: string[], pointer: string): Json {
  let cur: Json = doc;
  for (const token of path) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(cur, token, false, pointer)];
    else if (isObject(cur) && token in cur) cur = cur[token];
    else throw new PatchError(`json patch: path "${pointer}" does not exist`);
  }
  return cur;
}

function parentOf(doc: Json, path: string[], pointer: string): Json {
  return getAt(doc, path.slice(0, -1), pointer);
}

function addAt(doc: Json, path: string[], value: Json, pointer: string): Json {
  if (path.length === 0) return clone(value);
  const parent = parentOf(doc, path, pointer);
  const last = path[path.length - 1];
  if (Array.isArray(parent)) {
    parent.splice(arrayIndex(parent, last, true, pointer), 0, clone(value));
  } else if (isObject(parent)) parent[last] = clone(value);
  else throw new PatchError(`json patch: parent of "${pointer}" is not a container`);
  return doc;
}

function removeAt(doc: Json, path: string[], pointer: string): Json {
  if (path.length === 0) return null;
  const parent = parentOf(doc, path, pointer);
  const last = path[path.length - 1];
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, false, pointer), 1);
  else if (isObject(parent) && last in parent) delete parent[last];
  else throw new PatchError(`json patch: path "${pointer}" does not exist`);
  return doc;
}

/** Applies an RFC 6902 JSON patch (add, remove, replace, move, copy, test) to a copy of `target`. */
export function jsonPatch(target: Json, ops: Json): Json {
  if (!Array.isArray(ops)) throw new PatchError("json patch: body must be a JSON array");
  let doc = clone(target);
  for (const [i, op] of ops.entries()) {
    if (!isObject(op)) throw new PatchError(`json patch: operation ${i} must be an object`);
    const kind = op.op;
    const path = parsePointer(op.path, "path");
    const pointer = op.path as string;
    switch (kind) {
      case "add":
        if (!("value" in op)) throw new PatchError(`json patch: operation ${i} lacks "value"`);
        doc = addAt(doc, path, op.value, pointer);
        break;
      case "remove":
        doc = removeAt(doc, path, pointer);
        break;
      case "replace":
        if (!("value" in op)) throw new PatchError(`json patch: operation ${i} lacks "value"`);
        getAt(doc, path, pointer);
        doc = addAt(removeAt(doc, path, pointer), path, op.value, pointer);
        break;
      case "move": {
        const from = parsePointer(op.from, "from");
        const value = clone(getAt(doc, from, op.from as string));
        doc = addAt(removeAt(doc, from, op.from as string), path, value, pointer);
        break;
      }
      case "copy": {
        const from = parsePointer(op.from, "from");
        doc = addAt(doc, path, clone(getAt(doc, from, op.from as string)), pointer);
        break;
      }
      case "test":
        if (!deepEqual(getAt(doc, path, pointer), op.value ?? null)) {
          throw new PatchError(`json patch: test failed at "${pointer}"`, 422);
        }
        break;
      default:
        throw new PatchError(`json patch: unknown operation "${String(kind)}"`);
    }
  }
  return doc;
}

/** Merge keys of well-known Kubernetes list fields, by field name. */
const MERGE_KEYS: Record<string, string[]> = {
  containers: ["name"],
  initContainers: ["name"],
  ephemeralContainers: ["name"],
  volumes: ["name"],
  env: ["name"],
  envFrom: [],
  imagePullSecrets: ["name"],
  volumeMounts: ["mountPath"],
  volumeDevices: ["devicePath"],
  ports: ["port", "containerPort"],
  conditions: ["type"],
  hostAliases: ["ip"],
  tolerations: [],
  topologySpreadConstraints: ["topologyKey"],
  ownerReferences: ["uid"],
  secrets: ["name"],
  webhooks: ["name"],
  subsets: [],
  addresses: ["ip"],
  endpoints: [],
};

function mergeKeyFor(field: string, items: Json[]): string | undefined {
  const candidates = MERGE_KEYS[field] ?? ["name"];
  return candidates.find((k) => items.every((it) => isObject(it) && k in it));
}

/**
 * Applies a Kubernetes strategic merge patch: like a JSON merge patch, except that lists of objects
 * with a known merge key (`name`, `port`, `containerPort`, `mountPath`, `type`...) are merged item
 * by item, and the directives `$patch` (`delete`, `replace`, `merge`), `$retainKeys`,
 * `$setElementOrder/<field>` and `$deleteFromPrimitiveList/<field>` are honoured. Other lists
 * are replaced.
 */
export function strategicMergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  if (patch.$patch === "replace") {
    const copy = clone(patch);
    delete copy.$patch;
    return stripDirectives(copy);
  }
  if (patch.$patch === "delete") return null;
  let out: JsonObject = isObject(target) ? clone(target) : {};
  const order: Record<string, Json[]> = {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === "$patch") continue;
    if (k === "$retainKeys") {
      if (Array.isArray(v)) {
        const keep = new Set(v.map(String));
        out = Object.fromEntries(Object.entries(out).filter(([key]) => keep.has(key)));
      }
      continue;
    }
    if (k.startsWith("$setElementOrder/")) {
      if (Array.isArray(v)) order[k.slice("$setElementOrder/".length)] = v;
      continue;
    }
    if (k.startsWith("$deleteFromPrimitiveList/")) {
      const field = k.slice("$deleteFromPrimitiveList/".length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) {
        out[field] = cur.filter((x) => !v.some((d) => deepEqual(d, x)));
      }
      continue;
    }
    if (v === null) {
      delete out[k];
    } else if (Array.isArray(v)) {
      out[k] = mergeList(k, out[k], v);
    } else if (isObject(v)) {
      const merged = strategicMergePatch(out[k], v);
      if (merged === null) delete out[k];
      else out[k] = merged;
    } else {
      out[k] = v;
    }
  }
  for (const [field, wanted] of Object.entries(order)) {
    const cur = out[field];
    if (Array.isArray(cur)) out[field] = applyOrder(field, cur, wanted);
  }
  return out;
}

function stripDirectives(v: Json): Json {
  if (Array.isArray(v)) return v.map(stripDirectives);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) {
    if (!k.startsWith("$")) out[k] = stripDirectives(x);
  }
  return out;
}

function mergeList(field: string, current: Json | undefined, patch: Json[]): Json[] {
  const objects = patch.filter(isObject);
  if (objects.length !== patch.length || objects.length === 0) {
    return stripDirectives(patch) as Json[];
  }
  if (objects.some((o) => o.$patch === "replace")) {
    return stripDirectives(objects.filter((o) => o.$patch !== "replace")) as Json[];
  }
  const cur = Array.isArray(current) ? current : [];
  const key = mergeKeyFor(field, patch.filter((o) => !(isObject(o) && o.$patch === "delete")));
  const keyOfDeletes = mergeKeyFor(field, patch);
  if (key === undefined && keyOfDeletes === undefined) return stripDirectives(patch) as Json[];
  const k = (key ?? keyOfDeletes) as string;
  const out = cur.map((x) => clone(x));
  for (const item of objects) {
    const idx = out.findIndex((x) => isObject(x) && deepEqual(x[k], item[k]));
    if (item.$patch === "delete") {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = strategicMergePatch(out[idx], item);
    else out.push(strategicMergePatch(undefined, item));
  }
  return out;
}

function applyOrder(field: string, items: Json[], wanted: Json[]): Json[] {
  const key = mergeKeyFor(field, wanted);
  if (key === undefined) return items;
  const rank = (x: Json) => {
    const i = wanted.findIndex((w) => isObject(w) && isObject(x) && deepEqual(w[key], x[key]));
    return i < 0 ? wanted.length : i;
  };
  return [...items].sort((a, b) => rank(a) - rank(b));
}

/**
 * A small declarative schema language for configuration specs. A schema validates a decoded
 * JSON/YAML value (reporting every problem with its field path) and emits the OpenAPI v3
 * (structural) schema used in the CRD manifests.
 *
 * @example
 * ```ts
 * const s = obj({ host: host(), weight: percent() }, { required: ["host"] });
 * validate(s, { weight: 120 }, "spec");
 * // [{path: "spec.host", reason: "is required"}, {path: "spec.weight", reason: "must be between 0 and 100"}]
 * ```
 * @module
 */
import {
  checkDuration,
  checkHost,
  checkLabelKey,
  checkLabelValue,
  DURATION_PATTERN,
  formatDuration as fmtMs,
  parseDurationMs,
  quote,
} from "./values.ts";
import { snakeCase } from "./proto_names.ts";

/** One problem: field path (`spec.http[0].timeout`) and reason. */
export interface Issue {
  path: string;
  reason: string;
}

/** Cross-field check of a value that is otherwise valid; pushes issues. */
export type Check<T> = (value: T, path: string, issues: Issue[]) => void;

interface Common {
  description?: string;
}

/** A string, optionally an enum, optionally checked by `check` (returns a reason). */
export interface StringSchema extends Common {
  type: "string";
  enum?: readonly string[];
  /** Enum values compare case-insensitively (port protocols). */
  caseInsensitive?: boolean;
  check?: (s: string) => string | undefined;
  /** Extra OpenAPI properties (pattern, format). */
  openapi?: Record<string, unknown>;
  /**
   * Proto number of the first enum value (the others follow in order), so that numeric input
   * (`resolution: 2`) is read as the name, as proto JSON parsers do. `false`: names only.
   * Default 0 for enums (not for case-insensitive ones, which are plain strings in the protos).
   */
  enumBase?: number | false;
}

/** An integer with optional bounds. */
export interface IntegerSchema extends Common {
  type: "integer";
  min?: number;
  max?: number;
  format?: "int32" | "int64" | "uint32";
}

/** A number with optional bounds. */
export interface NumberSchema extends Common {
  type: "number";
  min?: number;
  max?: number;
}

/** A boolean. */
export interface BooleanSchema extends Common {
  type: "boolean";
}

/** A oneof group: at most one of `fields` may be set; with `required`, exactly one. */
export interface OneOf {
  fields: readonly string[];
  required?: boolean;
}

/** An object (proto message) with known fields; unknown fields are reported. */
export interface ObjectSchema extends Common {
  type: "object";
  fields: Record<string, Schema>;
  required?: readonly string[];
  oneofs?: readonly OneOf[];
  check?: Check<Record<string, unknown>>;
}

/** A list. */
export interface ArraySchema extends Common {
  type: "array";
  items: Schema;
  minItems?: number;
  check?: Check<unknown[]>;
}

/** A map with string keys. */
export interface MapSchema extends Common {
  type: "map";
  values: Schema;
  checkKey?: (key: string) => string | undefined;
}

/** Any value (`object: true` requires an object); emitted with preserve-unknown-fields. */
export interface AnySchema extends Common {
  type: "any";
  object?: boolean;
  check?: Check<unknown>;
}

/** A schema node. */
export type Schema =
  | StringSchema
  | IntegerSchema
  | NumberSchema
  | BooleanSchema
  | ObjectSchema
  | ArraySchema
  | MapSchema
  | AnySchema;

// ---- builders ---------------------------------------------------------------------------------

/** A string field. */
export function str(opts: Omit<StringSchema, "type"> = {}): StringSchema {
  return { type: "string", ...opts };
}

/** An enum (string names of a proto enum). */
export function enumOf(
  values: readonly string[],
  opts: Omit<StringSchema, "type" | "enum"> = {},
): StringSchema {
  return { type: "string", enum: values, ...opts };
}

/** An integer field, optionally bounded. */
export function int(opts: Omit<IntegerSchema, "type"> = {}): IntegerSchema {
  return { type: "integer", format: "int32", ...opts };
}

/** A floating-point field, optionally bounded. */
export function num(opts: Omit<NumberSchema, "type"> = {}): NumberSchema {
  return { type: "number", ...opts };
}

/** A boolean field. */
export function bool(opts: Omit<BooleanSchema, "type"> = {}): BooleanSchema {
  return { type: "boolean", ...opts };
}

/** A message with the given fields. */
export function obj(
  fields: Record<string, Schema>,
  opts: Omit<ObjectSchema, "type" | "fields"> = {},
): ObjectSchema {
  return { type: "object", fields, ...opts };
}

/** A list of `items`. */
export function arr(items: Schema, opts: Omit<ArraySchema, "type" | "items"> = {}): ArraySchema {
  return { type: "array", items, ...opts };
}

/** A string-keyed map of `values`. */
export function map(values: Schema, opts: Omit<MapSchema, "type" | "values"> = {}): MapSchema {
  return { type: "map", values, ...opts };
}

/** Any value; with `object: true` it must be an object of arbitrary shape. */
export function any(opts: Omit<AnySchema, "type"> = {}): AnySchema {
  return { type: "any", ...opts };
}

/** A duration string (`5s`, `0.5s`, `300ms`, `1m30s`), optionally bounded (milliseconds). */
export function duration(
  opts: { min?: number; max?: number; description?: string } = {},
): StringSchema {
  return str({
    description: opts.description ?? "duration such as 300ms, 5s, 1m30s",
    openapi: { pattern: DURATION_PATTERN },
    check: (s) => {
      const bad = checkDuration(s);
      if (bad) return bad;
      const ms = parseMs(s);
      if (opts.min !== undefined && ms < opts.min) {
        return `duration ${quote(s)} must be at least ${fmtMs(opts.min)}`;
      }
      if (opts.max !== undefined && ms > opts.max) {
        return `duration ${quote(s)} must be at most ${fmtMs(opts.max)}`;
      }
      return undefined;
    },
  });
}

function parseMs(s: string): number {
  return parseDurationMs(s) ?? NaN;
}

/** A service host: FQDN, short name, IP, or (unless `wildcard: false`) `*.suffix` / `*`. */
export function host(opts: { wildcard?: boolean } = {}): StringSchema {
  const wildcard = opts.wildcard ?? true;
  return str({ description: "service host name", check: (s) => checkHost(s, wildcard) });
}

/** A port number 1..65535. */
export function port(): IntegerSchema {
  return int({ min: 1, max: 65535, format: "uint32" });
}

/** An integer percentage 0..100. */
export function percent(): IntegerSchema {
  return int({ min: 0, max: 100 });
}

/** Kubernetes-style labels: map of label keys to label values. */
export function labels(): MapSchema {
  return map(str({ check: checkLabelValue }), { checkKey: checkLabelKey });
}

/** Map of strings to strings. */
export function stringMap(): MapSchema {
  return map(str());
}

// ---- validation -------------------------------------------------------------------------------

/** Path of a map key: `.key` for simple keys, `["odd key"]` otherwise. */
export function keyPath(path: string, key: string): string {
  if (path === "") return /^[A-Za-z_$][\w$-]*$/.test(key) ? key : `[${quote(key)}]`;
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `${path}.${key}` : `${path}[${quote(key)}]`;
}

/** Short description of a value for "got ..." messages. */
export function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "string") {
    return `string ${quote(v.length > 40 ? v.slice(0, 40) + "..." : v)}`;
  }
  if (typeof v === "number") return `number ${v}`;
  if (typeof v === "boolean") return `boolean ${v}`;
  if (typeof v === "object") return "an object";
  return typeof v;
}

/** True when a field counts as "not set" (proto3 semantics: absent, null, "", []). */
export function isUnset(v: unknown): boolean {
  return v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Validates `value` against `schema`; returns every problem found, each with its path
 * under `path` (for specs: `spec`). Cross-field checks run only on subtrees that are
 * otherwise valid, so a problem is not reported twice. The value is read as
 * {@link canonicalize} reads it (snake_case names, quoted integers, enum numbers accepted).
 */
export function validate(schema: Schema, value: unknown, path: string): Issue[] {
  const issues: Issue[] = [];
  walk(schema, canonicalize(schema, value, path, issues), path, issues);
  return issues;
}

export { snakeCase };

const snakeNames = new WeakMap<ObjectSchema, Map<string, string>>();

function snakeToCamel(s: ObjectSchema): Map<string, string> {
  let m = snakeNames.get(s);
  if (!m) {
    m = new Map();
    for (const f of Object.keys(s.fields)) {
      const snake = snakeCase(f);
      if (snake !== f) m.set(snake, f);
    }
    snakeNames.set(s, m);
  }
  return m;
}

/**
 * Returns a copy of `value` in the canonical proto JSON form, accepting what the reference
 * system's parser (jsonpb) accepts:
 * - a field under its proto (snake_case) name (`api_specs`) is renamed to its JSON name
 *   (`apiSpecs`); both spellings in one object is an issue naming both;
 * - integers written as strings (`number: "80"`) become numbers (64-bit fields stay strings);
 *   numbers written as strings (`"0.5"`) become numbers;
 * - enum values written as numbers (`resolution: 2`) become their names (`DNS`).
 *
 * Anything else is returned unchanged for {@link validate} to judge. Map keys and free-form
 * (`any`) values are never rewritten.
 */
export function canonicalize(s: Schema, v: unknown, path: string, out: Issue[]): unknown {
  if (v === null || v === undefined) return v;
  switch (s.type) {
    case "string": {
      if (typeof v === "number" && Number.isInteger(v) && s.enum && !s.caseInsensitive) {
        const base = s.enumBase ?? 0;
        if (base !== false && v >= base && v - base < s.enum.length) return s.enum[v - base];
      }
      return v;
    }
    case "integer":
      if (s.format !== "int64" && typeof v === "string" && /^-?\d+$/.test(v.trim())) {
        return Number(v.trim());
      }
      return v;
    case "number":
      if (typeof v === "string" && /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v.trim())) {
        return Number(v.trim());
      }
      return v;
    case "array":
      return Array.isArray(v) ? v.map((x, i) => canonicalize(s.items, x, `${path}[${i}]`, out)) : v;
    case "map": {
      if (!isPlainObject(v)) return v;
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        o[k] = canonicalize(s.values, x, keyPath(path, k), out);
      }
      return o;
    }
    case "object": {
      if (!isPlainObject(v)) return v;
      const snake = snakeToCamel(s);
      const o: Record<string, unknown> = {};
      const spelledAs = new Map<string, string>();
      for (const [k, x] of Object.entries(v)) {
        const name = s.fields[k] ? k : snake.get(k) ?? k;
        const first = spelledAs.get(name);
        if (first !== undefined) {
          out.push({
            path: keyPath(path, name),
            reason: `given twice, as ${quote(first)} and ${quote(k)}: use one spelling`,
          });
          continue;
        }
        spelledAs.set(name, k);
        const fs = s.fields[name];
        o[name] = fs ? canonicalize(fs, x, keyPath(path, name), out) : x;
      }
      return o;
    }
    case "boolean":
    case "any":
      return v;
  }
}

// long: one case per schema node kind of the validation DSL
function walk(s: Schema, v: unknown, path: string, out: Issue[]): void {
  if (v === null || v === undefined) return; // proto JSON: null means "not set"
  switch (s.type) {
    case "string": {
      const base = s.enumBase ?? 0;
      if (typeof v === "number" && s.enum && !s.caseInsensitive && base !== false) {
        out.push({
          path,
          reason: `must be one of ${s.enum.join(", ")} (or their numbers ${base} to ${
            base + s.enum.length - 1
          }), got ${describe(v)}`,
        });
        return;
      }
      if (typeof v !== "string") {
        out.push({ path, reason: `must be a string, got ${describe(v)}` });
        return;
      }
      if (s.enum) {
        const ok = s.caseInsensitive
          ? s.enum.some((e) => e.toLowerCase() === v.toLowerCase())
          : s.enum.includes(v);
        if (!ok) {
          out.push({
            path,
            reason: `must be one of ${s.enum.join(", ")}, got ${quote(v)}`,
          });
        }
        return;
      }
      const bad = v === "" ? undefined : s.check?.(v); // "" is proto3's "not set"
      if (bad) out.push({ path, reason: bad });
      return;
    }
    case "integer": {
      if (s.format === "int64" && typeof v === "string" && /^-?\d+$/.test(v)) {
        rangeCheck(s, Number(v), path, out);
        return;
      }
      if (typeof v !== "number" || !Number.isInteger(v)) {
        out.push({ path, reason: `must be an integer, got ${describe(v)}` });
        return;
      }
      rangeCheck(s, v, path, out);
      return;
    }
    case "number": {
      if (typeof v !== "number" || !Number.isFinite(v)) {
        out.push({ path, reason: `must be a number, got ${describe(v)}` });
        return;
      }
      rangeCheck(s, v, path, out);
      return;
    }
    case "boolean":
      if (typeof v !== "boolean") {
        out.push({ path, reason: `must be a boolean, got ${describe(v)}` });
      }
      return;
    case "array": {
      if (!Array.isArray(v)) {
        out.push({ path, reason: `must be a list, got ${describe(v)}` });
        return;
      }
      if (s.minItems !== undefined && v.length < s.minItems) {
        out.push({
          path,
          reason: `must have at least ${s.minItems} item${s.minItems === 1 ? "" : "s"}`,
        });
      }
      const before = out.length;
      v.forEach((item, i) => {
        if (item === null) out.push({ path: `${path}[${i}]`, reason: "must not be null" });
        else if (item === "" && s.items.type === "string" && (s.items.check || s.items.enum)) {
          // "" means "not set" for a single field; in a list of hosts or addresses it is an
          // entry that names nothing (and would become an empty Envoy address)
          out.push({ path: `${path}[${i}]`, reason: "must not be empty" });
        } else walk(s.items, item, `${path}[${i}]`, out);
      });
      if (out.length === before && s.check) s.check(v, path, out);
      return;
    }
    case "map": {
      if (!isPlainObject(v)) {
        out.push({ path, reason: `must be a map, got ${describe(v)}` });
        return;
      }
      for (const [k, item] of Object.entries(v)) {
        const p = keyPath(path, k);
        const badKey = s.checkKey?.(k);
        if (badKey) out.push({ path: p, reason: badKey });
        if (item === null && s.values.type !== "any") {
          out.push({ path: p, reason: "must not be null" });
        } else walk(s.values, item, p, out);
      }
      return;
    }
    case "any": {
      if (s.object && !isPlainObject(v)) {
        out.push({ path, reason: `must be an object, got ${describe(v)}` });
        return;
      }
      s.check?.(v, path, out);
      return;
    }
    case "object": {
      if (!isPlainObject(v)) {
        out.push({ path, reason: `must be an object, got ${describe(v)}` });
        return;
      }
      const before = out.length;
      for (const [k, item] of Object.entries(v)) {
        const fs = s.fields[k];
        if (!fs) {
          const known = Object.keys(s.fields);
          out.push({
            path: keyPath(path, k),
            reason: known.length
              ? `unknown field (known fields: ${known.join(", ")})`
              : "unknown field (no fields are allowed here)",
          });
        } else walk(fs, nullBranch(s, k, item) ? {} : item, keyPath(path, k), out);
      }
      for (const r of s.required ?? []) {
        const item = v[r];
        if (item === undefined || item === null || item === "") {
          out.push({ path: keyPath(path, r), reason: "is required" });
        } else if (Array.isArray(item) && item.length === 0) {
          out.push({ path: keyPath(path, r), reason: "must have at least 1 item" });
        }
      }
      for (const o of s.oneofs ?? []) {
        const set = o.fields.filter((f) =>
          v[f] !== undefined && (v[f] !== null || s.fields[f]?.type === "object")
        );
        if (set.length > 1) {
          out.push({
            path,
            reason: `only one of ${o.fields.join(", ")} may be set, got ${set.join(" and ")}`,
          });
        } else if (set.length === 0 && o.required) {
          out.push({ path, reason: `one of ${o.fields.join(", ")} is required` });
        }
      }
      if (out.length === before && s.check) s.check(v, path, out);
      return;
    }
  }
}

function rangeCheck(s: IntegerSchema | NumberSchema, v: number, path: string, out: Issue[]): void {
  if (s.min !== undefined && s.max !== undefined) {
    if (v < s.min || v > s.max) {
      out.push({ path, reason: `must be between ${s.min} and ${s.max}, got ${v}` });
    }
  } else if (s.min !== undefined && v < s.min) {
    out.push({ path, reason: `must be at least ${s.min}, got ${v}` });
  } else if (s.max !== undefined && v > s.max) {
    out.push({ path, reason: `must be at most ${s.max}, got ${v}` });
  }
}

// ---- OpenAPI ----------------------------------------------------------------------------------

/** The OpenAPI v3 structural schema of `s`, for `openAPIV3Schema` of a CRD. */
export function toOpenAPI(s: Schema): Record<string, unknown> {
  const base: Record<string, unknown> = {};
  if (s.description) base.description = s.description;
  switch (s.type) {
    case "string": {
      const out: Record<string, unknown> = { ...base, type: "string", ...s.openapi };
      if (s.enum && !s.caseInsensitive) out.enum = [...s.enum];
      return out;
    }
    case "integer": {
      if (s.format === "int64") return { ...base, "x-kubernetes-int-or-string": true };
      const out: Record<string, unknown> = { ...base, type: "integer", format: "int32" };
      if (s.min !== undefined) out.minimum = s.min;
      if (s.max !== undefined) out.maximum = s.max;
      return out;
    }
    case "number": {
      const out: Record<string, unknown> = { ...base, type: "number", format: "double" };
      if (s.min !== undefined) out.minimum = s.min;
      if (s.max !== undefined) out.maximum = s.max;
      return out;
    }
    case "boolean":
      return { ...base, type: "boolean" };
    case "array": {
      const out: Record<string, unknown> = { ...base, type: "array", items: toOpenAPI(s.items) };
      if (s.minItems) out.minItems = s.minItems;
      return out;
    }
    case "map":
      return { ...base, type: "object", additionalProperties: toOpenAPI(s.values) };
    case "any":
      return s.object
        ? { ...base, type: "object", "x-kubernetes-preserve-unknown-fields": true }
        : { ...base, "x-kubernetes-preserve-unknown-fields": true };
    case "object": {
      const props: Record<string, unknown> = {};
      for (const [k, f] of Object.entries(s.fields)) props[k] = toOpenAPI(f);
      const out: Record<string, unknown> = { ...base, type: "object" };
      if (Object.keys(props).length) out.properties = props;
      const required = (s.required ?? []).filter((r) => s.fields[r]);
      if (required.length) out.required = [...required];
      // A message member of a oneof may be written as null to select it (`peers: [{mtls: }]`):
      // keep such nulls (an API server prunes non-nullable nulls before validating, which would
      // then fail the oneOf below).
      for (const o of s.oneofs ?? []) {
        for (const f of o.fields) {
          const p = props[f] as Record<string, unknown> | undefined;
          if (p && s.fields[f]?.type === "object") props[f] = { ...p, nullable: true };
        }
      }
      const exactlyOne = (s.oneofs ?? []).filter((o) => o.required);
      if (exactlyOne.length === 1) {
        out.oneOf = exactlyOne[0].fields.map((f) => ({ required: [f] }));
      }
      return out;
    }
  }
}

// ---- normalization ----------------------------------------------------------------------------

/**
 * A `null` message member of a oneof (YAML `- mtls:`) selects that branch: it stands for `{}`,
 * both when it is validated (so the branch's required fields are checked) and when it is cleaned.
 */
function nullBranch(s: ObjectSchema, k: string, x: unknown): boolean {
  return x === null && s.fields[k]?.type === "object" &&
    (s.oneofs ?? []).some((o) => o.fields.includes(k));
}

/**
 * Returns a deep copy of a (valid) value with proto-JSON "not set" markers removed: `null`
 * fields are dropped, except a `null` message that is a member of a oneof (YAML `- mtls:`),
 * which becomes `{}` because naming it selects that branch.
 */
export function clean(s: Schema, v: unknown): unknown {
  if (v === null || v === undefined) return undefined;
  switch (s.type) {
    case "array":
      return Array.isArray(v) ? v.map((x) => clean(s.items, x)) : v;
    case "map": {
      if (!isPlainObject(v)) return v;
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const c = clean(s.values, x);
        if (c !== undefined) out[k] = c;
      }
      return out;
    }
    case "object": {
      if (!isPlainObject(v)) return v;
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const fs = s.fields[k];
        if (x === null) {
          if (nullBranch(s, k, x)) out[k] = {};
          continue;
        }
        out[k] = fs ? clean(fs, x) : JSON.parse(JSON.stringify(x));
      }
      return out;
    }
    case "any":
      // as JSON holds it (files, the orchestrator's API): what is stored reads back the same
      return JSON.parse(JSON.stringify(v));
    default:
      return Object.is(v, -0) ? 0 : v;
  }
}

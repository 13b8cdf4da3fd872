/**
 * Canonical proto3 JSON for xDS resources (what `/debug/adsz`, `/debug/cdsz`, `/debug/edsz` and
 * REST xDS print), driven by the protobufjs reflection data that `loadXdsProtos()` loaded; and the
 * one proto3 JSON reader (`ProtoJson.parse`, which mesh-agent's bootstrap check uses through
 * `lib/xds/pgv.ts`).
 *
 * The message layouts come from the `FileDescriptorProto`s protobufjs exports with every package
 * definition (decoded once, with field presence intact, so oneof members are known exactly), or
 * with {@link ProtoJson.fromReflection} from a protobufjs `Root`'s reflection tree. The printer
 * walks the fields of each message type recursively, in declaration order:
 *
 * - field names stay as in the .proto (snake_case), like Envoy's `config_dump`;
 * - fields at their default value are omitted, except oneof members and `optional` fields;
 *   proto-loader's oneof marker properties (`"address": "socket_address"`) are never printed;
 * - wrappers print their bare value, `Duration` `"1.500s"` (0, 3, 6 or 9 fractional digits),
 *   `Timestamp` RFC 3339, `Struct`/`Value`/`ListValue` plain JSON, `FieldMask` `"a.b,c"`, `Empty`
 *   `{}`, `Any` `{"@type": url, ...fields of the unpacked message}` (`{"@type", "value"}` for a
 *   well-known type inside);
 * - enums print their names, bytes base64, 64-bit integers strings, non-finite floats
 *   `"NaN"`/`"Infinity"`/`"-Infinity"`.
 *
 * Why not `@bufbuild/protobuf`'s `toJson`: measured in docs/ARCHITECTURE.md ("Proto3 JSON").
 *
 * {@link ProtoJson.parse} is the inverse: it turns proto3 JSON back into the object form that
 * protobufjs `fromObject` (and so `encodeAny`) accepts.
 * @module
 */

import { Buffer } from "node:buffer";

// deno-lint-ignore no-explicit-any
type Any = any;

interface FieldInfo {
  name: string;
  /** lowerCamelCase name (accepted by {@link ProtoJson.parse}). */
  jsonName: string;
  repeated: boolean;
  /** `TYPE_*` of descriptor.proto. */
  type: string;
  /** Resolved full name of a message or enum type. */
  typeName?: string;
  /** Member of a oneof (a real or a synthetic `optional` one): printed even at its default. */
  presence: boolean;
  /** Set for map fields: the value field of the entry. */
  mapValue?: FieldInfo;
}

interface MessageInfo {
  fullName: string;
  fields: FieldInfo[];
  byName: Map<string, FieldInfo>;
}

interface EnumInfo {
  names: Map<number, string>;
  zero: string | undefined;
}

interface RawField {
  name: string;
  label?: string;
  type?: string;
  typeName?: string;
  oneofIndex?: number;
  proto3Optional?: boolean;
  jsonName?: string;
}
interface RawMessage {
  name: string;
  field?: RawField[];
  nestedType?: RawMessage[];
  enumType?: RawEnum[];
  options?: { mapEntry?: boolean };
}
interface RawEnum {
  name: string;
  value?: { name: string; number?: number }[];
}

const WRAPPERS = new Set(
  ["Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"].map((t) =>
    `google.protobuf.${t}Value`
  ),
);
const WELL_KNOWN = new Set([
  ...WRAPPERS,
  "google.protobuf.Duration",
  "google.protobuf.Timestamp",
  "google.protobuf.Struct",
  "google.protobuf.Value",
  "google.protobuf.ListValue",
  "google.protobuf.FieldMask",
  "google.protobuf.Empty",
  "google.protobuf.Any",
]);
const VALUE_KINDS = [
  "null_value",
  "number_value",
  "string_value",
  "bool_value",
  "struct_value",
  "list_value",
];
const LONG_TYPES = new Set([
  "TYPE_INT64",
  "TYPE_UINT64",
  "TYPE_SINT64",
  "TYPE_FIXED64",
  "TYPE_SFIXED64",
]);
const FLOAT_TYPES = new Set(["TYPE_FLOAT", "TYPE_DOUBLE"]);

function lowerCamel(s: string): string {
  return s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function snake(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function shortName(typeUrl: string): string {
  return typeUrl.slice(typeUrl.lastIndexOf("/") + 1);
}

/** protobufjs scalar type name → descriptor `FieldDescriptorProto.Type` name (`int64` → `TYPE_INT64`). */
export const SCALAR_TYPES: Record<string, string> = Object.fromEntries(
  [
    "double",
    "float",
    "int64",
    "uint64",
    "int32",
    "fixed64",
    "fixed32",
    "bool",
    "string",
    "bytes",
    "uint32",
    "sfixed32",
    "sfixed64",
    "sint32",
    "sint64",
  ].map((t) => [t, `TYPE_${t.toUpperCase()}`]),
);

/** The `FieldInfo` of a resolved protobufjs field (a map field points at its value's type). */
function reflectedField(rf: Any): FieldInfo {
  const rt = rf.resolvedType;
  const type = SCALAR_TYPES[rf.type] ??
    (rt && !Array.isArray(rt.fieldsArray) ? "TYPE_ENUM" : "TYPE_MESSAGE");
  const typeName = rt ? String(rt.fullName).replace(/^\./, "") : undefined;
  const name = String(rf.name);
  const presence = rf.partOf !== null && rf.partOf !== undefined;
  if (!rf.map) {
    return {
      name,
      jsonName: lowerCamel(name),
      repeated: rf.repeated === true,
      type,
      typeName,
      presence,
    };
  }
  const mapValue: FieldInfo = {
    name: "value",
    jsonName: "value",
    repeated: false,
    type,
    typeName,
    presence: false,
  };
  return {
    name,
    jsonName: lowerCamel(name),
    repeated: true,
    type: "TYPE_MESSAGE",
    presence,
    mapValue,
  };
}

function bytesToBase64(v: unknown): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
  if (Array.isArray(v)) return Buffer.from(v as number[]).toString("base64");
  return v;
}

function longToString(v: unknown): string {
  if (typeof v === "bigint" || typeof v === "number" || typeof v === "string") return String(v);
  if (v && typeof v === "object" && typeof (v as Any).toString === "function") {
    return (v as Any).toString();
  }
  return String(v);
}

/** Fractional seconds with 0, 3, 6 or 9 digits (the proto3 JSON rule). */
function fraction(nanos: number): string {
  if (nanos === 0) return "";
  const s = String(nanos).padStart(9, "0");
  if (s.endsWith("000000")) return "." + s.slice(0, 3);
  if (s.endsWith("000")) return "." + s.slice(0, 6);
  return "." + s;
}

const DURATION_RE = /^(-)?(\d+)(?:\.(\d{1,9}))?s$/;
const TIMESTAMP_RE =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/** Per package definition: the type registry (built once; the definition is immutable). */
const registries = new WeakMap<object, Registry>();

class Registry {
  readonly messages = new Map<string, MessageInfo>();
  readonly enums = new Map<string, EnumInfo>();

  /** From the `FileDescriptorProto`s proto-loader exports with every definition. */
  static fromDefinitions(defs: Record<string, Any>): Registry {
    const reg = new Registry();
    reg.#readDefinitions(defs);
    return reg;
  }

  /**
   * From a resolved protobufjs `Root` (its reflection tree: types, fields, oneofs, enums), for
   * protos loaded with protobufjs itself rather than through proto-loader.
   */
  static fromReflection(root: Any): Registry {
    const reg = new Registry();
    reg.#walk(root);
    return reg;
  }

  #walk(ns: Any): void {
    for (const n of ns.nestedArray ?? []) {
      const fullName = String(n.fullName).replace(/^\./, "");
      if (Array.isArray(n.fieldsArray)) {
        const info: MessageInfo = { fullName, fields: [], byName: new Map() };
        for (const rf of n.fieldsArray) {
          // extension fields (`.udpa.annotations.file_status`) are options, not fields
          if (rf.extend !== undefined || String(rf.name).startsWith(".")) continue;
          const f = reflectedField(rf);
          info.fields.push(f);
          info.byName.set(f.name, f);
        }
        this.messages.set(fullName, info);
      } else if (n.values && typeof n.values === "object") {
        const value = Object.entries(n.values as Record<string, number>).map(([name, number]) => ({
          name,
          number,
        }));
        this.#addEnum("", { name: fullName, value });
      }
      if (n.nestedArray) this.#walk(n);
    }
  }

  #readDefinitions(defs: Record<string, Any>): void {
    const fdp = defs["google.protobuf.FileDescriptorProto"];
    if (typeof fdp?.deserialize !== "function") {
      throw new Error(
        "Cannot build the proto3 JSON printer: google.protobuf.FileDescriptorProto is not loaded",
      );
    }
    const seen = new Set<unknown>();
    const pending: { scope: string; raw: RawMessage; info: MessageInfo }[] = [];
    for (const d of Object.values(defs)) {
      for (const buf of (d?.fileDescriptorProtos ?? []) as Uint8Array[]) {
        if (seen.has(buf)) continue;
        seen.add(buf);
        const file = fdp.deserialize(buf) as {
          package?: string;
          messageType?: RawMessage[];
          enumType?: RawEnum[];
        };
        const pkg = file.package ?? "";
        for (const e of file.enumType ?? []) this.#addEnum(pkg, e);
        for (const m of file.messageType ?? []) this.#addMessage(pkg, m, pending);
      }
    }
    for (const p of pending) {
      for (const rf of p.raw.field ?? []) {
        const f = this.#field(p.info.fullName, rf);
        p.info.fields.push(f);
        p.info.byName.set(f.name, f);
      }
    }
    // Map fields: point at the value field of their entry type.
    const entries = new Set(pending.filter((p) => p.raw.options?.mapEntry).map((p) => p.info));
    for (const p of pending) {
      for (const f of p.info.fields) {
        const entry = f.typeName ? this.messages.get(f.typeName) : undefined;
        if (entry && entries.has(entry) && f.repeated) f.mapValue = entry.byName.get("value");
      }
    }
  }

  #addEnum(scope: string, e: RawEnum): void {
    const names = new Map<number, string>();
    let zero: string | undefined;
    for (const v of e.value ?? []) {
      const n = v.number ?? 0;
      if (!names.has(n)) names.set(n, v.name);
      if (n === 0 && zero === undefined) zero = v.name;
    }
    this.enums.set(scope ? `${scope}.${e.name}` : e.name, { names, zero });
  }

  #addMessage(
    scope: string,
    m: RawMessage,
    pending: { scope: string; raw: RawMessage; info: MessageInfo }[],
  ): void {
    const fullName = scope ? `${scope}.${m.name}` : m.name;
    const info: MessageInfo = { fullName, fields: [], byName: new Map() };
    this.messages.set(fullName, info);
    pending.push({ scope: fullName, raw: m, info });
    for (const e of m.enumType ?? []) this.#addEnum(fullName, e);
    for (const n of m.nestedType ?? []) this.#addMessage(fullName, n, pending);
  }

  #field(scope: string, rf: RawField): FieldInfo {
    const type = rf.type ?? "TYPE_STRING";
    const f: FieldInfo = {
      name: rf.name,
      jsonName: rf.jsonName || lowerCamel(rf.name),
      repeated: rf.label === "LABEL_REPEATED",
      type,
      presence: rf.oneofIndex !== undefined || rf.proto3Optional === true,
    };
    if ((type === "TYPE_MESSAGE" || type === "TYPE_GROUP" || type === "TYPE_ENUM") && rf.typeName) {
      f.typeName = this.#resolve(scope, rf.typeName, type === "TYPE_ENUM");
    }
    return f;
  }

  /** Protobuf name resolution: innermost scope first; a leading dot is absolute. */
  #resolve(scope: string, name: string, isEnum: boolean): string | undefined {
    const has = (n: string) => isEnum ? this.enums.has(n) : this.messages.has(n);
    if (name.startsWith(".")) return has(name.slice(1)) ? name.slice(1) : undefined;
    const parts = scope.split(".");
    for (let i = parts.length; i >= 0; i--) {
      const cand = [...parts.slice(0, i), name].join(".");
      if (has(cand)) return cand;
    }
    return undefined;
  }
}

/**
 * Converts xDS objects between proto-loader's object form (proto field names; what the generators
 * write and `decodeAny` returns) and canonical proto3 JSON.
 *
 * @example
 * ```ts ignore
 * const pj = new ProtoJson(await loadXdsProtos());
 * pj.message("envoy.config.cluster.v3.Cluster", decodeAny(any));
 * // {"name": "outbound|80||hello...", "type": "EDS", "connect_timeout": "1s", ...}
 * ```
 */
export class ProtoJson {
  readonly #reg: Registry;
  readonly #defs: Record<string, Any>;

  /** `defs`: the package definition returned by `loadXdsProtos()`. */
  constructor(defs: Record<string, unknown>) {
    this.#defs = defs as Record<string, Any>;
    let reg = registries.get(defs);
    if (!reg) {
      reg = Registry.fromDefinitions(defs as Record<string, Any>);
      registries.set(defs, reg);
    }
    this.#reg = reg;
  }

  /**
   * A reader and printer over a resolved protobufjs `Root`, for protos loaded with protobufjs
   * itself (as `lib/xds/pgv.ts` does) rather than through proto-loader. Walking the reflection
   * tree takes milliseconds. Having no deserializers, it prints an `Any` given in binary form
   * (`{type_url, value}`) as `{"@type", "value": base64}`. Build a new one after loading more
   * files into `root`.
   */
  static fromReflection(root: unknown): ProtoJson {
    const defs = {};
    registries.set(defs, Registry.fromReflection(root));
    return new ProtoJson(defs);
  }

  /** True when `fullName` is a message type this printer knows. */
  knows(fullName: string): boolean {
    return this.#reg.messages.has(fullName);
  }

  /**
   * Prints `obj`, a message of `fullName` (`envoy.config.cluster.v3.Cluster`) in object form, as
   * proto3 JSON. Unknown properties (proto-loader's oneof markers among them) are left out.
   * Throws for an unknown type name.
   */
  message(fullName: string, obj: unknown): unknown {
    if (!this.#reg.messages.has(fullName)) {
      throw new Error(`Cannot print proto3 JSON: unknown message type "${fullName}"`);
    }
    return this.#print(fullName, obj);
  }

  /** Prints a `google.protobuf.Any` given as `{"@type", ...fields}` or `{type_url, value}`. */
  any(o: Record<string, unknown>): unknown {
    return this.#printAny(o);
  }

  /**
   * The inverse of {@link message}: proto3 JSON of `fullName` → the object form protobufjs
   * `fromObject` accepts (durations `{seconds, nanos}`, wrappers `{value}`, Structs `{fields}`,
   * nested `Any`s `{"@type", ...}`). Accepts proto and lowerCamelCase field names. Throws with the
   * field path (`Cluster.connect_timeout: ...`) on values of the wrong shape. Properties the
   * message does not have are dropped, or with `keepUnknown` copied as they are (so a checker
   * such as `pgvProblems` can report them).
   */
  parse(fullName: string, json: unknown, options: { keepUnknown?: boolean } = {}): unknown {
    if (!this.#reg.messages.has(fullName)) {
      throw new Error(`Cannot parse proto3 JSON: unknown message type "${fullName}"`);
    }
    const short = fullName.slice(fullName.lastIndexOf(".") + 1);
    return this.#parse(fullName, json, short, options.keepUnknown === true);
  }

  /**
   * Field names of `google.protobuf.Value` as loaded (protobufjs bundles struct.proto with
   * lowerCamelCase names, so `keepCase` leaves `stringValue`; a .proto file gives `string_value`).
   */
  get #valueKeys(): Record<string, string> {
    if (this.#vk) return this.#vk;
    const byName = this.#reg.messages.get("google.protobuf.Value")?.byName;
    const out: Record<string, string> = {};
    for (const k of VALUE_KINDS) out[k] = byName?.has(k) ? k : lowerCamel(k);
    return (this.#vk = out);
  }
  #vk?: Record<string, string>;

  // ---- printing ----------------------------------------------------------------------------

  #print(type: string, v: unknown): unknown {
    if (v === null || v === undefined) return null;
    if (WELL_KNOWN.has(type)) return this.#printWellKnown(type, v);
    if (typeof v !== "object") return v;
    const info = this.#reg.messages.get(type);
    if (!info) return v;
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const f of info.fields) {
      const fv = o[f.name];
      if (fv === undefined || fv === null) continue;
      if (f.mapValue) {
        if (typeof fv !== "object") continue;
        const entries = Object.entries(fv as Record<string, unknown>);
        if (!entries.length) continue;
        const m: Record<string, unknown> = {};
        for (const [k, x] of entries) m[k] = this.#printValue(f.mapValue, x);
        out[f.name] = m;
      } else if (f.repeated) {
        if (!Array.isArray(fv) || !fv.length) continue;
        out[f.name] = fv.map((x) => this.#printValue(f, x));
      } else {
        if (!f.presence && f.type !== "TYPE_MESSAGE" && this.#isDefault(f, fv)) continue;
        out[f.name] = this.#printValue(f, fv);
      }
    }
    return out;
  }

  #isDefault(f: FieldInfo, v: unknown): boolean {
    switch (f.type) {
      case "TYPE_ENUM": {
        if (typeof v === "number") return v === 0;
        const e = f.typeName ? this.#reg.enums.get(f.typeName) : undefined;
        return v === e?.zero;
      }
      case "TYPE_STRING":
        return v === "";
      case "TYPE_BOOL":
        return v === false || v === "false";
      case "TYPE_BYTES":
        return v === "" || (v instanceof Uint8Array && v.length === 0) ||
          (Array.isArray(v) && v.length === 0);
    }
    if (LONG_TYPES.has(f.type)) return longToString(v) === "0";
    return Number(v) === 0;
  }

  #printValue(f: FieldInfo, v: unknown): unknown {
    if (v === null || v === undefined) return null;
    switch (f.type) {
      case "TYPE_MESSAGE":
      case "TYPE_GROUP":
        return f.typeName ? this.#print(f.typeName, v) : v;
      case "TYPE_ENUM": {
        if (f.typeName === "google.protobuf.NullValue") return null;
        if (typeof v !== "number") return v;
        const e = f.typeName ? this.#reg.enums.get(f.typeName) : undefined;
        return e?.names.get(v) ?? v;
      }
      case "TYPE_BYTES":
        return bytesToBase64(v);
      case "TYPE_BOOL":
        return typeof v === "string" ? v === "true" : Boolean(v);
      case "TYPE_STRING":
        return String(v);
    }
    if (LONG_TYPES.has(f.type)) return longToString(v);
    if (FLOAT_TYPES.has(f.type)) return printFloat(v);
    return typeof v === "string" ? Number(v) : v;
  }

  #printWellKnown(type: string, v: unknown): unknown {
    const o = (v && typeof v === "object" ? v : {}) as Record<string, Any>;
    switch (type) {
      case "google.protobuf.Duration": {
        if (typeof v === "string") return v;
        const secs = BigInt(longToString(o.seconds ?? 0));
        const nanos = Number(o.nanos ?? 0);
        const neg = secs < 0n || nanos < 0;
        const abs = secs < 0n ? -secs : secs;
        return `${neg ? "-" : ""}${abs}${fraction(Math.abs(nanos))}s`;
      }
      case "google.protobuf.Timestamp": {
        if (typeof v === "string") return v;
        const secs = Number(longToString(o.seconds ?? 0));
        const nanos = Number(o.nanos ?? 0);
        const iso = new Date(secs * 1000).toISOString().replace(/\.\d{3}Z$/, "");
        return `${iso}${fraction(nanos)}Z`;
      }
      case "google.protobuf.Empty":
        return {};
      case "google.protobuf.Any":
        return this.#printAny(o);
      case "google.protobuf.Struct": {
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries((o.fields ?? {}) as Record<string, unknown>)) {
          out[k] = this.#printWellKnown("google.protobuf.Value", x);
        }
        return out;
      }
      case "google.protobuf.ListValue":
        return (Array.isArray(o.values) ? o.values : []).map((x: unknown) =>
          this.#printWellKnown("google.protobuf.Value", x)
        );
      case "google.protobuf.Value": {
        const k = this.#valueKeys;
        if (o[k.struct_value] != null) {
          return this.#printWellKnown("google.protobuf.Struct", o[k.struct_value]);
        }
        if (o[k.list_value] != null) {
          return this.#printWellKnown("google.protobuf.ListValue", o[k.list_value]);
        }
        if (o[k.string_value] != null) return String(o[k.string_value]);
        if (o[k.number_value] != null) return printFloat(o[k.number_value]);
        if (o[k.bool_value] != null) return Boolean(o[k.bool_value]);
        return null;
      }
      case "google.protobuf.FieldMask":
        return (Array.isArray(o.paths) ? o.paths : []).map((p: string) =>
          p.split(".").map(lowerCamel).join(".")
        ).join(",");
    }
    // Wrappers: the bare value (a present wrapper with no value holds the default).
    const inner = o.value;
    switch (type) {
      case "google.protobuf.Int64Value":
      case "google.protobuf.UInt64Value":
        return longToString(inner ?? 0);
      case "google.protobuf.BoolValue":
        return Boolean(inner ?? false);
      case "google.protobuf.StringValue":
        return String(inner ?? "");
      case "google.protobuf.BytesValue":
        return bytesToBase64(inner ?? new Uint8Array());
      case "google.protobuf.DoubleValue":
      case "google.protobuf.FloatValue":
        return printFloat(inner ?? 0);
      default:
        return typeof inner === "string" ? Number(inner) : inner ?? 0;
    }
  }

  #printAny(o: Record<string, unknown>): unknown {
    let url: string;
    let body: Record<string, unknown>;
    if (typeof o["@type"] === "string") {
      url = o["@type"];
      const { "@type": _, ...rest } = o;
      body = rest;
    } else if (typeof o.type_url === "string") {
      // Binary form: unpack through the loaded definition when we can.
      url = o.type_url;
      const value = o.value instanceof Uint8Array
        ? o.value
        : typeof o.value === "string"
        ? Buffer.from(o.value, "base64")
        : new Uint8Array();
      const type = shortName(url);
      const decoded = this.#reg.messages.has(type) ? this.#decode(type, value) : undefined;
      if (!decoded) return { "@type": url, value: bytesToBase64(value) };
      body = decoded;
    } else {
      return {};
    }
    const type = shortName(url);
    if (!this.#reg.messages.has(type)) return { "@type": url, ...body };
    if (WELL_KNOWN.has(type)) return { "@type": url, value: this.#printWellKnown(type, body) };
    return { "@type": url, ...(this.#print(type, body) as Record<string, unknown>) };
  }

  #decode(type: string, bytes: Uint8Array): Record<string, unknown> | undefined {
    const def = this.#defs[type];
    return typeof def?.deserialize === "function" ? def.deserialize(bytes) : undefined;
  }

  // ---- parsing -----------------------------------------------------------------------------

  #parse(type: string, v: unknown, path: string, keep: boolean): unknown {
    if (WELL_KNOWN.has(type)) return this.#parseWellKnown(type, v, path, keep);
    if (v === null) return undefined;
    if (typeof v !== "object" || Array.isArray(v)) {
      throw new Error(`${path}: want a JSON object for ${type}, got ${JSON.stringify(v)}`);
    }
    const info = this.#reg.messages.get(type)!;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const f = info.byName.get(k) ?? info.byName.get(snake(k));
      if (!f) {
        if (keep) out[k] = x;
        continue;
      }
      if (x === null) continue;
      const p = `${path}.${f.name}`;
      if (f.mapValue) {
        if (typeof x !== "object" || Array.isArray(x)) {
          throw new Error(`${p}: want a JSON object (map), got ${JSON.stringify(x)}`);
        }
        const m: Record<string, unknown> = {};
        for (const [mk, mx] of Object.entries(x as Record<string, unknown>)) {
          m[mk] = this.#parseValue(f.mapValue, mx, `${p}[${JSON.stringify(mk)}]`, keep);
        }
        out[f.name] = m;
      } else if (f.repeated) {
        if (!Array.isArray(x)) throw new Error(`${p}: want a JSON array, got ${JSON.stringify(x)}`);
        out[f.name] = x.map((e, i) => this.#parseValue(f, e, `${p}[${i}]`, keep));
      } else {
        out[f.name] = this.#parseValue(f, x, p, keep);
      }
    }
    return out;
  }

  #parseValue(f: FieldInfo, v: unknown, path: string, keep: boolean): unknown {
    switch (f.type) {
      case "TYPE_MESSAGE":
      case "TYPE_GROUP":
        return f.typeName ? this.#parse(f.typeName, v, path, keep) : v;
      case "TYPE_ENUM":
        if (f.typeName === "google.protobuf.NullValue") return "NULL_VALUE";
        return v;
      case "TYPE_BYTES":
        return v;
    }
    if (FLOAT_TYPES.has(f.type)) return parseFloatValue(v, path);
    return v;
  }

  #parseWellKnown(type: string, v: unknown, path: string, keep = false): unknown {
    switch (type) {
      case "google.protobuf.Duration": {
        const m = typeof v === "string" ? DURATION_RE.exec(v) : null;
        if (!m) throw new Error(`${path}: want a duration like "1.5s", got ${JSON.stringify(v)}`);
        const sign = m[1] ? -1 : 1;
        const nanos = m[3] ? Number(m[3].padEnd(9, "0")) : 0;
        const out: Record<string, unknown> = { seconds: (m[1] ?? "") + m[2] };
        if (nanos) out.nanos = sign * nanos;
        return out;
      }
      case "google.protobuf.Timestamp": {
        const m = typeof v === "string" ? TIMESTAMP_RE.exec(v) : null;
        if (!m) {
          throw new Error(`${path}: want an RFC 3339 timestamp, got ${JSON.stringify(v)}`);
        }
        const base = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${m[8]}`);
        const out: Record<string, unknown> = { seconds: String(Math.floor(base / 1000)) };
        const nanos = m[7] ? Number(m[7].padEnd(9, "0")) : 0;
        if (nanos) out.nanos = nanos;
        return out;
      }
      case "google.protobuf.Empty":
        return {};
      case "google.protobuf.Any": {
        if (!v || typeof v !== "object" || typeof (v as Any)["@type"] !== "string") {
          throw new Error(`${path}: want an object with "@type", got ${JSON.stringify(v)}`);
        }
        const { "@type": url, ...rest } = v as Record<string, unknown>;
        const inner = shortName(url as string);
        if (!this.#reg.messages.has(inner)) {
          if (typeof rest.value === "string") return { type_url: url, value: rest.value };
          throw new Error(`${path}: unknown type "${url}" in "@type"`);
        }
        const body = WELL_KNOWN.has(inner)
          ? this.#parseWellKnown(inner, rest.value, `${path}.value`)
          : this.#parse(inner, rest, path, keep);
        return { "@type": url, ...(body as Record<string, unknown>) };
      }
      case "google.protobuf.Struct": {
        if (!v || typeof v !== "object" || Array.isArray(v)) {
          throw new Error(`${path}: want a JSON object (Struct), got ${JSON.stringify(v)}`);
        }
        const fields: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
          fields[k] = this.#parseWellKnown("google.protobuf.Value", x, `${path}.${k}`);
        }
        return { fields };
      }
      case "google.protobuf.ListValue":
        if (!Array.isArray(v)) throw new Error(`${path}: want a JSON array, got ${typeof v}`);
        return {
          values: v.map((x, i) =>
            this.#parseWellKnown("google.protobuf.Value", x, `${path}[${i}]`)
          ),
        };
      case "google.protobuf.Value": {
        const k = this.#valueKeys;
        if (v === null) return { [k.null_value]: "NULL_VALUE" };
        if (typeof v === "string") return { [k.string_value]: v };
        if (typeof v === "number") return { [k.number_value]: v };
        if (typeof v === "boolean") return { [k.bool_value]: v };
        if (Array.isArray(v)) {
          return { [k.list_value]: this.#parseWellKnown("google.protobuf.ListValue", v, path) };
        }
        return { [k.struct_value]: this.#parseWellKnown("google.protobuf.Struct", v, path) };
      }
      case "google.protobuf.FieldMask":
        if (typeof v !== "string") throw new Error(`${path}: want a string, got ${typeof v}`);
        return { paths: v ? v.split(",").map((p) => p.split(".").map(snake).join(".")) : [] };
    }
    // Wrappers.
    if (type === "google.protobuf.DoubleValue" || type === "google.protobuf.FloatValue") {
      return { value: parseFloatValue(v, path) };
    }
    return { value: v };
  }
}

function printFloat(v: unknown): unknown {
  const n = typeof v === "string" ? Number(v) : v as number;
  if (typeof n !== "number") return v;
  if (Number.isNaN(n)) return "NaN";
  if (n === Infinity) return "Infinity";
  if (n === -Infinity) return "-Infinity";
  return n;
}

function parseFloatValue(v: unknown, path: string): number {
  if (typeof v === "number") return v;
  if (v === "NaN" || v === "Infinity" || v === "-Infinity") return Number(v);
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  throw new Error(`${path}: want a number, got ${JSON.stringify(v)}`);
}

/**
 * Checks xDS resources against Envoy's protoc-gen-validate rules: the `(validate.rules)` and
 * `(validate.required)` annotations of the `.proto` files shipped in `@grpc/grpc-js-xds`
 * (`deps/envoy-api`). Envoy runs the same rules on every resource it receives and rejects the whole
 * update (a NACK) when one fails, so a resource that passes here is one Envoy accepts as far as
 * field-level validation goes.
 *
 * Covered: required messages and oneofs; string `min_len`/`max_len`/`min_bytes`/`max_bytes`/
 * `prefix`/`suffix`/`pattern`/`in`/`not_in`/`well_known_regex` (header names and values); number
 * bounds (`gt`/`gte`/`lt`/`lte`/`in`/`not_in`/`const`), also through wrappers (`UInt32Value`...);
 * enum `defined_only`/`in`/`not_in`; duration bounds; repeated `min_items`/`max_items`/`unique`
 * and item rules; map `min_pairs` and key/value rules; `Any` `in` rules; nested `typed_config`
 * (an `Any` in JSON form, `{"@type": ..., ...}`) checked against its own message type; unknown
 * fields. Not covered: Envoy's semantic checks outside PGV (for example cross-field rules).
 *
 * Input objects use the generators' form: proto field names, enums as names or numbers, durations
 * as `{seconds, nanos}`, wrappers as `{value}`. Loading the rules takes ~0.3 s once per process;
 * checking one resource takes microseconds.
 *
 * @example
 * ```ts ignore
 * import { pgvProblems } from "./pgv.ts";
 * pgvProblems("envoy.config.cluster.v3.Cluster", { name: "", connect_timeout: { seconds: 0 } });
 * // ["Cluster.name: string min_len 1, got \"\"", "Cluster.connect_timeout: duration gt 0s, ..."]
 * ```
 * @module
 */

import { createRequire } from "node:module";
import * as path from "node:path";
import * as fs from "node:fs";
import { PROTO_FILES, xdsIncludeDirs, xdsProtoRoot } from "./protos.ts";
import { ProtoJson } from "./json.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

let cache: { pb: Any; root: Any } | undefined;

/**
 * protobufjs (with option parsing) from the copy @grpc/proto-loader depends on; proto-loader's own
 * definitions drop the custom `validate` options, so the raw protobufjs tree is needed here.
 */
function load(): { pb: Any; root: Any } {
  if (cache) return cache;
  const require = createRequire(import.meta.url);
  const fromLoader = createRequire(require.resolve("@grpc/proto-loader"));
  const pb = fromLoader("protobufjs");
  const deps = xdsProtoRoot();
  const include = [
    // google/protobuf/*.proto ship with protobufjs itself
    path.dirname(fromLoader.resolve("protobufjs/package.json")),
    ...xdsIncludeDirs(),
  ];
  const root = new pb.Root();
  root.resolvePath = (_origin: string, target: string) => {
    if (path.isAbsolute(target)) return target;
    for (const dir of include) {
      const p = path.join(dir, target);
      if (fs.existsSync(p)) return p;
    }
    return target;
  };
  // the files protos.ts loads: every message the generators produce
  root.loadSync(PROTO_FILES.map((f) => path.join(deps, "envoy-api", f)), { keepCase: true });
  root.resolveAll();
  return (cache = { pb, root });
}

const extraLoaded = new Set<string>();

/**
 * Loads more `.proto` files (paths relative to `envoy-api/`, such as
 * `envoy/config/bootstrap/v3/bootstrap.proto`) into the checker, so {@link pgvProblems} and
 * {@link pgvEncode} know their messages. Loading a file twice is a no-op.
 */
export function pgvLoadProtoFiles(files: readonly string[]): void {
  const { root } = load();
  const todo = files.filter((f) => !extraLoaded.has(f));
  if (!todo.length) return;
  root.loadSync(todo.map((f) => path.join(xdsProtoRoot(), "envoy-api", f)), { keepCase: true });
  root.resolveAll();
  for (const f of todo) extraLoaded.add(f);
}

/**
 * Encodes `obj` (the checker's object form: proto field names, durations as `{seconds, nanos}`,
 * nested `Any`s as `{"@type": ..., ...fields}`) as protobuf message `typeName`. Throws when
 * protobufjs rejects a value (a string where a message is expected, a bad enum name...).
 */
export function pgvEncode(typeName: string, obj: Record<string, unknown>): Uint8Array {
  const t = load().root.lookupType(typeName);
  const err = t.verify(t.fromObject(obj));
  if (err) throw new Error(`${typeName.split(".").pop()}: ${err}`);
  return t.encode(t.fromObject(obj)).finish();
}

/** Full name of every message type the checker knows (for tests and tooling). */
export function pgvKnowsType(typeName: string): boolean {
  try {
    load().root.lookupType(typeName);
    return true;
  } catch {
    return false;
  }
}

function option(field: Any, name: string): Any {
  for (const po of field.parsedOptions ?? []) if (name in po) return po[name];
  return undefined;
}

function seconds(d: Any): number {
  if (d === undefined || d === null) return NaN;
  if (typeof d === "string") return parseFloat(d);
  return Number(d.seconds ?? 0) + Number(d.nanos ?? 0) / 1e9;
}

const q = (v: unknown) => JSON.stringify(v);

/** protobufjs parses a one-element list option (`not_in: [0]`) as a scalar. */
const list = (x: Any): Any[] | undefined => x == null ? undefined : Array.isArray(x) ? x : [x];

// protoc-gen-validate's well-known header regexes (strict and loose forms); control characters
// are the point of the value rules.
const HEADER_NAME = /^:?[0-9a-zA-Z!#$%&'*+\-.^_|~`]+$/;
// deno-lint-ignore no-control-regex
const HEADER_VALUE_STRICT = /^[^\u0000-\u0008\u000A-\u001F\u007F]*$/;
// deno-lint-ignore no-control-regex
const LOOSE = /^[^\u0000\u000A\u000D]*$/;

function checkString(p: string, rr: Any, v: unknown, out: string[]): void {
  const s = typeof v === "string" ? v : "";
  if (v !== undefined && v !== null && typeof v !== "string") {
    out.push(`${p}: expected a string, got ${q(v)}`);
    return;
  }
  if (rr.ignore_empty && s === "") return;
  const chars = [...s].length;
  const bytes = new TextEncoder().encode(s).length;
  if (rr.len != null && chars !== Number(rr.len)) {
    out.push(`${p}: string len ${rr.len}, got ${q(s)}`);
  }
  if (rr.min_len != null && chars < Number(rr.min_len)) {
    out.push(`${p}: string min_len ${rr.min_len}, got ${q(s)}`);
  }
  if (rr.max_len != null && chars > Number(rr.max_len)) {
    out.push(`${p}: string max_len ${rr.max_len}`);
  }
  if (rr.min_bytes != null && bytes < Number(rr.min_bytes)) {
    out.push(`${p}: string min_bytes ${rr.min_bytes}, got ${q(s)}`);
  }
  if (rr.max_bytes != null && bytes > Number(rr.max_bytes)) {
    out.push(`${p}: string max_bytes ${rr.max_bytes}`);
  }
  if (rr.prefix && !s.startsWith(rr.prefix)) out.push(`${p}: string prefix ${q(rr.prefix)}`);
  if (rr.suffix && !s.endsWith(rr.suffix)) out.push(`${p}: string suffix ${q(rr.suffix)}`);
  if (rr.contains && !s.includes(rr.contains)) out.push(`${p}: string contains ${q(rr.contains)}`);
  if (rr.pattern && !new RegExp(rr.pattern, "u").test(s)) {
    out.push(`${p}: string pattern ${rr.pattern}, got ${q(s)}`);
  }
  const among = list(rr.in);
  const notAmong = list(rr.not_in);
  if (among && !among.includes(s)) out.push(`${p}: string in ${q(among)}, got ${q(s)}`);
  if (notAmong?.includes(s)) out.push(`${p}: string not_in ${q(notAmong)}, got ${q(s)}`);
  const strict = rr.strict !== false;
  if (rr.well_known_regex === "HTTP_HEADER_NAME" && !(strict ? HEADER_NAME : LOOSE).test(s)) {
    out.push(`${p}: not a valid HTTP header name: ${q(s)}`);
  }
  if (
    rr.well_known_regex === "HTTP_HEADER_VALUE" && !(strict ? HEADER_VALUE_STRICT : LOOSE).test(s)
  ) {
    out.push(`${p}: not a valid HTTP header value: ${q(s)}`);
  }
}

function checkNumber(p: string, kind: string, rr: Any, v: unknown, out: string[]): void {
  if (v !== undefined && v !== null && typeof v !== "number" && typeof v !== "string") {
    out.push(`${p}: expected a number, got ${q(v)}`);
    return;
  }
  const n = Number(v ?? 0);
  if (Number.isNaN(n)) {
    out.push(`${p}: expected a number, got ${q(v)}`);
    return;
  }
  if (rr.const != null && n !== Number(rr.const)) {
    out.push(`${p}: ${kind} const ${rr.const}, got ${n}`);
  }
  if (rr.gt != null && !(n > Number(rr.gt))) out.push(`${p}: ${kind} gt ${rr.gt}, got ${n}`);
  if (rr.gte != null && !(n >= Number(rr.gte))) out.push(`${p}: ${kind} gte ${rr.gte}, got ${n}`);
  if (rr.lt != null && !(n < Number(rr.lt))) out.push(`${p}: ${kind} lt ${rr.lt}, got ${n}`);
  if (rr.lte != null && !(n <= Number(rr.lte))) out.push(`${p}: ${kind} lte ${rr.lte}, got ${n}`);
  const among = list(rr.in)?.map(Number);
  const notAmong = list(rr.not_in)?.map(Number);
  if (among && !among.includes(n)) out.push(`${p}: ${kind} in ${q(among)}, got ${n}`);
  if (notAmong?.includes(n)) out.push(`${p}: ${kind} not_in ${q(notAmong)}, got ${n}`);
}

const NUMBER_KINDS = new Set([
  "uint32",
  "int32",
  "sint32",
  "fixed32",
  "sfixed32",
  "uint64",
  "int64",
  "sint64",
  "fixed64",
  "sfixed64",
  "double",
  "float",
]);

/** Checks a scalar (or enum) value against its rule set `r` (`{string: {...}}`, `{uint32: ...}`). */
function checkScalar(p: string, r: Any, v: unknown, field: Any, out: string[]): void {
  if (field?.resolvedType && !(field.resolvedType instanceof load().pb.Type)) {
    // an enum: a name or a number; unknown names are never valid (protobufjs cannot encode them)
    const values = field.resolvedType.values as Record<string, number>;
    const num = typeof v === "string" ? values[v] : Number(v ?? 0);
    if (typeof v === "string" && num === undefined) {
      out.push(`${p}: ${q(v)} is not a value of ${field.resolvedType.name}`);
      return;
    }
    const rr = r?.enum;
    if (!rr) return;
    if (rr.defined_only && !Object.values(values).includes(num)) {
      out.push(`${p}: enum defined_only, got ${q(v)}`);
    }
    if (rr.const != null && num !== Number(rr.const)) out.push(`${p}: enum const ${rr.const}`);
    const among = list(rr.in)?.map(Number);
    const notAmong = list(rr.not_in)?.map(Number);
    if (among && !among.includes(num)) out.push(`${p}: enum in ${q(among)}, got ${q(v)}`);
    if (notAmong?.includes(num)) out.push(`${p}: enum not_in ${q(notAmong)}, got ${q(v ?? 0)}`);
    return;
  }
  if (!r) return;
  const kind = Object.keys(r)[0];
  const rr = r[kind];
  if (kind === "string") return checkString(p, rr, v, out);
  if (NUMBER_KINDS.has(kind)) return checkNumber(p, kind, rr, v, out);
  if (kind === "bool") {
    if (rr.const != null && (v ?? false) !== rr.const) out.push(`${p}: bool const ${rr.const}`);
    return;
  }
  if (kind === "bytes") {
    const len = typeof v === "string" ? v.length : (v as Uint8Array | undefined)?.length ?? 0;
    if (rr.min_len != null && len < Number(rr.min_len)) {
      out.push(`${p}: bytes min_len ${rr.min_len}`);
    }
    return;
  }
  out.push(`${p}: rule ${kind} is not understood by the checker`);
}

function isRequired(r: Any): boolean {
  return Boolean(
    r?.message?.required || r?.duration?.required || r?.any?.required || r?.timestamp?.required,
  );
}

/** Checks a message-typed value `v` of `field` (singular, repeated item or map value). */
function checkMessage(field: Any, v: Any, p: string, r: Any, out: string[]): void {
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    out.push(`${p}: expected an object, got ${q(v)}`);
    return;
  }
  if (r?.message?.skip) return;
  const tn = field.resolvedType.fullName.slice(1);
  if (tn === "google.protobuf.Duration") {
    const d = r?.duration;
    const s = seconds(v);
    if (Number(v.nanos ?? 0) >= 1e9 || Number(v.nanos ?? 0) <= -1e9) {
      out.push(`${p}: duration nanos out of range`);
    }
    if (!d) return;
    if (d.gt && !(s > seconds(d.gt))) out.push(`${p}: duration gt ${seconds(d.gt)}s, got ${q(v)}`);
    if (d.gte && !(s >= seconds(d.gte))) {
      out.push(`${p}: duration gte ${seconds(d.gte)}s, got ${q(v)}`);
    }
    if (d.lt && !(s < seconds(d.lt))) out.push(`${p}: duration lt ${seconds(d.lt)}s, got ${q(v)}`);
    if (d.lte && !(s <= seconds(d.lte))) {
      out.push(`${p}: duration lte ${seconds(d.lte)}s, got ${q(v)}`);
    }
    return;
  }
  if (tn === "google.protobuf.Any") {
    const at = v["@type"];
    if (typeof at !== "string" || !at) {
      out.push(`${p}: Any without "@type"`);
      return;
    }
    const among = list(r?.any?.in);
    if (among && !among.includes(at)) out.push(`${p}: Any in ${q(among)}, got ${q(at)}`);
    if (list(r?.any?.not_in)?.includes(at)) out.push(`${p}: Any not_in, got ${q(at)}`);
    const inner = at.slice(at.lastIndexOf("/") + 1);
    if (!pgvKnowsType(inner)) {
      out.push(`${p}: cannot check unknown type ${inner}`);
      return;
    }
    validateInto(inner, v, `${p}<${inner.split(".").pop()}>`, out);
    return;
  }
  if (tn.startsWith("google.protobuf.") && tn.endsWith("Value") && tn !== "google.protobuf.Value") {
    // a wrapper: scalar rules (uint32 {gt: 0}...) apply to `.value`; only check present wrappers
    if (r && !r.message) checkScalar(`${p}.value`, r, v.value, undefined, out);
    return;
  }
  if (tn === "google.protobuf.Struct" || tn === "google.protobuf.Value") return;
  validateInto(tn, v, p, out);
}

function validateInto(typeName: string, obj: Any, p: string, out: string[]): void {
  const { pb, root } = load();
  const t = root.lookupType(typeName);
  for (const k of Object.keys(obj)) {
    if (k !== "@type" && !t.fields[k]) out.push(`${p}.${k}: unknown field of ${typeName}`);
  }
  if (t.options?.["(validate.disabled)"] || t.options?.["(validate.ignored)"]) return;
  const isSet = (v: unknown) => v !== undefined && v !== null;
  for (const o of t.oneofsArray) {
    const set = o.fieldsArray.filter((f: Any) => isSet(obj[f.name]));
    if (set.length > 1) {
      out.push(`${p}: oneof ${o.name} has several fields set: ${set.map((f: Any) => f.name)}`);
    }
    if (o.options?.["(validate.required)"] && set.length === 0) {
      out.push(`${p}: oneof ${o.name} is required`);
    }
  }
  for (const f of t.fieldsArray) {
    const v = obj[f.name];
    const r = option(f, "(validate.rules)");
    const fp = `${p}.${f.name}`;
    const isMessage = f.resolvedType instanceof pb.Type;
    if (f.map) {
      const entries = Object.entries(v ?? {});
      const mr = r?.map;
      if (mr?.min_pairs != null && entries.length < Number(mr.min_pairs)) {
        out.push(`${fp}: map min_pairs ${mr.min_pairs}`);
      }
      for (const [mk, mv] of entries) {
        if (mr?.keys) checkScalar(`${fp} key ${q(mk)}`, mr.keys, mk, undefined, out);
        if (isMessage) checkMessage(f, mv, `${fp}[${q(mk)}]`, mr?.values, out);
        else checkScalar(`${fp}[${q(mk)}]`, mr?.values, mv, f, out);
      }
      continue;
    }
    if (f.repeated) {
      if (isSet(v) && !Array.isArray(v)) {
        out.push(`${fp}: expected a list, got ${q(v)}`);
        continue;
      }
      const arr = (v ?? []) as unknown[];
      const rr = r?.repeated;
      if (rr && !(rr.ignore_empty && arr.length === 0)) {
        if (rr.min_items != null && arr.length < Number(rr.min_items)) {
          out.push(`${fp}: repeated min_items ${rr.min_items}, got ${arr.length}`);
        }
        if (rr.max_items != null && arr.length > Number(rr.max_items)) {
          out.push(`${fp}: repeated max_items ${rr.max_items}, got ${arr.length}`);
        }
        if (rr.unique && new Set(arr.map((x) => q(x))).size !== arr.length) {
          out.push(`${fp}: repeated unique`);
        }
      }
      arr.forEach((x, i) => {
        if (isMessage) checkMessage(f, x, `${fp}[${i}]`, rr?.items, out);
        else checkScalar(`${fp}[${i}]`, rr?.items, x, f, out);
      });
      continue;
    }
    if (isMessage) {
      if (!isSet(v)) {
        if (!f.partOf && isRequired(r)) out.push(`${fp}: required`);
        continue;
      }
      checkMessage(f, v, fp, r, out);
      continue;
    }
    if (f.partOf && !isSet(v)) continue; // an unset member of a oneof is not validated
    checkScalar(fp, r, v, f, out);
  }
}

/**
 * The PGV rule violations of `obj` as message `typeName` (a full name such as
 * `envoy.config.cluster.v3.Cluster`); empty when Envoy would accept it. Each problem reads
 * `<path>: <rule>, got <value>`; `label` prefixes the paths (defaults to the short type name).
 */
export function pgvProblems(typeName: string, obj: unknown, label?: string): string[] {
  const out: string[] = [];
  if (!obj || typeof obj !== "object") return [`${label ?? typeName}: expected an object`];
  validateInto(typeName, obj, label ?? typeName.split(".").pop()!, out);
  return out;
}

let reader: { files: number; pj: ProtoJson } | undefined;

/**
 * lib/xds/json.ts's proto3 JSON reader over the checker's protos (those of `protos.ts` plus every
 * file {@link pgvLoadProtoFiles} added), rebuilt when files are added.
 */
function protoJson(): ProtoJson {
  if (reader?.files !== extraLoaded.size) {
    reader = { files: extraLoaded.size, pj: ProtoJson.fromReflection(load().root) };
  }
  return reader.pj;
}

/**
 * Turns the proto3 JSON form of message `typeName` (what Envoy reads from a bootstrap file:
 * durations `"1s"`, wrappers and `Struct`s as bare values, proto or lowerCamelCase field names)
 * into the checker's object form that {@link pgvProblems} and {@link pgvEncode} take, with
 * `ProtoJson.parse` (lib/xds/json.ts). Fields the message lacks are kept as they are (so
 * {@link pgvProblems} reports them); a value of the wrong shape throws, naming the field path
 * from the type's short name (`Bootstrap.admin: want a JSON object ...`).
 */
export function pgvFromProtoJson(typeName: string, json: Any): Any {
  return protoJson().parse(typeName, json, { keepUnknown: true });
}

/**
 * Protobuf for the fake API server, both ways:
 *
 * - a decoder for the Kubernetes request encoding (`application/vnd.kubernetes.protobuf`),
 *   limited to the kinds `kubectl create <generator>` sends as protobuf: Namespace, ConfigMap,
 *   Secret and ServiceAccount (field numbers of the upstream `generated.proto` files);
 * - an encoder for the gnostic `openapi.v2.Document` that `kubectl` decodes from
 *   `/openapi/v2` (field numbers of github.com/google/gnostic `openapiv2/OpenAPIv2.proto`).
 *
 * @module
 */

import type { JsonObject } from "./_patch.ts";
import { LEN, MessageBuilder, Reader, VARINT } from "../../lib/protowire/mod.ts";

const MAGIC = [0x6b, 0x38, 0x73, 0x00]; // "k8s\0"

type Field = { num: number; wire: number; value: number | Uint8Array };

/** Every varint and length-delimited field of `buf`, in order (fixed-size ones are skipped). */
function fields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  const r = new Reader(buf);
  while (r.pos < r.end) {
    const key = r.uint32();
    const num = key >>> 3;
    const wire = key & 7;
    if (wire === VARINT) out.push({ num, wire, value: r.int64() });
    else if (wire === LEN) {
      const [s, e] = r.span();
      out.push({ num, wire, value: buf.subarray(s, e) });
    } else r.skip(wire);
  }
  return out;
}

const text = (v: number | Uint8Array) => new TextDecoder().decode(v as Uint8Array);
const bytes = (v: number | Uint8Array) => v as Uint8Array;
const b64 = (v: Uint8Array) => btoa(String.fromCharCode(...v));

function map(fs: Field[], num: number, asBytes = false): Record<string, string> | undefined {
  const entries = fs.filter((f) => f.num === num && f.wire === 2);
  if (entries.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const e of entries) {
    let key = "";
    let value = "";
    for (const f of fields(bytes(e.value))) {
      if (f.num === 1) key = text(f.value);
      if (f.num === 2) value = asBytes ? b64(bytes(f.value)) : text(f.value);
    }
    out[key] = value;
  }
  return out;
}

function str(fs: Field[], num: number): string | undefined {
  const f = fs.find((x) => x.num === num && x.wire === 2);
  return f ? text(f.value) : undefined;
}

function strs(fs: Field[], num: number): string[] | undefined {
  const all = fs.filter((x) => x.num === num && x.wire === 2).map((f) => text(f.value));
  return all.length > 0 ? all : undefined;
}

function bool(fs: Field[], num: number): boolean | undefined {
  const f = fs.find((x) => x.num === num && x.wire === 0);
  return f ? f.value !== 0 : undefined;
}

function sub(fs: Field[], num: number): Field[] {
  const f = fs.find((x) => x.num === num && x.wire === 2);
  return f ? fields(bytes(f.value)) : [];
}

function prune(o: JsonObject): JsonObject {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

function objectMeta(fs: Field[]): JsonObject {
  return prune({
    name: str(fs, 1),
    generateName: str(fs, 2),
    namespace: str(fs, 3),
    labels: map(fs, 11),
    annotations: map(fs, 12),
    finalizers: strs(fs, 14),
  } as JsonObject);
}

/**
 * Decodes a protobuf-encoded request body into the JSON object it stands for.
 * Throws an Error naming the problem when the body is not one of the supported kinds.
 */
export function decodeKubeProtobuf(body: Uint8Array): JsonObject {
  if (body.length < 4 || MAGIC.some((b, i) => body[i] !== b)) {
    throw new Error("protobuf body lacks the k8s\\0 prefix");
  }
  const unknown = fields(body.subarray(4));
  const typeMeta = sub(unknown, 1);
  const apiVersion = str(typeMeta, 1) ?? "";
  const kind = str(typeMeta, 2) ?? "";
  const raw = fields(bytes(unknown.find((f) => f.num === 2)?.value ?? new Uint8Array()));
  const metadata = objectMeta(sub(raw, 1));
  const head: JsonObject = { apiVersion, kind, metadata };
  if (apiVersion !== "v1") {
    throw new Error(`protobuf bodies of ${apiVersion} ${kind} are not supported`);
  }
  switch (kind) {
    case "Namespace": {
      const finalizers = strs(sub(raw, 2), 1);
      return prune({ ...head, spec: finalizers ? { finalizers } : undefined } as JsonObject);
    }
    case "ConfigMap":
      return prune({
        ...head,
        data: map(raw, 2),
        binaryData: map(raw, 3, true),
        immutable: bool(raw, 4),
      } as JsonObject);
    case "Secret":
      return prune({
        ...head,
        data: map(raw, 2, true),
        type: str(raw, 3),
        stringData: map(raw, 4),
        immutable: bool(raw, 5),
      } as JsonObject);
    case "ServiceAccount": {
      const pulls = raw.filter((f) => f.num === 3 && f.wire === 2)
        .map((f) => ({ name: str(fields(bytes(f.value)), 1) ?? "" }));
      return prune({
        ...head,
        imagePullSecrets: pulls.length > 0 ? pulls : undefined,
        automountServiceAccountToken: bool(raw, 4),
      } as JsonObject);
    }
    default:
      throw new Error(`protobuf bodies of ${apiVersion} ${kind} are not supported`);
  }
}

// ---------------------------------------------------------------------------------------------
// OpenAPI v2 (gnostic `openapi.v2.Document`), the protobuf form of `/openapi/v2`

/**
 * Media types of the protobuf form of `/openapi/v2`. kubectl asks for the first (client-go then
 * decodes the answer only as protobuf, whatever its type); the API server also accepts the
 * second and answers with it, because Go's `mime.ParseMediaType` rejects the `@` of the first
 * ("mime: unexpected content after media subtype").
 */
export const OPENAPI_V2_PROTOBUF_TYPES = [
  "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
  "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
] as const;

/**
 * Accumulates one protobuf message; proto3 defaults (empty string, false) are left out. Values
 * come from JSON, so their types are checked.
 */
class MessageWriter extends MessageBuilder {
  override string(num: number, value: unknown): this {
    if (value === undefined || value === null || value === "") return this;
    if (typeof value !== "string") throw new TypeError(`expected a string, got ${typeof value}`);
    return super.string(num, value);
  }
  strings(num: number, values: unknown): this {
    for (const v of list(values)) this.string(num, v);
    return this;
  }
  override bool(num: number, value: unknown): this {
    return super.bool(num, value === true);
  }
}

type Obj = Record<string, unknown>;

function list(v: unknown): unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new TypeError(`expected an array, got ${typeof v}`);
  return v;
}

function obj(v: unknown, what: string): Obj {
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new TypeError(`OpenAPI v2 ${what} must be an object`);
  }
  return v as Obj;
}

function only(o: Obj, what: string, known: string[]) {
  for (const k of Object.keys(o)) {
    if (!known.includes(k) && !k.startsWith("x-")) {
      throw new TypeError(`OpenAPI v2 ${what}: field "${k}" is not supported by the encoder`);
    }
  }
}

/** `NamedAny` entries for the `x-` keys of `o` (the value travels as YAML; JSON is YAML). */
function vendorExtensions(w: MessageWriter, num: number, o: Obj) {
  for (const [k, v] of Object.entries(o)) {
    if (!k.startsWith("x-")) continue;
    const any = new MessageWriter().string(2, JSON.stringify(v)).finish();
    w.message(num, new MessageWriter().string(1, k).message(2, any).finish());
  }
}

function parameterItem(p: Obj): Uint8Array {
  only(p, "parameter", ["name", "in", "description", "required", "type", "uniqueItems"]);
  // NonBodyParameter oneof: header 1, query 3, path 4; sub-schema field numbers differ by kind.
  const where = p.in;
  const w = new MessageWriter().bool(1, p.required).string(2, where).string(3, p.description)
    .string(4, p.name);
  let choice: number;
  if (where === "query") {
    choice = 3;
    w.string(6, p.type).bool(20, p.uniqueItems);
  } else if (where === "path" || where === "header") {
    choice = where === "path" ? 4 : 1;
    w.string(5, p.type).bool(19, p.uniqueItems);
  } else {
    throw new TypeError(
      `OpenAPI v2 parameter "${String(p.name)}": "in" ${String(where)} is not supported`,
    );
  }
  const nonBody = new MessageWriter().message(choice, w.finish()).finish();
  const parameter = new MessageWriter().message(2, nonBody).finish();
  return new MessageWriter().message(1, parameter).finish();
}

function operation(op: Obj): Uint8Array {
  only(op, "operation", [
    "tags",
    "summary",
    "description",
    "operationId",
    "produces",
    "consumes",
    "parameters",
    "responses",
    "schemes",
    "deprecated",
  ]);
  const w = new MessageWriter().strings(1, op.tags).string(2, op.summary)
    .string(3, op.description).string(5, op.operationId).strings(6, op.produces)
    .strings(7, op.consumes);
  for (const p of list(op.parameters)) w.message(8, parameterItem(obj(p, "parameter")));
  if (op.responses !== undefined) {
    const rw = new MessageWriter();
    for (const [code, r] of Object.entries(obj(op.responses, "responses"))) {
      const resp = obj(r, `response ${code}`);
      only(resp, `response ${code}`, ["description"]);
      const response = new MessageWriter().string(1, resp.description).finish();
      const value = new MessageWriter().message(1, response).finish(); // ResponseValue.response
      rw.message(1, new MessageWriter().string(1, code).message(2, value).finish());
    }
    w.message(9, rw.finish());
  }
  w.strings(10, op.schemes).bool(11, op.deprecated);
  vendorExtensions(w, 13, op);
  return w.finish();
}

const PATH_ITEM_OPERATIONS: Record<string, number> = {
  get: 2,
  put: 3,
  post: 4,
  delete: 5,
  options: 6,
  head: 7,
  patch: 8,
};

/**
 * Encodes an OpenAPI v2 (Swagger 2.0) document, given as its JSON form, into the protobuf
 * `openapi.v2.Document` of github.com/google/gnostic that `kubectl` decodes. Covers what the
 * fake serves: `swagger`, `info`, `paths` with operations (query, path and header parameters,
 * responses with a description) and `x-` vendor extensions; anything else throws a TypeError
 * naming the field, so the two forms cannot silently drift apart.
 */
export function encodeOpenApiV2(doc: Obj): Uint8Array<ArrayBuffer> {
  only(doc, "document", ["swagger", "info", "paths"]);
  const w = new MessageWriter().string(1, doc.swagger);
  if (doc.info !== undefined) {
    const info = obj(doc.info, "info");
    only(info, "info", ["title", "version", "description"]);
    const iw = new MessageWriter().string(1, info.title).string(2, info.version)
      .string(3, info.description);
    vendorExtensions(iw, 7, info);
    w.message(2, iw.finish());
  }
  if (doc.paths !== undefined) {
    const paths = obj(doc.paths, "paths");
    const pw = new MessageWriter();
    vendorExtensions(pw, 1, paths);
    for (const [path, item] of Object.entries(paths)) {
      if (path.startsWith("x-")) continue;
      const it = obj(item, `path "${path}"`);
      only(it, `path "${path}"`, Object.keys(PATH_ITEM_OPERATIONS));
      const iw = new MessageWriter();
      for (const [method, num] of Object.entries(PATH_ITEM_OPERATIONS)) {
        if (it[method] !== undefined) iw.message(num, operation(obj(it[method], method)));
      }
      vendorExtensions(iw, 10, it);
      pw.message(2, new MessageWriter().string(1, path).message(2, iw.finish()).finish());
    }
    w.message(8, pw.finish());
  }
  vendorExtensions(w, 16, doc);
  return w.finish();
}

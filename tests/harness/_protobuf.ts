/**
 * Decoder for the Kubernetes protobuf request encoding (`application/vnd.kubernetes.protobuf`),
 * limited to the kinds `kubectl create <generator>` sends as protobuf: Namespace, ConfigMap,
 * Secret and ServiceAccount. Field numbers are those of the upstream `generated.proto` files.
 *
 * @module
 */

import type { JsonObject } from "./_patch.ts";

const MAGIC = [0x6b, 0x38, 0x73, 0x00]; // "k8s\0"

type Field = { num: number; wire: number; value: bigint | Uint8Array };

function fields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    while (true) {
      if (i >= buf.length) throw new Error("truncated varint");
      const b = buf[i++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const num = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ num, wire, value: varint() });
    else if (wire === 2) {
      const len = Number(varint());
      if (i + len > buf.length) throw new Error("truncated length-delimited field");
      out.push({ num, wire, value: buf.subarray(i, i + len) });
      i += len;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const text = (v: bigint | Uint8Array) => new TextDecoder().decode(v as Uint8Array);
const bytes = (v: bigint | Uint8Array) => v as Uint8Array;
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
  return f ? f.value !== 0n : undefined;
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

/**
 * Canonical proto3 JSON for xDS resources, driven by the message descriptors that
 * `loadXdsProtos()` loaded: Durations become `"1.500s"`, Timestamps RFC 3339 strings, wrappers
 * their bare value, bytes base64, nested `Any`s `{"@type": ..., ...fields}`. Field names stay the
 * proto names (proto3 JSON parsers accept them; Istio printed them the same way).
 * @module
 */

import { Buffer } from "node:buffer";

interface FieldDesc {
  name: string;
  label: string;
  type: string;
  typeName: string;
}
interface MessageDesc {
  name: string;
  field: FieldDesc[];
  nestedType: MessageDesc[];
  options?: { mapEntry?: boolean } | null;
}

const WRAPPERS = new Set(
  ["Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"].map((t) =>
    `google.protobuf.${t}Value`
  ),
);

// deno-lint-ignore no-explicit-any
type Any = any;

/** Converts plain xDS objects (proto field names, as the generators write them) to proto3 JSON. */
export class ProtoJson {
  readonly #msgs = new Map<string, MessageDesc>();
  readonly #resolved = new Map<string, string | null>();
  readonly #defs: Record<string, Any>;

  /** `defs`: the package definition returned by `loadXdsProtos()`. */
  constructor(defs: Record<string, unknown>) {
    this.#defs = defs as Record<string, Any>;
    for (const [name, d] of Object.entries(this.#defs)) {
      if (d?.format !== "Protocol Buffer 3 DescriptorProto") continue;
      this.#msgs.set(name, d.type);
      for (const n of d.type.nestedType ?? []) {
        if (n.options?.mapEntry) this.#msgs.set(`${name}.${n.name}`, n);
      }
    }
  }

  #resolve(scope: string, typeName: string): string | null {
    const k = `${scope} ${typeName}`;
    const hit = this.#resolved.get(k);
    if (hit !== undefined) return hit;
    let found: string | null = null;
    if (typeName.startsWith(".")) {
      found = this.#msgs.has(typeName.slice(1)) ? typeName.slice(1) : null;
    } else {
      const parts = scope.split(".");
      for (;;) {
        const cand = [...parts, typeName].join(".");
        if (this.#msgs.has(cand)) {
          found = cand;
          break;
        }
        if (!parts.length) break;
        parts.pop();
      }
    }
    this.#resolved.set(k, found);
    return found;
  }

  /** Converts `obj`, a message of `fullName` (`envoy.config.cluster.v3.Cluster`). */
  message(fullName: string, obj: unknown): unknown {
    if (obj === null || typeof obj !== "object") return obj;
    const o = obj as Record<string, Any>;
    switch (fullName) {
      case "google.protobuf.Duration": {
        const secs = BigInt(o.seconds ?? 0);
        const nanos = Number(o.nanos ?? 0);
        if (nanos === 0) return `${secs}s`;
        const neg = secs < 0n || nanos < 0;
        const abs = (secs < 0n ? -secs : secs).toString();
        const frac = String(Math.abs(nanos)).padStart(9, "0").replace(/(0{3})+$/, "");
        return `${neg ? "-" : ""}${abs}.${frac}s`;
      }
      case "google.protobuf.Timestamp":
        return new Date(Number(o.seconds ?? 0) * 1000 + Math.floor(Number(o.nanos ?? 0) / 1e6))
          .toISOString();
      case "google.protobuf.Empty":
        return {};
      case "google.protobuf.Any":
        return this.any(o);
    }
    if (WRAPPERS.has(fullName)) return bytesOrValue(o.value);
    const desc = this.#msgs.get(fullName);
    if (!desc) return obj;
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(o)) {
      const f = desc.field.find((x) => x.name === name);
      if (!f) {
        out[name] = value;
        continue;
      }
      out[name] = this.#field(fullName, f, value);
    }
    return out;
  }

  /** Converts a `google.protobuf.Any` in JSON form (`@type`) or binary form (`type_url`, `value`). */
  any(o: Record<string, Any>): unknown {
    if (typeof o["@type"] === "string") {
      const { "@type": t, ...rest } = o;
      const name = t.slice(t.lastIndexOf("/") + 1);
      const body = this.message(name, rest);
      return { "@type": t, ...(body as Record<string, unknown>) };
    }
    if (typeof o.type_url === "string" && o.value instanceof Uint8Array) {
      const name = o.type_url.slice(o.type_url.lastIndexOf("/") + 1);
      const def = this.#defs[name];
      if (def?.deserialize) return this.any({ "@type": o.type_url, ...def.deserialize(o.value) });
    }
    return o;
  }

  #field(scope: string, f: FieldDesc, value: unknown): unknown {
    if (f.type === "TYPE_BYTES") {
      return Array.isArray(value) ? value.map(bytesOrValue) : bytesOrValue(value);
    }
    if (f.type !== "TYPE_MESSAGE" && f.type !== "TYPE_GROUP") return value;
    const full = this.#resolve(scope, f.typeName);
    if (!full) return value;
    const entry = this.#msgs.get(full);
    if (entry?.options?.mapEntry && value && typeof value === "object" && !Array.isArray(value)) {
      const vf = entry.field.find((x) => x.name === "value");
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = vf ? this.#field(full, vf, v) : v;
      return out;
    }
    if (Array.isArray(value)) return value.map((v) => this.message(full, v));
    return this.message(full, value);
  }
}

function bytesOrValue(v: unknown): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
  return v;
}

/**
 * A `google.protobuf.FileDescriptorSet` (proto3 JSON form) of the xDS protos that
 * `lib/xds/protos.ts` loads, built from protobufjs's parsed tree with fully qualified type names,
 * real file dependencies in dependency order and no option extensions: what
 * `@bufbuild/protobuf`'s `createFileRegistry` needs (protobufjs's own exported descriptors carry
 * relative type names). Used by `bench/protojson.ts` only; mesh does not depend on
 * `@bufbuild/protobuf` (see docs/ARCHITECTURE.md, "Proto3 JSON").
 * @module
 */

import { createRequire } from "node:module";
import * as path from "node:path";
import { PROTO_FILES, xdsIncludeDirs, xdsProtoRoot } from "../lib/xds/protos.ts";
import { SCALAR_TYPES } from "../lib/xds/json.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const SCALARS = SCALAR_TYPES;

const WKT_FILES: Record<string, string> = {
  Struct: "struct",
  Value: "struct",
  ListValue: "struct",
  NullValue: "struct",
  Duration: "duration",
  Timestamp: "timestamp",
  Any: "any",
  Empty: "empty",
  FieldMask: "field_mask",
};

interface FileOut {
  name: string;
  package: string;
  dependency: Set<string>;
  messageType: Any[];
  enumType: Any[];
  syntax: string;
}

/** Builds the descriptor set (takes ~0.5 s: it parses the .proto files again). */
export function xdsDescriptorSet(): { file: Any[] } {
  const require = createRequire(new URL("../lib/xds/protos.ts", import.meta.url));
  const loaderMain = require.resolve("@grpc/proto-loader");
  const fromLoader = createRequire(loaderMain);
  const util = fromLoader("./util");
  const pb = fromLoader("protobufjs");
  const dirs = [...xdsIncludeDirs(), path.join(xdsProtoRoot(), "envoy-api")];
  const root = util.loadProtosWithOptionsSync(
    PROTO_FILES.map((f) => path.join(xdsProtoRoot(), "envoy-api", f)),
    { keepCase: true, includeDirs: xdsIncludeDirs() },
  );
  const files = new Map<string, FileOut>();

  const fileOf = (o: Any): string => {
    if (o.filename) {
      for (const d of dirs) {
        if (o.filename.startsWith(d + "/")) return o.filename.slice(d.length + 1);
      }
      return o.filename;
    }
    if (o.parent?.fullName === ".google.protobuf") {
      if (/^(Double|Float|Int64|UInt64|Int32|UInt32|Bool|String|Bytes)Value$/.test(o.name)) {
        return "google/protobuf/wrappers.proto";
      }
      return `google/protobuf/${WKT_FILES[o.name] ?? "descriptor"}.proto`;
    }
    return o.parent ? fileOf(o.parent) : "?";
  };
  const fileFor = (name: string, pkg: string): FileOut => {
    let f = files.get(name);
    if (!f) {
      const syntax = name.endsWith("descriptor.proto") ? "proto2" : "proto3";
      f = { name, package: pkg, dependency: new Set(), messageType: [], enumType: [], syntax };
      files.set(name, f);
    }
    return f;
  };
  const setType = (out: Any, type: string, resolved: Any, file: FileOut) => {
    if (SCALARS[type]) {
      out.type = SCALARS[type];
      return;
    }
    out.type = resolved instanceof pb.Enum ? "TYPE_ENUM" : "TYPE_MESSAGE";
    out.typeName = resolved.fullName;
    const dep = fileOf(resolved);
    if (dep !== file.name) file.dependency.add(dep);
  };
  const enumOf = (e: Any) => ({
    name: e.name,
    value: Object.entries(e.values).map(([name, number]) => ({ name, number })),
  });
  const field = (f: Any, file: FileOut, nested: Any[]): Any => {
    f.resolve();
    const label = f.repeated || f.map
      ? "LABEL_REPEATED"
      : f.required
      ? "LABEL_REQUIRED"
      : "LABEL_OPTIONAL";
    const out: Any = { name: f.name, number: f.id, label };
    if (!f.map) {
      setType(out, f.type, f.resolvedType, file);
      if (f.options?.proto3_optional) out.proto3Optional = true;
      return out;
    }
    const entry = f.name.split("_").map((s: string) => s[0]?.toUpperCase() + s.slice(1)).join("") +
      "Entry";
    const value: Any = { name: "value", number: 2, label: "LABEL_OPTIONAL" };
    setType(value, f.type, f.resolvedType, file);
    const key = { name: "key", number: 1, label: "LABEL_OPTIONAL", type: SCALARS[f.keyType] };
    nested.push({ name: entry, field: [key, value], options: { mapEntry: true } });
    return { ...out, type: "TYPE_MESSAGE", typeName: `${f.parent.fullName}.${entry}` };
  };
  const message = (t: Any, file: FileOut): Any => {
    const nested: Any[] = [];
    // synthetic oneofs of proto3 `optional` fields come after the real ones
    const synthetic = (o: Any) =>
      Number(o.name.startsWith("_") && Boolean(o.fieldsArray[0]?.options?.proto3_optional));
    const oneofs = [...t.oneofsArray].sort((a: Any, b: Any) => synthetic(a) - synthetic(b));
    // extension fields (`.udpa.annotations.file_status`...) are options, not fields
    const fields = t.fieldsArray.filter((f: Any) => !f.extend && !f.name.startsWith(".")).map(
      (f: Any) => {
        const o = field(f, file, nested);
        if (f.partOf) o.oneofIndex = oneofs.indexOf(f.partOf);
        return o;
      },
    );
    for (const n of t.nestedArray) if (n instanceof pb.Type) nested.push(message(n, file));
    return {
      name: t.name,
      field: fields,
      nestedType: nested,
      enumType: t.nestedArray.filter((n: Any) => n instanceof pb.Enum).map(enumOf),
      oneofDecl: oneofs.map((o: Any) => ({ name: o.name })),
    };
  };
  const walk = (ns: Any) => {
    for (const n of ns.nestedArray) {
      if (n instanceof pb.Type) {
        const f = fileFor(fileOf(n), ns.fullName.slice(1));
        f.messageType.push(message(n, f));
      } else if (n instanceof pb.Enum) {
        fileFor(fileOf(n), ns.fullName.slice(1)).enumType.push(enumOf(n));
      } else if (!(n instanceof pb.Service) && n.nestedArray) walk(n);
    }
  };
  walk(root);
  // files in dependency order, as createFileRegistry wants them
  const ordered: Any[] = [];
  const done = new Set<string>();
  const visit = (name: string) => {
    if (done.has(name)) return;
    done.add(name);
    const f = files.get(name)!;
    const deps = [...f.dependency].sort();
    for (const d of deps) visit(d);
    ordered.push({ ...f, dependency: deps });
  };
  for (const name of [...files.keys()].sort()) visit(name);
  return { file: ordered };
}

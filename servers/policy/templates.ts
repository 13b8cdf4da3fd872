/**
 * Templates (instance kinds, reference §4.5): their variety and fields, and the compilation of
 * an instance's field expressions.
 * @module
 */

import {
  type AttributeBag,
  type AttributeManifest,
  compile,
  type Compiled,
  ExprError,
  type Value,
  type ValueType,
} from "../../lib/expr/mod.ts";
import { knownField } from "../../lib/model/proto_names.ts";

/**
 * When an instance is used: Check, Report, quota allocation, or attribute generation (the
 * preprocessing of every Check and Report bag before dispatch).
 */
export type Variety = "check" | "report" | "quota" | "attribute";

/**
 * A field: one expression, a map of expressions, attribute bindings (attribute name → expression
 * over `$out.<output>` and attributes), or a nested record of fields.
 */
type Field = "expr" | "map" | "bindings" | { [name: string]: Field };

/** One template. */
export interface Template {
  variety: Variety;
  fields: Record<string, Field>;
}

const monitored = {
  monitored_resource_type: "expr",
  monitored_resource_dimensions: "map",
} as const;

/** The templates by kind. */
export const TEMPLATES: Readonly<Record<string, Template>> = {
  metric: { variety: "report", fields: { value: "expr", dimensions: "map", ...monitored } },
  logentry: {
    variety: "report",
    fields: { variables: "map", timestamp: "expr", severity: "expr", ...monitored },
  },
  tracespan: {
    variety: "report",
    fields: {
      trace_id: "expr",
      span_id: "expr",
      parent_span_id: "expr",
      span_name: "expr",
      start_time: "expr",
      end_time: "expr",
      span_tags: "map",
    },
  },
  reportnothing: { variety: "report", fields: {} },
  listentry: { variety: "check", fields: { value: "expr" } },
  checknothing: { variety: "check", fields: {} },
  authorization: {
    variety: "check",
    fields: {
      subject: { user: "expr", groups: "expr", properties: "map" },
      action: {
        namespace: "expr",
        service: "expr",
        method: "expr",
        path: "expr",
        properties: "map",
      },
    },
  },
  apikey: {
    variety: "check",
    fields: {
      api: "expr",
      api_version: "expr",
      api_operation: "expr",
      api_key: "expr",
      timestamp: "expr",
    },
  },
  quota: { variety: "quota", fields: { dimensions: "map" } },
  kubernetes: {
    variety: "attribute",
    fields: {
      source_uid: "expr",
      source_ip: "expr",
      destination_uid: "expr",
      destination_ip: "expr",
      origin_uid: "expr",
      origin_ip: "expr",
      attribute_bindings: "bindings",
    },
  },
};

/** The outputs (`$out.<name>`) of the `kubernetes` template, by party, and their types. */
export const KUBERNETES_OUTPUTS: Readonly<Record<string, ValueType>> = Object.fromEntries(
  ["source", "destination", "origin"].flatMap((p) => [
    [`${p}_pod_ip`, "IP_ADDRESS"],
    [`${p}_pod_name`, "STRING"],
    [`${p}_labels`, "STRING_MAP"],
    [`${p}_namespace`, "STRING"],
    [`${p}_service`, "STRING"],
    [`${p}_service_account_name`, "STRING"],
    [`${p}_host_ip`, "IP_ADDRESS"],
  ]),
);

/** The bindings used when a `kubernetes` instance has no `attribute_bindings`. */
export const DEFAULT_KUBERNETES_BINDINGS: Readonly<Record<string, string>> = Object.fromEntries(
  ["source", "destination"].flatMap((p) => [
    [`${p}.ip`, `$out.${p}_pod_ip`],
    [`${p}.labels`, `$out.${p}_labels`],
    [`${p}.namespace`, `$out.${p}_namespace`],
    [`${p}.service`, `$out.${p}_service`],
    [`${p}.serviceAccount`, `$out.${p}_service_account_name`],
  ]),
);

/** A configuration problem: the object, the field path and the reason. */
export class ConfigIssue extends Error {
  override name = "ConfigIssue";
  /**
   * `<kind>/<namespace>/<name>`, the field path (`spec.dimensions.x`) and the reason;
   * `previousInForce`: once the snapshot is built, whether the object's previous version stays
   * in force (undefined: the object is not in force).
   */
  constructor(
    readonly object: string,
    readonly path: string,
    readonly reason: string,
    readonly previousInForce?: boolean,
  ) {
    super(`${object}: ${path}: ${reason}`);
  }
}

/** A built instance: field name → value (maps and records as nested objects). */
export type InstanceValue = { [field: string]: Value | InstanceValue | undefined };

type CompiledField = Compiled | { [name: string]: CompiledField };

/** An instance whose field expressions are compiled and type-checked. */
export interface CompiledInstance {
  /** `<name>.<kind>.<namespace>`. */
  readonly fullName: string;
  readonly kind: string;
  readonly variety: Variety;
  /** Types of the top-level expression fields (`value` → `DURATION`...). */
  readonly types: Readonly<Record<string, ValueType>>;
  /** Evaluates every field; an absent attribute leaves that field undefined (maps skip it). */
  build(bag: AttributeBag): InstanceValue;
  /**
   * Attribute generators: the attributes that the adapter's outputs bind, in binding order
   * (a binding whose value is absent is left out, so the request's own attribute stays).
   */
  bind?(bag: AttributeBag, out: Readonly<Record<string, Value>>): Map<string, Value>;
}

/** `$out.x` is written `_out.x` for the expression parser (the same length: positions hold). */
const OUT = "_out.";

function compileBindings(
  raw: unknown,
  manifest: AttributeManifest,
  object: string,
): (bag: AttributeBag, out: Readonly<Record<string, Value>>) => Map<string, Value> {
  const p = "spec.attribute_bindings";
  const spec = raw ?? DEFAULT_KUBERNETES_BINDINGS;
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) {
    throw new ConfigIssue(object, p, "must be a map of attribute name to expression");
  }
  const withOut: Record<string, ValueType> = { ...manifest };
  for (const [k, t] of Object.entries(KUBERNETES_OUTPUTS)) withOut[OUT + k] = t;
  const bindings: [string, Compiled][] = [];
  for (const [attr, text] of Object.entries(spec)) {
    const at = `${p}.${attr}`;
    const want = manifest[attr];
    if (!want) throw new ConfigIssue(object, at, `unknown attribute "${attr}"`);
    if (typeof text !== "string") {
      throw new ConfigIssue(object, at, "must be an expression (string)");
    }
    let c: Compiled;
    try {
      c = expr(text.replaceAll("$out.", OUT), withOut, object, at);
    } catch (e) {
      if (!(e instanceof ConfigIssue)) throw e;
      throw new ConfigIssue(object, at, e.reason.replaceAll(OUT, "$out."));
    }
    if (c.type !== want) {
      throw new ConfigIssue(object, at, `is ${c.type}, attribute "${attr}" is ${want}`);
    }
    bindings.push([attr, c]);
  }
  return (bag, out) => {
    const view: AttributeBag = {
      get: (n) => n.startsWith(OUT) ? out[n.slice(OUT.length)] : bag.get(n),
    };
    const res = new Map<string, Value>();
    for (const [attr, c] of bindings) {
      try {
        res.set(attr, c.evaluate(view));
      } catch (e) {
        if (!(e as { missing?: boolean }).missing) throw e;
      }
    }
    return res;
  };
}

function compileFields(
  spec: Record<string, unknown>,
  fields: Record<string, Field>,
  manifest: AttributeManifest,
  object: string,
  path: string,
): Record<string, CompiledField> {
  const out: Record<string, CompiledField> = {};
  for (const [key, raw] of Object.entries(spec)) {
    const p = `${path}.${key}`;
    // jsonpb spellings: `trace_id` or `traceId`
    const name = knownField(key, Object.keys(fields)) ?? key;
    const field = Object.hasOwn(fields, name) ? fields[name] : undefined;
    if (field && Object.hasOwn(out, name)) {
      throw new ConfigIssue(object, p, `given twice, in two spellings: use one`);
    }
    if (field === "expr" && isBlank(raw)) continue; // an empty expression is unset, as in Mixer
    if (!field) {
      throw new ConfigIssue(
        object,
        p,
        `unknown field (want ${Object.keys(fields).join(", ") || "none"})`,
      );
    }
    if (field === "expr") out[name] = expr(raw, manifest, object, p);
    else if (field === "bindings") continue; // compiled by compileBindings
    else if (field === "map") {
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
        throw new ConfigIssue(object, p, "must be a map of expressions");
      }
      const m: Record<string, CompiledField> = {};
      for (const [k, v] of Object.entries(raw)) {
        if (!isBlank(v)) m[k] = expr(v, manifest, object, `${p}.${k}`);
      }
      out[name] = m;
    } else {
      if (typeof raw !== "object" || raw === null) {
        throw new ConfigIssue(object, p, "must be an object");
      }
      out[name] = compileFields(raw as Record<string, unknown>, field, manifest, object, p);
    }
  }
  return out;
}

function isBlank(raw: unknown): boolean {
  return raw === null || (typeof raw === "string" && raw.trim() === "");
}

function expr(raw: unknown, manifest: AttributeManifest, object: string, path: string): Compiled {
  const text = typeof raw === "number" || typeof raw === "boolean" ? String(raw) : raw;
  if (typeof text !== "string") {
    throw new ConfigIssue(object, path, "must be an expression (string)");
  }
  try {
    return compile(text, manifest);
  } catch (e) {
    if (e instanceof ExprError) throw new ConfigIssue(object, path, `${e.message} in "${text}"`);
    throw e;
  }
}

function isCompiled(f: CompiledField): f is Compiled {
  return typeof (f as Compiled).evaluate === "function";
}

function evaluateFields(f: Record<string, CompiledField>, bag: AttributeBag): InstanceValue {
  const out: InstanceValue = {};
  for (const [k, v] of Object.entries(f)) {
    if (isCompiled(v)) {
      try {
        out[k] = v.evaluate(bag);
      } catch (e) {
        if (!(e as { missing?: boolean }).missing) throw e;
      }
    } else out[k] = evaluateFields(v, bag);
  }
  return out;
}

/**
 * Compiles an instance object's spec against its template.
 * @throws {ConfigIssue} naming the object and the field.
 */
export function compileInstance(
  kind: string,
  name: string,
  namespace: string,
  spec: Record<string, unknown>,
  manifest: AttributeManifest,
): CompiledInstance {
  const object = `${kind}/${namespace}/${name}`;
  const t = TEMPLATES[kind];
  if (!t) throw new ConfigIssue(object, "kind", `unsupported template "${kind}"`);
  const compiled = compileFields(spec ?? {}, t.fields, manifest, object, "spec");
  const types: Record<string, ValueType> = {};
  for (const [k, v] of Object.entries(compiled)) if (isCompiled(v)) types[k] = v.type;
  const bindings = t.fields.attribute_bindings === "bindings"
    ? compileBindings(
      spec?.attribute_bindings ?? spec?.attributeBindings,
      manifest,
      object,
    )
    : undefined;
  return {
    fullName: `${name}.${kind}.${namespace}`,
    kind,
    variety: t.variety,
    types,
    build: (bag) => evaluateFields(compiled, bag),
    ...(bindings ? { bind: bindings } : {}),
  };
}

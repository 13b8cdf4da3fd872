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

/** When an instance is used: Check, Report or quota allocation. */
export type Variety = "check" | "report" | "quota";

/** A field: one expression, a map of expressions, or a nested record of fields. */
type Field = "expr" | "map" | { [name: string]: Field };

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
};

/** A configuration problem: the object, the field path and the reason. */
export class ConfigIssue extends Error {
  override name = "ConfigIssue";
  /** `<kind>/<namespace>/<name>`, the field path (`spec.dimensions.x`) and the reason. */
  constructor(readonly object: string, readonly path: string, readonly reason: string) {
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
}

function compileFields(
  spec: Record<string, unknown>,
  fields: Record<string, Field>,
  manifest: AttributeManifest,
  object: string,
  path: string,
): Record<string, CompiledField> {
  const out: Record<string, CompiledField> = {};
  for (const [name, raw] of Object.entries(spec)) {
    const p = `${path}.${name}`;
    const field = Object.hasOwn(fields, name) ? fields[name] : undefined;
    if (!field) {
      throw new ConfigIssue(
        object,
        p,
        `unknown field (want ${Object.keys(fields).join(", ") || "none"})`,
      );
    }
    if (field === "expr") out[name] = expr(raw, manifest, object, p);
    else if (field === "map") {
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
        throw new ConfigIssue(object, p, "must be a map of expressions");
      }
      const m: Record<string, CompiledField> = {};
      for (const [k, v] of Object.entries(raw)) m[k] = expr(v, manifest, object, `${p}.${k}`);
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
  return {
    fullName: `${name}.${kind}.${namespace}`,
    kind,
    variety: t.variety,
    types,
    build: (bag) => evaluateFields(compiled, bag),
  };
}

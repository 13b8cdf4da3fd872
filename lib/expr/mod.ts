/**
 * The policy expression language (reference §4.4): parse, type-check against an attribute
 * manifest, evaluate over a request's attributes.
 *
 * @example
 * ```ts
 * import { bagOf, compile } from "./mod.ts";
 * const e = compile('request.headers["user"] | "anon"', { "request.headers": "STRING_MAP" });
 * e.evaluate(bagOf({ "request.headers": {} })); // "anon"
 * ```
 * @module
 */

import { typeOf } from "./check.ts";
import { coerceDurations } from "./coerce.ts";
import { evaluate } from "./eval.ts";
import { type Expr, parse } from "./parse.ts";
import type { AttributeBag, AttributeManifest, Value, ValueType } from "./types.ts";

export { type BinaryOp, type Expr, ExprError, parse } from "./parse.ts";
export { FUNCTIONS, typeOf } from "./check.ts";
export { EvalError, evaluate, globMatch } from "./eval.ts";
export {
  type AttributeBag,
  type AttributeManifest,
  bagOf,
  isValueType,
  parseIp,
  type Value,
  VALUE_TYPES,
  valuesEqual,
  type ValueType,
} from "./types.ts";
export { DEFAULT_MANIFEST } from "./manifest.ts";

/** A parsed, type-checked expression. */
export interface Compiled {
  /** The source text. */
  readonly source: string;
  /** The syntax tree. */
  readonly expr: Expr;
  /** The result type. */
  readonly type: ValueType;
  /** Evaluates over a bag; throws EvalError on missing attributes or bad values. */
  evaluate(bag: AttributeBag): Value;
}

/**
 * Parses and type-checks `source` against `manifest`.
 * @throws {ExprError} with the position of the first syntax or type error.
 */
export function compile(source: string, manifest: AttributeManifest): Compiled {
  const expr = coerceDurations(parse(source), manifest);
  const type = typeOf(expr, manifest);
  return { source, expr, type, evaluate: (bag) => evaluate(expr, bag) };
}

/** Names of the attributes an expression refers to (for referenced attributes and docs). */
export function attributesOf(e: Expr, out = new Set<string>()): Set<string> {
  switch (e.kind) {
    case "attr":
      out.add(e.name);
      break;
    case "index":
      attributesOf(e.target, out);
      attributesOf(e.key, out);
      break;
    case "unary":
      attributesOf(e.operand, out);
      break;
    case "binary":
      attributesOf(e.left, out);
      attributesOf(e.right, out);
      break;
    case "call":
      if (e.target) attributesOf(e.target, out);
      e.args.forEach((a) => attributesOf(a, out));
      break;
  }
  return out;
}

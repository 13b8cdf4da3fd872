/**
 * Type checking of expressions against an attribute manifest.
 * @module
 */

import { type Expr, ExprError } from "./parse.ts";
import type { AttributeManifest, ValueType } from "./types.ts";

/** Signature of a built-in function: argument types (target first for methods) and result. */
interface Signature {
  args: ValueType[];
  result: ValueType;
  method: boolean;
}

/** The built-in functions: `ip`, `timestamp`, `dnsName`, `email`, `uri`, `match`, `matches`, ... */
export const FUNCTIONS: Readonly<Record<string, Signature>> = {
  ip: { args: ["STRING"], result: "IP_ADDRESS", method: false },
  timestamp: { args: ["STRING"], result: "TIMESTAMP", method: false },
  dnsName: { args: ["STRING"], result: "DNS_NAME", method: false },
  email: { args: ["STRING"], result: "EMAIL_ADDRESS", method: false },
  uri: { args: ["STRING"], result: "URI", method: false },
  match: { args: ["STRING", "STRING"], result: "BOOL", method: false },
  emptyStringMap: { args: [], result: "STRING_MAP", method: false },
  matches: { args: ["STRING", "STRING"], result: "BOOL", method: true },
  startsWith: { args: ["STRING", "STRING"], result: "BOOL", method: true },
  endsWith: { args: ["STRING", "STRING"], result: "BOOL", method: true },
};

/**
 * Returns the type of `e` when every attribute it names is in `manifest` and every operator and
 * function is applied to operands of the right types.
 * @throws {ExprError} naming the first problem and its position.
 */
export function typeOf(e: Expr, manifest: AttributeManifest): ValueType {
  switch (e.kind) {
    case "string":
      return "STRING";
    case "int":
      return "INT64";
    case "double":
      return "DOUBLE";
    case "bool":
      return "BOOL";
    case "duration":
      return "DURATION";
    case "attr": {
      const t = Object.hasOwn(manifest, e.name) ? manifest[e.name] : undefined;
      if (!t) throw new ExprError(`Unknown attribute "${e.name}"`, e.pos);
      return t;
    }
    case "index": {
      const t = typeOf(e.target, manifest);
      if (t !== "STRING_MAP") throw new ExprError(`Cannot index a value of type ${t}`, e.pos);
      const k = typeOf(e.key, manifest);
      if (k !== "STRING") throw new ExprError(`Map key must be STRING, not ${k}`, e.key.pos);
      return "STRING";
    }
    case "unary": {
      const t = typeOf(e.operand, manifest);
      if (t !== "BOOL") throw new ExprError(`"!" needs a BOOL operand, not ${t}`, e.pos);
      return "BOOL";
    }
    case "binary": {
      const l = typeOf(e.left, manifest), r = typeOf(e.right, manifest);
      if (e.op === "&&" || e.op === "||") {
        if (l !== "BOOL" || r !== "BOOL") {
          throw new ExprError(`"${e.op}" needs BOOL operands, not ${l} and ${r}`, e.pos);
        }
        return "BOOL";
      }
      if (l !== r) throw new ExprError(`"${e.op}" between different types ${l} and ${r}`, e.pos);
      return e.op === "|" ? l : "BOOL";
    }
    case "call":
      return callType(e, manifest);
  }
}

function callType(e: Expr & { kind: "call" }, manifest: AttributeManifest): ValueType {
  const sig = Object.hasOwn(FUNCTIONS, e.fn) ? FUNCTIONS[e.fn] : undefined;
  if (!sig) throw new ExprError(`Unknown function "${e.fn}"`, e.pos);
  if (sig.method !== (e.target !== undefined)) {
    throw new ExprError(
      sig.method
        ? `"${e.fn}" is a method: write <value>.${e.fn}(...)`
        : `"${e.fn}" is a function, not a method`,
      e.pos,
    );
  }
  const args = e.target ? [e.target, ...e.args] : e.args;
  if (args.length !== sig.args.length) {
    const want = sig.args.length - (sig.method ? 1 : 0);
    throw new ExprError(`"${e.fn}" takes ${want} argument(s), got ${e.args.length}`, e.pos);
  }
  args.forEach((a, i) => {
    const t = typeOf(a, manifest);
    if (t !== sig.args[i]) {
      throw new ExprError(`Argument of "${e.fn}" must be ${sig.args[i]}, not ${t}`, a.pos);
    }
  });
  return sig.result;
}

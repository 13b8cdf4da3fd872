/**
 * Mixer's typing of quoted durations: a string literal that parses as a Go duration (`"0ms"`,
 * `"1m30s"`) is a DURATION where the other operand of `|`, `==` or `!=` is a DURATION
 * (`response.duration | "0ms"`, Istio 0.8's default configuration). Elsewhere it stays a STRING.
 * @module
 */

import { parseDuration } from "../flags/duration.ts";
import { typeOf } from "./check.ts";
import type { Expr } from "./parse.ts";
import type { AttributeManifest, ValueType } from "./types.ts";

function asDuration(e: Expr): Expr | undefined {
  if (e.kind !== "string") return undefined;
  try {
    return { kind: "duration", value: parseDuration(e.value), pos: e.pos };
  } catch {
    return undefined;
  }
}

function typeOrUndefined(e: Expr, manifest: AttributeManifest): ValueType | undefined {
  try {
    return typeOf(e, manifest);
  } catch {
    return undefined;
  }
}

/**
 * Returns `e` with every quoted duration that meets a DURATION operand turned into a duration
 * literal; other nodes are kept (a new tree; `e` is not changed).
 */
export function coerceDurations(e: Expr, manifest: AttributeManifest): Expr {
  switch (e.kind) {
    case "index":
      return {
        ...e,
        target: coerceDurations(e.target, manifest),
        key: coerceDurations(e.key, manifest),
      };
    case "unary":
      return { ...e, operand: coerceDurations(e.operand, manifest) };
    case "call":
      return {
        ...e,
        ...(e.target ? { target: coerceDurations(e.target, manifest) } : {}),
        args: e.args.map((a) => coerceDurations(a, manifest)),
      };
    case "binary": {
      let left = coerceDurations(e.left, manifest), right = coerceDurations(e.right, manifest);
      if (e.op === "|" || e.op === "==" || e.op === "!=") {
        if (typeOrUndefined(left, manifest) === "DURATION") right = asDuration(right) ?? right;
        else if (typeOrUndefined(right, manifest) === "DURATION") left = asDuration(left) ?? left;
      }
      return { ...e, left, right };
    }
    default:
      return e;
  }
}

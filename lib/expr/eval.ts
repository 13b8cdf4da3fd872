/**
 * Evaluation of type-checked expressions over an attribute bag.
 * @module
 */

import type { Expr } from "./parse.ts";
import { type AttributeBag, parseIp, type Value, valuesEqual } from "./types.ts";

/** A failed evaluation: a missing attribute or map key (`missing`), or a bad value. */
export class EvalError extends Error {
  /** True when the failure is an absent attribute or map key (what `|` falls back on). */
  readonly missing: boolean;
  /** Creates an evaluation error. */
  constructor(message: string, missing = false) {
    super(message);
    this.name = "EvalError";
    this.missing = missing;
  }
}

const regexCache = new Map<string, RegExp>();

function regex(src: string): RegExp {
  let r = regexCache.get(src);
  if (!r) {
    try {
      r = new RegExp(src);
    } catch (e) {
      throw new EvalError(`Invalid regular expression "${src}": ${(e as Error).message}`);
    }
    if (regexCache.size > 1000) regexCache.clear();
    regexCache.set(src, r);
  }
  return r;
}

/** `match(str, pattern)`: `abc*` is a prefix, `*abc` a suffix, anything else equality. */
export function globMatch(str: string, pattern: string): boolean {
  if (pattern.endsWith("*")) return str.startsWith(pattern.slice(0, -1));
  if (pattern.startsWith("*")) return str.endsWith(pattern.slice(1));
  return str === pattern;
}

const DNS_NAME =
  /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
const EMAIL = /^[^@\s]+@[^@\s]+$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

const CALLS: Record<string, (...a: Value[]) => Value> = {
  ip: (s) => {
    const ip = parseIp(s as string);
    if (!ip) throw new EvalError(`Could not convert "${s}" to IP_ADDRESS`);
    return ip;
  },
  timestamp: (s) => {
    const d = new Date(s as string);
    if (!RFC3339.test(s as string) || isNaN(d.getTime())) {
      throw new EvalError(`Could not convert "${s}" to TIMESTAMP: expected RFC 3339`);
    }
    return d;
  },
  dnsName: (s) => {
    if (!DNS_NAME.test(s as string)) throw new EvalError(`Could not convert "${s}" to DNS_NAME`);
    return s;
  },
  email: (s) => {
    if (!EMAIL.test(s as string)) throw new EvalError(`Could not convert "${s}" to EMAIL_ADDRESS`);
    return s;
  },
  uri: (s) => {
    if (!URL.canParse(s as string)) throw new EvalError(`Could not convert "${s}" to URI`);
    return s;
  },
  match: (s, p) => globMatch(s as string, p as string),
  emptyStringMap: () => ({}),
  matches: (re, s) => regex(re as string).test(s as string),
  startsWith: (s, p) => (s as string).startsWith(p as string),
  endsWith: (s, p) => (s as string).endsWith(p as string),
};

/**
 * Evaluates a type-checked expression. Absent attributes and map keys throw an EvalError with
 * `missing` set unless a `|` fallback supplies a value.
 */
export function evaluate(e: Expr, bag: AttributeBag): Value {
  switch (e.kind) {
    case "string":
    case "int":
    case "double":
    case "bool":
    case "duration":
      return e.value;
    case "attr": {
      const v = bag.get(e.name);
      if (v === undefined) throw new EvalError(`Lookup failed: "${e.name}"`, true);
      return v;
    }
    case "index": {
      if (e.target.kind === "attr" && bag.getKey) {
        const name = e.target.name;
        const k = evaluate(e.key, bag) as string;
        const r = bag.getKey(name, k);
        if (!r.map) throw new EvalError(`Lookup failed: "${name}"`, true);
        if (r.value === undefined) {
          throw new EvalError(`Lookup failed: key "${k}" not in map`, true);
        }
        return r.value;
      }
      const m = evaluate(e.target, bag) as Record<string, string>;
      const k = evaluate(e.key, bag) as string;
      if (!Object.hasOwn(m, k)) throw new EvalError(`Lookup failed: key "${k}" not in map`, true);
      return m[k];
    }
    case "unary":
      return !evaluate(e.operand, bag);
    case "binary":
      return binary(e, bag);
    case "call": {
      const args = (e.target ? [e.target, ...e.args] : e.args).map((a) => evaluate(a, bag));
      return CALLS[e.fn](...args);
    }
  }
}

function binary(e: Expr & { kind: "binary" }, bag: AttributeBag): Value {
  switch (e.op) {
    case "|":
      try {
        return evaluate(e.left, bag);
      } catch (err) {
        if (err instanceof EvalError && err.missing) return evaluate(e.right, bag);
        throw err;
      }
    case "&&":
      return (evaluate(e.left, bag) as boolean) && (evaluate(e.right, bag) as boolean);
    case "||":
      return (evaluate(e.left, bag) as boolean) || (evaluate(e.right, bag) as boolean);
    case "==":
      return valuesEqual(evaluate(e.left, bag), evaluate(e.right, bag));
    case "!=":
      return !valuesEqual(evaluate(e.left, bag), evaluate(e.right, bag));
  }
}

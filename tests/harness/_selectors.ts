/**
 * Label and field selectors with the Kubernetes syntax, for the fake API server.
 *
 * @module
 */

import { isObject, type Json } from "./_patch.ts";

/** A compiled selector: true when the object matches. */
export type Matcher = (obj: Json) => boolean;

/** Thrown for a selector that does not parse; the message is user-facing. */
export class SelectorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SelectorError";
  }
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of s) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else {
      cur += ch;
    }
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== "");
}

function labelsOf(obj: Json): Record<string, string> {
  if (!isObject(obj) || !isObject(obj.metadata) || !isObject(obj.metadata.labels)) return {};
  return obj.metadata.labels as Record<string, string>;
}

/**
 * Compiles a label selector (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
 * comma-separated, all must hold). An empty selector matches everything.
 */
export function parseLabelSelector(selector: string | null): Matcher {
  if (!selector) return () => true;
  const tests: Matcher[] = splitTerms(selector).map((term) => {
    let m = term.match(/^([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)$/);
    if (m) {
      const [, key, op, list] = m;
      const values = new Set(list.split(",").map((v) => v.trim()).filter((v) => v !== ""));
      if (op === "in") return (o) => key in labelsOf(o) && values.has(labelsOf(o)[key]);
      return (o) => !(key in labelsOf(o)) || !values.has(labelsOf(o)[key]);
    }
    m = term.match(/^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/);
    if (m) {
      const [, key, op, value] = m;
      if (op === "!=") return (o) => labelsOf(o)[key] !== value;
      return (o) => key in labelsOf(o) && labelsOf(o)[key] === value;
    }
    m = term.match(/^(!?)([^\s!=(),]+)$/);
    if (m) {
      const [, not, key] = m;
      return not ? (o) => !(key in labelsOf(o)) : (o) => key in labelsOf(o);
    }
    throw new SelectorError(`unable to parse requirement: "${term}"`);
  });
  return (o) => tests.every((t) => t(o));
}

function fieldValue(obj: Json, path: string): string {
  let cur: Json | undefined = obj;
  for (const part of path.split(".")) {
    cur = isObject(cur) ? cur[part] : undefined;
  }
  if (cur === undefined || cur === null) return "";
  return typeof cur === "object" ? JSON.stringify(cur) : String(cur);
}

/**
 * Compiles a field selector (`metadata.name=x`, `metadata.namespace!=y`, `spec.nodeName==n`,
 * `status.phase=Running`; comma-separated, all must hold). Any dotted path into the object is
 * accepted. An empty selector matches everything.
 */
export function parseFieldSelector(selector: string | null): Matcher {
  if (!selector) return () => true;
  const tests: Matcher[] = splitTerms(selector).map((term) => {
    const m = term.match(/^([A-Za-z0-9_.\-]+)\s*(==|=|!=)\s*(.*)$/);
    if (!m) throw new SelectorError(`invalid selector: '${term}'; can't understand '${term}'`);
    const [, path, op, value] = m;
    if (op === "!=") return (o) => fieldValue(o, path) !== value;
    return (o) => fieldValue(o, path) === value;
  });
  return (o) => tests.every((t) => t(o));
}

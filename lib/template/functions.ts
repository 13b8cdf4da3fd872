/**
 * The functions every template may call: Go's text/template built-ins (`and`, `or`, `not`, `eq`,
 * `ne`, `len`, `index`, `printf`) and the sprig ones Helm charts and Istio's templates use
 * (`default`, `quote`, `indent`, `nindent`, `toYaml`, `toJson`, `join`, `lower`, `upper`). A
 * dialect adds its own (the injector's `annotation`, gen-deploy's `meshCrds`).
 * @module
 */

import { stringify as toYamlText } from "../deps/yaml.ts";

/** A template function: receives evaluated arguments (the piped value last). */
export type TemplateFunction = (...args: unknown[]) => unknown;

/** Whether `v` is a map (a plain object, not a list). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Go's notion of an empty value (false in `if`). */
export function isEmpty(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === "") return true;
  if (Array.isArray(v)) return v.length === 0;
  if (isRecord(v)) return Object.keys(v).length === 0;
  return false;
}

/** Text of a printed value: strings as is, empty for nil, JSON for lists and maps. */
export function print(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

function indentText(n: unknown, s: unknown): string {
  const pad = " ".repeat(Math.max(0, Math.min(Number(n) || 0, 1000)));
  return print(s).split("\n").map((l) => l === "" ? l : pad + l).join("\n");
}

/** The built-in functions (their names and argument order are part of the language). */
export const FUNCTIONS: Readonly<Record<string, TemplateFunction>> = Object.freeze({
  /** `default DEFAULT VALUE` (argument order of the sprig library): VALUE unless empty. */
  default: (def: unknown, v: unknown) => isEmpty(v) ? def : v,
  /** `toJson VALUE`: compact JSON. */
  toJson: (v: unknown) => JSON.stringify(v ?? null),
  /** `toYaml VALUE`: block YAML without the trailing newline. */
  toYaml: (v: unknown) => v === undefined ? "" : toYamlText(v).replace(/\n$/, ""),
  /** `indent N TEXT`: every non-empty line indented by N spaces. */
  indent: indentText,
  /** `nindent N TEXT`: a newline, then `indent N TEXT`. */
  nindent: (n: unknown, s: unknown) => "\n" + indentText(n, s),
  /** `quote VALUE`: a double-quoted string. */
  quote: (v: unknown) => JSON.stringify(print(v)),
  /** `index MAP-OR-LIST KEY...`: an element. */
  index: (v: unknown, ...keys: unknown[]) => {
    let cur = v;
    for (const k of keys) {
      if (Array.isArray(cur) && typeof k === "number") cur = cur[k];
      else if (isRecord(cur) && (typeof k === "string" || typeof k === "number")) {
        cur = Object.hasOwn(cur, String(k)) ? cur[String(k)] : undefined;
      } else cur = undefined;
    }
    return cur;
  },
  /** `join SEP LIST`. */
  join: (sep: unknown, list: unknown) =>
    Array.isArray(list) ? list.map(print).join(print(sep)) : print(list),
  /** `len VALUE`: length of a string, list or map. */
  len: (v: unknown) =>
    typeof v === "string" || Array.isArray(v) ? v.length : isRecord(v) ? Object.keys(v).length : 0,
  /** `eq A B`, `ne A B`: equality of scalars. */
  eq: (a: unknown, b: unknown) => a === b || (isEmpty(a) && isEmpty(b) && typeof a === typeof b),
  ne: (a: unknown, b: unknown) => !(a === b || (isEmpty(a) && isEmpty(b) && typeof a === typeof b)),
  /** `not A`, `and A B...`, `or A B...`: Go's truth rules. */
  not: (a: unknown) => isEmpty(a),
  and: (...a: unknown[]) => a.find((x) => isEmpty(x)) ?? a[a.length - 1],
  or: (...a: unknown[]) => a.find((x) => !isEmpty(x)) ?? a[a.length - 1],
  /** `printf FORMAT ARGS...`: `%s`, `%d` and `%v` replaced by the arguments in order, `%%` by `%`. */
  printf: (format: unknown, ...args: unknown[]) => {
    let i = 0;
    return print(format).replace(/%[sdv%]/g, (m) => m === "%%" ? "%" : print(args[i++]));
  },
  /** `lower S`, `upper S`. */
  lower: (s: unknown) => print(s).toLowerCase(),
  upper: (s: unknown) => print(s).toUpperCase(),
});

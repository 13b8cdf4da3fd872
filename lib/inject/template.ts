/**
 * The injector's template dialect: Go's text/template (lib/template) with the `[[` `]]`
 * delimiters Istio's injector templates use, so those templates render here unchanged when they
 * stay within the language; missing fields are empty (printed as nothing), never an error;
 * `.Name` also finds `name`; Istio's functions (`annotation`, `valueOrDefault`, `isset`,
 * `formatDuration`, `includeInboundPorts`) beside the built-in ones. See docs/sidecar-injector.md.
 *
 * @example
 * ```ts
 * import { parseTemplate } from "./template.ts";
 * const t = parseTemplate("name: [[ .ObjectMeta.Name ]]");
 * console.log(t.render({ ObjectMeta: { name: "web" } })); // name: web
 * ```
 * @module
 */

import {
  FUNCTIONS as BUILTINS,
  parseTemplate as parseGoTemplate,
  type Template,
  type TemplateFunction,
} from "../template/mod.ts";
import { isEmpty, isRecord } from "../template/functions.ts";
import { formatDuration, parseDurationMs } from "../model/values.ts";

export { isEmpty, type RenderLimits, type Template, TemplateError } from "../template/mod.ts";

function field(v: unknown, name: string): unknown {
  return isRecord(v) && Object.hasOwn(v, name) ? v[name] : undefined;
}

function durationText(v: unknown): string {
  if (typeof v === "number") return formatDuration(v * 1000);
  if (typeof v === "string") {
    const ms = parseDurationMs(v);
    return ms === undefined ? "1s" : formatDuration(ms);
  }
  if (isRecord(v) && (v.seconds !== undefined || v.nanos !== undefined)) {
    return formatDuration(Number(v.seconds ?? 0) * 1000 + Number(v.nanos ?? 0) / 1e6);
  }
  return "1s";
}

function containerPorts(containers: unknown): string {
  const out: string[] = [];
  for (const c of Array.isArray(containers) ? containers : []) {
    const ports = isRecord(c) ? c.ports : undefined;
    for (const p of Array.isArray(ports) ? ports : []) {
      if (isRecord(p) && p.containerPort !== undefined) out.push(String(p.containerPort));
    }
  }
  return out.join(",");
}

/** The functions sidecar templates may call: the built-in ones and Istio's injector's. */
export const FUNCTIONS: Readonly<Record<string, TemplateFunction>> = Object.freeze({
  ...BUILTINS,
  /** `annotation META KEY DEFAULT`: the annotation when present, else DEFAULT. */
  annotation: (meta: unknown, key: unknown, def: unknown) => {
    const a = field(meta, "annotations");
    return isRecord(a) && typeof key === "string" && Object.hasOwn(a, key) ? a[key] : def;
  },
  /** `valueOrDefault VALUE DEFAULT`: VALUE unless empty. */
  valueOrDefault: (v: unknown, def: unknown) => isEmpty(v) ? def : v,
  /** `isset MAP KEY`: whether KEY is in MAP. */
  isset: (m: unknown, k: unknown) => isRecord(m) && typeof k === "string" && Object.hasOwn(m, k),
  /** `formatDuration D`: a Go duration string (`1s`, `1m0s`); `1s` when D is not a duration. */
  formatDuration: durationText,
  /** `includeInboundPorts CONTAINERS`: comma-separated container ports of every container. */
  includeInboundPorts: containerPorts,
});

/**
 * Parses a sidecar template. Throws {@link TemplateError} naming the line of the first problem
 * (unclosed action, unknown keyword use, unbalanced `if`/`end`, bad string...). Unknown
 * functions are reported when parsing.
 */
export function parseTemplate(src: string): Template {
  return parseGoTemplate(src, { delims: ["[[", "]]"], goFieldNames: true, functions: FUNCTIONS });
}

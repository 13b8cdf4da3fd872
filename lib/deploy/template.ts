/**
 * The chart dialect of `meshctl gen-deploy` (and of user charts given with `--chart-dir`): Go's
 * text/template (lib/template) as Helm charts use it:
 *
 * - actions `{{ ... }}`, with `{{-` / `-}}` trimming the whitespace before / after;
 * - values by path: `.Values.global.hub`, `.Release.Namespace`; printing a value that is not set
 *   is an error, and it is false in a condition (Go's `missingkey=error` for output);
 * - maps and lists print as block YAML;
 * - the built-in functions of lib/template (`quote`, `indent`, `nindent`, `default`, `toYaml`,
 *   `not`, `and`, `or`, `eq`, `ne`...), plus the caller's own (`meshCrds`, `sidecarTemplate`).
 *
 * Errors name the template and line: `templates/x.yaml:12: .Values.foo is not set`.
 *
 * @example
 * ```ts
 * import { renderTemplate } from "./template.ts";
 * const out = renderTemplate("x.yaml", "image: {{ .Values.hub }}/app", { Values: { hub: "h" } });
 * // out === "image: h/app"
 * ```
 * @module
 */
import { stringify } from "../deps/yaml.ts";
import { FUNCTIONS, parseTemplate, type TemplateFunction } from "../template/mod.ts";

export { TemplateError, type TemplateFunction } from "../template/mod.ts";

/** A chart renders whole files at once: no cap on the output of one template. */
const NO_OUTPUT_CAP = { maxOutput: Number.MAX_SAFE_INTEGER };

/** `toYaml VALUE` as the chart has always printed it: block YAML, long lines never folded. */
function toYaml(v: unknown): string {
  return v === undefined ? "" : stringify(v, { lineWidth: 0 }).replace(/\n$/, "");
}

/**
 * Renders one template. `data` is the dot (`{Values, Release}`); `functions` add to (or replace)
 * the built-in functions. Throws {@link TemplateError} naming `name` and the line.
 */
export function renderTemplate(
  name: string,
  src: string,
  data: Record<string, unknown>,
  functions: Record<string, TemplateFunction> = {},
): string {
  return parseTemplate(src, {
    name,
    missingKey: "error",
    printObjects: "yaml",
    functions: { ...FUNCTIONS, toYaml, ...functions },
  }).render(data, NO_OUTPUT_CAP);
}

/**
 * Go text/template, one engine for mesh's two template dialects: the injector's `[[ ]]` sidecar
 * templates (lib/inject) and gen-deploy's `{{ }}` chart (lib/deploy). Delimiters, missing-key
 * behaviour and the function table are options, as Go's `Delims` and `missingkey`.
 *
 * @example
 * ```ts
 * import { parseTemplate } from "./mod.ts";
 * const t = parseTemplate("image: {{ .hub }}/app", { missingKey: "error" });
 * console.log(t.render({ hub: "h" })); // image: h/app
 * ```
 * @module
 */

export {
  parseTemplate,
  type RenderLimits,
  type Template,
  TemplateError,
  type TemplateOptions,
} from "./template.ts";
export { FUNCTIONS, isEmpty, print, type TemplateFunction } from "./functions.ts";

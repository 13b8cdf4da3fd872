/**
 * Deployment manifests of the mesh for the orchestrator (`meshctl gen-deploy`): a chart (default
 * values plus templates, built in or from a directory) rendered with the user's values into one
 * multi-document YAML stream, every document checked.
 *
 * @example
 * ```ts
 * import { builtinChart, mergeValues, renderDeployment } from "./mod.ts";
 * const chart = builtinChart();
 * const values = mergeValues(chart.values, { ingress: { enabled: false } });
 * const { text } = renderDeployment(chart, values, "mesh-system");
 * console.log(text.split("\n---\n").length);
 * ```
 * @module
 */
import { parseAllDocuments } from "../deps/yaml.ts";
import { crdManifests } from "../model/crds.ts";
import { stringify } from "../deps/yaml.ts";
import { firstErrorLine } from "../model/errors.ts";
import { CHART_TEMPLATES, defaultValues, sidecarTemplate } from "./chart.ts";
import { renderTemplate, TemplateError } from "./template.ts";

export {
  CHART_TEMPLATES,
  DEFAULT_HUB,
  DEFAULT_HYPERKUBE,
  defaultValues,
  sidecarTemplate,
} from "./chart.ts";
export { renderTemplate, TemplateError, type TemplateFunction } from "./template.ts";

/** A chart: default values and templates by file name (`templates/10-discovery.yaml`). */
export interface Chart {
  /** Where it comes from, for messages (`built-in`, or the directory). */
  source: string;
  values: Record<string, unknown>;
  templates: Readonly<Record<string, string>>;
}

/** The chart built into this program. */
export function builtinChart(): Chart {
  return { source: "built-in", values: defaultValues(), templates: CHART_TEMPLATES };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Deep merge of values: maps merge key by key, anything else in `over` replaces. */
export function mergeValues(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = isRecord(v) && isRecord(base[k])
      ? mergeValues(base[k] as Record<string, unknown>, v)
      : v;
  }
  return out;
}

/** The value at a dotted path (`ingress.nodePort`), or undefined. */
export function valueAt(values: Record<string, unknown>, path: string): unknown {
  let v: unknown = values;
  for (const p of path.split(".")) {
    if (!isRecord(v)) return undefined;
    v = v[p];
  }
  return v;
}

/** The features a values file turns on and off, by their user-facing names. */
export const FEATURES: Readonly<Record<string, string>> = Object.freeze({
  policy: "policy.enabled",
  telemetry: "telemetry.enabled",
  mtls: "mtls.enabled",
  ingress: "ingress.enabled",
  "sidecar-injector": "sidecarInjector.enabled",
});

type Check = (v: unknown) => string | undefined;
const bool: Check = (v) => (typeof v === "boolean" ? undefined : "must be true or false");
const text: Check = (
  v,
) => (typeof v === "string" && v !== "" ? undefined : "must be a non-empty string");
const image: Check = (v) =>
  typeof v === "string" && /^[a-z0-9]+([._\/-][a-z0-9]+)*(:\d+)?(\/[a-z0-9]+([._-][a-z0-9]+)*)*$/
      .test(v)
    ? undefined
    : "must be an image repository (lowercase letters, digits, '.', '_', '-' and '/')";
const tag: Check = (v) =>
  typeof v === "string" && /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(v)
    ? undefined
    : "must be an image tag (letters, digits, '_', '.', '-'; at most 128 characters)";
const replicas: Check = (v) =>
  Number.isInteger(v) && (v as number) >= 0 ? undefined : "must be an integer >= 0";
const oneOf = (...allowed: string[]): Check => (v) =>
  allowed.includes(v as string) ? undefined : `must be one of ${allowed.join(", ")}`;
const nodePort: Check = (v) =>
  v === 0 || (Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535)
    ? undefined
    : "must be 0 (none) or a port between 1 and 65535";
const port: Check = (v) =>
  Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535
    ? undefined
    : "must be a port between 1 and 65535";
const duration: Check = (v) =>
  typeof v === "string" && /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(v)
    ? undefined
    : 'must be a duration such as "1s" or "1m0s"';

/** The value types the built-in chart relies on. */
const VALUE_CHECKS: Readonly<Record<string, Check>> = {
  "global.hub": image,
  "global.tag": tag,
  "global.imagePullPolicy": oneOf("Always", "IfNotPresent", "Never"),
  "global.debug": bool,
  "global.domain": text,
  "global.refreshInterval": duration,
  "global.hyperkube.hub": image,
  "global.hyperkube.tag": tag,
  "mtls.enabled": bool,
  "discovery.replicas": replicas,
  "discovery.image": image,
  "ca.replicas": replicas,
  "ca.image": image,
  "policy.enabled": bool,
  "policy.replicas": replicas,
  "policy.image": image,
  "telemetry.enabled": bool,
  "telemetry.replicas": replicas,
  "telemetry.image": image,
  "ingress.enabled": bool,
  "ingress.replicas": replicas,
  "ingress.image": image,
  "ingress.serviceType": oneOf("LoadBalancer", "NodePort", "ClusterIP"),
  "ingress.nodePort": nodePort,
  "sidecarInjector.enabled": bool,
  "sidecarInjector.replicas": replicas,
  "sidecarInjector.image": image,
  "sidecarInjector.port": port,
  "sidecarInjector.policy": oneOf("enabled", "disabled"),
  "sidecarInjector.proxyImage": image,
  "sidecarInjector.proxyInitImage": image,
};

/**
 * Checks merged values against the types the built-in chart relies on. Returns one line per
 * problem: `ingress.nodePort: must be 0 (none) or a port between 1 and 65535, got "x"`.
 */
export function checkValues(values: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [path, check] of Object.entries(VALUE_CHECKS)) {
    const v = valueAt(values, path);
    const bad = check(v);
    if (bad) out.push(`${path}: ${bad}, got ${v === undefined ? "nothing" : JSON.stringify(v)}`);
  }
  return out;
}

/** One rendered template file. */
export interface RenderedFile {
  name: string;
  content: string;
}

/** The CRDs of the mesh as documents of one template (`{{ meshCrds }}`). */
function meshCrds(): string {
  return crdManifests().map((m) => stringify(m, { lineWidth: 0 }).replace(/\n$/, "")).join(
    "\n---\n",
  );
}

/**
 * Renders every template of `chart` with `values` (already merged) and the release namespace.
 * Files that render to whitespace only are left out. Throws {@link TemplateError} naming the file
 * and line, or an Error naming the file and document when the output is not YAML objects with
 * `apiVersion`, `kind` and `metadata.name`.
 */
export function renderChart(
  chart: Chart,
  values: Record<string, unknown>,
  namespace: string,
): RenderedFile[] {
  const data = { Values: values, Release: { Namespace: namespace, Name: "mesh" } };
  const out: RenderedFile[] = [];
  for (const name of Object.keys(chart.templates).sort()) {
    const content = renderTemplate(name, chart.templates[name], data, {
      meshCrds,
      sidecarTemplate,
    });
    if (content.trim() === "") continue;
    checkDocuments(name, content);
    out.push({ name, content: content.replace(/^\s*\n/, "").replace(/\s*$/, "\n") });
  }
  return out;
}

function checkDocuments(name: string, content: string): void {
  const docs = parseAllDocuments(content);
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((doc, i) => {
    const where = `${name} document ${i + 1}`;
    if (doc.errors.length > 0) {
      throw new Error(`${where}: not YAML: ${firstErrorLine(doc.errors[0].message)}`);
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) return;
    if (!isRecord(obj)) throw new Error(`${where}: must be an object`);
    for (const field of ["apiVersion", "kind"]) {
      if (typeof obj[field] !== "string" || obj[field] === "") {
        throw new Error(`${where}: ${field} is required`);
      }
    }
    const meta = obj.metadata;
    if (!isRecord(meta) || typeof meta.name !== "string" || meta.name === "") {
      throw new Error(`${where}: ${obj.kind}: metadata.name is required`);
    }
  });
}

/**
 * The whole output of `gen-deploy`: each rendered file as `---\n# Source: mesh/<file>\n<content>`
 * (as the reference prints Helm's output).
 */
export function renderDeployment(
  chart: Chart,
  values: Record<string, unknown>,
  namespace: string,
): { text: string; files: RenderedFile[] } {
  const files = renderChart(chart, values, namespace);
  return {
    files,
    text: files.map((f) => `---\n# Source: mesh/${f.name}\n${f.content}`).join(""),
  };
}

/** Whether an error came from rendering (a template problem) rather than from I/O. */
export function isTemplateError(err: unknown): err is TemplateError {
  return err instanceof TemplateError;
}

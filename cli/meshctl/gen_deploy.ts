/**
 * `meshctl gen-deploy`: prints the manifests that run the mesh on the orchestrator (namespace,
 * CRDs, service accounts and RBAC, the `mesh` and `mesh-sidecar-injector` config maps,
 * Deployments and Services of mesh-discovery, mesh-policy (policy and telemetry), mesh_ca and
 * sidecar-injector with its MutatingWebhookConfiguration, and an ingress gateway running
 * mesh-agent), for `kubectl apply -f -`.
 *
 * Values: the chart's defaults, then the flags (`--debug`, `--hyperkube-hub`, `--hyperkube-tag`,
 * `--ingress-node-port`), then the `--values` file, which wins: a flag whose value the file also
 * sets is ignored with a warning. `--ingress-node-port` without the ingress feature is ignored
 * with a warning. `--chart-dir` names a directory with `templates/*.yaml` (and optionally
 * `values.yaml`) used instead of the built-in chart; the default `.` uses the built-in chart
 * unless the working directory has a `templates/` directory.
 * @module
 */
import { isAbsolute, join, resolve } from "node:path";
import { type CliContext, UsageError } from "../_shared/context.ts";
import { parse } from "../../lib/deps/yaml.ts";
import { firstErrorLine } from "../../lib/model/errors.ts";
import { isDns1123Label } from "../../lib/model/values.ts";
import {
  builtinChart,
  type Chart,
  checkValues,
  DEFAULT_HYPERKUBE,
  mergeValues,
  renderDeployment,
  valueAt,
} from "../../lib/deploy/mod.ts";
import type { GenDeployOptions } from "./flags.ts";
import { osReason } from "./_config_io.ts";

/** Runs `meshctl gen-deploy`. */
export async function run(
  opts: GenDeployOptions,
  args: string[],
  ctx: CliContext,
): Promise<number> {
  void args; // none declared: the runner refuses any
  const ns = opts.meshNamespace;
  if (!isDns1123Label(ns)) {
    throw new UsageError(
      `Invalid --meshNamespace ${JSON.stringify(ns)}: must be a DNS-1123 label`,
    );
  }
  const chart = await loadChart(opts.chartDir, ctx);
  const file = opts.values ? await readValuesFile(opts.values, ctx) : {};
  const { values, warnings } = resolveValues(chart, opts, file);
  const problems = chart.source === "built-in"
    ? checkValues(values)
    : checkValues(values).filter((p) => !p.endsWith(", got nothing"));
  if (problems.length > 0) {
    const from = opts.values ? ` (${opts.values})` : "";
    throw new Error(`invalid values${from}: ${problems.join("; ")}`);
  }
  const { text } = renderDeployment(chart, values, ns);
  for (const w of warnings) await ctx.stderr.write(`Warning: ${w}\n`);
  await ctx.stdout.write(text);
  return 0;
}

/** What each flag sets when it differs from its default. */
const FLAG_PATHS = [
  { flag: "--debug", path: "global.debug", get: (o: GenDeployOptions) => o.debug, unset: false },
  {
    flag: "--hyperkube-hub",
    path: "global.hyperkube.hub",
    get: (o: GenDeployOptions) => o.hyperkubeHub,
    unset: DEFAULT_HYPERKUBE.hub,
  },
  {
    flag: "--hyperkube-tag",
    path: "global.hyperkube.tag",
    get: (o: GenDeployOptions) => o.hyperkubeTag,
    unset: DEFAULT_HYPERKUBE.tag,
  },
  {
    flag: "--ingress-node-port",
    path: "ingress.nodePort",
    get: (o: GenDeployOptions) => o.ingressNodePort,
    unset: 0,
  },
] as const;

/** Sets `path` in a values tree (creating maps on the way). */
function setPath(values: Record<string, unknown>, path: string, v: unknown): void {
  const parts = path.split(".");
  let cur = values;
  for (const p of parts.slice(0, -1)) {
    if (typeof cur[p] !== "object" || cur[p] === null) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts.at(-1)!] = v;
}

/**
 * Chart defaults, then flags given with a non-default value, then the values file. Returns the
 * merged values and the warnings about ignored flags.
 */
export function resolveValues(
  chart: Chart,
  opts: GenDeployOptions,
  file: Record<string, unknown>,
): { values: Record<string, unknown>; warnings: string[] } {
  const warnings: string[] = [];
  const fromFlags: Record<string, unknown> = {};
  for (const f of FLAG_PATHS) {
    const v = f.get(opts);
    if (v === f.unset) continue;
    if (valueAt(file, f.path) !== undefined) {
      warnings.push(`${f.flag} is ignored: the values file sets ${f.path}`);
      continue;
    }
    setPath(fromFlags, f.path, v);
  }
  const values = mergeValues(mergeValues(chart.values, fromFlags), file);
  if (opts.ingressNodePort !== 0 && valueAt(values, "ingress.enabled") !== true) {
    warnings.push("--ingress-node-port is ignored: the ingress feature is off");
  }
  return { values, warnings };
}

async function readValuesFile(path: string, ctx: CliContext): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await Deno.readTextFile(isAbsolute(path) ? path : resolve(ctx.cwd, path));
  } catch (err) {
    throw new Error(`Cannot read values file ${JSON.stringify(path)}: ${osReason(err)}`);
  }
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new Error(
      `Cannot parse values file ${JSON.stringify(path)}: ${firstErrorLine((err as Error).message)}`,
    );
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new Error(`Cannot use values file ${JSON.stringify(path)}: not a mapping`);
  }
  return doc as Record<string, unknown>;
}

async function isDir(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch {
    return false;
  }
}

/** The built-in chart, or the templates (and values.yaml) of `--chart-dir`. */
async function loadChart(dirFlag: string, ctx: CliContext): Promise<Chart> {
  const dir = isAbsolute(dirFlag) ? dirFlag : resolve(ctx.cwd, dirFlag);
  const templatesDir = join(dir, "templates");
  if (!(await isDir(templatesDir))) {
    if (dirFlag === ".") return builtinChart();
    if (!(await isDir(dir))) {
      throw new Error(`Cannot use chart directory ${JSON.stringify(dirFlag)}: no such directory`);
    }
    throw new Error(
      `Cannot use chart directory ${JSON.stringify(dirFlag)}: it has no templates/ directory`,
    );
  }
  const templates: Record<string, string> = {};
  for await (const e of Deno.readDir(templatesDir)) {
    if (!e.isFile || !/\.(ya?ml)$/.test(e.name)) continue;
    try {
      templates[`templates/${e.name}`] = await Deno.readTextFile(join(templatesDir, e.name));
    } catch (err) {
      throw new Error(`Cannot read template ${join(templatesDir, e.name)}: ${osReason(err)}`);
    }
  }
  if (Object.keys(templates).length === 0) {
    throw new Error(
      `Cannot use chart directory ${JSON.stringify(dirFlag)}: templates/ has no .yaml files`,
    );
  }
  let values = builtinChart().values;
  const valuesFile = join(dir, "values.yaml");
  try {
    const own = parse(await Deno.readTextFile(valuesFile));
    if (own !== null && typeof own === "object" && !Array.isArray(own)) {
      values = mergeValues(values, own as Record<string, unknown>);
    } else if (own !== null && own !== undefined) {
      throw new Error(`Cannot use ${valuesFile}: not a mapping`);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) {
      throw new Error(`Cannot read ${valuesFile}: ${firstErrorLine((err as Error).message)}`);
    }
  }
  return { source: dir, values, templates };
}

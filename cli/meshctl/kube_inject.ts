/**
 * `meshctl kube-inject -f <file|-> [-o <file>]`: injects the proxy sidecar into the pod
 * templates of the workloads of a YAML stream (lib/inject). The injection configuration comes
 * from `--injectConfigFile`, else the built-in template when `--hub` and `--tag` are given, else
 * config map `--injectConfigMapName` in `-i`; the mesh configuration from `--meshConfigFile`, else
 * the default one with `--hub`/`--tag`, else config map `--meshConfigMapName`. The orchestrator
 * client is loaded only when a config map must be read. `--emitTemplate` prints the injection
 * configuration instead (for sidecar-injector's `--injectConfig`).
 * @module
 */

import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { UsageError } from "../_shared/context.ts";
import type { KubeInjectOptions } from "./flags.ts";
import { kubeconfigPath, type MeshctlContext, osReason } from "./_config_io.ts";

const PULL_POLICIES = ["Always", "IfNotPresent", "Never"];

/** Whether a flag was given on the command line (its default cannot tell). */
function given(ctx: MeshctlContext, name: string): boolean {
  return (ctx.args ?? []).some((a) => a === `--${name}` || a.startsWith(`--${name}=`));
}

function absolute(path: string, ctx: MeshctlContext): string {
  return isAbsolute(path) ? path : resolve(ctx.cwd, path);
}

async function readFile(path: string, what: string, ctx: MeshctlContext): Promise<string> {
  try {
    return await Deno.readTextFile(absolute(path, ctx));
  } catch (err) {
    throw new Error(`Cannot read ${what} ${JSON.stringify(path)}: ${osReason(err)}`);
  }
}

/** Writes through a temporary file in the same directory and a rename. */
async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = join(
    dirname(path),
    `.${basename(path)}.tmp-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`,
  );
  try {
    await Deno.writeTextFile(tmp, text);
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw new Error(`Cannot write ${JSON.stringify(path)}: ${osReason(err)}`);
  }
}

/** Checks the template parameters; throws {@link UsageError} naming the flag. */
function checkParams(opts: KubeInjectOptions): void {
  if ((opts.hub === "") !== (opts.tag === "")) {
    throw new UsageError("--hub and --tag must be given together");
  }
  if (!PULL_POLICIES.includes(opts.imagePullPolicy)) {
    throw new UsageError(
      `--imagePullPolicy: must be one of ${PULL_POLICIES.join(", ")}, got ${
        JSON.stringify(opts.imagePullPolicy)
      }`,
    );
  }
  if (
    !Number.isInteger(opts.sidecarProxyUID) || opts.sidecarProxyUID < 0 ||
    opts.sidecarProxyUID > 2147483647
  ) {
    throw new UsageError(
      `--sidecarProxyUID: must be a user ID (0-2147483647), got ${opts.sidecarProxyUID}`,
    );
  }
}

/** Runs `meshctl kube-inject`. */
export async function run(
  opts: KubeInjectOptions,
  _args: string[],
  ctx: MeshctlContext,
): Promise<number> {
  checkParams(opts);
  if (opts.emitTemplate && opts.filename) {
    throw new UsageError("--emitTemplate cannot be combined with --filename");
  }
  if (!opts.emitTemplate && !opts.filename) {
    throw new UsageError("filename not specified (see --filename or -f)");
  }
  if (opts.injectConfigFile && given(ctx, "injectConfigMapName")) {
    throw new UsageError("--injectConfigFile and --injectConfigMapName cannot be used together");
  }
  const inject = await import("../../lib/inject/mod.ts");
  const { ipRangesProblem, portsProblem } = inject;
  const problems = [
    ["includeIPRanges", ipRangesProblem(opts.includeIPRanges, true)],
    ["excludeIPRanges", ipRangesProblem(opts.excludeIPRanges, false)],
    ["includeInboundPorts", portsProblem(opts.includeInboundPorts, true)],
    ["excludeInboundPorts", portsProblem(opts.excludeInboundPorts, false)],
  ].filter(([, p]) => p);
  if (problems.length > 0) throw new UsageError(`--${problems[0][0]}: ${problems[0][1]}`);
  const defaults = inject.defaultTemplateParams();
  const params = {
    ...defaults,
    hub: opts.hub || defaults.hub,
    tag: opts.tag || defaults.tag,
    includeIPRanges: opts.includeIPRanges,
    excludeIPRanges: opts.excludeIPRanges,
    includeInboundPorts: opts.includeInboundPorts,
    excludeInboundPorts: opts.excludeInboundPorts,
    sidecarProxyUID: opts.sidecarProxyUID,
    imagePullPolicy: opts.imagePullPolicy,
    debug: opts.debug,
    coreDump: opts.coreDump,
    verbosity: opts.verbosity,
  };
  if (opts.emitTemplate) {
    const { stringify } = await import("../../lib/deps/yaml.ts");
    const text = stringify({ policy: "enabled", template: inject.builtinTemplate(params) }, {
      lineWidth: 0,
    });
    if (opts.output) await writeAtomic(absolute(opts.output, ctx), text);
    else await ctx.stdout.write(text);
    return 0;
  }
  const builtin = opts.hub !== "";
  const { parseInjectConfig, parseMeshConfig, defaultMeshConfig } = await import(
    "../../lib/model/meshconfig.ts"
  );
  // the cluster is reached only for what no file or built-in default provides
  const cluster = lazyCluster(opts, ctx);
  let injectConfig;
  if (opts.injectConfigFile) {
    injectConfig = parseInjectConfig(
      await readFile(opts.injectConfigFile, "injection configuration", ctx),
      opts.injectConfigFile,
    );
  } else if (builtin) {
    injectConfig = { policy: "enabled" as const, template: inject.builtinTemplate(params) };
  } else {
    const where = `config map ${opts.meshNamespace}/${opts.injectConfigMapName}`;
    injectConfig = parseInjectConfig(
      await cluster.value(
        opts.injectConfigMapName,
        "config",
        "--injectConfigFile, or --hub and --tag",
      ),
      where,
    );
  }
  let meshConfig;
  if (opts.meshConfigFile) {
    meshConfig = parseMeshConfig(
      await readFile(opts.meshConfigFile, "mesh configuration", ctx),
      opts.meshConfigFile,
    );
  } else if (builtin && !given(ctx, "meshConfigMapName")) {
    meshConfig = defaultMeshConfig();
  } else {
    meshConfig = parseMeshConfig(
      await cluster.value(opts.meshConfigMapName, "mesh", "--meshConfigFile"),
      `config map ${opts.meshNamespace}/${opts.meshConfigMapName}`,
    );
  }
  let injector;
  try {
    injector = new inject.Injector({
      policy: injectConfig.policy,
      template: injectConfig.template || inject.builtinTemplate(params),
      meshConfig,
      templates: { [inject.GRPC_AGENT_TEMPLATE]: inject.builtinGrpcAgentTemplate(params) },
    });
  } catch (err) {
    throw new Error(`Invalid injection template: ${(err as Error).message}`);
  }
  const label = opts.filename === "-" ? "stdin" : opts.filename;
  const text = opts.filename === "-"
    ? await new Response(ctx.stdin).text()
    : await readFile(opts.filename, "input", ctx);
  let result;
  try {
    result = inject.injectStream(text, injector);
  } catch (err) {
    throw new Error(`${label}: ${(err as Error).message}`);
  }
  if (result.messages.length) await ctx.stderr.write(result.messages.map((m) => m + "\n").join(""));
  if (opts.output) await writeAtomic(absolute(opts.output, ctx), result.output);
  else await ctx.stdout.write(result.output);
  return 0;
}

/** The modules {@link lazyCluster} loads on first use (a seam for tests). */
export interface ClusterModules {
  kube: Pick<typeof import("../../lib/kube/mod.ts"), "loadKubeConfig">;
  orch: Pick<typeof import("../../lib/inject/orch.ts"), "readConfigMapValue">;
}

const loadClusterModules = async (): Promise<ClusterModules> => ({
  kube: await import("../../lib/kube/mod.ts"),
  orch: await import("../../lib/inject/orch.ts"),
});

/**
 * Reads config maps of `-i` through `-c`, loading the kubeconfig (and the client) once. The
 * modules are loaded before the kubeconfig is read, and the kubeconfig promise is awaited as soon
 * as it exists: a missing kubeconfig is then one clean error however long the first (cold-cache)
 * import takes, never an unhandled rejection.
 */
export function lazyCluster(
  opts: KubeInjectOptions,
  ctx: MeshctlContext,
  load: () => Promise<ClusterModules> = loadClusterModules,
) {
  let kc: Promise<import("../../lib/kube/mod.ts").KubeConfig> | undefined;
  return {
    async value(name: string, key: string, instead: string): Promise<string> {
      const { kube, orch } = await load();
      const path = kubeconfigPath(opts, ctx);
      kc ??= (async () => {
        try {
          await Deno.stat(path);
        } catch {
          throw new Error(
            `Cannot read kubeconfig "${path}" to get config map ${opts.meshNamespace}/${name}: ` +
              `no such file (give -c/--orchconfig, or ${instead})`,
          );
        }
        return await kube.loadKubeConfig(path);
      })();
      return await orch.readConfigMapValue(await kc, opts.meshNamespace, name, key);
    },
  };
}

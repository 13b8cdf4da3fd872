/**
 * `meshctl context-create --api-server <url> [--context mesh]`: writes an orchestrator-style
 * config file (kubeconfig) whose current context points at an API server, for use outside the
 * orchestrator. The file of `--orchconfig` is updated (created when missing), other entries are
 * kept, and the write is atomic (temp file + rename, mode 0600).
 * @module
 */
import { basename, dirname, isAbsolute, resolve } from "node:path";
import { type CliContext, UsageError } from "../_shared/context.ts";
import { parse, stringify } from "../../lib/deps/yaml.ts";
import type { ContextCreateOptions } from "./flags.ts";
import { firstErrorLine } from "../../lib/model/errors.ts";
import { kubeconfigPath, osReason } from "./_config_io.ts";

type Entry = { name: string; [key: string]: unknown };

/** Runs `meshctl context-create`. */
export async function run(
  opts: ContextCreateOptions,
  args: string[],
  ctx: CliContext,
): Promise<number> {
  void args; // none declared: the runner refuses any
  const server = opts.apiServer;
  if (!server) throw new UsageError("specify the api server address with --api-server");
  const url = checkServer(server);
  const name = opts.context;
  if (!name || /\s/.test(name)) {
    throw new UsageError(
      `Invalid value for --context: ${JSON.stringify(name)}: must be a non-empty word`,
    );
  }
  const raw = kubeconfigPath(opts, ctx);
  const path = isAbsolute(raw) ? raw : resolve(ctx.cwd, raw);
  const config = await readKubeconfig(path);
  const previous = typeof config["current-context"] === "string" ? config["current-context"] : "";
  updateKubeconfig(config, { name, server: url, namespace: opts.namespace });
  await writeAtomic(path, stringify(config, { lineWidth: 0 }));
  if (previous && previous !== name) {
    await ctx.stdout.write(`kubeconfig context switched to ${JSON.stringify(name)}\n`);
  }
  await ctx.stdout.write(`Context ${JSON.stringify(name)} created in ${path}\n`);
  return 0;
}

/** Checks an `--api-server` value: an http or https URL with a host. Returns it normalized. */
export function checkServer(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new UsageError(
      `Invalid value for --api-server: ${
        JSON.stringify(value)
      }: not a URL (want http://<ip>:<port>)`,
    );
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new UsageError(
      `Invalid value for --api-server: ${
        JSON.stringify(value)
      }: scheme must be http or https, got ${JSON.stringify(u.protocol.replace(/:$/, ""))}`,
    );
  }
  if (!u.hostname) {
    throw new UsageError(`Invalid value for --api-server: ${JSON.stringify(value)}: no host`);
  }
  return value.replace(/\/+$/, "");
}

/** Reads a kubeconfig file as a plain object; a missing file is an empty config. */
async function readKubeconfig(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return {};
    throw new Error(`Cannot read kubeconfig "${path}": ${osReason(err)}`);
  }
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new Error(`Cannot parse kubeconfig "${path}": ${firstErrorLine((err as Error).message)}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new Error(`Cannot parse kubeconfig "${path}": not a mapping`);
  }
  const config = doc as Record<string, unknown>;
  for (const key of ["clusters", "contexts", "users"]) {
    const v = config[key];
    if (v === undefined || v === null) continue;
    if (!Array.isArray(v) || v.some((e) => typeof e !== "object" || e === null)) {
      throw new Error(`Cannot parse kubeconfig "${path}": ${key} must be a list of entries`);
    }
  }
  return config;
}

function list(config: Record<string, unknown>, key: string): Entry[] {
  const v = config[key];
  if (!Array.isArray(v)) config[key] = [];
  return config[key] as Entry[];
}

function upsert(entries: Entry[], name: string, field: string): Record<string, unknown> {
  let e = entries.find((x) => x.name === name);
  if (!e) {
    e = { name, [field]: {} };
    entries.push(e);
  }
  if (typeof e[field] !== "object" || e[field] === null) e[field] = {};
  return e[field] as Record<string, unknown>;
}

/**
 * Creates or updates, in a kubeconfig object, cluster `<name>` (server; TLS verification off for
 * http), a user `<name>` when the context has no user, context `<name>` (cluster, user, and the
 * namespace when given), and makes it current.
 */
export function updateKubeconfig(
  config: Record<string, unknown>,
  opts: { name: string; server: string; namespace?: string },
): void {
  config.apiVersion ??= "v1";
  config.kind ??= "Config";
  const cluster = upsert(list(config, "clusters"), opts.name, "cluster");
  cluster.server = opts.server;
  if (opts.server.startsWith("http:")) cluster["insecure-skip-tls-verify"] = true;
  else delete cluster["insecure-skip-tls-verify"];
  const context = upsert(list(config, "contexts"), opts.name, "context");
  context.cluster = opts.name;
  const users = list(config, "users");
  if (typeof context.user !== "string" || !users.some((u) => u.name === context.user)) {
    upsert(users, opts.name, "user");
    context.user = opts.name;
  }
  if (opts.namespace) context.namespace = opts.namespace;
  config["current-context"] = opts.name;
  config.preferences ??= {};
}

/** Writes `text` to `path` through a temp file in the same directory, mode 0600. */
async function writeAtomic(path: string, text: string): Promise<void> {
  const dir = dirname(path);
  await Deno.mkdir(dir, { recursive: true });
  const tmp = `${dir}/.${basename(path)}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await Deno.writeTextFile(tmp, text, { mode: 0o600 });
    await Deno.chmod(tmp, 0o600);
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw new Error(`Cannot write kubeconfig "${path}": ${(err as Error).message}`);
  }
}

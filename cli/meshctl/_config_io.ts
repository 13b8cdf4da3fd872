/**
 * Shared plumbing of `meshctl create`, `replace`, `delete` and `get`: opening the store the
 * global flags select (`--platform orch` → the orchestrator store, `--platform fs` → the file
 * store on `--configDir`), reading and validating input documents (every document is checked
 * before anything is written), namespace resolution and message formatting.
 * @module
 */
import { isAbsolute, resolve } from "node:path";
import { type CliContext, UsageError } from "../_shared/context.ts";
import { type FromService, serviceAsServiceEntry, STAND_IN_ENDPOINT } from "./_service_fs.ts";
import type { CommonOptions } from "./flags.ts";
import {
  currentNamespace,
  type InClusterEnv,
  loadKubeConfig,
  resolveKubeconfigPath,
} from "../../lib/kube/mod.ts";
import {
  type ConfigObject,
  escapeControl,
  formatIssue,
  isOrchestratorKind,
  legacyNotServedReason,
  type ModelSchema,
  normalizeObject,
  parseDocuments,
  printable,
  resolveMeshctlType,
  schemaByType,
  schemasByKindOnly,
  unservedFields,
  unsupportedKindReason,
  type ValidationIssue,
} from "../../lib/model/mod.ts";
import { type ConfigStore, ConflictError, NotFoundError } from "../../lib/store/types.ts";
import type { KubeStore } from "../../lib/store/kube.ts";

/** What meshctl's commands get besides the common CLI context. */
export interface MeshctlContext extends CliContext {
  /**
   * Whether standard input is a terminal (read once at start-up; absent: not a terminal). Then
   * create, replace and delete without `-f` fail at once instead of waiting for typed input.
   */
  readonly stdinIsTerminal?: boolean;
}

/** The platforms meshctl works on. */
export type Platform = "orch" | "fs";

/** Checks `--platform` (and `--configDir` for fs); throws {@link UsageError} otherwise. */
function checkPlatform(opts: CommonOptions): Platform {
  const p = opts.platform;
  if (p !== "orch" && p !== "fs") {
    throw new UsageError(
      `Unknown platform ${JSON.stringify(p)}: want "orch" (orchestrator API) or "fs" ` +
        `(a --configDir directory)`,
    );
  }
  if (p === "fs" && !opts.configDir) {
    throw new UsageError(`--configDir is required with --platform fs`);
  }
  return p;
}

/** A store opened for one command, with the namespace objects without one go to. */
export interface OpenedStore {
  readonly store: ConfigStore;
  /**
   * Problems the store saw while loading: `errors` make a read meaningless (a type that cannot be
   * listed), `warnings` do not (a file or a stored object that fails validation is left out).
   */
  problems(): { errors: string[]; warnings: string[] };
  close(): Promise<void>;
}

/** Where the store of a platform lives, resolved before opening it. */
export interface StoreTarget {
  platform: Platform;
  /** fs: the directory; orch: the kubeconfig path. */
  path: string;
  /** orch with an empty path: the in-cluster environment (read once, from the context). */
  inCluster?: InClusterEnv;
}

/** Resolves `--configDir` / `--orchconfig` against the working directory. */
export function storeTarget(opts: CommonOptions, ctx: CliContext): StoreTarget {
  const platform = checkPlatform(opts);
  if (platform === "fs") return { platform, path: absolute(opts.configDir, ctx) };
  return { platform, path: kubeconfigPath(opts, ctx), inCluster: inClusterEnv(ctx) };
}

/** The in-cluster orchestrator environment of a command's context. */
export function inClusterEnv(ctx: CliContext): InClusterEnv {
  return {
    KUBERNETES_SERVICE_HOST: ctx.env.KUBERNETES_SERVICE_HOST,
    KUBERNETES_SERVICE_PORT: ctx.env.KUBERNETES_SERVICE_PORT,
  };
}

/** The kubeconfig file meant by `--orchconfig` (first entry of a `:` list), absolute. */
export function kubeconfigPath(opts: CommonOptions, ctx: CliContext): string {
  const p = resolveKubeconfigPath(undefined, {
    KUBECONFIG: opts.orchconfig,
    HOME: ctx.env.HOME,
    USERPROFILE: ctx.env.USERPROFILE,
  });
  if (!p) throw new UsageError("No orchestrator configuration file: set --orchconfig or HOME");
  return absolute(p, ctx);
}

function absolute(path: string, ctx: CliContext): string {
  return isAbsolute(path) ? path : resolve(ctx.cwd, path);
}

/** Options of {@link Connection.open}. */
export interface OpenStoreOptions {
  /** Types the command touches (the store loads only these). */
  schemas: readonly ModelSchema[];
  /** Restrict the orchestrator store to this namespace (reads of one namespace). */
  namespace?: string;
  /** fs: create the directory when it is missing (create, replace); else it must exist. */
  createDir?: boolean;
  /**
   * Only get/list will be used (`meshctl get`): on orch, one list per type over the direct REST
   * path when the kubeconfig allows it, instead of the watching store of the client library.
   */
  readOnly?: boolean;
}

/** A platform ready to open stores: its default namespace is known. */
export interface Connection {
  /** The default namespace: the current context's on orch, `default` on fs. */
  readonly defaultNamespace: string;
  /**
   * Opens the store holding `schemas`. The orchestrator store lists only those types (in
   * `namespace` when given); the file store reads the directory once, without watching it.
   */
  open(options: OpenStoreOptions): Promise<OpenedStore>;
}

/** Prepares `target`: on orch, loads the kubeconfig (a missing or bad file is an Error). */
export async function connect(target: StoreTarget): Promise<Connection> {
  if (target.platform === "fs") {
    return {
      defaultNamespace: "default",
      async open(options) {
        await prepareDir(target.path, options.createDir ?? false);
        const { createFileStore } = await import("../../lib/store/file.ts");
        // log: false — file problems come back through errors() and are printed as warnings,
        // so that stdout carries results only; watch: false — one read, no watcher or timer.
        const store = await createFileStore({
          dir: target.path,
          schemas: options.schemas,
          watch: false,
          defaultNamespace: "default",
          log: false,
        });
        return {
          store,
          problems: () => ({ errors: [], warnings: store.errors().map((e) => e.message) }),
          close: () => store.close(),
        };
      },
    };
  }
  await checkKubeconfigExists(target.path);
  // Reads take the direct REST path when the kubeconfig allows it (token, client certificate);
  // the client library is loaded only for what needs it (writes, exec plugins...).
  const { loadRestConfig } = await import("../../lib/kube/rest.ts");
  const rest = await loadRestConfig(target.path);
  let kc = rest ? undefined : await loadKubeConfig(target.path, undefined, target.inCluster);
  const defaultNamespace = rest ? rest.namespace : currentNamespace(kc!);
  const server = rest ? rest.server : kc!.getCurrentCluster()?.server ?? "";
  const problemsOf = (store: KubeStore) => () => {
    const all = store.errors();
    const listErrors = all.filter((e) => !e.object);
    const noCrd = listErrors.filter((e) => isMissingCrd(e.type, e.message));
    const errors = listErrors.filter((e) => !noCrd.includes(e)).map((e) => e.message);
    if (noCrd.length > 0) errors.unshift(missingCrdsLine(noCrd.map((e) => e.type), server));
    return {
      errors,
      warnings: all.filter((e) => e.object).map((e) => `${e.object}: ${e.message}`),
    };
  };
  return {
    defaultNamespace,
    async open(options) {
      if (options.readOnly && rest) {
        const { readKubeSnapshot } = await import("../../lib/store/kube_snapshot.ts");
        const store = await readKubeSnapshot({
          rest,
          schemas: options.schemas,
          namespace: options.namespace,
          defaultNamespace,
        });
        return { store, problems: problemsOf(store), close: () => store.close() };
      }
      rest?.close();
      kc ??= await loadKubeConfig(target.path, undefined, target.inCluster);
      const { createKubeStore } = await import("../../lib/store/kube.ts");
      const store = await createKubeStore({
        kubeConfig: kc,
        schemas: options.schemas,
        namespace: options.namespace,
        defaultNamespace,
        resyncMs: 0,
        log: false,
      });
      return { store, problems: problemsOf(store), close: () => store.close() };
    },
  };
}

/** Where the CRD manifests of the mesh live in the repository (`kubectl apply -f` them). */
const CRDS_FILE = "lib/model/crds/crds.yaml";

/**
 * Whether a list error of the orchestrator store means the custom resource definition of a
 * type is missing (the API answered 404 for its collection); never for built-in kinds (Ingress).
 */
function isMissingCrd(type: string, message: string): boolean {
  const schema = schemaByType(type);
  return !!schema && !schema.apiVersions && / not found \(is the custom resource definition /
    .test(message);
}

/** The one line for types whose CRDs are missing: what is wrong and what to do. */
function missingCrdsLine(types: readonly string[], server: string): string {
  const names = types.map((t) => {
    const s = schemaByType(t)!;
    return `${s.plural}.${s.group}`;
  });
  return `the CRDs of mesh are not installed in the cluster${server ? ` at ${server}` : ""} ` +
    `(kubectl apply -f ${CRDS_FILE}); missing: ${names.join(", ")}`;
}

/**
 * A missing kubeconfig file is the first thing a new user meets: one line that says what to do.
 * Other problems (unreadable, malformed) are left to `loadKubeConfig`.
 */
export async function checkKubeconfigExists(path: string): Promise<void> {
  try {
    await Deno.stat(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) return;
    throw new Error(
      `Cannot read kubeconfig "${path}": no such file (give -c/--orchconfig, or use -p fs ` +
        `--configDir <dir> to work without a cluster)`,
    );
  }
}

/**
 * Checks the `--configDir` directory: created (with its parents) when `create` is set, else it
 * must exist. Throws one clear line otherwise.
 */
async function prepareDir(dir: string, create: boolean): Promise<void> {
  let info: Deno.FileInfo | undefined;
  try {
    info = await Deno.stat(dir);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) {
      throw new Error(`Cannot use config directory "${dir}": ${osReason(err)}`);
    }
  }
  if (info && !info.isDirectory) {
    throw new Error(`Cannot use config directory "${dir}": it is not a directory`);
  }
  if (info) return;
  if (!create) throw new Error(`Config directory "${dir}" does not exist`);
  try {
    await Deno.mkdir(dir, { recursive: true });
  } catch (err) {
    throw new Error(`Cannot create config directory "${dir}": ${osReason(err)}`);
  }
}

/** An OS error's reason without Deno's `(os error N): <syscall> '<path>'` tail. */
export function osReason(err: unknown): string {
  if (err instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (err instanceof Deno.errors.NotFound) return "no such file or directory";
  return String((err as Error).message ?? err).replace(/ \(os error \d+\).*$/s, "");
}

/**
 * Resolves the type argument of `get` and `delete`: the 14 meshctl types and `ingress` (as the
 * reference resolves them, with its error messages for hyphenated and unknown names), and every
 * other storable kind (policy-server kinds: `rule`, `denier`, `checknothing`...) by singular or
 * plural name. Throws {@link UsageError} with the reference message for names matching nothing.
 */
export function resolveType(name: string): ModelSchema {
  const t = resolveMeshctlType(name);
  if ("schema" in t) return t.schema;
  const other = schemaByType(name);
  if (other) return other;
  throw new UsageError(t.error);
}

// ---- input ---------------------------------------------------------------------------------

/**
 * Reads `-f <file>` (relative to the working directory), or standard input for "" and "-".
 * Without `-f` on a terminal, nothing was piped: a usage error (as kubectl), instead of waiting
 * for typed input; `ways` names the other ways to give input (delete: `<type> <name>`).
 */
async function readInput(
  file: string,
  ctx: MeshctlContext,
  ways = "",
): Promise<{ label: string; text: string }> {
  if (file === "" && ctx.stdinIsTerminal) {
    throw new UsageError(
      `no input: give ${ways}-f <file>, or pipe YAML on standard input (-f -)`,
    );
  }
  if (file === "" || file === "-") {
    return { label: "stdin", text: await readAtMost(ctx.stdin, "standard input") };
  }
  try {
    const f = await Deno.open(absolute(file, ctx));
    return { label: file, text: await readAtMost(f.readable, JSON.stringify(file)) };
  } catch (err) {
    if (err instanceof InputTooLarge) throw err;
    const reason = err instanceof Deno.errors.NotFound ? "no such file" : osReason(err);
    throw new Error(`Cannot read ${JSON.stringify(file)}: ${reason}`);
  }
}

/** Input over {@link MAX_INPUT_BYTES}. */
class InputTooLarge extends Error {}

/** Largest `-f` input read (bytes), as the file store's limit of a config file. */
export const MAX_INPUT_BYTES = 4 * 1024 * 1024;

/** The text of a stream, reading at most {@link MAX_INPUT_BYTES} (more: an Error naming it). */
async function readAtMost(stream: ReadableStream<Uint8Array>, what: string): Promise<string> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > MAX_INPUT_BYTES) {
        throw new InputTooLarge(
          `${what} is more than ${MAX_INPUT_BYTES} bytes: split it into several files`,
        );
      }
      chunks.push(value);
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return new TextDecoder().decode(await new Blob(chunks as BlobPart[]).arrayBuffer());
}

/** One input document, checked. */
export interface InputObject {
  /** 1-based index of the document in the input. */
  document: number;
  /** The normalized object (our group, namespace resolved). */
  object: ConfigObject;
  schema: ModelSchema;
  /** Set when the document was a Service stored as a ServiceEntry (`fs`). */
  fromService?: FromService;
}

/**
 * The namespace an object goes to (the reference's handleNamespaces): the object's and `-n` must
 * agree when both are set; else `-n`, else the object's, else the default namespace.
 */
function resolveNamespace(
  objectNamespace: string,
  flagNamespace: string,
  defaultNamespace: string,
): { namespace: string } | { error: string } {
  if (objectNamespace && flagNamespace && objectNamespace !== flagNamespace) {
    return {
      error:
        `the namespace from the provided object ${
          JSON.stringify(objectNamespace)
        } does not match the namespace ${JSON.stringify(flagNamespace)}. ` +
        `You must pass '--namespace=${objectNamespace}' to perform this operation`,
    };
  }
  return { namespace: flagNamespace || objectNamespace || defaultNamespace };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** What {@link parseInput} checks beyond the document structure. */
export interface ParseOptions {
  /** `-n`. */
  flagNamespace: string;
  /** The platform's default namespace. */
  defaultNamespace: string;
  /**
   * `full`: the whole object is validated (create, replace). `identity`: only kind, name and
   * namespace matter (delete by file), so an outdated spec does not block a delete.
   */
  check: "full" | "identity";
  /** `fs` platform: a `kind: Service` document is stored as a ServiceEntry (cli/meshctl/_service_fs.ts). */
  serviceAsEntry?: boolean;
  /**
   * Skip documents of orchestrator workload kinds (`Deployment`, `Service`...) with one line
   * each instead of refusing them (create, unless `--all-or-nothing`).
   */
  skipOrchestratorKinds?: boolean;
}

/**
 * Parses a multi-document YAML (or JSON) input and checks every document. Returns the objects,
 * or every problem as one line each (`<label> document 3: VirtualService/default/x: spec...:
 * reason`). Empty documents are skipped. The same object twice is a problem.
 */
function parseInput(
  label: string,
  text: string,
  options: ParseOptions,
): { objects: InputObject[]; problems: string[]; skipped: string[] } {
  const problems: string[] = [];
  const skipped: string[] = [];
  const objects: InputObject[] = [];
  const seen = new Map<string, number>();
  parseDocuments(text).forEach((doc) => {
    const n = doc.index;
    const where = `${label} document ${n}`;
    if (doc.error !== undefined) {
      problems.push(`${where}: ${doc.error}`);
      return;
    }
    const raw = doc.value;
    if (raw === null || raw === undefined) return;
    const p = checkDocument(raw, where, options);
    if ("skipped" in p) {
      skipped.push(p.skipped);
      return;
    }
    if ("problems" in p) {
      problems.push(...p.problems);
      return;
    }
    const o = p.object;
    const id = `${p.schema.type}/${o.metadata.namespace}/${o.metadata.name}`;
    const first = seen.get(id);
    if (first !== undefined) {
      problems.push(
        `${where}: ${o.kind}/${o.metadata.namespace}/${o.metadata.name}: ` +
          `defined again (first in document ${first})`,
      );
      return;
    }
    seen.set(id, n);
    objects.push({
      document: n,
      object: o,
      schema: p.schema,
      ...(p.fromService ? { fromService: p.fromService } : {}),
    });
  });
  return { objects, problems, skipped };
}

function checkDocument(
  raw: unknown,
  where: string,
  options: ParseOptions,
): { object: ConfigObject; schema: ModelSchema; fromService?: FromService } | {
  problems: string[];
} | { skipped: string } {
  const line = (i: ValidationIssue) =>
    i.object === where ? formatIssue(i) : `${where}: ${formatIssue(i)}`;
  if (!isRecord(raw)) {
    return { problems: [`${where}: must be an object with apiVersion, kind, metadata and spec`] };
  }
  // a Service: on fs the ServiceEntry of its registered instances; elsewhere an orchestrator
  // kind, skipped like the others when create writes what it can
  if (raw.kind === "Service" && (options.serviceAsEntry || !options.skipOrchestratorKinds)) {
    return checkService(raw, where, options);
  }
  // kind first: an unknown kind is one clear line
  const kind = raw.kind;
  const unsupported = unsupportedKindReason(raw.apiVersion, kind);
  if (unsupported) return { problems: [`${where}: ${unsupported}`] };
  if (options.skipOrchestratorKinds && isOrchestratorKind(raw.apiVersion, kind)) {
    const name = isRecord(raw.metadata) ? raw.metadata.name : undefined;
    return {
      skipped: `${where}: ${printable(String(kind))}${
        typeof name === "string" ? ` ${printable(name)}` : ""
      } skipped (an orchestrator kind, not a mesh object)`,
    };
  }
  if (typeof kind === "string" && kind !== "" && schemasByKindOnly(kind).length === 0) {
    return { problems: [`${where}: kind ${printable(kind)} is not known`] };
  }
  const meta = isRecord(raw.metadata) ? raw.metadata : {};
  const objNs = typeof meta.namespace === "string" ? meta.namespace : "";
  const ns = resolveNamespace(objNs, options.flagNamespace, options.defaultNamespace);
  if ("error" in ns) return { problems: [`${where}: ${ns.error}`] };
  const withNs = { ...raw, metadata: { ...meta, namespace: ns.namespace } };
  const res = normalizeObject(withNs, where);
  if (res.object && res.schema) return { object: res.object, schema: res.schema };
  if (options.check === "identity" && res.schema) {
    const idIssues = res.issues.filter((i) => !i.path.startsWith("spec"));
    if (idIssues.length === 0) {
      const s = res.schema;
      return {
        object: {
          apiVersion: `${s.group}/${s.version}`,
          kind: s.kind,
          metadata: { name: String(meta.name), namespace: ns.namespace },
          spec: {},
        },
        schema: s,
      };
    }
    return { problems: idIssues.map(line) };
  }
  if (res.issues.length === 0) return { problems: [`${where}: invalid object`] };
  return { problems: res.issues.map(line) };
}

/** A `kind: Service` document: a ServiceEntry on `fs`, else an error saying what to use. */
function checkService(
  raw: Record<string, unknown>,
  where: string,
  options: ParseOptions,
): { object: ConfigObject; schema: ModelSchema; fromService?: FromService } | {
  problems: string[];
} {
  if (!options.serviceAsEntry) {
    return {
      problems: [
        `${where}: kind Service is an orchestrator object, not mesh config: create it with the ` +
        "orchestrator's tools (kubectl apply -f), and register VMs with meshctl register " +
        "(on -p fs meshctl stores a Service as a ServiceEntry)",
      ],
    };
  }
  const meta = isRecord(raw.metadata) ? raw.metadata : {};
  const objNs = typeof meta.namespace === "string" ? meta.namespace : "";
  const ns = resolveNamespace(objNs, options.flagNamespace, options.defaultNamespace);
  if ("error" in ns) return { problems: [`${where}: ${ns.error}`] };
  const converted = serviceAsServiceEntry(raw, ns.namespace, where);
  if ("problems" in converted) return converted;
  // checked with one stand-in instance: the write step puts the registered instances there
  const entry = converted.entry as { spec: Record<string, unknown> };
  const checked = { ...entry, spec: { ...entry.spec, endpoints: [STAND_IN_ENDPOINT] } };
  const p = checkDocument(checked, where, {
    ...options,
    serviceAsEntry: false,
    skipOrchestratorKinds: false,
  });
  if ("problems" in p) return p;
  if ("skipped" in p) return { problems: [`${where}: ${p.skipped}`] }; // a ServiceEntry is never skipped
  return { ...p, fromService: converted.fromService };
}

// ---- output ----------------------------------------------------------------------------------

/**
 * How a message names an object's type: the hyphenated internal type for the 14 meshctl types
 * (`virtual-service`) and `ingress`, the kind for policy-server kinds (`rule`, `denier`).
 */
function typeLabel(schema: ModelSchema): string {
  return schema.meshctl || schema.apiVersions ? schema.internalType : schema.kind;
}

/** `<type>/<ns>/<name>` of an object, as messages print it. */
export function objectPath(schema: ModelSchema, obj: ConfigObject): string {
  return `${typeLabel(schema)}/${obj.metadata.namespace}/${obj.metadata.name}`;
}

/** One line for a failed write of `what` (`create virtual-service/default/x`). */
export function writeFailure(op: "create" | "replace" | "delete", what: string, err: unknown) {
  const msg = err instanceof Error ? err.message : String(err);
  if (err instanceof ConflictError) {
    if (op === "create") return `cannot create ${what}: it already exists (${msg})`;
    return `cannot ${op} ${what}: conflict: it was modified since it was read (${msg})`;
  }
  if (err instanceof NotFoundError && op !== "create") {
    return `cannot ${op} ${what}: it does not exist (${msg})`;
  }
  return `cannot ${op} ${what}: ${msg}`;
}

/** Writes each line as `Error: <line>` on stderr and returns exit code 1. */
export async function fail(ctx: CliContext, lines: readonly string[]): Promise<number> {
  // values from input are escaped: a newline in a name must not print a line of its own
  await ctx.stderr.write(lines.map((l) => `Error: ${escapeControl(l)}\n`).join(""));
  return 1;
}

/** The operations that read objects from `-f`. */
export type InputOp = "create" | "replace" | "delete";

/**
 * The input step of `create`, `replace` and `delete -f`: resolves the store, reads `-f` and
 * checks every document (`check` as {@link ParseOptions}). Returns the connection and the
 * objects; or, when a document has a problem, prints every problem and `<label>: N problems
 * found; nothing was <op>d` and returns exit code 1. Empty input is an Error (`nothing to <op>`).
 *
 * With `partial` (create without `--all-or-nothing`): documents of orchestrator workload kinds
 * are skipped with a `Skipped:` line each on stderr, bad documents are printed as errors and
 * counted in `failed`, and the valid objects are returned to be written.
 */
export async function readObjects(
  op: InputOp,
  opts: CommonOptions & { readonly file: string },
  ctx: MeshctlContext,
  check: ParseOptions["check"],
  ways?: string,
  partial = false,
): Promise<{ conn: Connection; objects: InputObject[]; failed: number } | number> {
  const target = storeTarget(opts, ctx);
  const input = await readInput(opts.file, ctx, ways);
  const conn = await connect(target);
  const { objects, problems, skipped } = parseInput(input.label, input.text, {
    flagNamespace: opts.namespace,
    defaultNamespace: conn.defaultNamespace,
    check,
    serviceAsEntry: target.platform === "fs",
    skipOrchestratorKinds: partial,
  });
  if (skipped.length) {
    await ctx.stderr.write(skipped.map((l) => `Skipped: ${escapeControl(l)}\n`).join(""));
  }
  if (problems.length > 0 && (!partial || objects.length === 0)) {
    return await fail(ctx, [
      ...problems,
      `${input.label}: ${problems.length} problem${
        problems.length === 1 ? "" : "s"
      } found; nothing was ${op}d`,
    ]);
  }
  if (problems.length > 0) {
    await fail(ctx, [
      ...problems,
      `${input.label}: ${problems.length} problem${problems.length === 1 ? "" : "s"} found; ` +
      `the other ${objects.length} object${objects.length === 1 ? "" : "s"} will be ${op}d`,
    ]);
  }
  if (objects.length === 0) {
    throw new Error(
      `nothing to ${op}${skipped.length ? ` (${skipped.length} documents skipped)` : ""}`,
    );
  }
  return { conn, objects, failed: problems.length };
}

/**
 * The write step of `create`, `replace` and `delete`: unless the store reports errors (printed,
 * exit 1), runs `apply` on every item and prints the line it returns; a failing item gives the
 * line `failure` makes, and every failure is printed at the end (exit 1). Closes the store.
 */
export async function applyEach<T>(
  ctx: CliContext,
  opened: OpenedStore,
  items: readonly T[],
  apply: (store: ConfigStore, item: T) => Promise<string>,
  failure: (item: T, err: unknown) => string,
): Promise<number> {
  const failures: string[] = [];
  try {
    const { errors } = opened.problems();
    if (errors.length > 0) return await fail(ctx, errors);
    for (const item of items) {
      try {
        await ctx.stdout.write(await apply(opened.store, item));
      } catch (err) {
        failures.push(failure(item, err));
      }
    }
  } finally {
    await opened.close();
  }
  return failures.length > 0 ? await fail(ctx, failures) : 0;
}

/** Distinct schemas of some input objects, in first-seen order. */
export function schemasOf(objects: readonly InputObject[]): ModelSchema[] {
  return [...new Set(objects.map((o) => o.schema))];
}

/**
 * Prints a `Warning:` line on stderr for what was written but will not reach a proxy: once per
 * legacy networking kind (stored, not served, and the command that converts it), and per object
 * for each field mesh accepts but does not yet turn into proxy configuration.
 */
export async function warnNotServed(
  ctx: CliContext,
  objects: readonly InputObject[],
): Promise<void> {
  const lines: string[] = [];
  const kinds = new Set<string>();
  for (const { object, schema } of objects) {
    const legacy = legacyNotServedReason(object.kind);
    if (legacy && !kinds.has(object.kind)) {
      kinds.add(object.kind);
      lines.push(legacy);
    }
    for (const f of unservedFields(object)) {
      lines.push(`${objectPath(schema, object)}: ${f}`);
    }
  }
  if (lines.length) {
    await ctx.stderr.write(lines.map((l) => `Warning: ${escapeControl(l)}\n`).join(""));
  }
}

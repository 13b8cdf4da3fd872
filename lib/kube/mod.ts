/**
 * Orchestrator (Kubernetes API) access helpers shared by the stores, the registries and meshctl.
 *
 * The client library (`@kubernetes/client-node`, ~0.7 s to import) is loaded lazily: importing this
 * module costs nothing until {@link loadKubeConfig} or {@link kubeClient} is called.
 *
 * @example
 * ```ts
 * import { currentNamespace, loadKubeConfig, resolveKubeconfigPath } from "./mod.ts";
 * const path = resolveKubeconfigPath(undefined, { KUBECONFIG: Deno.env.get("KUBECONFIG") });
 * const kc = await loadKubeConfig(path);
 * console.log(currentNamespace(kc));
 * ```
 * @module
 */
import { firstErrorLine } from "../model/errors.ts";
import { ConflictError, NotFoundError, ValidationError } from "../store/types.ts";

/** The client library's module namespace (`lib/deps/kube.ts`). */
export type KubeModule = typeof import("../deps/kube.ts");
/** A loaded kubeconfig (the client library's `KubeConfig`). */
export type KubeConfig = InstanceType<KubeModule["KubeConfig"]>;

let kubeModule: Promise<KubeModule> | undefined;

/** Loads (once) and returns the Kubernetes client library. */
export function kubeClient(): Promise<KubeModule> {
  kubeModule ??= import("../deps/kube.ts");
  return kubeModule;
}

/**
 * Picks the kubeconfig path: the flag when non-empty, else the first entry of `KUBECONFIG`, else
 * `$HOME/.kube/config`. Returns "" (meaning in-cluster configuration) when none applies.
 */
export function resolveKubeconfigPath(
  flag: string | undefined,
  env: { KUBECONFIG?: string; HOME?: string; USERPROFILE?: string },
): string {
  if (flag) return flag;
  const sep = Deno.build.os === "windows" ? ";" : ":";
  const first = (env.KUBECONFIG ?? "").split(sep).find((p) => p.trim() !== "");
  if (first) return first.trim();
  const home = env.HOME || env.USERPROFILE;
  return home ? `${home}/.kube/config` : "";
}

/**
 * The environment of in-cluster configuration, read once by the program (`cli/`) and passed
 * down: the API server's service address.
 */
export interface InClusterEnv {
  readonly KUBERNETES_SERVICE_HOST?: string;
  readonly KUBERNETES_SERVICE_PORT?: string;
}

/** Where a pod's service-account files are mounted. */
const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/**
 * Loads a kubeconfig. `path` empty or undefined means in-cluster configuration (the
 * service-account token and CA, and the API server of `inCluster`, the program's
 * `KUBERNETES_SERVICE_HOST`/`_PORT`). `context` selects a context other than the current one.
 * Throws an Error naming the file or the context when something is wrong.
 */
export async function loadKubeConfig(
  path?: string,
  context?: string,
  inCluster: InClusterEnv = {},
): Promise<KubeConfig> {
  const k8s = await kubeClient();
  const kc = new k8s.KubeConfig();
  if (!path) {
    const host = inCluster.KUBERNETES_SERVICE_HOST;
    if (!host) {
      throw new Error(
        "Cannot use in-cluster orchestrator configuration: KUBERNETES_SERVICE_HOST is not set " +
          "(give a kubeconfig path)",
      );
    }
    // as the client library's loadFromCluster, from the environment we were given
    const port = inCluster.KUBERNETES_SERVICE_PORT || "443";
    const scheme = ["80", "8080", "8001"].includes(port) ? "http" : "https";
    const server = `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}`;
    let namespace: string | undefined;
    try {
      namespace = Deno.readTextFileSync(`${SERVICE_ACCOUNT_DIR}/namespace`).trim() || undefined;
    } catch {
      // no namespace file: the default namespace
    }
    kc.loadFromOptions({
      clusters: [{
        name: "inCluster",
        server,
        caFile: `${SERVICE_ACCOUNT_DIR}/ca.crt`,
        skipTLSVerify: false,
      }],
      users: [{
        name: "inClusterUser",
        authProvider: { name: "tokenFile", config: { tokenFile: `${SERVICE_ACCOUNT_DIR}/token` } },
      }],
      contexts: [{
        name: "inClusterContext",
        cluster: "inCluster",
        user: "inClusterUser",
        ...(namespace ? { namespace } : {}),
      }],
      currentContext: "inClusterContext",
    });
  } else {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (err) {
      throw new Error(`Cannot read kubeconfig "${path}": ${readFailure(err)}`);
    }
    try {
      kc.loadFromString(text);
      const slash = path.lastIndexOf("/");
      kc.makePathsAbsolute(slash >= 0 ? path.slice(0, slash) || "/" : Deno.cwd());
    } catch (err) {
      // the parser's first line, without the code frame it introduces with a colon
      const reason = firstErrorLine(String((err as Error).message));
      throw new Error(`Cannot parse kubeconfig "${path}": ${reason}`);
    }
  }
  if (context) {
    if (!kc.getContextObject(context)) {
      const known = kc.getContexts().map((c) => c.name).join(", ") || "none";
      throw new Error(`Context "${context}" not found in kubeconfig "${path}" (known: ${known})`);
    }
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentCluster()) {
    throw new Error(
      `Kubeconfig "${path || "in-cluster"}" has no usable current context ` +
        `("${kc.getCurrentContext() ?? ""}")`,
    );
  }
  return kc;
}

/** Why a file could not be read, without Deno's `(os error N): <syscall> '<path>'` tail. */
function readFailure(err: unknown): string {
  if (err instanceof Deno.errors.NotFound) return "no such file";
  if (err instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (err instanceof Deno.errors.IsADirectory) return "is a directory";
  return String((err as Error).message ?? err).replace(/ \(os error \d+\).*$/s, "");
}

/** The namespace of the kubeconfig's current context, else "default". */
export function currentNamespace(kc: KubeConfig): string {
  const ctx = kc.getContextObject(kc.getCurrentContext());
  return ctx?.namespace?.trim() || "default";
}

/** What {@link apiErrorStatus} extracts from a failed API call. */
export interface ApiErrorStatus {
  /** HTTP status code (409, 404, 410, 422...). */
  code: number;
  /** The API server's `Status.message`, or a short description. */
  message: string;
  /** The API server's `Status.reason` (`AlreadyExists`, `Conflict`, `NotFound`, `Invalid`...). */
  reason?: string;
}

/**
 * Extracts the HTTP code and the Status message from an error thrown by the client library
 * (`ApiException` from the generated APIs or the plain `statusCode` errors of `Watch`).
 * Returns undefined for errors that carry no HTTP status (network failures...).
 */
export function apiErrorStatus(err: unknown): ApiErrorStatus | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const e = err as { code?: unknown; statusCode?: unknown; body?: unknown; message?: unknown };
  const code = typeof e.code === "number"
    ? e.code
    : typeof e.statusCode === "number"
    ? e.statusCode
    : undefined;
  if (code === undefined) return undefined;
  let body: unknown = e.body;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      // not JSON: keep the text
    }
  }
  let message = "";
  let reason: string | undefined;
  if (typeof body === "object" && body !== null) {
    const s = body as { message?: unknown; reason?: unknown };
    if (typeof s.message === "string") message = s.message;
    if (typeof s.reason === "string") reason = s.reason;
  } else if (typeof body === "string" && body.trim()) {
    message = body.trim();
  }
  if (!message) {
    message = typeof e.message === "string" && !e.message.startsWith("HTTP-Code:")
      ? e.message
      : `HTTP ${code}`;
  }
  return { code, message, reason };
}

/**
 * Maps an error of the orchestrator API to the store errors: 409 → {@link ConflictError},
 * 404 → {@link NotFoundError}, 422 → {@link ValidationError} (with the API's message), anything
 * else → Error `"<what>: <message>"`. `what` names the operation (`create VirtualService/default/x`).
 */
export function toStoreError(err: unknown, what: string): Error {
  const st = apiErrorStatus(err);
  if (!st) {
    return new Error(`${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const msg = `${what}: ${st.message}`;
  switch (st.code) {
    case 409:
      return new ConflictError(msg);
    case 404:
      return new NotFoundError(msg);
    case 422:
      return new ValidationError(msg, [{ object: what, path: "", reason: st.message }]);
    default:
      return new Error(`${msg} (HTTP ${st.code})`);
  }
}

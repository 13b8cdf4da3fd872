/**
 * A direct REST path to the Kubernetes API for short-lived reads (`meshctl get`): the kubeconfig is
 * read here, without `@kubernetes/client-node` (~0.7 s to import), and requests go through
 * `fetch` with the kubeconfig's TLS material and bearer token.
 *
 * Covered: the current (or a named) context; `server` over `https://` (verified against
 * `certificate-authority`/`-data`, else the system roots) or `http://`; users with `token`,
 * `tokenFile`, `client-certificate`/`-key` (`-data` or files), `username`/`password`, or nothing.
 * Anything else — `exec` and `auth-provider` plugins, `insecure-skip-tls-verify` on https,
 * `tls-server-name`, `proxy-url`, impersonation — and any file that does not read or parse makes
 * {@link loadRestConfig} return null: the caller then uses the client library, which handles those
 * and words the errors.
 * @module
 */
import { dirname, isAbsolute, join } from "node:path";
import { parse } from "../deps/yaml.ts";

/** What a direct request needs, from a kubeconfig. */
export interface RestConfig {
  /** The API server's base URL, without a trailing slash. */
  readonly server: string;
  /** The namespace of the context, else "default". */
  readonly namespace: string;
  /** GET `path` (`/apis/...?limit=500`); the body is read as text. Network failures throw. */
  get(path: string): Promise<{ status: number; body: string }>;
  /** Releases the HTTP client. */
  close(): void;
}

// deno-lint-ignore no-explicit-any
type Any = any;

const USER_KEYS = new Set([
  "token",
  "tokenFile",
  "client-certificate",
  "client-certificate-data",
  "client-key",
  "client-key-data",
  "username",
  "password",
]);
const CLUSTER_KEYS = new Set([
  "server",
  "certificate-authority",
  "certificate-authority-data",
  "insecure-skip-tls-verify",
  "extensions",
]);

const named = (list: unknown, name: string): Any =>
  Array.isArray(list) ? list.find((e) => e?.name === name) : undefined;

/**
 * Reads the kubeconfig at `path` for a direct REST client; null when it needs the client library
 * (see the module documentation) or cannot be read or parsed.
 */
export async function loadRestConfig(path: string, context?: string): Promise<RestConfig | null> {
  let doc: Any;
  try {
    doc = parse(await Deno.readTextFile(path));
  } catch {
    return null;
  }
  if (!doc || typeof doc !== "object") return null;
  const ctxName = context || doc["current-context"];
  const ctx = named(doc.contexts, ctxName)?.context;
  if (!ctx || typeof ctx !== "object") return null;
  const cluster = named(doc.clusters, ctx.cluster)?.cluster;
  const user = ctx.user ? named(doc.users, ctx.user)?.user ?? {} : {};
  if (!cluster || typeof cluster.server !== "string" || typeof user !== "object") return null;
  if (Object.keys(cluster).some((k) => !CLUSTER_KEYS.has(k))) return null;
  if (Object.keys(user).some((k) => !USER_KEYS.has(k))) return null;
  let base: URL;
  try {
    base = new URL(cluster.server);
  } catch {
    return null;
  }
  const https = base.protocol === "https:";
  if (!https && base.protocol !== "http:") return null;
  if (https && cluster["insecure-skip-tls-verify"] === true) return null;

  const dir = dirname(path);
  const file = (p: string) => Deno.readTextFile(isAbsolute(p) ? p : join(dir, p));
  const data = (b64: string) =>
    new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
  const pem = async (dataKey: string, fileKey: string, from: Any) =>
    typeof from[dataKey] === "string"
      ? data(from[dataKey])
      : typeof from[fileKey] === "string"
      ? await file(from[fileKey])
      : undefined;
  let ca: string | undefined,
    cert: string | undefined,
    key: string | undefined,
    token: string | undefined;
  try {
    ca = await pem("certificate-authority-data", "certificate-authority", cluster);
    cert = await pem("client-certificate-data", "client-certificate", user);
    key = await pem("client-key-data", "client-key", user);
    token = typeof user.token === "string"
      ? user.token
      : typeof user.tokenFile === "string"
      ? (await file(user.tokenFile)).trim()
      : undefined;
  } catch {
    return null;
  }
  if (!cert !== !key) return null;
  const headers: Record<string, string> = { Accept: "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  else if (typeof user.username === "string" && typeof user.password === "string") {
    headers.Authorization = `Basic ${btoa(`${user.username}:${user.password}`)}`;
  }
  let client: Deno.HttpClient | undefined;
  if (https && (ca || cert)) {
    try {
      client = Deno.createHttpClient({
        ...(ca ? { caCerts: [ca] } : {}),
        ...(cert && key ? { cert, key } : {}),
      });
    } catch {
      return null;
    }
  }
  const server = cluster.server.replace(/\/+$/, "");
  return {
    server,
    namespace: String(ctx.namespace ?? "").trim() || "default",
    async get(p) {
      const res = await fetch(server + p, { headers, ...(client ? { client } : {}) });
      return { status: res.status, body: await res.text() };
    },
    close() {
      client?.close();
    },
  };
}

/**
 * ControlZ, the introspection facility of flag group I (`--ctrlz_address`, `--ctrlz_port`).
 *
 * An HTTP server (hono on Deno.serve) with a plain HTML page at `/` and a JSON API whose paths
 * follow Istio's ControlZ:
 *
 * | Method | Path | Answer |
 * |---|---|---|
 * | GET | `/scopej/` | `[{name, output_level, stack_trace_level, log_callers}]` |
 * | GET | `/scopej/<name>` | one scope; 404 when unknown |
 * | PUT | `/scopej/<name>` | body `{output_level?, stack_trace_level?, log_callers?}`; 400 on a bad body |
 * | GET | `/procj/` | pid, ppid, uptime, memory, hostname, runtime versions |
 * | GET | `/envj/` | `[{name, value}]`, sorted |
 * | GET | `/argsj/` | `[program, ...args]` |
 * | GET | `/versionj/` | the {@link VersionInfo} |
 *
 * Errors are JSON `{"error": "<message>"}`. The page changes levels with a plain form
 * (`POST /scopeform`), without scripts or external assets.
 * @module
 */

import { Hono } from "../deps/hono.ts";
import type { Context } from "../deps/hono.ts";
import {
  getLogger,
  isLevel,
  LEVELS,
  registerScopes,
  type ScopeInfo,
  scopeLevels,
  setScopeCaller,
  setScopeLevel,
  setStackTraceLevel,
} from "../log/mod.ts";
import { type HttpServer, serveHttp } from "../net/serve.ts";
import { type VersionInfo, versionInfo } from "../version/mod.ts";

/** Options of {@link startCtrlz}. */
export interface CtrlzOptions {
  /** Listen address; `*` means all IPv4 addresses (0.0.0.0). */
  address: string;
  /** Listen port; 0 picks a free port. */
  port: number;
  /** Program name, shown on the page and first in `/argsj/` (not repeated in `args`). */
  program: string;
  /** Version information; default {@link versionInfo}(). */
  version?: VersionInfo;
  /**
   * The program's command-line arguments as given, without the program name (`Deno.args`):
   * `/argsj/` answers `[program, ...args]`.
   */
  args: readonly string[];
  /** The program's log scopes (made known to lib/log so they can be changed). */
  scopes: string[];
}

/** A running ControlZ server. */
export interface CtrlzHandle {
  /** The bound port. */
  port: number;
  /** The bound address as `host:port`: `0.0.0.0:9876` for `*`, `[::1]:9876` for IPv6. */
  address: string;
  /**
   * URL of the page that a client on this host can open, e.g. `http://127.0.0.1:9876/`
   * (loopback when bound to a wildcard address).
   */
  url: string;
  /** Stops accepting connections and waits for open requests. */
  shutdown(): Promise<void>;
}

interface ScopeJson {
  name: string;
  output_level: string;
  stack_trace_level: string;
  log_callers: boolean;
}

function scopeJson(s: ScopeInfo): ScopeJson {
  return {
    name: s.name,
    output_level: s.outputLevel,
    stack_trace_level: s.stackTraceLevel,
    log_callers: s.logCallers,
  };
}

function findScope(name: string): ScopeInfo | undefined {
  return scopeLevels().find((s) => s.name === name);
}

const PUT_FIELDS = new Set(["output_level", "stack_trace_level", "log_callers"]);

/** Validates a scope update; returns an error message or the checked update. */
function checkUpdate(
  body: unknown,
): string | { output_level?: string; stack_trace_level?: string; log_callers?: boolean } {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return "body must be a JSON object";
  }
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) {
    if (!PUT_FIELDS.has(k)) {
      return `unknown field "${k}" (want output_level, stack_trace_level or log_callers)`;
    }
  }
  for (const k of ["output_level", "stack_trace_level"]) {
    if (b[k] !== undefined && !isLevel(b[k])) {
      return `invalid ${k} ${JSON.stringify(b[k])}: want one of ${LEVELS.join(", ")}`;
    }
  }
  if (b.log_callers !== undefined && typeof b.log_callers !== "boolean") {
    return `invalid log_callers ${JSON.stringify(b.log_callers)}: want true or false`;
  }
  return b as { output_level?: string; stack_trace_level?: string; log_callers?: boolean };
}

function applyUpdate(
  name: string,
  u: { output_level?: string; stack_trace_level?: string; log_callers?: boolean },
): void {
  if (u.output_level !== undefined) setScopeLevel(name, u.output_level);
  if (u.stack_trace_level !== undefined) setStackTraceLevel(name, u.stack_trace_level);
  if (u.log_callers !== undefined) setScopeCaller(name, u.log_callers);
  getLogger("default").info("log scope changed through ctrlz", { scope: name, ...u });
}

function procInfo() {
  const mem = Deno.memoryUsage();
  return {
    pid: Deno.pid,
    ppid: Deno.ppid,
    uid: Deno.uid(),
    gid: Deno.gid(),
    cwd: Deno.cwd(),
    hostname: Deno.hostname(),
    tempdir: Deno.env.get("TMPDIR") ?? "/tmp",
    uptime_seconds: Math.round(performance.now()) / 1000,
    memory: {
      rss: mem.rss,
      heap_total: mem.heapTotal,
      heap_used: mem.heapUsed,
      external: mem.external,
    },
    os: Deno.build.os,
    arch: Deno.build.arch,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
  };
}

function envList(): Array<{ name: string; value: string }> {
  return Object.entries(Deno.env.toObject())
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => ({ name, value }));
}

function esc(s: unknown): string {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function select(form: string, name: string, current: string): string {
  const opts = LEVELS.map((l) =>
    `<option value="${l}"${l === current ? " selected" : ""}>${l}</option>`
  ).join("");
  return `<select form="${form}" name="${name}">${opts}</select>`;
}

function page(o: CtrlzOptions, version: VersionInfo, notice: string): string {
  // Forms cannot be children of table rows: each row's controls name their form by id.
  const list = scopeLevels();
  const forms = list.map((s, i) =>
    `<form id="scope-${i}" method="post" action="/scopeform">` +
    `<input type="hidden" name="name" value="${esc(s.name)}"></form>`
  ).join("\n");
  const scopes = list.map((s, i) =>
    `<tr><td>${esc(s.name)}</td>` +
    `<td>${select(`scope-${i}`, "output_level", s.outputLevel)}</td>` +
    `<td>${select(`scope-${i}`, "stack_trace_level", s.stackTraceLevel)}</td>` +
    `<td><input form="scope-${i}" type="checkbox" name="log_callers" value="true"${
      s.logCallers ? " checked" : ""
    }></td><td><button form="scope-${i}" type="submit">Apply</button></td></tr>`
  ).join("\n");
  const kv = (rows: Array<[string, unknown]>) =>
    rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join("\n");
  const p = procInfo();
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${esc(o.program)} ControlZ</title>
<style>body{font-family:sans-serif;margin:1em 2em}table{border-collapse:collapse;margin-bottom:1.5em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}
.notice{background:#ffd;padding:4px}</style></head><body>
<h1>${esc(o.program)} ControlZ</h1>
${notice ? `<p class="notice">${esc(notice)}</p>` : ""}
<h2>Logging scopes</h2>
${forms}
<table><tr><th>Scope</th><th>Output level</th><th>Stack trace level</th><th>Callers</th><th></th></tr>
${scopes}
</table>
<h2>Version</h2>
<table>${
    kv([
      ["Version", version.version],
      ["Git revision", version.gitRevision],
      ["Build time", version.buildTime],
      ["Deno", version.deno],
      ["V8", version.v8],
      ["TypeScript", version.typescript],
    ])
  }</table>
<h2>Process</h2>
<table>${
    kv([
      ["PID", p.pid],
      ["Parent PID", p.ppid],
      ["Hostname", p.hostname],
      ["Working directory", p.cwd],
      ["Uptime (s)", p.uptime_seconds],
      ["RSS (bytes)", p.memory.rss],
      ["Heap used (bytes)", p.memory.heap_used],
      ["Heap total (bytes)", p.memory.heap_total],
    ])
  }</table>
<h2>Arguments</h2>
<table>${kv([[o.program, o.args.map((a) => JSON.stringify(a)).join(" ")]])}</table>
<h2>Environment</h2>
<table>${kv(envList().map((e) => [e.name, e.value]))}</table>
<p>JSON: <a href="/scopej/">/scopej/</a> <a href="/procj/">/procj/</a> <a href="/envj/">/envj/</a>
<a href="/argsj/">/argsj/</a> <a href="/versionj/">/versionj/</a></p>
</body></html>
`;
}

function validateOptions(o: CtrlzOptions): void {
  if (typeof o.address !== "string" || o.address.trim() === "") {
    throw new Error("invalid --ctrlz_address: empty address");
  }
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) {
    throw new Error(`invalid --ctrlz_port ${o.port}: want an integer from 0 to 65535`);
  }
}

/** Builds the ControlZ application (exposed for tests that call it without a socket). */
export function ctrlzApp(o: CtrlzOptions): Hono {
  const version = o.version ?? versionInfo();
  const app = new Hono({ strict: false });
  const err = (c: Context, status: 400 | 404, message: string) =>
    c.json({ error: message }, status);

  app.get("/", (c) => c.html(page(o, version, c.req.query("notice") ?? "")));
  app.get("/scopej", (c) => c.json(scopeLevels().map(scopeJson)));
  app.get("/scopej/:name", (c) => {
    const s = findScope(c.req.param("name"));
    return s ? c.json(scopeJson(s)) : err(c, 404, `unknown scope "${c.req.param("name")}"`);
  });
  app.put("/scopej/:name", async (c) => {
    const name = c.req.param("name");
    if (!findScope(name)) return err(c, 404, `unknown scope "${name}"`);
    let body: unknown;
    try {
      body = JSON.parse(await c.req.text());
    } catch {
      return err(c, 400, "body is not valid JSON");
    }
    const u = checkUpdate(body);
    if (typeof u === "string") return err(c, 400, u);
    applyUpdate(name, u);
    return c.json(scopeJson(findScope(name)!));
  });
  app.post("/scopeform", async (c) => {
    const form = await c.req.parseBody();
    const name = String(form.name ?? "");
    if (!findScope(name)) return err(c, 404, `unknown scope "${name}"`);
    const u = checkUpdate({
      output_level: form.output_level === undefined ? undefined : String(form.output_level),
      stack_trace_level: form.stack_trace_level === undefined
        ? undefined
        : String(form.stack_trace_level),
      log_callers: form.log_callers === "true",
    });
    if (typeof u === "string") return err(c, 400, u);
    applyUpdate(name, u);
    return c.redirect(`/?notice=${encodeURIComponent(`Scope ${name} updated`)}`, 303);
  });
  app.get("/procj", (c) => c.json(procInfo()));
  app.get("/envj", (c) => c.json(envList()));
  app.get("/argsj", (c) => c.json([o.program, ...o.args]));
  app.get("/versionj", (c) => c.json(version));
  app.notFound((c) => err(c, 404, `no such page "${c.req.path}"`));
  return app;
}

/** A short reason for a failed listen: `address already in use`, `permission denied`... */
function listenErrorReason(e: unknown): string {
  if (e instanceof Deno.errors.AddrInUse) return "address already in use";
  if (e instanceof Deno.errors.AddrNotAvailable) return "address not available";
  if (e instanceof Deno.errors.PermissionDenied) return "permission denied";
  return e instanceof Error ? e.message : String(e);
}

/**
 * Starts ControlZ on `address:port`.
 * @throws Error when the options are invalid or the address cannot be bound.
 */
export async function startCtrlz(o: CtrlzOptions): Promise<CtrlzHandle> {
  validateOptions(o);
  registerScopes(o.scopes);
  const app = ctrlzApp(o);
  const hostname = o.address === "*" ? "0.0.0.0" : o.address.replace(/^\[(.*)\]$/, "$1");
  let server: HttpServer;
  try {
    server = serveHttp({
      hostname,
      port: o.port,
      onError: (m) => getLogger("default").warn(`ctrlz: ${m}`),
    }, app.fetch);
  } catch (e) {
    throw new Error(
      `Cannot listen on --ctrlz_port ${o.port} (${o.address}): ${listenErrorReason(e)}`,
    );
  }
  const port = server.addr.port;
  const bound = hostname.includes(":") ? `[${hostname}]` : hostname;
  // The URL must be one a client on this host can open: loopback for the wildcard addresses.
  const reachable = hostname === "0.0.0.0" ? "127.0.0.1" : hostname === "::" ? "[::1]" : bound;
  let closed: Promise<void> | undefined;
  getLogger("default").info("ctrlz listening", { address: `${bound}:${port}` });
  // Nothing to await: Deno.serve binds synchronously; async keeps every failure a rejection.
  await Promise.resolve();
  return {
    port,
    address: `${bound}:${port}`,
    url: `http://${reachable}:${port}/`,
    shutdown() {
      closed ??= server.shutdown();
      return closed;
    },
  };
}

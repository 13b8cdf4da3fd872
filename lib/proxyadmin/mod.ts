/**
 * Reading a proxy's configuration from its admin port (Envoy's `/clusters`, `/listeners`,
 * `/config_dump`) and its generated files: what `mesh-agent debug <type>` and
 * `meshctl proxy-config endpoint <pod> [type]` print.
 *
 * @example
 * ```ts ignore
 * for (const s of await proxyConfig("127.0.0.1:15000", "clusters")) console.log(s.body);
 * ```
 * @module
 */

/** Configuration types of `mesh-agent debug` (`all` is clusters, listeners, routes and static). */
export const PROXY_CONFIG_TYPES = [
  "clusters",
  "listeners",
  "routes",
  "config_dump",
  "static",
  "all",
] as const;
/** One of {@link PROXY_CONFIG_TYPES}. */
export type ProxyConfigType = typeof PROXY_CONFIG_TYPES[number];
/** The types `all` prints, in order. */
export const ALL_TYPES: readonly ProxyConfigType[] = ["clusters", "listeners", "routes", "static"];

/** An unknown type (a usage error for the CLIs). */
export class UnknownTypeError extends Error {
  /** Creates the error for `type`. */
  constructor(type: string, allowed: readonly string[] = PROXY_CONFIG_TYPES) {
    super(`"${type}" is not a supported debugging config type (want ${allowed.join(", ")})`);
    this.name = "UnknownTypeError";
  }
}

/**
 * Response header of the test stand-in proxy (tests/harness/proxy-standin): its value says that
 * the answers are canned, not a proxy's state.
 */
export const STANDIN_HEADER = "x-mesh-proxy-standin";

/** One printed part: the type and its text. */
export interface ProxyConfigSection {
  readonly type: ProxyConfigType;
  readonly body: string;
  /** Set when the answer came from the test stand-in: what it says about itself. */
  readonly standin?: string;
}

/** Options of {@link proxyConfig}. */
export interface ProxyConfigOptions {
  /** Directory of the generated configuration, for `static` (omitted: `static` is refused). */
  staticDir?: string;
  /** Per-request deadline (default 5 s). */
  timeoutMs?: number;
}

/** Checks a type name; throws {@link UnknownTypeError}. */
export function checkProxyConfigType(
  type: string,
  allowed: readonly string[] = PROXY_CONFIG_TYPES,
): ProxyConfigType {
  if (!allowed.includes(type)) throw new UnknownTypeError(type, allowed);
  return type as ProxyConfigType;
}

interface AdminAnswer {
  body: string;
  standin?: string;
}

async function adminGet(addr: string, path: string, timeoutMs: number): Promise<AdminAnswer> {
  let r: Response;
  try {
    r = await fetch(`http://${addr}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    throw new Error(`Cannot reach the proxy admin port at ${addr}: ${(e as Error).message}`);
  }
  const body = await r.text();
  if (r.status !== 200) {
    throw new Error(`received ${r.status} status from the proxy: ${body.trim()}`);
  }
  return { body, standin: r.headers.get(STANDIN_HEADER) ?? undefined };
}

/** The route part of a config dump: the `RoutesConfigDump` entries only. */
function routesOf(dump: string): string {
  let doc: { configs?: { "@type"?: string }[] };
  try {
    doc = JSON.parse(dump);
  } catch {
    throw new Error("the proxy's /config_dump is not JSON");
  }
  const configs = (doc.configs ?? []).filter((c) => c["@type"]?.endsWith(".RoutesConfigDump"));
  return JSON.stringify({ configs }, null, 2) + "\n";
}

async function staticFiles(dir: string): Promise<string> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) if (e.isFile) names.push(e.name);
  let out = "";
  for (const n of names.sort()) {
    if (n.endsWith(".sock") || n.endsWith(".tmp")) continue;
    out += `--- ${dir}/${n}\n${await Deno.readTextFile(`${dir}/${n}`)}`;
    if (!out.endsWith("\n")) out += "\n";
  }
  return out;
}

/**
 * Reads one type (or `all`) from the proxy whose admin port is `addr` (`host:port`). A non-200
 * answer fails with `received <code> status from the proxy: <body>`.
 */
export async function proxyConfig(
  addr: string,
  type: ProxyConfigType,
  opts: ProxyConfigOptions = {},
): Promise<ProxyConfigSection[]> {
  const t = opts.timeoutMs ?? 5000;
  const one = async (ty: ProxyConfigType): Promise<AdminAnswer> => {
    switch (ty) {
      case "clusters":
      case "listeners":
        return await adminGet(addr, `/${ty}`, t);
      case "config_dump":
        return await adminGet(addr, "/config_dump", t);
      case "routes": {
        const a = await adminGet(addr, "/config_dump", t);
        return { ...a, body: routesOf(a.body) };
      }
      case "static":
        if (!opts.staticDir) throw new Error("static is not available here");
        return { body: await staticFiles(opts.staticDir) };
      default:
        throw new UnknownTypeError(ty);
    }
  };
  const types = type === "all" ? ALL_TYPES.filter((x) => x !== "static" || opts.staticDir) : [type];
  const out: ProxyConfigSection[] = [];
  for (const ty of types) {
    const a = await one(ty);
    out.push(
      a.standin ? { type: ty, body: a.body, standin: a.standin } : { type: ty, body: a.body },
    );
  }
  return out;
}

/**
 * The warning the CLIs print on stderr when an answer came from the test stand-in, else
 * undefined: `Warning: the proxy at <addr> is <what the stand-in says>`.
 */
export function standinWarning(
  addr: string,
  sections: readonly ProxyConfigSection[],
): string | undefined {
  const s = sections.find((x) => x.standin)?.standin;
  return s ? `Warning: the proxy at ${addr} is ${s}\n` : undefined;
}

/** The sections as printed: alone as is; several under a `# <type>` line each. */
export function formatSections(sections: readonly ProxyConfigSection[]): string {
  if (sections.length === 1) return sections[0].body;
  return sections.map((s) => `# ${s.type}\n${s.body}${s.body.endsWith("\n") ? "" : "\n"}`).join(
    "",
  );
}

/**
 * `mesh-discovery debug <proxyID> <configuration-type>`: prints what a running discovery
 * instance serves a proxy, from its monitoring port (`127.0.0.1:9093`, or `host:port` from
 * `--discoveryAddress`, else the environment variable `MESH_DISCOVERY_ADDR`).
 *
 * Types: `ads` (/debug/adsz), `eds` (/debug/edsz), `syncz` (/debug/syncz), `all` (the three in
 * turn, each after a `--- <type> ---` line on stdout). proxyID `all` means every proxy. For one
 * proxy, a 404 prints `proxy not connected to this discovery instance` on stderr (exit 0); for
 * `all`, a 404 (no EDS watched yet) prints `[]`. Any other non-200 status fails with
 * `received <code> status from discovery: <body>`.
 * @module
 */

import type { CliContext } from "../_shared/context.ts";
import { UsageError } from "../_shared/context.ts";

/** Environment variable overriding the discovery monitoring address (`host:port`). */
export const DISCOVERY_ADDR_ENV = "MESH_DISCOVERY_ADDR";
/** Default monitoring address of a local discovery instance. */
export const DEFAULT_DISCOVERY_ADDR = "127.0.0.1:9093";

/** Debug types and their pages. */
export const DEBUG_TYPES: Record<string, string[]> = {
  ads: ["adsz"],
  eds: ["edsz"],
  syncz: ["syncz"],
  all: ["adsz", "edsz", "syncz"],
};

/** What each debug type shows, for help and errors. */
export const DEBUG_TYPE_HELP: Record<string, string> = {
  ads: "/debug/adsz: listeners and clusters last sent",
  eds: "/debug/edsz: endpoint assignments",
  syncz: "/debug/syncz: sync state per type",
  all: "the three in turn",
};

/** The pages of a debug type. @throws UsageError for an unknown type, listing the valid ones. */
export function debugPages(type: string): string[] {
  // Own keys only: "constructor" or "toString" are not debugging types.
  const pages = Object.hasOwn(DEBUG_TYPES, type) ? DEBUG_TYPES[type] : undefined;
  if (!pages) {
    throw new UsageError(
      `${JSON.stringify(type)} is not a supported debugging config type (valid types: ${
        Object.keys(DEBUG_TYPES).join(", ")
      })`,
    );
  }
  return pages;
}

/**
 * The monitoring address of a local discovery instance: the flag's value when given, else
 * `$MESH_DISCOVERY_ADDR`, else the default.
 */
export function localDiscoveryAddr(env: Readonly<Record<string, string>>, flag = ""): string {
  return flag || env[DISCOVERY_ADDR_ENV] || DEFAULT_DISCOVERY_ADDR;
}

/** How the user sets the address, for errors: `flag` is the command's flag (`--discoveryAddress`). */
export function discoveryAddrHint(flag: string): string {
  return `set the address with ${flag} <host>:<port> or the environment variable ` +
    `${DISCOVERY_ADDR_ENV} (default ${DEFAULT_DISCOVERY_ADDR})`;
}

/** Message printed when the proxy is not connected (404). */
export const NOT_CONNECTED = "proxy not connected to this discovery instance";

/** Section label of each debug page (`--- ads ---`). */
export const PAGE_LABELS: Record<string, string> = { adsz: "ads", edsz: "eds", syncz: "syncz" };

/**
 * The outcome of {@link fetchDebug} for one page (`adsz`...): the body on 200, or `notConnected`
 * when the proxy is not connected (404 for one proxy).
 */
export type DebugResult =
  | { page: string; body: string }
  | { page: string; notConnected: true };

/**
 * GETs one debug type from a discovery monitoring address.
 * @throws UsageError for an unknown type; Error for other statuses or when unreachable.
 */
export async function fetchDebug(
  addr: string,
  proxyID: string,
  type: string,
  hint = "",
): Promise<DebugResult[]> {
  const pages = debugPages(type);
  const more = hint ? ` (${hint})` : "";
  if (!/^(\[[0-9a-fA-F:.]+\]|[^:\s/]+):\d{1,5}$/.test(addr)) {
    throw new Error(`Invalid discovery address ${JSON.stringify(addr)}: want <host>:<port>${more}`);
  }
  const out: DebugResult[] = [];
  for (const page of pages) {
    const q = proxyID === "all" ? "" : `?proxyID=${encodeURIComponent(proxyID)}`;
    const url = `http://${addr}/debug/${page}${q}`;
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    } catch (e) {
      throw new Error(`Cannot reach discovery at ${addr}: ${(e as Error).message}${more}`);
    }
    const body = await res.text();
    if (res.status === 200) out.push({ page, body });
    // every proxy: a 404 means nothing is watched yet (EDS is not per proxy), not a lost proxy
    else if (res.status === 404 && proxyID === "all") out.push({ page, body: "[]" });
    else if (res.status === 404) out.push({ page, notConnected: true });
    else throw new Error(`received ${res.status} status from discovery: ${body.trim()}`);
  }
  return out;
}

/**
 * Prints the results: bodies on stdout, the not-connected message on stderr. With several
 * results (type `all`) each section starts with `--- <type> ---` on stdout.
 */
export async function printDebug(results: DebugResult[], ctx: CliContext): Promise<void> {
  const labelled = results.length > 1;
  for (const r of results) {
    if (labelled) await ctx.stdout.write(`--- ${PAGE_LABELS[r.page] ?? r.page} ---\n`);
    if ("body" in r) await ctx.stdout.write(r.body.endsWith("\n") ? r.body : r.body + "\n");
    else await ctx.stderr.write(NOT_CONNECTED + "\n");
  }
}

/** Runs `debug`. */
export async function run(
  opts: { discoveryAddress?: string },
  args: string[],
  ctx: CliContext,
) {
  const [proxyID, type] = args;
  const addr = localDiscoveryAddr(ctx.env, opts.discoveryAddress);
  const hint = discoveryAddrHint("--discoveryAddress");
  await printDebug(await fetchDebug(addr, proxyID, type, hint), ctx);
  return 0;
}

/**
 * REST-JSON xDS v3 of mesh-discovery (`POST /v3/discovery:clusters|listeners|routes|endpoints`,
 * reference §1.2): request validation, the optional response cache (`--discovery_cache`) and
 * the response webhook.
 * @module
 */

import { createHash } from "node:crypto";
import type { Context, Hono } from "../../lib/deps/hono.ts";
import { type Proxy, proxyFromNode, TYPE_URLS } from "../../lib/xds/mod.ts";
import { type HttpDeps, json, jsonBody, requestText, text } from "./http_util.ts";

/** REST xDS paths → type URL and short name. */
const REST_TYPES: Record<string, RestType> = {
  "/v3/discovery:clusters": { typeUrl: TYPE_URLS.cluster, short: "cds", webhook: true },
  "/v3/discovery:listeners": { typeUrl: TYPE_URLS.listener, short: "lds", webhook: true },
  "/v3/discovery:routes": { typeUrl: TYPE_URLS.route, short: "rds", webhook: true },
  "/v3/discovery:endpoints": { typeUrl: TYPE_URLS.endpoint, short: "eds", webhook: false },
};

/** One REST discovery path: its type URL, short name, and whether the webhook sees it. */
interface RestType {
  typeUrl: string;
  short: string;
  webhook: boolean;
}

/** Paths served for POST only: other methods get 405 with `Allow: POST`. */
export const POST_ONLY: ReadonlySet<string> = new Set([
  ...Object.keys(REST_TYPES),
  "/cache_stats_delete",
]);

/** Most `resource_names` in one REST discovery request (more: 400). */
export const MAX_RESOURCE_NAMES = 5000;

/** Largest REST discovery response (bytes of JSON): larger ones get 413 naming the limit. */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** Cached REST responses (`--discovery_cache`), cleared on every push, with hit/miss counts. */
export class RestCache {
  readonly #entries = new Map<string, Record<string, unknown>>();
  readonly #stats: Record<string, { hit: number; miss: number }> = {};

  /** The cached response for `key`, counting a hit or miss for `type`. */
  get(type: string, key: string): Record<string, unknown> | undefined {
    const v = this.#entries.get(key);
    const s = this.#stats[type] ??= { hit: 0, miss: 0 };
    if (v) s.hit++;
    else s.miss++;
    return v;
  }
  /** Stores a response. */
  set(key: string, value: Record<string, unknown>): void {
    this.#entries.set(key, value);
  }
  /** Forgets every response (a push happened). */
  clear(): void {
    this.#entries.clear();
  }
  /** `{"cache_stats": {<type>: {hit, miss}}}` */
  stats(): { cache_stats: Record<string, { hit: number; miss: number }> } {
    return { cache_stats: structuredClone(this.#stats) };
  }
  /** Resets the counters. */
  resetStats(): void {
    for (const k of Object.keys(this.#stats)) delete this.#stats[k];
  }
}

function sha16(s: string): string {
  return createHash("sha256").update(s).digest("hex").slice(0, 16);
}

/** A valid DiscoveryRequest: the proxy, its node id and metadata, the names asked (null: all). */
interface RestRequest {
  proxy: Proxy;
  nodeId: string;
  metadata: Record<string, unknown>;
  names: string[] | null;
}

/** Adds `POST /v3/*` (REST xDS) to `app`. */
export function restXdsRoutes(app: Hono, d: HttpDeps): void {
  app.post("/v3/*", async (c) => {
    const t = REST_TYPES[c.req.path];
    if (!t) return text(c, 404, `Unknown discovery path ${c.req.path}\n`);
    let ok = false;
    try {
      const req = await parseDiscoveryRequest(c, t);
      if (req instanceof Response) return req;
      const cacheKey = JSON.stringify([t.short, req.nodeId, req.metadata, req.names]);
      const cached = d.restCache?.get(t.short, cacheKey);
      if (cached) {
        d.metrics.cache(t.short, true);
        ok = true;
        return jsonBody(c, cached);
      }
      if (d.restCache) d.metrics.cache(t.short, false);
      const response = await discoveryResponse(c, d, t, req);
      const body = json(response) + "\n";
      if (body.length > MAX_RESPONSE_BYTES) {
        return text(
          c,
          413,
          `DiscoveryResponse: ${body.length} bytes is more than the ${MAX_RESPONSE_BYTES}-byte ` +
            `limit; ask for fewer resource_names\n`,
        );
      }
      d.restCache?.set(cacheKey, response);
      ok = true;
      return text(c, 200, body, "application/json");
    } finally {
      d.metrics.restCall(t.short, ok);
    }
  });
}

/** The DiscoveryResponse for `req` (through the webhook when one is set for this type). */
async function discoveryResponse(
  c: Context,
  d: HttpDeps,
  t: RestType,
  req: RestRequest,
): Promise<Record<string, unknown>> {
  const objs = d.model.resourceObjects(req.proxy, t.typeUrl, req.names);
  const resources = objs.map((o) => ({
    "@type": t.typeUrl,
    ...(d.protojson.message(t.typeUrl.slice(t.typeUrl.lastIndexOf("/") + 1), o) as object),
  }));
  let response: Record<string, unknown> = {
    version_info: sha16(JSON.stringify(resources)),
    resources,
    type_url: t.typeUrl,
  };
  if (d.webhook && t.webhook) {
    try {
      response = await d.webhook.post(c.req.path, response);
      d.metrics.webhook(t.short, true);
    } catch (e) {
      d.metrics.webhook(t.short, false);
      d.logger.warn(`Webhook failed, serving the unmodified response: ${(e as Error).message}`);
    }
  }
  return response;
}

/** The request of a REST discovery call, or the 400/413 answer to a bad one. */
async function parseDiscoveryRequest(c: Context, t: RestType): Promise<RestRequest | Response> {
  // A body that cannot be read is answered as one that is not JSON.
  const raw = await requestText(c).catch(() => "");
  if (raw instanceof Response) return raw;
  let req: Record<string, unknown>;
  try {
    req = JSON.parse(raw);
  } catch {
    return text(c, 400, "DiscoveryRequest: body is not valid JSON\n");
  }
  if (!req || typeof req !== "object" || Array.isArray(req)) {
    return text(c, 400, "DiscoveryRequest: body must be a JSON object\n");
  }
  const node = req.node as { id?: unknown; metadata?: unknown } | undefined;
  if (!node || typeof node.id !== "string" || node.id === "") {
    return text(c, 400, "DiscoveryRequest: node.id is required\n");
  }
  const reqType = req.type_url ?? req.typeUrl;
  if (reqType !== undefined && reqType !== "" && reqType !== t.typeUrl) {
    return text(
      c,
      400,
      `DiscoveryRequest: type_url ${JSON.stringify(reqType)} does not match ${c.req.path} ` +
        `(want ${JSON.stringify(t.typeUrl)})\n`,
    );
  }
  const rawNames = req.resource_names ?? req.resourceNames ?? [];
  if (!Array.isArray(rawNames) || rawNames.some((n) => typeof n !== "string")) {
    return text(c, 400, "DiscoveryRequest: resource_names must be an array of strings\n");
  }
  if (rawNames.length > MAX_RESOURCE_NAMES) {
    return text(
      c,
      400,
      `DiscoveryRequest: resource_names has ${rawNames.length} names, at most ` +
        `${MAX_RESOURCE_NAMES} per request (split the request)\n`,
    );
  }
  const metadata = node.metadata && typeof node.metadata === "object"
    ? node.metadata as Record<string, unknown>
    : {};
  let proxy: Proxy;
  try {
    // proto3 JSON may spell the user-agent fields in camelCase
    const n = node as Record<string, unknown>;
    proxy = proxyFromNode({
      id: node.id,
      metadata,
      user_agent_name: (n.user_agent_name ?? n.userAgentName) as string | undefined,
      user_agent_version: (n.user_agent_version ?? n.userAgentVersion) as string | undefined,
      user_agent_build_version: n.user_agent_build_version ?? n.userAgentBuildVersion,
      build_version: (n.build_version ?? n.buildVersion) as string | undefined,
    });
  } catch (e) {
    return text(c, 400, `Invalid node id ${JSON.stringify(node.id)}: ${(e as Error).message}\n`);
  }
  const names = rawNames.length ? [...new Set(rawNames as string[])] : null;
  return { proxy, nodeId: node.id, metadata, names };
}

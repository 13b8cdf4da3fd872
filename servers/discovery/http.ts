/**
 * The HTTP mux of mesh-discovery, served on `--port` and `--monitoringPort` alike (reference
 * §1.2–1.5): REST-JSON xDS v3, debug pages, readiness, version, metrics, the REST cache
 * statistics and (with `--profile`) heap and CPU profiles. See docs/mesh-discovery.md.
 * @module
 */

import { createHash } from "node:crypto";
import { Hono } from "../../lib/deps/hono.ts";
import type { Context } from "../../lib/deps/hono.ts";
import type { Logger } from "../../lib/log/mod.ts";
import { startCpuProfile } from "../../lib/process/mod.ts";
import type { ConfigObject, ServiceInstance } from "../../lib/model/mod.ts";
import {
  buildEndpoints,
  decodeAny,
  isIp,
  type Proxy,
  proxyFromNode,
  TYPE_URLS,
  type XdsResource,
} from "../../lib/xds/mod.ts";
import {
  type ConnectionStatus,
  type ResourceCache,
  typeShortName,
  type XdsServer,
} from "../../lib/xds/server/mod.ts";
import type { DiscoveryMetrics } from "./metrics.ts";
import type { DiscoveryModel, DiscoveryRegistry } from "./model.ts";
import type { ProtoJson } from "./protojson.ts";
import type { WebhookClient } from "./webhook.ts";
import {
  DebugInputError,
  type DebugRegistry,
  parseDebugInstance,
  parseDebugService,
} from "./debug_registry.ts";

/** REST xDS paths → type URL and short name. */
const REST_TYPES: Record<string, { typeUrl: string; short: string; webhook: boolean }> = {
  "/v3/discovery:clusters": { typeUrl: TYPE_URLS.cluster, short: "cds", webhook: true },
  "/v3/discovery:listeners": { typeUrl: TYPE_URLS.listener, short: "lds", webhook: true },
  "/v3/discovery:routes": { typeUrl: TYPE_URLS.route, short: "rds", webhook: true },
  "/v3/discovery:endpoints": { typeUrl: TYPE_URLS.endpoint, short: "eds", webhook: false },
};

/** Paths served for POST only: other methods get 405 with `Allow: POST`. */
const POST_ONLY = new Set([...Object.keys(REST_TYPES), "/cache_stats_delete"]);

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

/** What the mux reads. */
export interface HttpDeps {
  model: DiscoveryModel;
  server: XdsServer<Proxy>;
  cache: ResourceCache;
  registry: DiscoveryRegistry;
  metrics: DiscoveryMetrics;
  protojson: ProtoJson;
  restCache: RestCache | null;
  /** The in-memory debug registry filled by `POST /debug/registryz|endpointz?svc=`. */
  debugRegistry: DebugRegistry;
  webhook: WebhookClient | null;
  profile: boolean;
  isReady(): boolean;
  /** Why the server is not ready (answered by `/ready` with 503), or undefined when it is. */
  notReady?(): string | undefined;
  /** Why the config pipeline is stalled (the store's view is not kept up to date), or undefined. */
  stalled?(): string | undefined;
  versionText: string;
  logger: Logger;
}

const json = (v: unknown) => JSON.stringify(v, null, 2);

/** Largest request body read (bytes), as gRPC's default message size: larger ones get 413. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** Most `resource_names` in one REST discovery request (more: 400). */
export const MAX_RESOURCE_NAMES = 5000;

/** Largest REST discovery response (bytes of JSON): larger ones get 413 naming the limit. */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** A request body that is too large (answered 413). */
class BodyTooLarge extends Error {}

/**
 * The body of a request as text, reading at most `max` bytes: a declared or actual larger body
 * throws {@link BodyTooLarge} without reading the rest.
 */
async function readBody(req: Request, max: number): Promise<string> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > max) throw new BodyTooLarge();
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel().catch(() => {});
      throw new BodyTooLarge();
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(await new Blob(chunks as BlobPart[]).arrayBuffer());
}

/**
 * True when `host` is a loopback address: IPv4 127.0.0.0/8, IPv6 `::1` (any spelling), or an
 * IPv4-mapped `::ffff:127.x.y.z`.
 */
export function isLoopbackAddress(host: string): boolean {
  const h = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(h)) return isIp(h) && h.startsWith("127.");
  if (!h.includes(":") || !isIp(h)) return false;
  const norm = new URL(`http://[${h}]/`).hostname; // canonical form, e.g. [::ffff:7f00:1]
  return norm === "[::1]" || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(norm);
}

/**
 * True when the peer of a request is on this host: a loopback TCP address or a unix socket.
 * `env` is what hono passes as the environment: Deno.serve's handler info (`remoteAddr`).
 * Unknown peers are not local.
 */
export function isLocalPeer(env: unknown): boolean {
  const addr = (env as { remoteAddr?: Deno.Addr } | undefined)?.remoteAddr;
  if (!addr) return false;
  if (addr.transport === "unix" || addr.transport === "unixpacket") return true;
  return "hostname" in addr && isLoopbackAddress(addr.hostname);
}

/** The answer to a debug change from another host. */
export const LOCAL_ONLY_MESSAGE = "debug changes are accepted from localhost only";

function sha16(s: string): string {
  return createHash("sha256").update(s).digest("hex").slice(0, 16);
}

/** Builds the hono app. */
export function discoveryApp(d: HttpDeps): Hono {
  const app = new Hono({ strict: false });
  const text = (c: Context, status: number, body: string, type = "text/plain; charset=utf-8") =>
    c.body(body, status as 200, { "content-type": type });
  const jsonBody = (c: Context, v: unknown, status = 200) =>
    text(c, status, json(v) + "\n", "application/json");
  const tooLarge = (c: Context) =>
    text(c, 413, `Request body: more than the ${MAX_REQUEST_BYTES}-byte limit\n`);

  // ---- debug changes: from this host only ---------------------------------------------------
  // Both ports listen on every interface; adding services/instances, forcing a push or resetting
  // cache counters is only for operators on the host (the peer comes from Deno.serve's handler
  // info).
  const localOnly = async (c: Context, next: () => Promise<void>) => {
    const path = c.req.path.replace(/\/+$/, "");
    const change = (c.req.method === "POST" &&
      (path === "/debug/registryz" || path === "/debug/endpointz" ||
        path === "/cache_stats_delete")) ||
      (Boolean(c.req.query("push")) && (path === "/debug/adsz" || path === "/debug/edsz"));
    if (change && !isLocalPeer(c.env)) return text(c, 403, LOCAL_ONLY_MESSAGE + "\n");
    await next();
    return undefined;
  };
  app.use("/debug/*", localOnly);
  app.use("/cache_stats_delete", localOnly);

  // ---- REST xDS ------------------------------------------------------------------------------
  app.post("/v3/*", async (c) => {
    const t = REST_TYPES[c.req.path];
    if (!t) return text(c, 404, `Unknown discovery path ${c.req.path}\n`);
    let ok = false;
    try {
      let req: Record<string, unknown>;
      try {
        req = JSON.parse(await readBody(c.req.raw, MAX_REQUEST_BYTES));
      } catch (e) {
        if (e instanceof BodyTooLarge) return tooLarge(c);
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
        return text(
          c,
          400,
          `Invalid node id ${JSON.stringify(node.id)}: ${(e as Error).message}\n`,
        );
      }
      const names = rawNames.length ? [...new Set(rawNames as string[])] : null;
      const cacheKey = JSON.stringify([t.short, node.id, metadata, names]);
      const cached = d.restCache?.get(t.short, cacheKey);
      if (cached) {
        d.metrics.cache(t.short, true);
        ok = true;
        return jsonBody(c, cached);
      }
      if (d.restCache) d.metrics.cache(t.short, false);
      const objs = d.model.resourceObjects(proxy, t.typeUrl, names);
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

  // ---- cache, readiness, version, metrics ---------------------------------------------------
  app.get("/cache_stats", (c) => jsonBody(c, (d.restCache ?? new RestCache()).stats()));
  app.post("/cache_stats_delete", (c) => {
    d.restCache?.resetStats();
    return text(c, 200, "");
  });
  app.get("/ready", (c) => {
    const why = d.notReady
      ? d.notReady()
      : d.isReady()
      ? undefined
      : "registries or config store not synced";
    // a config pipeline that stopped applying changes is not ready either; every reason is told
    const reasons = [why, d.stalled?.()].filter((r): r is string => !!r);
    return reasons.length
      ? text(c, 503, `not ready: ${reasons.join("; ")}\n`)
      : text(c, 200, "ready\n");
  });
  app.get(
    "/version",
    (c) => text(c, 200, d.versionText.endsWith("\n") ? d.versionText : d.versionText + "\n"),
  );
  app.get("/metrics", async (c) => text(c, 200, await d.metrics.text(), d.metrics.contentType));

  // ---- debug ---------------------------------------------------------------------------------
  const decoded = (conn: ConnectionStatus<Proxy>, typeUrl: string): unknown[] => {
    const st = conn.types[typeUrl];
    if (!st) return [];
    const short = typeUrl.slice(typeUrl.lastIndexOf("/") + 1);
    return Object.entries(st.resources).flatMap(([name, version]) => {
      const e = d.cache.get(typeUrl, `${name}|${version}`);
      if (!e) return [];
      return [d.protojson.message(short, decodeAny({ type_url: typeUrl, value: e.bytes }))];
    });
  };
  const byProxyId = (id: string | undefined) => {
    const all = d.server.connections();
    return id ? all.filter((c) => c.proxy.id === id) : all;
  };

  app.get("/debug/adsz", (c) => {
    if (c.req.query("push")) {
      const n = d.server.connectionCount;
      d.server.push({ kind: "full" });
      return text(c, 200, `Pushed to ${n} servers\n`);
    }
    const id = c.req.query("proxyID");
    const conns = byProxyId(id);
    if (id) {
      if (!conns.length) return text(c, 404, `Proxy ${id} is not connected\n`);
      const parts = conns.flatMap((conn) => [
        ...decoded(conn, TYPE_URLS.listener),
        ...decoded(conn, TYPE_URLS.cluster),
      ]);
      return text(c, 200, parts.map(json).join("\n") + "\n", "application/json");
    }
    return jsonBody(
      c,
      conns.map((conn) => ({
        node: conn.conId,
        addr: conn.peer,
        connect: conn.connectedAt,
        listeners: decoded(conn, TYPE_URLS.listener),
        clusters: decoded(conn, TYPE_URLS.cluster),
      })),
    );
  });

  app.get("/debug/cdsz", (c) =>
    jsonBody(
      c,
      byProxyId(c.req.query("proxyID")).map((conn) => ({
        node: conn.conId,
        addr: conn.peer,
        connect: conn.connectedAt,
        Clusters: decoded(conn, TYPE_URLS.cluster),
      })),
    ));

  app.get("/debug/edsz", async (c) => {
    if (c.req.query("push")) {
      d.server.push({ kind: "full" });
      await d.server.flush();
    }
    const id = c.req.query("proxyID");
    const conns = byProxyId(id);
    if (id && !conns.length) return text(c, 404, `Proxy ${id} is not connected\n`);
    const names = new Set<string>();
    for (const conn of conns) {
      const st = conn.types[TYPE_URLS.endpoint];
      for (const n of [...(st?.subscribed ?? []), ...Object.keys(st?.resources ?? {})]) {
        names.add(n);
      }
    }
    if (!names.size) return text(c, 404, "No EDS clusters are watched\n");
    const ctx = d.model.context();
    return jsonBody(
      c,
      buildEndpoints(ctx, [...names].sort()).map((cla) =>
        d.protojson.message("envoy.config.endpoint.v3.ClusterLoadAssignment", cla)
      ),
    );
  });

  app.get("/debug/registryz", (c) => jsonBody(c, [...d.model.context().services, {}]));

  /** Reads a JSON body for the debug registry; undefined after answering 400. */
  const debugBody = async (c: Context): Promise<{ svc: string; body: unknown } | Response> => {
    const svc = c.req.query("svc");
    if (svc === undefined) {
      return text(c, 400, "Query parameter svc: required (the service hostname)\n");
    }
    let raw: string;
    try {
      raw = await readBody(c.req.raw, MAX_REQUEST_BYTES);
    } catch (e) {
      if (e instanceof BodyTooLarge) return tooLarge(c);
      throw e;
    }
    if (raw.trim() === "") return text(c, 400, "Request body: want a JSON object, got nothing\n");
    try {
      return { svc, body: JSON.parse(raw) };
    } catch (e) {
      return text(c, 400, `Request body: not valid JSON: ${(e as Error).message}\n`);
    }
  };
  const debugAdd = (c: Context, fn: () => void, then: () => Response | Promise<Response>) => {
    try {
      fn();
    } catch (e) {
      if (e instanceof DebugInputError) return text(c, 400, e.message + "\n");
      throw e;
    }
    return then();
  };

  app.post("/debug/registryz", async (c) => {
    const r = await debugBody(c);
    if (r instanceof Response) return r;
    return debugAdd(
      c,
      () => d.debugRegistry.addService(parseDebugService(r.svc, r.body)),
      () => jsonBody(c, [...d.model.context().services, {}]),
    );
  });

  app.post("/debug/endpointz", async (c) => {
    const r = await debugBody(c);
    if (r instanceof Response) return r;
    let added: ServiceInstance | undefined;
    return debugAdd(
      c,
      () => {
        const svc = d.model.context().services.find((s) => s.hostname === r.svc);
        added = parseDebugInstance(r.svc, r.body, svc);
        d.debugRegistry.addInstance(added);
      },
      // just the added instance, in the listing's form (the whole listing is O(services ×
      // instances): ~0.1 s of blocked event loop at 1000 services × 5000 instances)
      () => endpointz(c, [{ svc: `${added!.hostname}:${added!.servicePort.name}`, eps: [added!] }]),
    );
  });

  /** `/debug/endpointz` text or JSON of `groups` (default: every service port, in context order). */
  const endpointz = (c: Context, groups?: { svc: string; eps: ServiceInstance[] }[]) => {
    if (!groups) {
      const ctx = d.model.context();
      const byKey = new Map<string, ServiceInstance[]>();
      for (const i of ctx.instances) {
        const k = `${i.hostname}|${i.servicePort.port}`;
        const l = byKey.get(k);
        if (l) l.push(i);
        else byKey.set(k, [i]);
      }
      groups = ctx.services.flatMap((svc) =>
        svc.ports.map((port) => ({
          svc: `${svc.hostname}:${port.name}`,
          eps: byKey.get(`${svc.hostname}|${port.port}`) ?? [],
        }))
      );
    }
    if (c.req.query("brief")) {
      const lines = groups.flatMap((g) =>
        g.eps.map((i) => {
          const family = i.address.startsWith("unix://") ? "unix" : "tcp";
          const labels = Object.entries(i.labels).map(([k, v]) => `${k}=${v}`).join(",");
          return `${g.svc} ${family} ${i.address}:${i.port} ${labels} ${i.locality} ` +
            `${i.serviceAccount}\n`;
        })
      );
      return text(c, 200, lines.join(""));
    }
    return jsonBody(c, groups.map((g) => ({ svc: g.svc, ep: [...g.eps, {}] })));
  };
  app.get("/debug/endpointz", (c) => endpointz(c));

  app.get("/debug/configz", (c) => jsonBody(c, [...d.model.configs() as ConfigObject[], {}]));

  app.get("/debug/conflictz", (c) => jsonBody(c, d.model.conflicts()));

  app.get("/debug/syncz", (c) => {
    const id = c.req.query("proxyID");
    const conns = byProxyId(id);
    if (id && !conns.length) return text(c, 404, `Proxy ${id} is not connected\n`);
    return jsonBody(c, conns.map(syncStatus));
  });

  // ---- profiling -----------------------------------------------------------------------------
  app.get("/debug/pprof/heap", async (c) => {
    if (!d.profile) return text(c, 404, "Profiling is off (start with --profile)\n");
    const v8 = await import("node:v8");
    const chunks: Uint8Array[] = [];
    for await (const chunk of v8.getHeapSnapshot()) {
      chunks.push(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk);
    }
    return c.body(new Blob(chunks as BlobPart[]).stream(), 200, {
      "content-type": "application/octet-stream",
      "content-disposition": 'attachment; filename="mesh-discovery.heapsnapshot"',
    });
  });
  app.get("/debug/pprof/profile", async (c) => {
    if (!d.profile) return text(c, 404, "Profiling is off (start with --profile)\n");
    const raw = c.req.query("seconds") ?? "30";
    const seconds = Number(raw);
    if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 600) {
      return text(c, 400, `Bad seconds ${JSON.stringify(raw)}: want a number in (0, 600]\n`);
    }
    const profile = await cpuProfile(seconds * 1000);
    return c.body(JSON.stringify(profile), 200, {
      "content-type": "application/json",
      "content-disposition": 'attachment; filename="mesh-discovery.cpuprofile"',
    });
  });
  app.get(
    "/debug/pprof/*",
    (c) =>
      d.profile
        ? text(c, 404, "Available: /debug/pprof/heap, /debug/pprof/profile?seconds=N\n")
        : text(c, 404, "Profiling is off (start with --profile)\n"),
  );

  app.notFound((c) => {
    const path = c.req.path.replace(/\/+$/, "");
    if (POST_ONLY.has(path)) {
      return c.body(`Method ${c.req.method} not allowed on ${path}: use POST\n`, 405, {
        "content-type": "text/plain; charset=utf-8",
        allow: "POST",
      });
    }
    return text(c, 404, `404 page not found: ${c.req.path}\n`);
  });
  app.onError((err, c) => {
    d.logger.error(`HTTP ${c.req.method} ${c.req.path} failed: ${err.message}`);
    return text(c, 500, `Internal error: ${err.message}\n`);
  });
  return app;
}

/** One entry of /debug/syncz. */
export function syncStatus(conn: ConnectionStatus<Proxy>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    proxy: conn.proxy.id,
    node: conn.nodeId,
    conId: conn.conId,
    mode: conn.mode,
    connectedAt: conn.connectedAt,
  };
  for (const t of [TYPE_URLS.cluster, TYPE_URLS.listener, TYPE_URLS.route, TYPE_URLS.endpoint]) {
    const st = conn.types[t];
    if (!st) continue;
    const e: Record<string, unknown> = {
      sent: st.lastSent?.version ?? "",
      acked: st.lastAcked?.version ?? "",
      sentNonce: st.lastSent?.nonce ?? "",
      ackedNonce: st.lastAcked?.nonce ?? "",
      resources: Object.keys(st.resources).length,
    };
    if (st.lastNack) e.nack = st.lastNack;
    out[typeShortName(t)] = e;
  }
  return out;
}

/** Records a CPU profile for `ms` through the inspector (one at a time). */
async function cpuProfile(ms: number): Promise<XdsResource> {
  const p = await startCpuProfile();
  await new Promise((r) => setTimeout(r, ms));
  return await p.stop() as XdsResource;
}

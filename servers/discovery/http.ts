/**
 * The HTTP mux of mesh-discovery, served on `--port` and `--monitoringPort` alike (reference
 * §1.2–1.5): REST-JSON xDS v3, debug pages, readiness, version, metrics, the REST cache
 * statistics and (with `--profile`) heap and CPU profiles. See docs/mesh-discovery.md.
 * @module
 */

import { Hono } from "../../lib/deps/hono.ts";
import type { Context } from "../../lib/deps/hono.ts";
import { monitoringHandler } from "../../lib/monitoring/mod.ts";
import { debugPages } from "./debug_pages.ts";
import { type HttpDeps, isLocalPeer, jsonBody, LOCAL_ONLY_MESSAGE, text } from "./http_util.ts";
import { POST_ONLY, RestCache, restXdsRoutes } from "./rest_xds.ts";

export {
  type HttpDeps,
  isLocalPeer,
  isLoopbackAddress,
  LOCAL_ONLY_MESSAGE,
  MAX_REQUEST_BYTES,
} from "./http_util.ts";
export { MAX_RESOURCE_NAMES, MAX_RESPONSE_BYTES, RestCache } from "./rest_xds.ts";
export { syncStatus } from "./debug_pages.ts";

/** Builds the hono app. */
export function discoveryApp(d: HttpDeps): Hono {
  const app = new Hono({ strict: false });
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
  restXdsRoutes(app, d);

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
  // /version, /metrics and (with --profile) /debug/pprof/* as every server serves them
  let monitoring: ((req: Request) => Promise<Response>) | undefined;
  const monitor = (c: Context) =>
    (monitoring ??= monitoringHandler({
      metrics: () => d.metrics.text(),
      contentType: d.metrics.contentType,
      versionText: d.versionText,
      profiling: d.profile,
      profilingFlag: "--profile",
      profileName: "mesh-discovery",
    }))(c.req.raw);
  app.get("/version", monitor);
  app.get("/metrics", monitor);
  app.get("/debug/pprof/*", monitor);

  // ---- debug pages ---------------------------------------------------------------------------
  debugPages(app, d);

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

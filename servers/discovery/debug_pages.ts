/**
 * The debug pages of mesh-discovery (reference §1.4): what each connected proxy holds
 * (`/debug/adsz`, `cdsz`, `edsz`, `syncz`), the registry and config (`registryz`, `endpointz`,
 * `configz`, with POSTs that add to the debug registry). `--profile`'s heap and CPU profiles
 * (`/debug/pprof/*`) are lib/monitoring's, routed in http.ts.
 * @module
 */

import type { Context, Hono } from "../../lib/deps/hono.ts";
import { type ConfigObject, groupBy, type ServiceInstance } from "../../lib/model/mod.ts";
import { withServingStatus } from "../../lib/model/kinds.ts";
import { buildEndpoints, decodeAny, type Proxy, TYPE_URLS } from "../../lib/xds/mod.ts";
import { type ConnectionStatus, typeShortName } from "../../lib/xds/server/mod.ts";
import { DebugInputError, parseDebugInstance, parseDebugService } from "./debug_registry.ts";
import { type HttpDeps, json, jsonArrayBody, jsonBody, requestText, text } from "./http_util.ts";

/** Adds every `/debug/*` page to `app`. */
export function debugPages(app: Hono, d: HttpDeps): void {
  proxyDebugPages(app, d);
  registryDebugPages(app, d);
}

/** `/debug/adsz`, `cdsz`, `edsz`, `syncz`: what the connected proxies were sent. */
function proxyDebugPages(app: Hono, d: HttpDeps): void {
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
  const byProxyId = async (id: string | undefined) => {
    await d.server.refreshConnections?.(); // --workers: the workers' streams' per-type state
    const all = d.server.connections();
    return id ? all.filter((c) => c.proxy.id === id) : all;
  };

  app.get("/debug/adsz", async (c) => {
    if (c.req.query("push")) {
      const n = d.server.connectionCount;
      d.server.push({ kind: "full" });
      return text(c, 200, `Pushed to ${n} servers\n`);
    }
    const id = c.req.query("proxyID");
    const conns = await byProxyId(id);
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

  app.get("/debug/cdsz", async (c) =>
    jsonBody(
      c,
      (await byProxyId(c.req.query("proxyID"))).map((conn) => ({
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
    const conns = await byProxyId(id);
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

  app.get("/debug/conflictz", (c) => jsonBody(c, d.model.conflicts()));

  // --workers: per worker, the maps and entries of the mirror it holds (none without workers)
  app.get("/debug/mirrorz", (c) => jsonBody(c, d.server.mirrorStats?.() ?? []));

  app.get("/debug/syncz", async (c) => {
    const id = c.req.query("proxyID");
    const conns = await byProxyId(id);
    if (id && !conns.length) return text(c, 404, `Proxy ${id} is not connected\n`);
    return jsonBody(c, conns.map(syncStatus));
  });
}

/** `/debug/registryz`, `endpointz` (GET and POST) and `configz`. */
function registryDebugPages(app: Hono, d: HttpDeps): void {
  // the registry as it is now (as Istio's registryz), not the push context, which takes a
  // change only at the next push: a POST here is listed at once
  app.get("/debug/registryz", (c) => jsonBody(c, [...d.registry.services(), {}]));

  /** Reads a JSON body for the debug registry; undefined after answering 400. */
  const debugBody = async (c: Context): Promise<{ svc: string; body: unknown } | Response> => {
    const svc = c.req.query("svc");
    if (svc === undefined) {
      return text(c, 400, "Query parameter svc: required (the service hostname)\n");
    }
    const raw = await requestText(c);
    if (raw instanceof Response) return raw;
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
      () => jsonBody(c, [...d.registry.services(), {}]),
    );
  });

  app.post("/debug/endpointz", async (c) => {
    const r = await debugBody(c);
    if (r instanceof Response) return r;
    let added: ServiceInstance | undefined;
    return debugAdd(
      c,
      () => {
        // the context's services when none changed since (cheaper than the registry's list,
        // which the churn bench's 50 POSTs a second would build each time)
        const services = d.model.stale ? d.registry.services() : d.model.context().services;
        const svc = services.find((s) => s.hostname === r.svc);
        added = parseDebugInstance(r.svc, r.body, svc);
        d.debugRegistry.addInstance(added);
      },
      // just the added instance, in the listing's form (the whole listing is O(services ×
      // instances): ~0.1 s of blocked event loop at 1000 services × 5000 instances)
      () => endpointz(c, [{ svc: `${added!.hostname}:${added!.servicePort.name}`, eps: [added!] }]),
    );
  });

  /** `/debug/endpointz` text or JSON of `groups` (default: every port of the registry's services). */
  const endpointz = (c: Context, groups?: { svc: string; eps: ServiceInstance[] }[]) => {
    if (!groups) {
      const byKey = groupBy(d.registry.instances(), (i) => `${i.hostname}|${i.servicePort.port}`);
      groups = d.registry.services().flatMap((svc) =>
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

  // legacy kinds and fields not yet served say so (lib/model/kinds.ts)
  app.get(
    "/debug/configz",
    (c) => {
      const configs = d.model.configs() as ConfigObject[];
      return jsonArrayBody(
        c,
        [...configs, {}],
        (o, i) => i < configs.length ? withServingStatus(o as ConfigObject) : o,
      );
    },
  );
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

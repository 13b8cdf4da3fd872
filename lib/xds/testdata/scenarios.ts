/**
 * The proxies and models behind the golden files, plus extra cases that exercise every generator
 * branch (test fixture, not a public API): used by golden_test.ts and pgv_test.ts.
 * @module
 */

import type { ConfigObject } from "../../model/types.ts";
import {
  buildApiListener,
  buildClusters,
  buildEndpoints,
  buildListeners,
  buildRoutes,
  parseNodeId,
  type Proxy,
  type PushContext,
  type XdsClientInfo,
  type XdsResource,
} from "../mod.ts";
import {
  cfg,
  DB_ENTRIES,
  ECHO_INGRESS,
  model,
  PUBLIC_GW,
  PUBLIC_VS,
  RBAC_BINDING,
  RBAC_ROLE,
  WORLD_DR,
  WORLD_GRPC_PERMISSIVE,
  WORLD_TCP_PLAINTEXT,
  WORLD_VS,
} from "./model.ts";

/** Everything one proxy receives: listeners, the routes and EDS assignments they reference. */
export interface Snapshot {
  listeners: XdsResource[];
  routes: XdsResource[];
  clusters: XdsResource[];
  endpoints: XdsResource[];
}

/** Route names referenced by listeners (RDS) and EDS cluster names. */
export function referenced(
  listeners: XdsResource[],
  clusters: XdsResource[],
): { routes: string[]; eds: string[] } {
  const routes = new Set<string>();
  const walk = (o: unknown) => {
    if (!o || typeof o !== "object") return;
    const r = o as Record<string, unknown>;
    if (typeof r.route_config_name === "string") routes.add(r.route_config_name);
    for (const v of Object.values(r)) walk(v);
  };
  walk(listeners);
  const eds = clusters.filter((c) => c.type === "EDS").map((c) =>
    c.eds_cluster_config.service_name
  );
  return { routes: [...routes], eds };
}

/** Builds the full snapshot of `proxy`, plus proxyless api listeners for `apiNames`. */
export function snapshot(ctx: PushContext, proxy: Proxy, apiNames: string[] = []): Snapshot {
  const clusters = buildClusters(ctx, proxy);
  const listeners = [
    ...buildListeners(ctx, proxy),
    ...apiNames.map((n) => buildApiListener(ctx, proxy, n)!),
  ];
  const ref = referenced(listeners, clusters);
  return {
    listeners,
    routes: buildRoutes(ctx, proxy, ref.routes),
    clusters,
    endpoints: buildEndpoints(ctx, ref.eds),
  };
}

/** A sidecar of hello v1 (`sidecar~10.0.1.1~hello-v1.default~...`). */
export const helloV1 = (metadata: Record<string, unknown> = {}): Proxy =>
  parseNodeId("sidecar~10.0.1.1~hello-v1.default~default.svc.cluster.local", {
    labels: { app: "hello", version: "v1" },
    ...metadata,
  });

/** An Envoy 1.27 client (writes header matchers as `string_match`). */
export const ENVOY_1_27: XdsClientInfo = { kind: "envoy", name: "envoy", version: [1, 27, 0] };

/** gRPC C-core 1.51 through Python (writes header matchers as `exact_match`...). */
export const GRPC_CORE_1_51: XdsClientInfo = {
  kind: "grpc-core",
  name: "gRPC C-core linux Python",
  version: [1, 51, 1],
};

/** `proxy` as sent by `client`. */
export const withClient = (proxy: Proxy, client: XdsClientInfo): Proxy => ({ ...proxy, client });

/** The ingress gateway router selected by `mesh: ingressgateway`. */
export const gatewayRouter = (): Proxy =>
  parseNodeId("router~10.0.9.9~gw.mesh-system~mesh-system.svc.cluster.local", {
    labels: { mesh: "ingressgateway" },
  });

/** VirtualService for hello using every HTTP feature: regex/method/authority, mirror, CORS `*`... */
export const HELLO_FULL_VS = cfg("VirtualService", "hello", {
  hosts: ["hello"],
  http: [
    {
      match: [{
        uri: { regex: "/r/.*" },
        method: { exact: "POST" },
        authority: { prefix: "hello" },
      }],
      route: [{ destination: { host: "hello" } }],
      mirror: { host: "world", subset: "v1" },
      removeResponseHeaders: ["x-a"],
      appendResponseHeaders: { "x-b": "1" },
      removeRequestHeaders: ["x-c"],
      retries: { attempts: 2, retryOn: "5xx,connect-failure" },
      timeout: "0s",
    },
    {
      match: [{ headers: { ":path": { prefix: "/x" } }, queryParams: { q: { exact: "1" } } }],
      redirect: { uri: "/y" },
    },
    {
      match: [{ uri: { exact: "/abort" } }],
      fault: { abort: { percentage: { value: 50 }, httpStatus: 418 } },
      route: [{ destination: { host: "hello" } }],
    },
    {
      match: [{ uri: { prefix: "/rw" } }],
      rewrite: { uri: "/", authority: "foo" },
      route: [{ destination: { host: "hello", port: { number: 80 } }, weight: 100 }],
      corsPolicy: {
        allowOrigin: ["*"],
        allowHeaders: ["a"],
        exposeHeaders: ["b"],
        allowCredentials: true,
      },
    },
    {
      route: [{ destination: { host: "hello" } }],
      retries: { attempts: 0 },
      websocketUpgrade: true,
    },
  ],
  tcp: [{
    route: [
      { destination: { host: "hello", port: { number: 9000 } }, weight: 50 },
      { destination: { host: "world", port: { number: 9000 } }, weight: 50 },
    ],
  }],
});

/** DestinationRule for hello: ring hash, tiny pools, outlier detection, MUTUAL/SIMPLE TLS, passthrough. */
export const HELLO_FULL_DR = cfg("DestinationRule", "hello", {
  host: "hello",
  trafficPolicy: {
    loadBalancer: { consistentHash: { useSourceIp: true } },
    connectionPool: {
      tcp: { maxConnections: 1, connectTimeout: "1ms" },
      http: { http2MaxRequests: 1 },
    },
    outlierDetection: {
      http: {
        consecutiveErrors: 1,
        interval: "1s",
        baseEjectionTime: "1s",
        maxEjectionPercent: 100,
      },
    },
    tls: {
      mode: "MUTUAL",
      clientCertificate: "/c.pem",
      privateKey: "/k.pem",
      caCertificates: "/ca.pem",
      subjectAltNames: ["x"],
      sni: "hello",
    },
  },
  subsets: [
    {
      name: "v1",
      labels: { version: "v1" },
      trafficPolicy: {
        loadBalancer: { consistentHash: { httpCookie: { name: "c", ttl: "10s" } } },
        tls: { mode: "SIMPLE" },
      },
    },
    {
      name: "v2",
      labels: { version: "v2" },
      trafficPolicy: { loadBalancer: { simple: "PASSTHROUGH" } },
    },
  ],
});

/** A second Gateway: TLS passthrough, mutual TLS with SANs, TCP and HTTP2 servers. */
export const GW2 = cfg("Gateway", "gw2", {
  selector: { mesh: "ingressgateway" },
  servers: [
    {
      port: { number: 443, protocol: "HTTPS", name: "https" },
      hosts: ["a.example.com"],
      tls: { mode: "PASSTHROUGH" },
    },
    {
      port: { number: 8443, protocol: "HTTPS", name: "https2" },
      hosts: ["b.example.com"],
      tls: {
        mode: "MUTUAL",
        serverCertificate: "/s",
        privateKey: "/k",
        caCertificates: "/ca",
        subjectAltNames: ["spiffe://x"],
      },
    },
    { port: { number: 9000, protocol: "TCP", name: "tcp" }, hosts: ["*"] },
    { port: { number: 8080, protocol: "HTTP2", name: "h2" }, hosts: ["*"] },
  ],
});

/** VirtualService bound to gw2: SNI route, TCP route and a catch-all HTTP route. */
export const VS2 = cfg("VirtualService", "vs2", {
  hosts: ["a.example.com", "*"],
  gateways: ["gw2"],
  tls: [{
    match: [{ port: 443, sniHosts: ["a.example.com"] }],
    route: [{ destination: { host: "hello", port: { number: 80 } } }],
  }],
  tcp: [{
    match: [{ port: 9000 }],
    route: [{ destination: { host: "world", port: { number: 9000 } } }],
  }],
  http: [{ route: [{ destination: { host: "world", port: { number: 80 } } }] }],
});

/** ServiceEntries: a DNS-resolved external host (IP and hostname endpoints) and a wildcard. */
export const EXTERNAL_ENTRIES: ConfigObject[] = [
  cfg("ServiceEntry", "ext", {
    hosts: ["ext.example.com"],
    ports: [
      { number: 443, name: "https", protocol: "HTTPS" },
      { number: 80, name: "http", protocol: "HTTP" },
    ],
    location: "MESH_EXTERNAL",
    resolution: "DNS",
    endpoints: [{ address: "1.2.3.4" }, { address: "ext2.example.com", ports: { https: 8443 } }],
  }),
  cfg("ServiceEntry", "wild", {
    hosts: ["*.wild.com"],
    ports: [{ number: 80, name: "http", protocol: "HTTP" }],
    location: "MESH_EXTERNAL",
    resolution: "NONE",
  }),
];

/** One named case: a model, a proxy and the proxyless listener names it asks for. */
export interface Scenario {
  ctx: PushContext;
  proxy: Proxy;
  apiNames: string[];
}

/**
 * The golden scenarios (name = golden file) followed by the extra cases (`extra-*`). Built fresh
 * on each call.
 */
export function scenarios(): Record<string, Scenario> {
  const sidecarCtx = model({
    configs: { virtualServices: [WORLD_VS], destinationRules: [WORLD_DR] },
  });
  return {
    sidecar: { ctx: sidecarCtx, proxy: withClient(helloV1(), ENVOY_1_27), apiNames: [] },
    proxyless: {
      ctx: sidecarCtx,
      proxy: withClient(
        parseNodeId("sidecar~10.0.7.7~client.default~default.svc.cluster.local"),
        GRPC_CORE_1_51,
      ),
      apiNames: ["world:7070", "hello.default.svc.cluster.local:7070"],
    },
    gateway: {
      ctx: model({ configs: { virtualServices: [PUBLIC_VS], gateways: [PUBLIC_GW] } }),
      proxy: withClient(gatewayRouter(), ENVOY_1_27),
      apiNames: [],
    },
    ingress: {
      ctx: model({ configs: { ingresses: [ECHO_INGRESS] } }),
      proxy: withClient(
        parseNodeId("ingress~10.0.9.8~ingress.mesh-system~mesh-system.svc.cluster.local"),
        ENVOY_1_27,
      ),
      apiNames: [],
    },
    mtls: {
      ctx: model({
        configs: { policies: [WORLD_TCP_PLAINTEXT, WORLD_GRPC_PERMISSIVE] },
        mesh: { authPolicy: "MUTUAL_TLS" },
      }),
      proxy: parseNodeId("sidecar~10.0.2.1~world-v1.default~default.svc.cluster.local"),
      apiNames: [],
    },
    rbac: {
      ctx: model({ configs: { serviceRoles: [RBAC_ROLE], serviceRoleBindings: [RBAC_BINDING] } }),
      proxy: helloV1(),
      apiNames: [],
    },
    serviceentry: { ctx: model({ serviceEntries: DB_ENTRIES }), proxy: helloV1(), apiNames: [] },
    "extra-sidecar-tproxy": {
      ctx: model({
        configs: {
          virtualServices: [WORLD_VS, HELLO_FULL_VS],
          destinationRules: [WORLD_DR, HELLO_FULL_DR],
        },
      }),
      proxy: helloV1({ INTERCEPTION_MODE: "TPROXY" }),
      apiNames: ["hello:80", "world:9000"],
    },
    "extra-gateway": {
      ctx: model({ configs: { virtualServices: [PUBLIC_VS, VS2], gateways: [PUBLIC_GW, GW2] } }),
      proxy: gatewayRouter(),
      apiNames: [],
    },
    "extra-serviceentry": {
      ctx: model({ serviceEntries: [...DB_ENTRIES, ...EXTERNAL_ENTRIES] }),
      proxy: helloV1(),
      apiNames: ["ext.example.com:80"],
    },
    "extra-allowany": {
      ctx: model({
        serviceEntries: [...DB_ENTRIES, ...EXTERNAL_ENTRIES],
        mesh: { outboundTrafficPolicy: "ALLOW_ANY" },
      }),
      proxy: helloV1(),
      apiNames: [],
    },
  };
}

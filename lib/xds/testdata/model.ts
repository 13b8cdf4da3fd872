/**
 * The small model behind the golden files (test fixture, not a public API).
 * @module
 */

import type { ConfigObject, Service, ServiceInstance, ServicePort } from "../../model/types.ts";
import { convertServiceEntries } from "../../registry/serviceentry.ts";
import {
  DEFAULT_XDS_MESH_CONFIG,
  emptyPushConfigs,
  type PushContext,
  type XdsMeshConfig,
} from "../types.ts";

const PORTS: ServicePort[] = [
  { name: "http", port: 80, protocol: "HTTP" },
  { name: "grpc", port: 7070, protocol: "GRPC" },
  { name: "tcp", port: 9000, protocol: "TCP" },
];

function svc(name: string, vip: string): Service {
  return {
    hostname: `${name}.default.svc.cluster.local`,
    address: vip,
    ports: PORTS,
    namespace: "default",
    meshExternal: false,
    resolution: "ClientSideLB",
    serviceAccounts: [`spiffe://cluster.local/ns/default/sa/${name}`],
    registry: "Mock",
  };
}

/** hello (10.1.0.1) and world (10.2.0.1) with http/80, grpc/7070, tcp/9000; api.example.com (DNS). */
export const SERVICES: Service[] = [
  svc("hello", "10.1.0.1"),
  svc("world", "10.2.0.1"),
  {
    hostname: "api.example.com",
    address: "0.0.0.0",
    ports: [{ name: "https", port: 443, protocol: "HTTPS" }],
    namespace: "",
    meshExternal: true,
    resolution: "DNSLB",
    serviceAccounts: [],
    registry: "ServiceEntry",
  },
];

function instances(): ServiceInstance[] {
  const out: ServiceInstance[] = [];
  for (const [i, name] of ["hello", "world"].entries()) {
    for (const v of [1, 2]) {
      for (const p of PORTS) {
        out.push({
          hostname: `${name}.default.svc.cluster.local`,
          servicePort: p,
          address: `10.0.${i + 1}.${v}`,
          port: p.port === 80 ? 8080 : p.port,
          labels: { app: name, version: `v${v}` },
          locality: v === 1 ? "us-east/zone-a" : "us-east/zone-b",
          serviceAccount: `spiffe://cluster.local/ns/default/sa/${name}`,
        });
      }
    }
  }
  out.push({
    hostname: "api.example.com",
    servicePort: SERVICES[2].ports[0],
    address: "api.example.com",
    port: 443,
    labels: {},
    locality: "",
    serviceAccount: "",
  });
  return out;
}

/** A config object of `apiVersion` (metadata: name, namespace and `extra`), for tests. */
export function configObject(
  apiVersion: string,
  kind: string,
  name: string,
  spec: unknown,
  namespace = "default",
  extra = {},
): ConfigObject {
  return {
    apiVersion,
    kind,
    metadata: { name, namespace, ...extra },
    spec: spec as Record<string, unknown>,
  };
}

/** The arguments of {@link configObject} after its `apiVersion`. */
type ObjectArgs = Parameters<typeof configObject> extends [string, ...infer R] ? R : never;

/** A networking.mesh.io/v1alpha3 object (see {@link configObject}). */
export function cfg(...args: ObjectArgs): ConfigObject {
  return configObject("networking.mesh.io/v1alpha3", ...args);
}

/** An authentication `Policy` (authentication.mesh.io/v1alpha1). */
export function authnPolicy(name: string, spec: unknown, namespace = "default"): ConfigObject {
  return configObject("authentication.mesh.io/v1alpha1", "Policy", name, spec, namespace);
}

/** VirtualService for world: header match → v2, else 80/20 v1/v2 with fault, retries, timeout. */
export const WORLD_VS = cfg("VirtualService", "world", {
  hosts: ["world"],
  http: [
    {
      match: [{ headers: { "end-user": { exact: "jason" } }, uri: { prefix: "/api" } }],
      route: [{ destination: { host: "world", subset: "v2" } }],
      appendHeaders: { "x-routed-by": "mesh" },
    },
    {
      route: [
        { destination: { host: "world", subset: "v1" }, weight: 80 },
        { destination: { host: "world", subset: "v2" }, weight: 20 },
      ],
      fault: {
        delay: { percent: 10, fixedDelay: "5s" },
        abort: { percent: 5, httpStatus: 503 },
      },
      retries: { attempts: 3, perTryTimeout: "2s" },
      timeout: "10s",
      corsPolicy: {
        allowOrigin: ["https://example.com"],
        allowMethods: ["GET", "POST"],
        maxAge: "1m",
      },
    },
  ],
  tcp: [{
    match: [{ port: 9000 }],
    route: [{ destination: { host: "world", subset: "v1", port: { number: 9000 } } }],
  }],
});

/** DestinationRule for world: subsets v1/v2, LEAST_CONN, pools, outlier, ISTIO_MUTUAL (tcp: DISABLE). */
export const WORLD_DR = cfg("DestinationRule", "world", {
  host: "world",
  trafficPolicy: {
    loadBalancer: { simple: "LEAST_CONN" },
    connectionPool: {
      tcp: { maxConnections: 100, connectTimeout: "3s" },
      http: {
        http1MaxPendingRequests: 10,
        http2MaxRequests: 1000,
        maxRequestsPerConnection: 5,
        maxRetries: 3,
      },
    },
    outlierDetection: {
      http: {
        consecutiveErrors: 5,
        interval: "10s",
        baseEjectionTime: "30s",
        maxEjectionPercent: 50,
      },
    },
    tls: { mode: "ISTIO_MUTUAL" },
    portLevelSettings: [{
      port: { number: 9000 },
      loadBalancer: { simple: "RANDOM" },
      tls: { mode: "DISABLE" },
    }],
  },
  subsets: [
    { name: "v1", labels: { version: "v1" } },
    {
      name: "v2",
      labels: { version: "v2" },
      trafficPolicy: {
        loadBalancer: { consistentHash: { httpHeader: "x-user", minimumRingSize: 1024 } },
      },
    },
  ],
});

/** Gateway selecting `mesh: ingressgateway`: HTTP 80 (redirect to HTTPS) and HTTPS 443 for hello.example.com. */
export const PUBLIC_GW = cfg("Gateway", "public-gw", {
  selector: { mesh: "ingressgateway" },
  servers: [
    {
      port: { number: 80, protocol: "HTTP", name: "http" },
      hosts: ["hello.example.com"],
      tls: { httpsRedirect: true },
    },
    {
      port: { number: 443, protocol: "HTTPS", name: "https" },
      hosts: ["hello.example.com"],
      tls: {
        mode: "SIMPLE",
        serverCertificate: "/etc/mesh/gw/cert.pem",
        privateKey: "/etc/mesh/gw/key.pem",
      },
    },
  ],
});

/** VirtualService bound to public-gw: /api → hello:80 with rewrite and CORS for any origin. */
export const PUBLIC_VS = cfg("VirtualService", "hello-public", {
  hosts: ["hello.example.com"],
  gateways: ["public-gw"],
  http: [{
    match: [{ uri: { prefix: "/api" } }],
    rewrite: { uri: "/" },
    route: [{ destination: { host: "hello", port: { number: 80 } } }],
    corsPolicy: { allowOrigin: ["*"], allowMethods: ["GET"] },
  }, {
    match: [{ uri: { exact: "/old" } }],
    redirect: { uri: "/new", authority: "www.example.com" },
  }],
});

/** An Ingress of the mesh class: /echo/.* → world:80, default backend hello:80, TLS. */
export const ECHO_INGRESS: ConfigObject = {
  apiVersion: "extensions/v1beta1",
  kind: "Ingress",
  metadata: {
    name: "echo",
    namespace: "default",
    annotations: { "kubernetes.io/ingress.class": "mesh" },
  },
  spec: {
    backend: { serviceName: "hello", servicePort: 80 },
    tls: [{ hosts: ["echo.example.com"], secretName: "echo-cert" }],
    rules: [{
      host: "echo.example.com",
      http: { paths: [{ path: "/echo/.*", backend: { serviceName: "world", servicePort: 80 } }] },
    }],
  },
};

/**
 * ServiceRole + binding for hello: GET /api/* for world's identity (written the usual Istio way,
 * without `spiffe://`), hello's (with the scheme), any service account of mesh-system (a
 * `source.principal` prefix) or namespace mesh-system.
 */
export const RBAC_ROLE = cfg("ServiceRole", "hello-viewer", {
  rules: [{ services: ["hello.default.svc.cluster.local"], methods: ["GET"], paths: ["/api/*"] }],
});
export const RBAC_BINDING = cfg("ServiceRoleBinding", "bind-hello-viewer", {
  subjects: [
    { user: "cluster.local/ns/default/sa/world" },
    { user: "spiffe://cluster.local/ns/default/sa/hello" },
    { properties: { "source.principal": "cluster.local/ns/mesh-system/sa/*" } },
    { properties: { "source.namespace": "mesh-system" } },
  ],
  roleRef: { kind: "ServiceRole", name: "hello-viewer" },
});

/** Policy disabling peer auth for world's tcp port (used with mesh MUTUAL_TLS). */
export const WORLD_TCP_PLAINTEXT = cfg("Policy", "world-tcp", {
  targets: [{ name: "world", ports: [{ number: 9000 }] }],
});

/** Policy making world's grpc port PERMISSIVE (mTLS from sidecars, plaintext or app TLS from others). */
export const WORLD_GRPC_PERMISSIVE = cfg("Policy", "world-grpc", {
  targets: [{ name: "world", ports: [{ number: 7070 }] }],
  peers: [{ mtls: { mode: "PERMISSIVE" } }],
});

/**
 * ServiceEntries: two mesh-external databases on port 3306 reached by CIDR (and one also by a
 * plain IP), and an agent behind a unix domain socket (STATIC).
 */
export const DB_ENTRIES: ConfigObject[] = [
  cfg("ServiceEntry", "mysql", {
    hosts: ["mysql.internal"],
    addresses: ["192.168.0.0/16", "10.20.0.5"],
    ports: [{ number: 3306, name: "tcp-mysql", protocol: "TCP" }],
    location: "MESH_EXTERNAL",
    resolution: "NONE",
  }),
  cfg("ServiceEntry", "mariadb", {
    hosts: ["mariadb.internal"],
    addresses: ["172.16.0.0/12"],
    ports: [{ number: 3306, name: "tcp-mariadb", protocol: "TCP" }],
    location: "MESH_EXTERNAL",
    resolution: "NONE",
  }),
  cfg("ServiceEntry", "agent", {
    hosts: ["agent.internal"],
    ports: [{ number: 9091, name: "tcp-agent", protocol: "TCP" }],
    location: "MESH_INTERNAL",
    resolution: "STATIC",
    endpoints: [{ address: "unix:///var/run/agent.sock", labels: { app: "agent" } }],
  }),
];

/** Builds a push context from the fixtures (plus services of `serviceEntries`). */
export function model(opts: {
  configs?: Partial<PushContext["configs"]>;
  mesh?: Partial<XdsMeshConfig>;
  serviceEntries?: ConfigObject[];
} = {}): PushContext {
  const se = convertServiceEntries(opts.serviceEntries ?? []);
  return {
    services: [...SERVICES, ...se.services],
    instances: [...instances(), ...se.instances],
    configs: {
      ...emptyPushConfigs(),
      ...opts.configs,
    },
    meshConfig: { ...DEFAULT_XDS_MESH_CONFIG, ...opts.mesh },
    domain: "cluster.local",
  };
}

/** The fixture model with more instances: each of `variants` over its first instance. */
export function modelWithInstances(...variants: Partial<ServiceInstance>[]): PushContext {
  const base = model();
  const first = base.instances[0];
  return { ...base, instances: [...base.instances, ...variants.map((v) => ({ ...first, ...v }))] };
}

/** An instance variant on a UDP service port (5353), which has no inbound cluster or listener. */
export const UDP_5353: Partial<ServiceInstance> = {
  servicePort: { name: "udp", port: 5353, protocol: "UDP" },
  port: 5353,
};

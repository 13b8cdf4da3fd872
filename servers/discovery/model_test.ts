import assert from "node:assert/strict";
import { type ConfigObject, defaultMeshConfig } from "../../lib/model/mod.ts";
import {
  buildApiListener,
  buildClusters,
  buildEndpoints,
  buildListeners,
  buildRoutes,
  encodeAny,
  loadXdsProtos,
  parseNodeId,
  type Proxy,
  type PushContext,
  TYPE_URLS,
  type XdsResource,
} from "../../lib/xds/mod.ts";
import {
  type DeltaDiscoveryResponse,
  MemoryStream,
  ResourceCache,
  type ResourceMap,
  XdsCounters,
  XdsServer,
} from "../../lib/xds/server/mod.ts";
import {
  DB_ENTRIES,
  model,
  PUBLIC_GW,
  PUBLIC_VS,
  RBAC_BINDING,
  RBAC_ROLE,
  WORLD_DR,
  WORLD_TCP_PLAINTEXT,
  WORLD_VS,
} from "../../lib/xds/testdata/model.ts";
import { changedKeys, instanceFingerprints } from "./model.ts";
import { quiet, testModel } from "./_test_util.ts";

await loadXdsProtos();

/** A VirtualService routing by the caller's `version` label (routes then depend on it). */
const SOURCE_VS: ConfigObject = {
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "VirtualService",
  metadata: { name: "hello-by-source", namespace: "default" },
  spec: {
    hosts: ["hello"],
    http: [
      {
        match: [{ sourceLabels: { version: "v1" } }],
        route: [{ destination: { host: "world.default.svc.cluster.local" } }],
      },
      { route: [{ destination: { host: "hello.default.svc.cluster.local" } }] },
    ],
  },
};

async function discoveryModel(ctx: PushContext, mtls = false) {
  const objects = [
    ...ctx.configs.virtualServices,
    ...ctx.configs.destinationRules,
    ...ctx.configs.gateways,
    ...ctx.configs.policies,
    ...ctx.configs.serviceRoles,
    ...ctx.configs.serviceRoleBindings,
  ];
  const cache = new ResourceCache();
  const mesh = defaultMeshConfig();
  if (mtls) mesh.authPolicy = "MUTUAL_TLS";
  const m = await testModel({
    registry: { services: () => ctx.services, instances: () => ctx.instances },
    objects,
    meshConfig: mesh,
    cache,
  });
  return { m, cache, ctx: m.context() };
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

/** name → encoded bytes (hex) of generated objects, first of a name wins. */
function encoded(typeUrl: string, objs: XdsResource[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const o of objs) {
    const name = o.name ?? o.cluster_name;
    if (!out.has(name)) out.set(name, hex(encodeAny(typeUrl, o).value));
  }
  return out;
}

function served(m: ResourceMap): Map<string, string> {
  return new Map([...m].map(([n, e]) => [n, hex(e.bytes)]));
}

const sorted = (m: Map<string, string>) => [...m].sort(([a], [b]) => a < b ? -1 : 1);

const PROXIES: [string, Proxy][] = [
  [
    "sidecar hello v1 (own instances, labels)",
    parseNodeId("sidecar~10.0.1.1~hello-v1.default~default.svc.cluster.local", {
      labels: { app: "hello", version: "v1" },
    }),
  ],
  [
    "sidecar hello v2 (TPROXY)",
    parseNodeId("sidecar~10.0.1.2~hello-v2.default~default.svc.cluster.local", {
      labels: { app: "hello", version: "v2" },
      INTERCEPTION_MODE: "TPROXY",
    }),
  ],
  ["sidecar world v1", parseNodeId("sidecar~10.0.2.1~world-v1.default~default.svc.cluster.local")],
  [
    "sidecar without instances",
    parseNodeId("sidecar~10.0.7.7~client.other~other.svc.cluster.local"),
  ],
  [
    "router",
    parseNodeId("router~10.0.9.9~gw.mesh-system~mesh-system.svc.cluster.local", {
      labels: { app: "public-gateway" },
    }),
  ],
  ["ingress", parseNodeId("ingress~10.0.9.8~ingress.mesh-system~mesh-system.svc.cluster.local")],
];

for (const mtls of [false, true]) {
  Deno.test(`DiscoveryModel.resourcesFor() serves exactly what generate builds for each proxy (mtls ${mtls})`, async () => {
    const fixture = model({
      configs: {
        virtualServices: [WORLD_VS, PUBLIC_VS, SOURCE_VS],
        destinationRules: [WORLD_DR],
        gateways: [PUBLIC_GW],
        policies: mtls ? [WORLD_TCP_PLAINTEXT] : [],
        serviceRoles: [RBAC_ROLE],
        serviceRoleBindings: [RBAC_BINDING],
      },
      serviceEntries: DB_ENTRIES,
    });
    const { m, ctx } = await discoveryModel(fixture, mtls);
    for (const [what, proxy] of PROXIES) {
      const clusters = buildClusters(ctx, proxy);
      assert.deepEqual(
        sorted(served(m.resourcesFor(proxy, TYPE_URLS.cluster, null))),
        sorted(encoded(TYPE_URLS.cluster, clusters)),
        `${what}: clusters`,
      );
      const listeners = buildListeners(ctx, proxy);
      assert.deepEqual(
        sorted(served(m.resourcesFor(proxy, TYPE_URLS.listener, null))),
        sorted(encoded(TYPE_URLS.listener, listeners)),
        `${what}: listeners`,
      );
      const api = ["world:7070", "hello.default.svc.cluster.local:7070", "nothing:1"];
      assert.deepEqual(
        sorted(served(m.resourcesFor(proxy, TYPE_URLS.listener, api))),
        sorted(encoded(
          TYPE_URLS.listener,
          api.flatMap((n) => buildApiListener(ctx, proxy, n) ?? []),
        )),
        `${what}: api listeners`,
      );
      const routeNames = ["80", "7070", "443", "world:7070", "hello:80"];
      assert.deepEqual(
        sorted(served(m.resourcesFor(proxy, TYPE_URLS.route, routeNames))),
        sorted(encoded(TYPE_URLS.route, buildRoutes(ctx, proxy, routeNames))),
        `${what}: routes`,
      );
      const eds = clusters.filter((c) => c.type === "EDS").map((c) => c.name);
      assert.deepEqual(
        sorted(served(m.resourcesFor(proxy, TYPE_URLS.endpoint, null))),
        sorted(encoded(TYPE_URLS.endpoint, buildEndpoints(ctx, eds))),
        `${what}: endpoints`,
      );
    }
  });
}

Deno.test("DiscoveryModel.resourcesFor() builds each view once and shares it between proxies with the same inputs", async () => {
  const { m } = await discoveryModel(model({ configs: { virtualServices: [WORLD_VS] } }));
  const client = (i: number, ns = "default") =>
    parseNodeId(`sidecar~10.9.0.${i}~client-${i}.${ns}~${ns}.svc.cluster.local`);
  const first = client(1);
  const cds = m.resourcesFor(first, TYPE_URLS.cluster, null);
  const lds = m.resourcesFor(first, TYPE_URLS.listener, null);
  const edsNames = Object.freeze([...cds.keys()].filter((n) => n.startsWith("outbound|")));
  const eds = m.resourcesFor(first, TYPE_URLS.endpoint, edsNames);
  m.resourcesFor(first, TYPE_URLS.route, ["80"]);
  const after1 = m.stats();
  for (let i = 2; i <= 50; i++) {
    const p = client(i);
    assert.equal(m.resourcesFor(p, TYPE_URLS.cluster, null), cds);
    assert.equal(m.resourcesFor(p, TYPE_URLS.listener, null), lds);
    assert.equal(m.resourcesFor(p, TYPE_URLS.endpoint, edsNames), eds);
    m.resourcesFor(p, TYPE_URLS.route, ["80"]);
  }
  assert.deepEqual(m.stats(), after1, "49 more identical sidecars encode and build nothing");

  // Another DNS domain changes the route configuration (short names) but nothing else.
  const other = client(60, "other");
  assert.equal(m.resourcesFor(other, TYPE_URLS.cluster, null), cds);
  m.resourcesFor(other, TYPE_URLS.route, ["80"]);
  assert.equal(m.stats().encoded, after1.encoded + 1);

  // Replicas with own instances share their clusters (inbound ones are IP-independent).
  const r1 = parseNodeId("sidecar~10.0.1.1~hello-v1.default~default.svc.cluster.local");
  const r2 = parseNodeId("sidecar~10.0.1.2~hello-v2.default~default.svc.cluster.local");
  assert.equal(
    m.resourcesFor(r1, TYPE_URLS.cluster, null),
    m.resourcesFor(r2, TYPE_URLS.cluster, null),
  );

  // A new context re-encodes, but unchanged views keep their identity.
  m.invalidate();
  assert.equal(m.resourcesFor(client(70), TYPE_URLS.cluster, null), cds);
  assert.equal(m.resourcesFor(client(70), TYPE_URLS.endpoint, edsNames), eds);
});

Deno.test("DiscoveryModel.updateEndpoints() serves what generate builds from the new instances, keeping every other view", async () => {
  const fixture = model({
    configs: {
      virtualServices: [WORLD_VS, PUBLIC_VS, SOURCE_VS],
      destinationRules: [WORLD_DR],
      gateways: [PUBLIC_GW],
      serviceRoles: [RBAC_ROLE],
      serviceRoleBindings: [RBAC_BINDING],
    },
    serviceEntries: DB_ENTRIES,
  });
  const { m, ctx } = await discoveryModel(fixture);
  const edsNames = (p: Proxy) =>
    Object.freeze(buildClusters(ctx, p).filter((c) => c.type === "EDS").map((c) => c.name));
  const before = PROXIES.map(([, p]) => ({
    cds: m.resourcesFor(p, TYPE_URLS.cluster, null),
    lds: m.resourcesFor(p, TYPE_URLS.listener, null),
    names: edsNames(p),
  }));
  const edsBefore = before.map((b, i) =>
    m.resourcesFor(PROXIES[i][1], TYPE_URLS.endpoint, b.names)
  );
  const generation = m.generation;

  // a new world:80 endpoint, and a world:9000 instance on hello v1's own address
  const old = instanceFingerprints(fixture.instances);
  const [w80, w9000] = ["http", "tcp"].map((n) =>
    fixture.instances.find((i) => i.hostname.startsWith("world.") && i.servicePort.name === n)!
  );
  fixture.instances = [
    ...fixture.instances,
    { ...w80, address: "10.0.2.3", labels: { app: "world", version: "v1" } },
    { ...w9000, address: "10.0.1.1" },
  ];
  const changed = changedKeys(old, instanceFingerprints(fixture.instances));
  assert.deepEqual([...changed].sort(), [
    "world.default.svc.cluster.local|80",
    "world.default.svc.cluster.local|9000",
  ]);
  assert.equal(m.updateEndpoints(changed), true);
  assert.equal(m.generation, generation, "no context rebuild");

  const fresh: PushContext = { ...ctx, instances: fixture.instances };
  for (const [i, [what, proxy]] of PROXIES.entries()) {
    assert.deepEqual(
      sorted(served(m.resourcesFor(proxy, TYPE_URLS.cluster, null))),
      sorted(encoded(TYPE_URLS.cluster, buildClusters(fresh, proxy))),
      `${what}: clusters`,
    );
    assert.deepEqual(
      sorted(served(m.resourcesFor(proxy, TYPE_URLS.listener, null))),
      sorted(encoded(TYPE_URLS.listener, buildListeners(fresh, proxy))),
      `${what}: listeners`,
    );
    const names = before[i].names;
    const eds = m.resourcesFor(proxy, TYPE_URLS.endpoint, names);
    assert.deepEqual(
      sorted(served(eds)),
      sorted(encoded(TYPE_URLS.endpoint, buildEndpoints(fresh, [...names]))),
      `${what}: endpoints`,
    );
    // unchanged assignments keep their object; those with the new endpoints (subset v1) are new
    for (const n of names) {
      const hit = /^outbound\|(80|9000)\|(v1)?\|world\./.test(n);
      assert.equal(eds.get(n) === edsBefore[i].get(n), !hit, n);
    }
  }
  // sidecars whose own instances did not change keep their cluster and listener views
  const client = PROXIES.findIndex(([w]) => w === "sidecar without instances");
  assert.equal(m.resourcesFor(PROXIES[client][1], TYPE_URLS.cluster, null), before[client].cds);
  assert.equal(m.resourcesFor(PROXIES[client][1], TYPE_URLS.listener, null), before[client].lds);
});

Deno.test("DiscoveryModel.updateEndpoints() rebuilds the context when a DNS service's endpoints change", async () => {
  const fixture = model();
  const { m } = await discoveryModel(fixture);
  const proxy = PROXIES[3][1];
  m.resourcesFor(proxy, TYPE_URLS.cluster, null);
  const generation = m.generation;
  const old = instanceFingerprints(fixture.instances);
  fixture.instances = fixture.instances.map((i) =>
    i.hostname === "api.example.com" ? { ...i, address: "api2.example.com" } : i
  );
  const changed = changedKeys(old, instanceFingerprints(fixture.instances));
  assert.equal(m.updateEndpoints(changed), false);
  const dns = m.resourcesFor(proxy, TYPE_URLS.cluster, ["outbound|443||api.example.com"]);
  assert.equal(m.generation, generation + 1);
  assert.match(new TextDecoder().decode(dns.get("outbound|443||api.example.com")!.bytes), /api2/);
});

Deno.test("DiscoveryModel over delta ADS reports EDS and RDS names of nothing real in removed_resources", async () => {
  const { m } = await discoveryModel(
    model({ configs: { virtualServices: [WORLD_VS], destinationRules: [WORLD_DR] } }),
  );
  const server = new XdsServer<Proxy>({
    parseNode: (n) => parseNodeId(n.id, n.metadata ?? {}),
    resourcesFor: (p, t, names) => m.resourcesFor(p, t, names),
    metrics: new XdsCounters(),
    debounceAfter: 0,
    logger: quiet,
  });
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  const world = "world.default.svc.cluster.local";
  h.receive({
    node: { id: "sidecar~10.9.0.1~c.default~default.svc.cluster.local" },
    type_url: TYPE_URLS.endpoint,
    resource_names_subscribe: [
      `outbound|80|v1|${world}`,
      "outbound|3306||mysql.internal", // no such ServiceEntry in this model
      `outbound|80|v9|${world}`,
      `outbound|81||${world}`,
      "typo",
    ],
  });
  const eds = await s.next();
  assert.deepEqual(eds.resources.map((r) => r.name), [`outbound|80|v1|${world}`]);
  assert.deepEqual(eds.removed_resources, [
    "outbound|3306||mysql.internal",
    `outbound|80|v9|${world}`,
    `outbound|81||${world}`,
    "typo",
  ]);
  h.receive({ type_url: TYPE_URLS.route, resource_names_subscribe: ["80", "9000", "81", "x:1"] });
  const rds = await s.next();
  assert.deepEqual(rds.resources.map((r) => r.name), ["80"]);
  assert.deepEqual(rds.removed_resources, ["81", "9000", "x:1"]);
  server.close();
  await s.waitEnded();
});

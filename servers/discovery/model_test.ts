import assert from "node:assert/strict";
import { type ConfigObject, defaultMeshConfig, type ServiceInstance } from "../../lib/model/mod.ts";
import {
  buildApiListener,
  buildClusters,
  buildEndpoints,
  buildListeners,
  buildRoutes,
  encodeAny,
  GRPC_SERVER_LISTENER_PREFIX,
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
import { affectedClusters, changedKeys, instanceFingerprints, toXdsMeshConfig } from "./model.ts";
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

/** Gives the fixture (the registry's view) these instances; answers the `host|port` keys changed. */
function setInstances(fixture: PushContext, instances: ServiceInstance[]): Set<string> {
  const old = instanceFingerprints(fixture.instances);
  fixture.instances = instances;
  return changedKeys(old, instanceFingerprints(instances));
}

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
  [
    // the other router is selected by no Gateway: the two must not share routes
    "router selected by the public Gateway",
    parseNodeId("router~10.0.9.7~gw2.mesh-system~mesh-system.svc.cluster.local", {
      labels: { mesh: "ingressgateway" },
    }),
  ],
  [
    // a gateway pod is often an instance of its own Service: it gets no inbound clusters for it
    "router on a service instance's address",
    parseNodeId("router~10.0.2.1~gw3.mesh-system~mesh-system.svc.cluster.local", {
      labels: { mesh: "ingressgateway" },
    }),
  ],
  [
    "sidecar of gRPC C-core 1.51 (crashes on ring hash)",
    {
      ...parseNodeId("sidecar~10.0.7.8~client2.other~other.svc.cluster.local"),
      client: { kind: "grpc-core", name: "gRPC C-core linux Python", version: [1, 51, 1] },
    },
  ],
];

/** The route configuration names the listeners refer to. */
function routeNamesOf(listeners: XdsResource[]): string[] {
  const out = new Set<string>();
  const walk = (o: unknown): void => {
    if (Array.isArray(o)) return o.forEach(walk);
    if (!o || typeof o !== "object") return;
    for (const [k, v] of Object.entries(o)) {
      if (k === "route_config_name" && typeof v === "string") out.add(v);
      else walk(v);
    }
  };
  walk(listeners);
  return [...out];
}

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
      const routeNames = [
        ...new Set(["80", "7070", "443", "world:7070", "hello:80", ...routeNamesOf(listeners)]),
      ];
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
  const [w80, w9000] = ["http", "tcp"].map((n) =>
    fixture.instances.find((i) => i.hostname.startsWith("world.") && i.servicePort.name === n)!
  );
  const changed = setInstances(fixture, [
    ...fixture.instances,
    { ...w80, address: "10.0.2.3", labels: { app: "world", version: "v1" } },
    { ...w9000, address: "10.0.1.1" },
  ]);
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
  const changed = setInstances(
    fixture,
    fixture.instances.map((i) =>
      i.hostname === "api.example.com" ? { ...i, address: "api2.example.com" } : i
    ),
  );
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

/** A world:80 endpoint at `address`: the fixture's instances with it, and the keys that changed. */
function withWorldEndpoint(fixture: PushContext, address: string): Set<string> {
  const w80 = fixture.instances.find((i) =>
    i.hostname.startsWith("world.") && i.servicePort.port === 80
  )!;
  return setInstances(fixture, [...fixture.instances, { ...w80, address }]);
}

/** A new service `fresh.default` (a copy of hello, with one instance): a services change. */
function withFreshService(fixture: PushContext): void {
  const hello = fixture.services.find((s) => s.hostname.startsWith("hello."))!;
  const fresh = { ...hello, hostname: "fresh.default.svc.cluster.local" };
  const inst = fixture.instances.find((i) => i.hostname === hello.hostname)!;
  fixture.services = [...fixture.services, fresh];
  fixture.instances = [
    ...fixture.instances,
    { ...inst, hostname: fresh.hostname, address: "10.0.8.1" },
  ];
}

const WORLD_80 = "outbound|80||world.default.svc.cluster.local";
const FRESH_80 = "outbound|80||fresh.default.svc.cluster.local";
const addressesIn = (e: ResourceMap, name: string): string[] => [
  ...new TextDecoder().decode(e.get(name)!.bytes).match(/10\.\d+\.\d+\.\d+/g) ?? [],
];

for (const readBetween of [false, true]) {
  Deno.test(`DiscoveryModel.updateEndpoints() right after a services change keeps that change${readBetween ? ", the new context read in between (a debug page)" : ""}`, async () => {
    const fixture = model();
    const { m } = await discoveryModel(fixture);
    const proxy = PROXIES[3][1];
    m.resourcesFor(proxy, TYPE_URLS.cluster, null);
    withFreshService(fixture);
    m.invalidate();
    if (readBetween) m.context();
    const changed = withWorldEndpoint(fixture, "10.0.2.77");
    assert.equal(m.updateEndpoints(changed), false, "the incremental path over the old context");
    assert.ok(m.resourcesFor(proxy, TYPE_URLS.cluster, null).has(FRESH_80), "the new service");
    const eds = m.resourcesFor(proxy, TYPE_URLS.endpoint, [WORLD_80, FRESH_80]);
    assert.ok(addressesIn(eds, WORLD_80).includes("10.0.2.77"));
    assert.deepEqual(addressesIn(eds, FRESH_80), ["10.0.8.1"]);
  });
}

Deno.test("DiscoveryModel.prepare(): an endpoint change while the next context is built is in the context put in force", async () => {
  const fixture = model();
  const { m } = await discoveryModel(fixture);
  const proxy = PROXIES[3][1];
  m.resourcesFor(proxy, TYPE_URLS.endpoint, [WORLD_80]);
  withFreshService(fixture);
  m.invalidateLater();
  const gate = Promise.withResolvers<void>();
  let pauses = 0;
  const prepared = m.prepare(() => pauses++ === 0 ? gate.promise : Promise.resolve());
  // the context in force serves meanwhile, and takes the endpoint change
  const changed = withWorldEndpoint(fixture, "10.0.2.77");
  assert.equal(m.updateEndpoints(changed), true);
  assert.ok(!m.resourcesFor(proxy, TYPE_URLS.cluster, null).has(FRESH_80), "not yet in force");
  gate.resolve();
  assert.equal(await prepared, true);
  assert.ok(m.resourcesFor(proxy, TYPE_URLS.cluster, null).has(FRESH_80));
  const eds = m.resourcesFor(proxy, TYPE_URLS.endpoint, [WORLD_80]);
  assert.ok(addressesIn(eds, WORLD_80).includes("10.0.2.77"), "the endpoint change was lost");
});

Deno.test("DiscoveryModel.updateEndpoints(): a proxyless server listener follows the instances at its address", async () => {
  const fixture = model();
  const { m } = await discoveryModel(fixture);
  const node = parseNodeId("sidecar~10.0.5.5~a.default~default.svc.cluster.local", {
    GENERATOR: "grpc",
  });
  const name = `${GRPC_SERVER_LISTENER_PREFIX}10.0.5.5:7070`;
  assert.deepEqual([...m.resourcesFor(node, TYPE_URLS.listener, [name]).keys()], []);
  // hello's 7070 instance, now also at 10.0.5.5: an endpoints change
  const hello = fixture.instances.find((i) => i.address === "10.0.1.1" && i.port === 7070)!;
  const changed = setInstances(fixture, [...fixture.instances, { ...hello, address: "10.0.5.5" }]);
  assert.equal(m.updateEndpoints(changed), true);
  assert.deepEqual([...m.resourcesFor(node, TYPE_URLS.listener, [name]).keys()], [name]);
});

Deno.test("DiscoveryModel.updateEndpoints() of a host no service has yet changes nothing served", async () => {
  const fixture = model();
  const { m } = await discoveryModel(fixture);
  const proxy = PROXIES[3][1];
  const cds = m.resourcesFor(proxy, TYPE_URLS.cluster, null);
  assert.equal(m.updateEndpoints(new Set(["not-yet.default.svc.cluster.local|80"])), true);
  assert.equal(m.resourcesFor(proxy, TYPE_URLS.cluster, null), cds);
});

Deno.test("instanceFingerprints() does not depend on the instances' order; affectedClusters() names the outbound clusters of the changed keys", () => {
  const fixture = model();
  const fp = instanceFingerprints(fixture.instances);
  assert.deepEqual(
    changedKeys(fp, instanceFingerprints([...fixture.instances].reverse())),
    new Set(),
  );
  const watched = [
    "outbound|80|v1|world.default.svc.cluster.local",
    WORLD_80,
    "outbound|9000||world.default.svc.cluster.local",
    "inbound|80||world.default.svc.cluster.local",
    "outbound|80||hello.default.svc.cluster.local",
    "not a cluster name",
  ];
  assert.deepEqual(
    affectedClusters(watched, new Set(["world.default.svc.cluster.local|80"])).sort(),
    [WORLD_80, "outbound|80|v1|world.default.svc.cluster.local"].sort(),
  );
  assert.deepEqual(affectedClusters(watched, new Set()), []);
});

Deno.test("DiscoveryModel.updateEndpoints(): the assignments replaced by a thousand endpoint changes leave the cache when no client holds them", async () => {
  const fixture = model();
  const { m, cache } = await discoveryModel(fixture);
  const proxy = PROXIES[3][1];
  const held = new Set<string>();
  m.referencedKeys = () => held;
  m.resourcesFor(proxy, TYPE_URLS.endpoint, [WORLD_80]);
  const versions: string[] = [];
  for (let i = 0; i < 1100; i++) {
    const changed = setInstances(
      fixture,
      fixture.instances.map((x) =>
        x.hostname.startsWith("world.") && x.servicePort.port === 80 && x.labels.version === "v1"
          ? { ...x, address: `10.1.${i >> 8}.${i & 255}` }
          : x
      ),
    );
    assert.equal(m.updateEndpoints(changed), true);
    const e = m.resourcesFor(proxy, TYPE_URLS.endpoint, [WORLD_80]).get(WORLD_80)!;
    versions.push(e.version);
    // a client holds the first assignment all along: it stays
    if (i === 0) held.add(`${TYPE_URLS.endpoint} ${WORLD_80}|${e.version}`);
  }
  const kept = [...cache.keys(TYPE_URLS.endpoint)].filter((k) => k.startsWith(`${WORLD_80}|`));
  assert.ok(kept.length < 200, `${kept.length} assignments of ${WORLD_80} cached`);
  assert.ok(kept.includes(`${WORLD_80}|${versions[0]}`), "the held assignment was dropped");
  assert.ok(kept.includes(`${WORLD_80}|${versions.at(-1)}`), "the one in force was dropped");
});

Deno.test("DiscoveryModel.resourceObjects() (REST xDS, debug pages): every type, all of it or the names asked", async () => {
  const fixture = model({ configs: { virtualServices: [WORLD_VS], destinationRules: [WORLD_DR] } });
  const { m, ctx } = await discoveryModel(fixture);
  const proxy = PROXIES[3][1];
  const nameOf = (o: XdsResource) => (o.name ?? o.cluster_name) as string;
  const names = (t: string, n: readonly string[] | null) =>
    m.resourceObjects(proxy, t, n).map(nameOf);
  const clusters = buildClusters(ctx, proxy);
  const listeners = buildListeners(ctx, proxy);
  assert.deepEqual(names(TYPE_URLS.cluster, null), clusters.map(nameOf));
  assert.deepEqual(names(TYPE_URLS.cluster, [WORLD_80, "nothing"]), [WORLD_80]);
  assert.deepEqual(names(TYPE_URLS.listener, null), listeners.map(nameOf));
  assert.deepEqual(names(TYPE_URLS.listener, ["world:80"]), ["world:80"]); // an api listener
  const routes = routeNamesOf(listeners);
  assert.ok(routes.length > 0);
  assert.deepEqual(names(TYPE_URLS.route, null), buildRoutes(ctx, proxy, routes).map(nameOf));
  assert.deepEqual(names(TYPE_URLS.route, ["80"]), ["80"]);
  const eds = clusters.filter((c) => c.type === "EDS").map(nameOf);
  assert.deepEqual(names(TYPE_URLS.endpoint, null), buildEndpoints(ctx, eds).map(nameOf));
  assert.deepEqual(names(TYPE_URLS.endpoint, [WORLD_80]), [WORLD_80]);
  assert.deepEqual(names("type.googleapis.com/unknown", null), []);
});

Deno.test("DiscoveryModel.updateEndpoints(): an assignment first asked for after an endpoint change has its endpoints, changed or not", async () => {
  const fixture = model();
  const { m } = await discoveryModel(fixture);
  const proxy = PROXIES[3][1];
  m.resourcesFor(proxy, TYPE_URLS.endpoint, [WORLD_80]);
  assert.equal(m.updateEndpoints(withWorldEndpoint(fixture, "10.0.2.77")), true);
  const others = buildClusters(m.context(), proxy).filter((c) => c.type === "EDS")
    .map((c) => c.name).filter((n) => n !== WORLD_80);
  assert.ok(others.length > 3);
  const fresh: PushContext = { ...m.context(), instances: fixture.instances };
  assert.deepEqual(
    sorted(served(m.resourcesFor(proxy, TYPE_URLS.endpoint, others))),
    sorted(encoded(TYPE_URLS.endpoint, buildEndpoints(fresh, others))),
  );
});

Deno.test("DiscoveryModel.resourcesFor() with names gives those that exist, no others", async () => {
  const { m } = await discoveryModel(model());
  const proxy = PROXIES[3][1];
  for (const t of [TYPE_URLS.cluster, TYPE_URLS.endpoint]) {
    assert.deepEqual([...m.resourcesFor(proxy, t, [WORLD_80, "outbound|1||nothing"]).keys()], [
      WORLD_80,
    ]);
  }
});

Deno.test("DiscoveryModel.prepare() builds nothing and says so when nothing changed", async () => {
  const { m } = await discoveryModel(model());
  const proxy = PROXIES[3][1];
  m.resourcesFor(proxy, TYPE_URLS.cluster, null);
  const generation = m.generation;
  assert.equal(m.stale, false);
  assert.equal(await m.prepare(() => Promise.resolve()), false);
  assert.equal(m.generation, generation);
  m.invalidateLater();
  assert.equal(m.stale, true);
  assert.equal(await m.prepare(() => Promise.resolve()), true);
  assert.equal(m.generation, generation + 1);
  assert.equal(m.stale, false);
});

Deno.test("DiscoveryModel: a rebuild drops from the cache what no client holds, and keeps what one does", async () => {
  const { m, cache } = await discoveryModel(model());
  const proxy = PROXIES[3][1];
  const before = cache.keys(TYPE_URLS.cluster);
  assert.equal(before.length, 0);
  m.resourcesFor(proxy, TYPE_URLS.cluster, null);
  const first = cache.keys(TYPE_URLS.cluster);
  assert.ok(first.length > 3);
  m.referencedKeys = () => [`${TYPE_URLS.cluster} ${first[0]}`];
  // every cluster changes (its connect timeout)
  m.setMeshConfig({ ...defaultMeshConfig(), connectTimeout: "7s" });
  const now = [...m.resourcesFor(proxy, TYPE_URLS.cluster, null)].map(([n, e]) =>
    `${n}|${e.version}`
  );
  const replaced = first.filter((k) => !now.includes(k));
  assert.ok(replaced.length > 3 && replaced.includes(first[0]), replaced.join(" "));
  const after = cache.keys(TYPE_URLS.cluster);
  assert.deepEqual(replaced.filter((k) => after.includes(k)), [first[0]]);
  assert.deepEqual(after.sort(), [...now, first[0]].sort());
});

Deno.test("toXdsMeshConfig(): the mesh's outbound traffic policy, connect timeout and mTLS exclusions reach the generators", () => {
  const mc = defaultMeshConfig();
  assert.equal(mc.outboundTrafficPolicy.mode, "REGISTRY_ONLY"); // Istio 0.8's default
  assert.equal(toXdsMeshConfig(mc).outboundTrafficPolicy, "REGISTRY_ONLY");
  const open = { ...mc, outboundTrafficPolicy: { mode: "ALLOW_ANY" as const } };
  assert.equal(toXdsMeshConfig(open).outboundTrafficPolicy, "ALLOW_ANY");
  const strict = {
    ...mc,
    connectTimeout: "2.5s",
    mtlsExcludedServices: ["kube-dns.kube-system.svc.cluster.local"],
  };
  const x = toXdsMeshConfig(strict);
  assert.equal(x.outboundTrafficPolicy, "REGISTRY_ONLY");
  assert.equal(x.connectTimeoutMs, 2500);
  assert.deepEqual(x.mtlsExcludedServices, ["kube-dns.kube-system.svc.cluster.local"]);
  assert.notEqual(x.mtlsExcludedServices, strict.mtlsExcludedServices, "a copy");
});

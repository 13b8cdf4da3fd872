import assert from "node:assert/strict";
import { type FakeKube, type JsonObject, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { logFile } from "./_testutil.ts";
import {
  convertService,
  createOrchestratorRegistry,
  nodeLocality,
  SERVICE_NAME_LABEL,
} from "./orchestrator.ts";

// ---- object builders ----------------------------------------------------------------------------

function service(
  name: string,
  namespace: string,
  spec: JsonObject,
  meta: JsonObject = {},
): JsonObject {
  return { apiVersion: "v1", kind: "Service", metadata: { name, namespace, ...meta }, spec };
}

function endpoints(
  name: string,
  namespace: string,
  addresses: { ip: string; pod?: string; nodeName?: string }[],
  ports: { name: string; port: number }[],
): JsonObject {
  return {
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: { name, namespace },
    subsets: addresses.length === 0 ? [] : [{
      addresses: addresses.map((a) => ({
        ip: a.ip,
        ...(a.nodeName ? { nodeName: a.nodeName } : {}),
        ...(a.pod ? { targetRef: { kind: "Pod", name: a.pod, namespace } } : {}),
      })),
      ports: ports.map((p) => ({ ...p, protocol: "TCP" })),
    }],
  };
}

function pod(
  name: string,
  namespace: string,
  ip: string,
  opts: { labels?: Record<string, string>; sa?: string; node?: string; spec?: JsonObject } = {},
): JsonObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels: opts.labels ?? {} },
    spec: {
      serviceAccountName: opts.sa ?? "default",
      nodeName: opts.node ?? "",
      containers: [{ name: "app", image: "app" }],
      ...opts.spec,
    },
    status: { phase: "Running", podIP: ip, podIPs: [{ ip }] },
  };
}

function node(name: string, labels: Record<string, string>): JsonObject {
  return { apiVersion: "v1", kind: "Node", metadata: { name, labels } };
}

function slice(
  name: string,
  namespace: string,
  svc: string,
  eps: { ip: string; ready?: boolean; pod?: string; zone?: string }[],
  ports: { name: string; port: number }[],
): JsonObject {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name, namespace, labels: { "kubernetes.io/service-name": svc } },
    addressType: "IPv4",
    endpoints: eps.map((e) => ({
      addresses: [e.ip],
      conditions: { ready: e.ready ?? true },
      ...(e.zone ? { zone: e.zone } : {}),
      ...(e.pod ? { targetRef: { kind: "Pod", name: e.pod, namespace } } : {}),
    })),
    ports: ports.map((p) => ({ ...p, protocol: "TCP" })),
  };
}

async function registryFor(kube: FakeKube, extra: Record<string, unknown> = {}) {
  const reg = await createOrchestratorRegistry({
    kubeconfigPath: kube.kubeconfigPath,
    domain: "cluster.local",
    resyncMs: 0,
    ...extra,
  });
  const changes: string[] = [];
  /** The hostnames each endpoints event named (sorted, joined with spaces). */
  const hosts: string[] = [];
  reg.onChange((k, h) => {
    changes.push(k);
    if (k === "endpoints") hosts.push(h ? [...h].sort().join(" ") : "(not named)");
  });
  return { reg, changes, hosts };
}

/** Builds the bookinfo-like "reviews" service of most tests. */
function seedReviews(kube: FakeKube) {
  kube.upsert(node("node-1", {
    "topology.kubernetes.io/region": "us-east1",
    "topology.kubernetes.io/zone": "us-east1-b",
  }));
  kube.upsert(node("node-2", {
    "failure-domain.beta.kubernetes.io/region": "eu-west1",
    "failure-domain.beta.kubernetes.io/zone": "eu-west1-c",
  }));
  kube.upsert(service("reviews", "default", {
    clusterIP: "10.96.7.7",
    selector: { app: "reviews" },
    ports: [
      { name: "http-web", port: 9080, targetPort: 8080 },
      { name: "grpc", port: 7070 },
      { name: "dns", port: 53, protocol: "UDP" },
    ],
  }, { annotations: { "auth.mesh.io/9080": "MUTUAL_TLS", "auth.istio.io/7070": "none" } }));
  kube.upsert(pod("reviews-v1", "default", "10.1.0.1", {
    labels: { app: "reviews", version: "v1" },
    sa: "bookinfo-reviews",
    node: "node-1",
  }));
  kube.upsert(pod("reviews-v2", "default", "10.1.0.2", {
    labels: { app: "reviews", version: "v2" },
    node: "node-2",
  }));
  kube.upsert(endpoints("reviews", "default", [
    { ip: "10.1.0.1", pod: "reviews-v1" },
    { ip: "10.1.0.2" }, // no targetRef: the pod is found by IP
  ], [{ name: "http-web", port: 8080 }, { name: "grpc", port: 7070 }, {
    name: "unknown",
    port: 1,
  }]));
}

// ---- tests ----------------------------------------------------------------------------------------

Deno.test("createOrchestratorRegistry() maps services, endpoints, pods and nodes", async () => {
  await using kube = await startFakeKube();
  seedReviews(kube);
  const { reg } = await registryFor(kube);
  try {
    await reg.start();
    assert.deepEqual(reg.services(), [{
      hostname: "reviews.default.svc.cluster.local",
      address: "10.96.7.7",
      ports: [
        { name: "http-web", port: 9080, protocol: "HTTP" },
        { name: "grpc", port: 7070, protocol: "GRPC" },
        { name: "dns", port: 53, protocol: "UDP" },
      ],
      namespace: "default",
      meshExternal: false,
      resolution: "ClientSideLB",
      serviceAccounts: [
        "spiffe://cluster.local/ns/default/sa/bookinfo-reviews",
        "spiffe://cluster.local/ns/default/sa/default",
      ],
      registry: "Orchestrator",
      attributes: {
        "auth.mesh.io/9080": "MUTUAL_TLS",
        "auth.mesh.io/7070": "NONE",
        // what WorkloadEntries it selects (workload_entries.ts)
        "selector.mesh.io": '{"app":"reviews"}',
        "targetPort.mesh.io/9080": "8080",
        "targetPort.mesh.io/7070": "7070",
        "targetPort.mesh.io/53": "53",
      },
    }]);
    const view = reg.instances().map((i) => [
      i.servicePort.name,
      i.address,
      i.port,
      i.labels.version,
      i.locality,
      i.serviceAccount,
    ]);
    assert.deepEqual(view, [
      [
        "grpc",
        "10.1.0.1",
        7070,
        "v1",
        "us-east1/us-east1-b",
        "spiffe://cluster.local/ns/default/sa/bookinfo-reviews",
      ],
      [
        "grpc",
        "10.1.0.2",
        7070,
        "v2",
        "eu-west1/eu-west1-c",
        "spiffe://cluster.local/ns/default/sa/default",
      ],
      [
        "http-web",
        "10.1.0.1",
        8080,
        "v1",
        "us-east1/us-east1-b",
        "spiffe://cluster.local/ns/default/sa/bookinfo-reviews",
      ],
      [
        "http-web",
        "10.1.0.2",
        8080,
        "v2",
        "eu-west1/eu-west1-c",
        "spiffe://cluster.local/ns/default/sa/default",
      ],
    ]);
    assert.deepEqual(reg.instancesByAddress("10.1.0.2").map((i) => i.port), [7070, 8080]);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() reports an endpoints change and shows the new view", async () => {
  await using kube = await startFakeKube();
  seedReviews(kube);
  const { reg, changes, hosts } = await registryFor(kube);
  try {
    await reg.start();
    assert.equal(reg.instances().length, 4);
    kube.upsert(pod("reviews-v3", "default", "10.1.0.3", {
      labels: { app: "reviews", version: "v3" },
      sa: "bookinfo-reviews",
    }));
    kube.upsert(endpoints("reviews", "default", [
      { ip: "10.1.0.1", pod: "reviews-v1" },
      { ip: "10.1.0.3", pod: "reviews-v3" },
    ], [{ name: "http-web", port: 8080 }]));
    await waitUntil(
      () => reg.instances().map((i) => i.address).join() === "10.1.0.1,10.1.0.3",
      5000,
      "the new endpoints",
    );
    // The pods behind it changed from {bookinfo-reviews, default} to {bookinfo-reviews}: the
    // service's accounts changed, so this is a services change.
    assert.deepEqual(reg.services()[0].serviceAccounts, [
      "spiffe://cluster.local/ns/default/sa/bookinfo-reviews",
    ]);
    assert.equal(changes.at(-1), "services");
    assert.equal(reg.instances()[1].labels.version, "v3");

    // Only endpoints now: the same accounts, another address.
    changes.length = 0;
    kube.upsert(pod("reviews-v4", "default", "10.1.0.4", {
      labels: { app: "reviews", version: "v4" },
      sa: "bookinfo-reviews",
    }));
    kube.upsert(endpoints("reviews", "default", [
      { ip: "10.1.0.1", pod: "reviews-v1" },
      { ip: "10.1.0.4", pod: "reviews-v4" },
    ], [{ name: "http-web", port: 8080 }]));
    await waitUntil(() => reg.instances().some((i) => i.address === "10.1.0.4"), 5000, "10.1.0.4");
    assert.deepEqual(changes, ["endpoints"]);
    assert.equal(hosts.at(-1), "reviews.default.svc.cluster.local");
    const reviews = "reviews.default.svc.cluster.local";
    assert.deepEqual(
      reg.instancesOf!(new Set([reviews, "nope.default.svc.cluster.local", "x"])),
      reg.instances().filter((i) => i.hostname === reviews),
      "a host's instances found by its name",
    );

    // A pod relabelled: its instances follow, as an endpoints change.
    changes.length = 0;
    kube.upsert(pod("reviews-v4", "default", "10.1.0.4", {
      labels: { app: "reviews", version: "v4-canary" },
      sa: "bookinfo-reviews",
    }));
    await waitUntil(
      () => reg.instancesByAddress("10.1.0.4")[0]?.labels.version === "v4-canary",
      5000,
      "the relabelled pod",
    );
    assert.deepEqual(changes, ["endpoints"]);

    // A new service is a services change; a deleted one disappears.
    changes.length = 0;
    kube.upsert(service("ratings", "default", { ports: [{ name: "http", port: 9080 }] }));
    await waitUntil(() => reg.services().length === 2, 5000, "the ratings service");
    assert.deepEqual(changes, ["services"]);
    kube.remove("services", "default", "reviews");
    await waitUntil(() => reg.services().length === 1, 5000, "reviews to go away");
    assert.equal(reg.instances().length, 0);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() maps headless and ExternalName services and annotations", async () => {
  await using kube = await startFakeKube();
  kube.upsert(service("db", "default", {
    clusterIP: "None",
    ports: [{ name: "mongo", port: 27017 }, { name: "tcp-admin", port: 9000 }],
  }, {
    annotations: {
      "alpha.mesh.io/orchestrator-serviceaccounts": "db-a, db-b",
      "alpha.istio.io/canonical-serviceaccounts": "db@example.iam.gserviceaccount.com",
      "auth.mesh.io/27017": "maybe",
    },
  }));
  kube.upsert(service("httpbin", "default", {
    type: "ExternalName",
    externalName: "httpbin.org",
    ports: [{ name: "http", port: 80 }],
  }, { labels: { app: "httpbin" } }));
  const { reg } = await registryFor(kube);
  try {
    await reg.start();
    const [db, httpbin] = reg.services();
    assert.equal(db.hostname, "db.default.svc.cluster.local");
    assert.equal(db.address, "0.0.0.0");
    assert.equal(db.resolution, "Passthrough");
    assert.equal(db.meshExternal, false);
    assert.deepEqual(db.ports.map((p) => p.protocol), ["MONGO", "TCP"]);
    assert.deepEqual(db.serviceAccounts, [
      "spiffe://cluster.local/ns/default/sa/db-a",
      "spiffe://cluster.local/ns/default/sa/db-b",
      "spiffe://db@example.iam.gserviceaccount.com",
    ]);
    assert.equal(db.attributes, undefined, "an invalid auth annotation is ignored");
    assert.equal(httpbin.address, "0.0.0.0");
    assert.equal(httpbin.meshExternal, true);
    assert.equal(httpbin.resolution, "Passthrough");
    assert.deepEqual(httpbin.attributes, { externalName: "httpbin.org" });
    assert.deepEqual(
      reg.instances().map((i) => [
        i.hostname,
        i.address,
        i.port,
        i.labels,
        i.locality,
        i.serviceAccount,
      ]),
      [["httpbin.default.svc.cluster.local", "httpbin.org", 80, { app: "httpbin" }, "", ""]],
    );
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() prefers a service's EndpointSlices over its Endpoints", async () => {
  await using kube = await startFakeKube();
  seedReviews(kube);
  kube.upsert(slice("reviews-abc", "default", "reviews", [
    { ip: "10.1.0.1", pod: "reviews-v1" },
    { ip: "10.1.0.9", ready: false },
    { ip: "10.1.0.8", zone: "zone-z" },
  ], [{ name: "grpc", port: 7070 }]));
  const { reg, changes } = await registryFor(kube);
  try {
    await reg.start();
    assert.deepEqual(
      reg.instances().map((i) => [i.address, i.port, i.locality, i.labels.version ?? ""]),
      [["10.1.0.1", 7070, "us-east1/us-east1-b", "v1"], ["10.1.0.8", 7070, "zone-z", ""]],
    );
    kube.upsert(slice("reviews-def", "default", "reviews", [{ ip: "10.1.0.2" }], [
      { name: "grpc", port: 7070 },
    ]));
    await waitUntil(() => reg.instances().length === 3, 5000, "the second slice");
    assert.equal(reg.instancesByAddress("10.1.0.2")[0].labels.version, "v2");
    // reviews-v2 runs as "default": the service's accounts grew, so this is a services change.
    assert.equal(changes.at(-1), "services");
    changes.length = 0;
    kube.upsert(
      slice("reviews-def", "default", "reviews", [{ ip: "10.1.0.2" }, { ip: "10.1.0.6" }], [
        { name: "grpc", port: 7070 },
      ]),
    );
    await waitUntil(() => reg.instances().length === 4, 5000, "10.1.0.6");
    assert.deepEqual(changes, ["endpoints"]);
    // With every slice gone, the Endpoints object is used again.
    kube.remove("endpointslices", "default", "reviews-abc");
    kube.remove("endpointslices", "default", "reviews-def");
    await waitUntil(
      () => reg.instances().map((i) => i.port).join() === "7070,7070,8080,8080",
      5000,
      "the fallback to Endpoints",
    );
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() watches only --appNamespace when given", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team-a", "team-b"] });
  kube.upsert(service("a", "team-a", { ports: [{ name: "http", port: 80 }] }));
  kube.upsert(service("b", "team-b", { ports: [{ name: "http", port: 80 }] }));
  kube.upsert(pod("a-1", "team-a", "10.2.0.1", { labels: { app: "a" } }));
  kube.upsert(
    endpoints("a", "team-a", [{ ip: "10.2.0.1", pod: "a-1" }], [{ name: "http", port: 80 }]),
  );
  const { reg } = await registryFor(kube, { appNamespace: "team-a" });
  try {
    await reg.start();
    assert.deepEqual(reg.services().map((s) => s.hostname), ["a.team-a.svc.cluster.local"]);
    assert.deepEqual(reg.instances().map((i) => i.labels), [{ app: "a" }]);
    const paths = kube.requests.map((r) => r.path).filter((p) =>
      /\/(services|endpoints|pods|endpointslices)$/.test(p)
    );
    assert.ok(paths.length >= 8, `lists and watches: ${paths.join(" ")}`);
    for (const p of paths) assert.match(p, /\/namespaces\/team-a\//);
    kube.upsert(service("b2", "team-b", { ports: [{ name: "http", port: 80 }] }));
    kube.upsert(service("a2", "team-a", { ports: [{ name: "http", port: 80 }] }));
    await waitUntil(() => reg.services().length === 2, 5000, "a2");
    assert.deepEqual(reg.services().map((s) => s.namespace), ["team-a", "team-a"]);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() relists when a watch answers 410 Gone", async () => {
  await using kube = await startFakeKube({ bookmarkIntervalMs: 600_000 });
  seedReviews(kube);
  const { reg } = await registryFor(kube, { watchTimeoutSeconds: 1 });
  try {
    await reg.start();
    const lists = () =>
      kube.requests.filter((r) => r.path === "/api/v1/endpoints" && !/watch=/.test(r.search));
    assert.equal(lists().length, 1);
    // Move the global resourceVersion on, then drop the history: the endpoints watch resumes
    // (after its 1 s timeout) from a resourceVersion that is now too old.
    kube.upsert({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "x", namespace: "default" },
    });
    kube.expireHistory();
    await waitUntil(() => lists().length === 2, 5000, "a relist of endpoints");
    // The watch is running again from the new list: later changes still arrive.
    kube.upsert(
      endpoints("reviews", "default", [{ ip: "10.1.0.2" }], [{ name: "grpc", port: 7070 }]),
    );
    await waitUntil(() => reg.instances().length === 1, 5000, "the change after the relist");
    assert.equal(reg.services().length, 1);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() resync() relists quietly when nothing differs", async () => {
  await using kube = await startFakeKube();
  seedReviews(kube);
  const { reg, changes } = await registryFor(kube);
  try {
    await reg.start();
    const lists = () =>
      kube.requests.filter((r) => r.path === "/api/v1/pods" && !r.search.includes("watch"));
    assert.equal(lists().length, 1);
    await reg.resync();
    assert.equal(lists().length, 2);
    assert.deepEqual(changes, [], "a relist without differences reports nothing");
    assert.equal(reg.instances().length, 4);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() works without permission to list nodes", async () => {
  await using kube = await startFakeKube();
  seedReviews(kube);
  kube.failNext({ method: "GET", path: "/api/v1/nodes", code: 403 });
  const { reg } = await registryFor(kube);
  try {
    await reg.start();
    assert.equal(reg.instances().length, 4);
    assert.deepEqual(reg.instances().map((i) => i.locality), ["", "", "", ""]);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() start() fails naming the collection when a list fails", async () => {
  await using kube = await startFakeKube();
  kube.failNext({ method: "GET", path: "/api/v1/services", code: 500, message: "etcd down" });
  const { reg } = await registryFor(kube, { clusterId: "east" });
  await assert.rejects(
    reg.start(),
    /^Error: Cannot start the Orchestrator registry \(cluster east\): cannot list services of cluster east: etcd down \(HTTP 500\)$/,
  );
  await reg.stop();
  await waitUntil(() => kube.watchCount === 0, 5000, "every watch to close");
});

Deno.test("createOrchestratorRegistry() rejects a bad kubeconfig path and bad options", async () => {
  await assert.rejects(
    createOrchestratorRegistry({ kubeconfigPath: "/nonexistent/kc", domain: "d", resyncMs: 0 }),
    /Cannot read kubeconfig "\/nonexistent\/kc"/,
  );
  await assert.rejects(
    createOrchestratorRegistry({ kubeconfigPath: "/x", domain: "", resyncMs: 0 }),
    /domain: must not be empty/,
  );
});

Deno.test("createOrchestratorRegistry() managementPorts() lists probe ports of the pod", async () => {
  await using kube = await startFakeKube();
  kube.upsert(pod("p", "default", "10.3.0.1", {
    spec: {
      containers: [{
        name: "app",
        image: "app",
        ports: [{ name: "admin", containerPort: 9901 }],
        livenessProbe: { httpGet: { port: "admin", path: "/healthz" } },
        readinessProbe: { tcpSocket: { port: 3306 } },
      }],
    },
  }));
  const { reg } = await registryFor(kube);
  try {
    await reg.start();
    assert.deepEqual(reg.managementPorts("10.3.0.1"), [
      { name: "mgmt-3306-tcp", port: 3306, protocol: "TCP" },
      { name: "mgmt-9901-http", port: 9901, protocol: "HTTP" },
    ]);
    assert.deepEqual(reg.managementPorts("10.9.9.9"), []);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() loads 1000 services x 5 endpoints and updates one of them", async () => {
  await using kube = await startFakeKube({ historySize: 10 });
  kube.upsert(node("n", { "topology.kubernetes.io/zone": "z" }));
  for (let s = 0; s < 1000; s++) {
    kube.upsert(service(`svc-${s}`, "default", { ports: [{ name: "http", port: 80 }] }));
    const eps = [];
    for (let e = 0; e < 5; e++) {
      const ip = `10.${Math.floor(s / 200)}.${s % 200}.${e + 1}`;
      kube.upsert(pod(`svc-${s}-${e}`, "default", ip, { labels: { app: `svc-${s}` }, node: "n" }));
      eps.push({ ip, pod: `svc-${s}-${e}` });
    }
    kube.upsert(endpoints(`svc-${s}`, "default", eps, [{ name: "http", port: 80 }]));
  }
  const { reg, changes } = await registryFor(kube, { pageSize: 1000 });
  try {
    await reg.start();
    assert.equal(reg.services().length, 1000);
    assert.equal(reg.instances().length, 5000);
    assert.ok(reg.instances().every((i) => i.locality === "z" && i.labels.app));
    // One change touches one service.
    kube.upsert(endpoints("svc-7", "default", [{ ip: "10.0.7.1" }], [{ name: "http", port: 80 }]));
    await waitUntil(() => changes.length > 0, 5000, "the change");
    assert.equal(reg.instances().length, 4996);
  } finally {
    await reg.stop();
  }
});

Deno.test("convertService() and nodeLocality() handle missing fields", () => {
  const s = convertService({ metadata: { name: "x", namespace: "n" } }, "example.org");
  assert.equal(s.hostname, "x.n.svc.example.org");
  assert.equal(s.address, "0.0.0.0");
  assert.equal(s.resolution, "Passthrough");
  assert.deepEqual(s.ports, []);
  assert.equal(nodeLocality({ "topology.kubernetes.io/zone": "z1" }), "z1");
  assert.equal(nodeLocality(undefined), "");
});

Deno.test("convertService() maps every port, address and annotation rule", () => {
  const warnings: string[] = [];
  const s = convertService(
    {
      metadata: {
        name: "web",
        namespace: "shop",
        annotations: {
          "auth.istio.io/8080": " mutual_tls ",
          "auth.mesh.io/http": "NONE",
          "auth.mesh.io/9090": "STRICT",
          "team": "payments",
        },
      },
      spec: {
        clusterIP: "10.0.0.5",
        type: "ClusterIP",
        externalName: "ignored.example.com",
        ports: [
          { name: "http-web", port: 80 },
          { name: "udp-stats", port: 8125 },
          { name: "HTTP2-x", port: 81, protocol: "UDP" },
          { port: 9000 },
          { name: "grpc" },
        ],
      },
    },
    "example.org",
    (m) => warnings.push(m),
  );
  assert.deepEqual(s, {
    hostname: "web.shop.svc.example.org",
    address: "10.0.0.5",
    ports: [
      { name: "http-web", port: 80, protocol: "HTTP" },
      { name: "udp-stats", port: 8125, protocol: "TCP" },
      { name: "HTTP2-x", port: 81, protocol: "UDP" },
      { name: "", port: 9000, protocol: "TCP" },
      { name: "grpc", port: 0, protocol: "GRPC" },
    ],
    namespace: "shop",
    meshExternal: false,
    resolution: "ClientSideLB",
    serviceAccounts: [],
    registry: "Orchestrator",
    attributes: { "auth.mesh.io/8080": "MUTUAL_TLS" },
  });
  assert.deepEqual(warnings, [
    'Service shop/web: ignoring annotation auth.mesh.io/http="NONE": expected auth.mesh.io/<port ' +
    "number> with value NONE or MUTUAL_TLS",
    'Service shop/web: ignoring annotation auth.mesh.io/9090="STRICT": expected auth.mesh.io/<port ' +
    "number> with value NONE or MUTUAL_TLS",
  ]);

  // An ExternalName service without its name is an ordinary service without a cluster IP.
  const noName = convertService({
    metadata: { name: "x", namespace: "n" },
    spec: { type: "ExternalName", clusterIP: "" },
  }, "d");
  assert.equal(noName.meshExternal, false);
  assert.equal(noName.address, "0.0.0.0");
  assert.equal(noName.resolution, "Passthrough");
  assert.equal(noName.attributes, undefined);
  // An ExternalName with a cluster IP given is still external, with passthrough resolution.
  const ext = convertService({
    metadata: { name: "x", namespace: "n" },
    spec: { type: "ExternalName", externalName: "db.example.com", clusterIP: "10.0.0.9" },
  }, "d");
  assert.equal(ext.meshExternal, true);
  assert.equal(ext.resolution, "Passthrough");
  assert.deepEqual(ext.attributes, { externalName: "db.example.com" });
  // A port annotation on an invalid key with istio's prefix is named with that prefix.
  const w2: string[] = [];
  convertService(
    {
      metadata: {
        name: "x",
        namespace: "n",
        annotations: { "auth.istio.io/1a": "NONE", "auth.istio.io/p80": "NONE" },
      },
    },
    "d",
    (m) => w2.push(m),
  );
  assert.deepEqual(w2, [
    'Service n/x: ignoring annotation auth.istio.io/1a="NONE": expected auth.istio.io/<port ' +
    "number> with value NONE or MUTUAL_TLS",
    'Service n/x: ignoring annotation auth.istio.io/p80="NONE": expected auth.istio.io/<port ' +
    "number> with value NONE or MUTUAL_TLS",
  ]);
  // No metadata at all: no crash, empty name and namespace.
  assert.equal(convertService({}, "d").hostname, "..svc.d");
});

Deno.test("nodeLocality() prefers the topology labels and joins region and zone", () => {
  assert.equal(nodeLocality({ "topology.kubernetes.io/region": "r1" }), "r1");
  assert.equal(
    nodeLocality({
      "failure-domain.beta.kubernetes.io/region": "old-r",
      "failure-domain.beta.kubernetes.io/zone": "old-z",
    }),
    "old-r/old-z",
  );
  assert.equal(
    nodeLocality({
      "topology.kubernetes.io/region": "r",
      "topology.kubernetes.io/zone": "z",
      "failure-domain.beta.kubernetes.io/region": "old-r",
      "failure-domain.beta.kubernetes.io/zone": "old-z",
    }),
    "r/z",
  );
  assert.equal(nodeLocality({ "failure-domain.beta.kubernetes.io/zone": "old-z" }), "old-z");
  assert.equal(nodeLocality({}), "");
});

Deno.test("createOrchestratorRegistry() finds each endpoint's pod, node and account by every rule", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "shop", "infra"] });
  kube.upsert(node("node-a", {
    "topology.kubernetes.io/region": "r",
    "topology.kubernetes.io/zone": "za",
  }));
  kube.upsert(node("node-bare", {}));
  // Host-network pods share 10.5.0.1; each service takes the first (by name) of its own
  // namespace, else the first by namespace and name.
  kube.upsert(pod("host-shop-b", "shop", "10.5.0.1", { labels: { who: "shop-b" } }));
  kube.upsert(pod("host-shop", "shop", "10.5.0.1", { labels: { who: "shop" }, sa: "shop-sa" }));
  kube.upsert(pod("host-infra", "infra", "10.5.0.1", { labels: { who: "infra" }, sa: "infra-sa" }));
  for (const ns of ["shop", "infra", "default"]) {
    kube.upsert(service("agent", ns, { ports: [{ name: "http", port: 80 }] }));
    kube.upsert(endpoints("agent", ns, [{ ip: "10.5.0.1" }], [{ name: "http", port: 8080 }]));
  }
  kube.upsert(pod("api-1", "shop", "10.6.0.1", {
    labels: { app: "api" },
    sa: "",
    node: "node-a",
  }));
  kube.upsert(pod("other-ns", "infra", "10.6.0.9", { labels: { app: "x" }, sa: "infra-api" }));
  kube.upsert(pod("by-ip", "shop", "10.6.0.3", { labels: { app: "by-ip" } }));
  kube.upsert(pod("squatter", "shop", "10.6.0.7", { labels: { app: "squatter" } }));
  // A pod named by the targetRef wins over the IP: a missing one means no pod.
  kube.upsert(service("ref", "shop", { ports: [{ name: "http", port: 80 }] }));
  kube.upsert({
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: { name: "ref", namespace: "shop" },
    subsets: [{
      addresses: [
        { ip: "10.6.0.7", targetRef: { kind: "Pod", name: "not-yet" } },
        { ip: "10.6.0.8", targetRef: { name: "api-1" } }, // no kind: a pod
      ],
      ports: [{ name: "http", port: 80, protocol: "TCP" }],
    }],
  });
  kube.upsert(service("api", "shop", {
    clusterIP: "10.96.0.10",
    ports: [{ name: "http", port: 8000 }, { name: "tcp-admin", port: 15000 }],
  }));
  kube.upsert({
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: { name: "api", namespace: "shop" },
    subsets: [
      {
        addresses: [
          // targetRef without a namespace: the service's namespace
          { ip: "10.6.0.1", targetRef: { kind: "Pod", name: "api-1" } },
          // targetRef to a pod of another namespace: that pod's account
          { ip: "10.6.0.9", targetRef: { kind: "Pod", name: "other-ns", namespace: "infra" } },
          // a targetRef that is not a pod: the pod is found by IP
          { ip: "10.6.0.3", targetRef: { kind: "Node", name: "node-a" } },
          // no pod at all: locality from the address's node
          { ip: "10.6.0.4", nodeName: "node-a" },
          // no pod and a node without locality labels
          { ip: "10.6.0.5", nodeName: "node-bare" },
        ],
        ports: [
          { name: "tcp-admin", port: 15000, protocol: "TCP" },
          { name: "http", port: 8000, protocol: "TCP" },
          { name: "http", protocol: "TCP" }, // no port number: skipped
        ],
      },
      // the same addresses and ports again (a duplicated subset): listed once
      {
        addresses: [{ ip: "10.6.0.1", targetRef: { kind: "Pod", name: "api-1" } }, {}],
        ports: [{ name: "http", port: 8000, protocol: "TCP" }],
      },
    ],
  });
  const { reg, changes, hosts } = await registryFor(kube);
  try {
    await reg.start();
    assert.deepEqual(changes, [], "nothing is reported while starting");
    assert.deepEqual(reg.services().map((s) => s.hostname), [
      "agent.default.svc.cluster.local",
      "agent.infra.svc.cluster.local",
      "agent.shop.svc.cluster.local",
      "api.shop.svc.cluster.local",
      "ref.shop.svc.cluster.local",
    ]);
    const view = (host: string) =>
      reg.instances().filter((i) => i.hostname === host).map((i) =>
        `${i.servicePort.port} ${i.address}:${i.port} ${
          JSON.stringify(i.labels)
        } ${i.locality} ${i.serviceAccount}`
      );
    assert.deepEqual(view("agent.shop.svc.cluster.local"), [
      '80 10.5.0.1:8080 {"who":"shop"}  spiffe://cluster.local/ns/shop/sa/shop-sa',
    ]);
    assert.deepEqual(view("agent.infra.svc.cluster.local"), [
      '80 10.5.0.1:8080 {"who":"infra"}  spiffe://cluster.local/ns/infra/sa/infra-sa',
    ]);
    assert.deepEqual(view("agent.default.svc.cluster.local"), [
      '80 10.5.0.1:8080 {"who":"infra"}  spiffe://cluster.local/ns/infra/sa/infra-sa',
    ]);
    assert.deepEqual(view("ref.shop.svc.cluster.local"), [
      "80 10.6.0.7:80 {}  ",
      '80 10.6.0.8:80 {"app":"api"} r/za spiffe://cluster.local/ns/shop/sa/default',
    ]);
    // sorted by service port, then address, then endpoint port
    assert.deepEqual(view("api.shop.svc.cluster.local"), [
      '8000 10.6.0.1:8000 {"app":"api"} r/za spiffe://cluster.local/ns/shop/sa/default',
      '8000 10.6.0.3:8000 {"app":"by-ip"}  spiffe://cluster.local/ns/shop/sa/default',
      "8000 10.6.0.4:8000 {} r/za ",
      "8000 10.6.0.5:8000 {}  ",
      '8000 10.6.0.9:8000 {"app":"x"}  spiffe://cluster.local/ns/infra/sa/infra-api',
      '15000 10.6.0.1:15000 {"app":"api"} r/za spiffe://cluster.local/ns/shop/sa/default',
      '15000 10.6.0.3:15000 {"app":"by-ip"}  spiffe://cluster.local/ns/shop/sa/default',
      "15000 10.6.0.4:15000 {} r/za ",
      "15000 10.6.0.5:15000 {}  ",
      '15000 10.6.0.9:15000 {"app":"x"}  spiffe://cluster.local/ns/infra/sa/infra-api',
    ]);
    assert.deepEqual(reg.services()[3].serviceAccounts, [
      "spiffe://cluster.local/ns/infra/sa/infra-api",
      "spiffe://cluster.local/ns/shop/sa/default",
    ]);

    // A host pod that sorts first comes: taken by the services of its namespace and of none.
    kube.upsert(pod("a-host", "infra", "10.5.0.1", { labels: { who: "a-host" } }));
    await waitUntil(
      () => view("agent.infra.svc.cluster.local")[0].includes("a-host"),
      5000,
      "a-host",
    );
    assert.deepEqual(
      reg.instancesByAddress("10.5.0.1").map((i) => `${i.hostname} ${i.labels.who}`),
      [
        "agent.default.svc.cluster.local a-host",
        "agent.infra.svc.cluster.local a-host",
        "agent.shop.svc.cluster.local shop",
      ],
    );
    changes.length = 0;

    // The node's labels change: the instances' locality follows, as an endpoints change.
    kube.upsert(node("node-bare", { "topology.kubernetes.io/zone": "zb" }));
    await waitUntil(
      () => reg.instancesByAddress("10.6.0.5")[0]?.locality === "zb",
      5000,
      "the new locality",
    );
    assert.deepEqual(changes, ["endpoints"]);
    assert.equal(hosts.at(-1), "api.shop.svc.cluster.local", "the service of the node's pods only");
    // The pod found by IP moves to another IP: its instances lose its labels.
    changes.length = 0;
    kube.upsert(pod("by-ip", "shop", "10.6.0.33", { labels: { app: "by-ip" } }));
    await waitUntil(
      () => reg.instancesByAddress("10.6.0.3")[0]?.serviceAccount === "",
      5000,
      "the pod gone from 10.6.0.3",
    );
    assert.deepEqual(reg.instancesByAddress("10.6.0.3").map((i) => i.labels), [{}, {}]);
    // ... and one comes to it: found by IP again.
    kube.upsert(pod("newcomer", "shop", "10.6.0.3", { labels: { app: "new" } }));
    await waitUntil(
      () => reg.instancesByAddress("10.6.0.3")[0]?.labels.app === "new",
      5000,
      "the pod now at 10.6.0.3",
    );
    // A deleted pod found by its targetRef: its instances keep the address, without its labels.
    kube.remove("pods", "shop", "api-1");
    await waitUntil(
      () => reg.instancesByAddress("10.6.0.1")[0]?.labels.app === undefined,
      5000,
      "api-1 gone",
    );
    assert.equal(reg.instancesByAddress("10.6.0.1")[0].serviceAccount, "");
    // A deleted node: no locality from it any more.
    kube.remove("nodes", undefined, "node-a");
    await waitUntil(
      () => reg.instancesByAddress("10.6.0.4")[0]?.locality === "",
      5000,
      "node-a gone",
    );
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() reads EndpointSlices: readiness, zones, nodes, relabelled slices", async () => {
  await using kube = await startFakeKube();
  kube.upsert(node("node-a", { "topology.kubernetes.io/zone": "za" }));
  kube.upsert(node("node-bare", {}));
  for (const name of ["a", "b"]) {
    kube.upsert(service(name, "default", { ports: [{ name: "http", port: 80 }] }));
  }
  kube.upsert({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: "a-1", namespace: "default", labels: { [SERVICE_NAME_LABEL]: "a" } },
    addressType: "IPv4",
    endpoints: [
      { addresses: ["10.7.0.1", "10.7.0.2"], conditions: { ready: null } }, // unknown: ready
      { addresses: ["10.7.0.3"] }, // no conditions: ready
      { addresses: ["10.7.0.4"], nodeName: "node-a", zone: "slice-zone" }, // the node wins
      { addresses: ["10.7.0.5"], nodeName: "node-bare", zone: "slice-zone" }, // no node labels
      { addresses: ["10.7.0.6"], conditions: { ready: false } },
    ],
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
  });
  // A slice of no service is ignored.
  kube.upsert({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: "stray", namespace: "default" },
    addressType: "IPv4",
    endpoints: [{ addresses: ["10.7.9.9"] }],
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
  });
  const { reg, changes } = await registryFor(kube);
  try {
    await reg.start();
    const view = () =>
      reg.instances().map((i) => `${i.hostname.split(".")[0]} ${i.address} ${i.locality}`);
    assert.deepEqual(view(), [
      "a 10.7.0.1 ",
      "a 10.7.0.2 ",
      "a 10.7.0.3 ",
      "a 10.7.0.4 za",
      "a 10.7.0.5 slice-zone",
    ]);
    // The slice now belongs to b: a has no endpoints left, b has them.
    kube.upsert({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: "a-1", namespace: "default", labels: { [SERVICE_NAME_LABEL]: "b" } },
      addressType: "IPv4",
      endpoints: [{ addresses: ["10.7.0.1"] }],
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    });
    await waitUntil(() => view().join() === "b 10.7.0.1 ", 5000, "the slice moved to b");
    assert.deepEqual(changes, ["endpoints"]);
    // The stray slice gets its label: a has endpoints again.
    kube.upsert({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: "stray", namespace: "default", labels: { [SERVICE_NAME_LABEL]: "a" } },
      addressType: "IPv4",
      endpoints: [{ addresses: ["10.7.9.9"] }],
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    });
    await waitUntil(() => view().join() === "a 10.7.9.9 ,b 10.7.0.1 ", 5000, "the stray slice");
    // The same endpoint in two slices of a service: the first slice by name gives its zone.
    for (const [name, zone] of [["b-2", "zone-2"], ["b-0", "zone-0"]]) {
      kube.upsert({
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: { name, namespace: "default", labels: { [SERVICE_NAME_LABEL]: "b" } },
        addressType: "IPv4",
        endpoints: [{ addresses: ["10.7.5.5"], zone }],
        ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      });
    }
    await waitUntil(
      () => reg.instancesByAddress("10.7.5.5")[0]?.locality === "zone-0",
      5000,
      "the zone of b-0",
    );
    assert.equal(reg.instancesByAddress("10.7.5.5").length, 1);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() endpointsSource: endpoints only, slices only, or what the cluster serves", async () => {
  await using kube = await startFakeKube();
  kube.upsert(service("a", "default", { ports: [{ name: "http", port: 80 }] }));
  kube.upsert(endpoints("a", "default", [{ ip: "10.8.0.1" }], [{ name: "http", port: 80 }]));
  kube.upsert(service("b", "default", { ports: [{ name: "http", port: 80 }] }));
  kube.upsert(endpoints("b", "default", [{ ip: "10.8.1.1" }], [{ name: "http", port: 80 }]));
  kube.upsert(slice("b-1", "default", "b", [{ ip: "10.8.1.2" }], [{ name: "http", port: 80 }]));
  const addresses = (reg: { instances(): { address: string }[] }) =>
    reg.instances().map((i) => i.address).join();
  const watched = () =>
    kube.requests.filter((r) => r.search.includes("watch")).map((r) => r.path).sort();
  for (
    const [source, want, paths] of [
      ["endpoints", "10.8.0.1,10.8.1.1", [
        "/api/v1/endpoints",
        "/api/v1/nodes",
        "/api/v1/pods",
        "/api/v1/services",
      ]],
      ["slices", "10.8.1.2", [
        "/api/v1/nodes",
        "/api/v1/pods",
        "/api/v1/services",
        "/apis/discovery.k8s.io/v1/endpointslices",
      ]],
      ["auto", "10.8.0.1,10.8.1.2", [
        "/api/v1/endpoints",
        "/api/v1/nodes",
        "/api/v1/pods",
        "/api/v1/services",
        "/apis/discovery.k8s.io/v1/endpointslices",
      ]],
    ] as const
  ) {
    kube.requests.length = 0;
    const { reg } = await registryFor(kube, { endpointsSource: source });
    try {
      await reg.start();
      assert.equal(addresses(reg), want, source);
      await waitUntil(() => watched().length === paths.length, 5000, `the watches of ${source}`);
      assert.deepEqual(watched(), paths, source);
    } finally {
      await reg.stop();
    }
  }
  // A cluster without discovery.k8s.io/v1: auto uses Endpoints, slices cannot start.
  kube.failNext({ method: "GET", path: "/apis/discovery.k8s.io/v1", code: 404 });
  const { reg: auto } = await registryFor(kube);
  try {
    await auto.start();
    assert.equal(addresses(auto), "10.8.0.1,10.8.1.1");
  } finally {
    await auto.stop();
  }
  kube.failNext({ method: "GET", path: "/apis/discovery.k8s.io/v1", code: 404 });
  const { reg: slices } = await registryFor(kube, { endpointsSource: "slices", clusterId: "c1" });
  await assert.rejects(
    slices.start(),
    /^Error: Cannot start the Orchestrator registry \(cluster c1\): endpointslices \(discovery\.k8s\.io\/v1\) are not served by this cluster$/,
  );
  await slices.stop();
  kube.failNext({ method: "GET", path: "/apis/discovery.k8s.io/v1", code: 500, message: "boom" });
  const { reg: broken } = await registryFor(kube);
  await assert.rejects(
    broken.start(),
    /^Error: Cannot start the Orchestrator registry: cannot read the discovery\.k8s\.io\/v1 API: boom \(HTTP 500\)$/,
  );
  await broken.stop();
  await assert.rejects(
    registryFor(kube, { endpointsSource: "both" }),
    /^Error: Invalid orchestrator endpoints source "both": expected auto, slices or endpoints$/,
  );
  await waitUntil(() => kube.watchCount === 0, 5000, "every watch to close");
});

Deno.test("createOrchestratorRegistry() start, stop, handlers and the log lines", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team-a"] });
  kube.upsert(service("a", "team-a", { ports: [{ name: "http", port: 80 }] }, {
    annotations: { "auth.mesh.io/80": "SOMETIMES" },
  }));
  kube.upsert(endpoints("a", "team-a", [{ ip: "10.9.0.1" }], [{ name: "http", port: 80 }]));
  const log = await logFile();
  kube.failNext({ method: "GET", path: "/api/v1/nodes", code: 403, message: "nodes forbidden" });
  const { reg, changes } = await registryFor(kube, { appNamespace: "team-a", clusterId: "east" });
  assert.equal(reg.clusterId, "east");
  assert.equal(reg.name, "Orchestrator");
  const seen: string[] = [];
  reg.onChange(() => {
    throw new Error("handler bug");
  });
  reg.onChange((k) => seen.push(k));
  try {
    await reg.start();
    await assert.rejects(
      reg.start(),
      /^Error: Orchestrator registry \(cluster east\) already started$/,
    );
    assert.deepEqual(reg.instancesByAddress("10.9.0.1").map((i) => i.port), [80]);
    kube.upsert(endpoints("a", "team-a", [{ ip: "10.9.0.2" }], [{ name: "http", port: 80 }]));
    await waitUntil(() => seen.length === 1, 5000, "the change");
    // a failing handler does not keep the others from hearing of the change
    assert.deepEqual(changes, ["endpoints"]);
    assert.deepEqual(seen, ["endpoints"]);
    // the address index follows the change
    assert.deepEqual(reg.instancesByAddress("10.9.0.1"), []);
    assert.deepEqual(reg.instancesByAddress("10.9.0.2").map((i) => i.port), [80]);
    await reg.stop();
    await reg.stop(); // again: nothing to do
    await waitUntil(() => kube.watchCount === 0, 5000, "every watch to close");
    await reg.resync(); // stopped: nothing listed
    const lines = await log.lines("Orchestrator");
    assert.deepEqual(lines, [
      "warn default Orchestrator registry (cluster east): cannot list nodes of cluster east: " +
      "nodes forbidden (HTTP 403); instances will have no locality",
      "warn default Orchestrator registry (cluster east): Service team-a/a: ignoring annotation " +
      'auth.mesh.io/80="SOMETIMES": expected auth.mesh.io/<port number> with value NONE or ' +
      "MUTUAL_TLS",
      "info default Orchestrator registry (cluster east): 1 services, 1 instances loaded from " +
      kube.url,
      // the service is converted again on each change of its endpoints
      "warn default Orchestrator registry (cluster east): Service team-a/a: ignoring annotation " +
      'auth.mesh.io/80="SOMETIMES": expected auth.mesh.io/<port number> with value NONE or ' +
      "MUTUAL_TLS",
      "error default Orchestrator registry (cluster east): change handler failed: handler bug",
    ]);
  } finally {
    await log.close();
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() names the namespace and cluster of a collection that cannot be listed", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team-a"] });
  for (
    const [path, what] of [
      ["/api/v1/namespaces/team-a/pods", "pods in namespace team-a of cluster west"],
      [
        "/apis/discovery.k8s.io/v1/namespaces/team-a/endpointslices",
        "endpointslices in namespace team-a of cluster west",
      ],
      ["/api/v1/namespaces/team-a/endpoints", "endpoints in namespace team-a of cluster west"],
    ]
  ) {
    kube.failNext({ method: "GET", path, code: 500, message: "etcd down" });
    const { reg } = await registryFor(kube, { appNamespace: "team-a", clusterId: "west" });
    await assert.rejects(
      reg.start(),
      new RegExp(
        `^Error: Cannot start the Orchestrator registry \\(cluster west\\): cannot list ${what}: ` +
          `etcd down \\(HTTP 500\\)$`,
      ),
    );
    await reg.stop();
  }
  // Without a cluster id or namespace: the bare collection name.
  kube.failNext({ method: "GET", path: "/api/v1/endpoints", code: 500, message: "etcd down" });
  const { reg } = await registryFor(kube);
  await assert.rejects(
    reg.start(),
    /^Error: Cannot start the Orchestrator registry: cannot list endpoints: etcd down \(HTTP 500\)$/,
  );
  await reg.stop();
  await waitUntil(() => kube.watchCount === 0, 5000, "every watch to close");
  for (const resyncMs of [-1, NaN, Infinity]) {
    await assert.rejects(
      createOrchestratorRegistry({ kubeconfigPath: kube.kubeconfigPath, domain: "d", resyncMs }),
      new RegExp(`^Error: Invalid orchestrator registry resync ${resyncMs} ms: must be >= 0$`),
    );
  }
});

Deno.test("createOrchestratorRegistry() managementPorts() reads every probe form", async () => {
  await using kube = await startFakeKube();
  kube.upsert(pod("p", "default", "10.3.0.2", {
    spec: {
      containers: [
        {
          name: "app",
          image: "app",
          ports: [{ name: "admin", containerPort: 9901 }, { containerPort: 7000 }],
          livenessProbe: { httpGet: { port: "8082", path: "/healthz" } }, // a number as text
          readinessProbe: { httpGet: { port: "metrics", path: "/ready" } }, // no such port
        },
        {
          name: "sidecar",
          image: "sidecar",
          ports: [{ name: "admin", containerPort: 15000 }],
          livenessProbe: { tcpSocket: { port: "admin" } }, // this container's named port
          readinessProbe: { httpGet: { path: "/" } }, // no port: skipped
        },
        {
          name: "digits",
          image: "app",
          ports: [{ name: "health2", containerPort: 9902 }, { name: "2nd", containerPort: 9903 }],
          // names that end or start with a digit are names, not numbers
          livenessProbe: { httpGet: { port: "health2" } },
          readinessProbe: { tcpSocket: { port: "2nd" } },
        },
        {
          name: "twin",
          image: "app",
          livenessProbe: { httpGet: { port: 8081 } }, // the same port again: listed once
          readinessProbe: { tcpSocket: { port: 8081 } }, // a TCP probe of it is another one
        },
        { name: "none", image: "app", livenessProbe: {} },
      ],
    },
  }));
  const { reg } = await registryFor(kube);
  try {
    await reg.start();
    assert.deepEqual(reg.managementPorts("10.3.0.2"), [
      { name: "mgmt-8081-http", port: 8081, protocol: "HTTP" },
      { name: "mgmt-8081-tcp", port: 8081, protocol: "TCP" },
      { name: "mgmt-8082-http", port: 8082, protocol: "HTTP" },
      { name: "mgmt-9902-http", port: 9902, protocol: "HTTP" },
      { name: "mgmt-9903-tcp", port: 9903, protocol: "TCP" },
      { name: "mgmt-15000-tcp", port: 15000, protocol: "TCP" },
    ]);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() resync() repairs changes the watches missed", async () => {
  await using kube = await startFakeKube();
  seedReviews(kube);
  kube.upsert(service("gone", "default", { ports: [{ name: "http", port: 80 }] }));
  const { reg, changes } = await registryFor(kube);
  try {
    await reg.start();
    assert.deepEqual(reg.services().map((s) => s.hostname.split(".")[0]), ["gone", "reviews"]);
    // Missed by the watches: a deleted service, a new endpoint, a relabelled node.
    kube.missEvents("services");
    kube.remove("services", "default", "gone");
    kube.missEvents("endpoints");
    kube.upsert(endpoints("reviews", "default", [{ ip: "10.1.0.1", pod: "reviews-v1" }], [
      { name: "grpc", port: 7070 },
    ]));
    kube.missEvents("nodes");
    kube.upsert(node("node-1", { "topology.kubernetes.io/zone": "moved" }));
    // The next event seen shows that the missed ones really were missed.
    kube.upsert(service("next", "default", { ports: [{ name: "http", port: 80 }] }));
    await waitUntil(() => reg.services().length === 3, 5000, "the next service");
    assert.equal(reg.instances().length, 4);
    changes.length = 0;
    await reg.resync();
    assert.deepEqual(reg.services().map((s) => s.hostname.split(".")[0]), ["next", "reviews"]);
    assert.deepEqual(
      reg.instances().map((i) => `${i.address}:${i.port} ${i.locality}`),
      ["10.1.0.1:7070 moved"],
    );
    assert.ok(changes.includes("services"), `changes told: ${changes.join()}`);
    // Lists are paged 500 objects at a time unless told otherwise.
    const lists = kube.requests.filter((r) =>
      r.path === "/api/v1/services" && !/watch/.test(r.search)
    );
    assert.equal(lists.length, 2);
    for (const r of lists) assert.equal(new URLSearchParams(r.search).get("limit"), "500");
    const nodeLists = kube.requests.filter((r) =>
      r.path === "/api/v1/nodes" && !/watch/.test(r.search)
    );
    assert.equal(nodeLists.length, 2);
    for (const r of nodeLists) assert.equal(new URLSearchParams(r.search).get("limit"), "500");
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() finds pods by any of their IPs and forgets deleted Endpoints", async () => {
  await using kube = await startFakeKube();
  kube.upsert(service("dual", "default", { ports: [{ name: "http", port: 80 }] }));
  // A dual-stack pod listed by status.podIPs only, an older one by status.podIP only.
  kube.upsert({
    ...pod("v6", "default", "", { labels: { app: "v6" } }),
    status: { phase: "Running", podIPs: [{ ip: "10.4.0.1" }, { ip: "fd00::1" }, {}] },
  });
  kube.upsert({
    ...pod("v4", "default", "", { labels: { app: "v4" } }),
    status: { phase: "Running", podIP: "10.4.0.2" },
  });
  kube.upsert(
    endpoints("dual", "default", [{ ip: "fd00::1" }, { ip: "10.4.0.1" }, { ip: "10.4.0.2" }], [
      { name: "http", port: 80 },
    ]),
  );
  const { reg, changes } = await registryFor(kube);
  try {
    await reg.start();
    assert.deepEqual(reg.instances().map((i) => `${i.address} ${i.labels.app}`), [
      "10.4.0.1 v6",
      "10.4.0.2 v4",
      "fd00::1 v6",
    ]);
    kube.remove("endpoints", "default", "dual");
    await waitUntil(() => reg.instances().length === 0, 5000, "the endpoints gone");
    assert.deepEqual(changes, ["services"], "the pods' account left the service with them");
    assert.deepEqual(reg.services()[0].serviceAccounts, []);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() tells no change for objects that change nothing", async () => {
  await using kube = await startFakeKube();
  seedReviews(kube);
  kube.upsert(service("ratings", "default", { ports: [{ name: "http", port: 9080 }] }));
  kube.upsert(pod("lonely", "default", "10.1.9.9", { labels: { app: "lonely" } }));
  const { reg, changes } = await registryFor(kube);
  try {
    await reg.start();
    // On each watch, changes that alter no service come first, then one that does: once the
    // last is seen, the others have been handled.
    kube.upsert(endpoints("orphan", "default", [{ ip: "10.1.9.1" }], [{ name: "http", port: 80 }]));
    kube.upsert(endpoints("reviews", "default", [
      { ip: "10.1.0.1", pod: "reviews-v1" },
      { ip: "10.1.0.2" },
    ], [{ name: "grpc", port: 7070 }]));
    kube.upsert(
      slice("ghost-1", "default", "ghost", [{ ip: "10.1.9.2" }], [{ name: "http", port: 80 }]),
    );
    kube.upsert(
      slice("ratings-1", "default", "ratings", [{ ip: "10.1.9.3" }], [{
        name: "http",
        port: 9080,
      }]),
    );
    kube.upsert(pod("lonely", "default", "10.1.9.9", { labels: { app: "lonely", v: "2" } }));
    // a pod of an endpoint with a new image: nothing its instances carry
    kube.upsert(pod("reviews-v1", "default", "10.1.0.1", {
      labels: { app: "reviews", version: "v1" },
      sa: "bookinfo-reviews",
      node: "node-1",
      spec: { containers: [{ name: "app", image: "app:2" }] },
    }));
    kube.upsert(pod("reviews-v2", "default", "10.1.0.2", {
      labels: { app: "reviews", version: "v2-b" },
      node: "node-2",
    }));
    await waitUntil(
      () =>
        reg.instances().length === 3 &&
        reg.instancesByAddress("10.1.9.3").length === 1 &&
        reg.instancesByAddress("10.1.0.2")[0]?.labels.version === "v2-b",
      5000,
      "the three changes",
    );
    assert.deepEqual(changes, ["endpoints", "endpoints", "endpoints"]);
  } finally {
    await reg.stop();
  }
});

Deno.test("createOrchestratorRegistry() maps unnamed ports and orders a port listed twice", async () => {
  await using kube = await startFakeKube();
  // A single-port service: its port and the Endpoints' port have no name.
  kube.upsert(service("single", "default", { ports: [{ port: 80 }] }));
  kube.upsert({
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: { name: "single", namespace: "default" },
    subsets: [{
      addresses: [{ ip: "10.12.0.1" }],
      notReadyAddresses: [{ ip: "10.12.0.2" }],
      ports: [{ port: 8080, protocol: "TCP" }],
    }, { notReadyAddresses: [{ ip: "10.12.0.3" }], ports: [{ port: 8080, protocol: "TCP" }] }],
  });
  // During a targetPort change two slices give the same address two ports of one name.
  kube.upsert(service("moving", "default", { ports: [{ name: "http", port: 80 }] }));
  kube.upsert(slice("moving-a", "default", "moving", [{ ip: "10.12.1.1" }], [
    { name: "http", port: 8081 },
  ]));
  kube.upsert(slice("moving-b", "default", "moving", [{ ip: "10.12.1.1" }], [
    { name: "http", port: 8080 },
  ]));
  const { reg } = await registryFor(kube);
  try {
    await reg.start();
    assert.deepEqual(
      reg.instances().map((i) =>
        `${i.hostname.split(".")[0]} ${i.servicePort.port} ${i.address}:${i.port}`
      ),
      ["moving 80 10.12.1.1:8080", "moving 80 10.12.1.1:8081", "single 80 10.12.0.1:8080"],
    );
  } finally {
    await reg.stop();
  }
});

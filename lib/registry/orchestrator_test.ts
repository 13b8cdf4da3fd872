import assert from "node:assert/strict";
import { type FakeKube, type JsonObject, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { convertService, createOrchestratorRegistry, nodeLocality } from "./orchestrator.ts";

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
  reg.onChange((k) => changes.push(k));
  return { reg, changes };
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
      attributes: { "auth.mesh.io/9080": "MUTUAL_TLS", "auth.mesh.io/7070": "NONE" },
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
  const { reg, changes } = await registryFor(kube);
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
      reg.instances().map((i) => [i.hostname, i.address, i.port, i.labels]),
      [["httpbin.default.svc.cluster.local", "httpbin.org", 80, { app: "httpbin" }]],
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

Deno.test("createOrchestratorRegistry() loads 1000 services x 5 endpoints quickly", async () => {
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
    const t0 = performance.now();
    await reg.start();
    const ms = performance.now() - t0;
    assert.equal(reg.services().length, 1000);
    assert.equal(reg.instances().length, 5000);
    assert.ok(reg.instances().every((i) => i.locality === "z" && i.labels.app));
    assert.ok(ms < 5000, `start took ${ms.toFixed(0)} ms`);
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

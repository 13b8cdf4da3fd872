import assert from "node:assert/strict";
import { type JsonObject, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { createIngressWatcher, ingressConfigObject } from "./ingress.ts";
import { normalizeIngress } from "../model/ingress.ts";
import { logFile } from "./_testutil.ts";

const ingress = (
  name: string,
  ns: string,
  opts: { cls?: string; className?: string; path?: string; pathType?: string } = {},
): JsonObject => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "Ingress",
  metadata: {
    name,
    namespace: ns,
    ...(opts.cls ? { annotations: { "kubernetes.io/ingress.class": opts.cls } } : {}),
  },
  spec: {
    ...(opts.className ? { ingressClassName: opts.className } : {}),
    rules: [{
      host: `${name}.example.com`,
      http: {
        paths: [{
          path: opts.path ?? "/",
          pathType: opts.pathType ?? "Prefix",
          backend: { service: { name: "hello", port: { number: 80 } } },
        }],
      },
    }],
  },
});

const names = (objs: { metadata: { namespace?: string; name: string } }[]) =>
  objs.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);

/** An Ingress watcher for ingress class "mesh" in `mode` (no resync unless `extra` sets one). */
function meshIngresses(
  kubeconfigPath: string,
  mode: "STRICT" | "DEFAULT" | "OFF",
  extra: Partial<Parameters<typeof createIngressWatcher>[0]> = {},
) {
  return createIngressWatcher({
    kubeconfigPath,
    resyncMs: 0,
    meshConfig: { ingressClass: "mesh", ingressControllerMode: mode },
    ...extra,
  });
}

Deno.test("createIngressWatcher() keeps the Ingresses of the mesh class in STRICT mode and follows changes", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team"] });
  kube.upsert(ingress("a", "default", { cls: "mesh" }));
  kube.upsert(ingress("b", "team", { className: "mesh" }));
  kube.upsert(ingress("c", "default")); // no class: not in STRICT
  kube.upsert(ingress("d", "default", { cls: "nginx" }));
  const w = await meshIngresses(kube.kubeconfigPath, "STRICT");
  let changes = 0;
  w.onChange(() => changes++);
  try {
    await w.start();
    assert.equal(w.apiVersion, "networking.k8s.io/v1");
    assert.deepEqual(names(w.ingresses()), ["default/a", "team/b"]);
    // spec.ingressClassName is carried as the annotation the generator reads.
    const b = w.ingresses()[1];
    assert.equal(b.metadata.annotations?.["kubernetes.io/ingress.class"], "mesh");
    kube.upsert(ingress("d", "default", { cls: "mesh" }));
    await waitUntil(() => w.ingresses().length === 3, 5000, "d to be selected");
    kube.remove("ingresses", "default", "a");
    await waitUntil(() => !names(w.ingresses()).includes("default/a"), 5000, "a to go");
    assert.ok(changes >= 2);
    // A change to an ignored Ingress reports nothing.
    const before = changes;
    kube.upsert(ingress("c", "default", { path: "/x" }));
    kube.upsert(ingress("e", "default", { cls: "mesh" }));
    await waitUntil(() => w.ingresses().length === 3, 5000, "e to be selected");
    assert.equal(changes, before + 1);
    // a new Ingress takes its place in namespace and name order
    assert.deepEqual(names(w.ingresses()), ["default/d", "default/e", "team/b"]);
  } finally {
    await w.stop();
  }
});

Deno.test("createIngressWatcher() honours DEFAULT mode and the application namespace, and skips invalid Ingresses", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team"] });
  kube.upsert(ingress("a", "default"));
  kube.upsert(ingress("b", "team"));
  kube.upsert(ingress("c", "team", { cls: "nginx" }));
  kube.upsert({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { name: "broken", namespace: "team" },
    spec: { rules: [{ http: { paths: [{ path: "/", backend: { service: { name: "x" } } }] } }] },
  });
  const w = await meshIngresses(kube.kubeconfigPath, "DEFAULT", { appNamespace: "team" });
  try {
    await w.start();
    assert.deepEqual(names(w.ingresses()), ["team/b"]);
    await waitUntil(
      () => kube.requests.some((r) => r.path.endsWith("/ingresses") && r.search.includes("watch")),
      5000,
      "the watch",
    );
    assert.ok(
      kube.requests.every((r) =>
        !r.path.includes("/ingresses") || r.path.includes("/namespaces/team/")
      ),
    );
  } finally {
    await w.stop();
  }
});

Deno.test("createIngressWatcher() never contacts the orchestrator when ingressControllerMode is OFF", async () => {
  await using kube = await startFakeKube();
  kube.upsert(ingress("a", "default", { cls: "mesh" }));
  kube.requests.length = 0;
  const w = await meshIngresses(kube.kubeconfigPath, "OFF");
  const lines = await withLog(() => w.start());
  assert.deepEqual(lines, [
    "info default Ingress: ingressControllerMode is OFF; Ingress objects are not watched",
  ]);
  assert.deepEqual(w.ingresses(), []);
  assert.equal(w.apiVersion, "");
  await w.stop();
  assert.equal(kube.requests.length, 0);
});

Deno.test("ingressConfigObject() writes Prefix paths with the .* suffix and keeps Exact paths", () => {
  const raw = ingress("a", "default", { cls: "mesh", path: "/api", pathType: "Prefix" });
  const spec = raw.spec as { rules: { http: { paths: JsonObject[] } }[] };
  spec.rules[0].http.paths.push({
    path: "/exact",
    pathType: "Exact",
    backend: { service: { name: "hello", port: { name: "http" } } },
  });
  const { ingress: norm } = normalizeIngress(raw, "a");
  const obj = ingressConfigObject(norm!);
  assert.deepEqual((obj.spec as typeof spec).rules[0].http.paths, [
    { path: "/api.*", backend: { serviceName: "hello", servicePort: 80 } },
    { path: "/exact", backend: { serviceName: "hello", servicePort: "http" } },
  ]);
});

Deno.test("ingressConfigObject() converts the whole Ingress: hosts, default backend, TLS, class", () => {
  const { ingress: norm } = normalizeIngress({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      name: "web",
      namespace: "shop",
      annotations: { "kubernetes.io/ingress.class": "mesh", team: "a" },
    },
    spec: {
      ingressClassName: "other", // the annotation wins
      defaultBackend: { service: { name: "fallback", port: { number: 8080 } } },
      tls: [{ hosts: ["web.example.com"], secretName: "web-cert" }],
      rules: [
        {
          host: "web.example.com",
          http: {
            paths: [
              {
                path: "/api.*",
                pathType: "Prefix",
                backend: { service: { name: "api", port: { number: 80 } } },
              },
              {
                path: "/raw",
                pathType: "ImplementationSpecific",
                backend: { service: { name: "raw", port: { number: 81 } } },
              },
            ],
          },
        },
        {
          http: {
            paths: [{
              pathType: "Prefix",
              path: "/",
              backend: { service: { name: "root", port: { number: 82 } } },
            }],
          },
        },
      ],
    },
  }, "web");
  assert.deepEqual(ingressConfigObject(norm!), {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      name: "web",
      namespace: "shop",
      annotations: { "kubernetes.io/ingress.class": "mesh", team: "a" },
    },
    spec: {
      rules: [
        {
          host: "web.example.com",
          http: {
            paths: [
              { path: "/api.*", backend: { serviceName: "api", servicePort: 80 } },
              { path: "/raw", backend: { serviceName: "raw", servicePort: 81 } },
            ],
          },
        },
        { http: { paths: [{ path: "/.*", backend: { serviceName: "root", servicePort: 82 } }] } },
      ],
      backend: { serviceName: "fallback", servicePort: 8080 },
      tls: [{ hosts: ["web.example.com"], secretName: "web-cert" }],
    },
  });
  // Without a class anywhere: no class annotation; an empty Prefix path stays empty.
  const { ingress: bare } = normalizeIngress({
    apiVersion: "extensions/v1beta1",
    kind: "Ingress",
    metadata: { name: "bare", namespace: "default" },
    spec: {
      rules: [{
        http: {
          paths: [{ path: "", pathType: "Prefix", backend: { serviceName: "s", servicePort: 80 } }],
        },
      }],
    },
  }, "bare");
  assert.deepEqual(ingressConfigObject(bare!), {
    apiVersion: "extensions/v1beta1",
    kind: "Ingress",
    metadata: { name: "bare", namespace: "default", annotations: {} },
    spec: {
      rules: [{ http: { paths: [{ path: "", backend: { serviceName: "s", servicePort: 80 } }] } }],
    },
  });
});

/** Runs `fn` with the lines logged under "default", stripped of their time stamps. */
async function withLog(fn: () => Promise<void>): Promise<string[]> {
  const log = await logFile();
  try {
    await fn();
    return await log.lines();
  } finally {
    await log.close();
  }
}

Deno.test("createIngressWatcher() warns once per invalid Ingress, tells changes to every handler, logs what it watches", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team"] });
  // "A" lacks a pathType and a port, "B" only a port.
  const broken = (problem: "A" | "B"): JsonObject => ({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { name: "broken", namespace: "team" },
    spec: {
      rules: [{
        http: {
          paths: [{
            path: "/",
            ...(problem === "B" ? { pathType: "Prefix" } : {}),
            backend: { service: { name: "x" } },
          }],
        },
      }],
    },
  });
  kube.upsert(ingress("z", "default", { cls: "mesh" }));
  kube.upsert(ingress("a", "team", { cls: "mesh" }));
  kube.upsert(broken("A"));
  const w = await meshIngresses(kube.kubeconfigPath, "STRICT");
  let told = 0;
  w.onChange(() => {
    throw new Error("handler bug");
  });
  w.onChange(() => told++);
  const lines = await withLog(async () => {
    try {
      await w.start();
      // sorted by namespace, then name
      assert.deepEqual(names(w.ingresses()), ["default/z", "team/a"]);
      assert.equal(told, 1);
      // The same invalid Ingress again: no second warning.
      kube.upsert({
        ...broken("A"),
        metadata: { name: "broken", namespace: "team", labels: { x: "1" } },
      });
      // Another problem: warned.
      kube.upsert(broken("B"));
      kube.upsert(ingress("b", "team", { cls: "mesh" }));
      await waitUntil(() => w.ingresses().length === 3, 5000, "b");
      // Deleted, then back with the same problem: warned again.
      kube.remove("ingresses", "team", "broken");
      kube.upsert(broken("B"));
      // Fixed, then broken the same way again: warned again.
      kube.upsert(ingress("broken", "team", { cls: "mesh" }));
      await waitUntil(() => w.ingresses().length === 4, 5000, "the fixed Ingress");
      kube.upsert(broken("B"));
      kube.remove("ingresses", "default", "z");
      await waitUntil(() => w.ingresses().length === 2, 5000, "z gone, broken broken");
      assert.equal(told, 5);
      assert.deepEqual(names(w.ingresses()), ["team/a", "team/b"]);
    } finally {
      await w.stop();
    }
  });
  const a = "warn default Ignoring invalid Ingress team/broken: " +
    "spec.rules[0].http.paths[0].pathType: is required";
  const b = "warn default Ignoring invalid Ingress team/broken: " +
    "spec.rules[0].http.paths[0].backend.service.port: is required";
  const bug = "error default Ingress watcher: change handler failed: handler bug";
  assert.deepEqual(lines, [
    a,
    bug, // the first list
    "info default Ingress: watching networking.k8s.io/v1 ingresses; 2 selected",
    b, // another problem
    bug, // b added
    b, // deleted, back with the same problem
    bug, // fixed
    b, // broken again
    bug, // ... so no longer selected
    bug, // z deleted
  ]);
});

Deno.test("createIngressWatcher() falls back to extensions/v1beta1, or watches nothing when neither is served", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team"] });
  const watcher = (appNamespace = "") =>
    meshIngresses(kube.kubeconfigPath, "DEFAULT", { appNamespace });
  // networking.k8s.io/v1 without ingresses, extensions/v1beta1 not served at all: nothing.
  kube.failNext({ method: "GET", path: "/apis/networking.k8s.io/v1", code: 404 });
  const none = await watcher();
  const lines = await withLog(async () => {
    await none.start();
    await none.stop();
  });
  assert.equal(none.apiVersion, "");
  assert.deepEqual(none.ingresses(), []);
  assert.deepEqual(lines, [
    "warn default Ingress: the orchestrator serves neither networking.k8s.io/v1 nor " +
    "extensions/v1beta1 Ingresses; none are watched",
  ]);
  assert.ok(!kube.requests.some((r) => r.path.endsWith("/ingresses")));

  // An older cluster: extensions/v1beta1 only (served here as a custom resource).
  kube.upsert({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "ingresses.extensions" },
    spec: {
      group: "extensions",
      scope: "Namespaced",
      names: { plural: "ingresses", singular: "ingress", kind: "Ingress" },
      versions: [{ name: "v1beta1", served: true, storage: true }],
    },
  });
  kube.upsert({
    apiVersion: "extensions/v1beta1",
    kind: "Ingress",
    metadata: { name: "old", namespace: "team" },
    spec: {
      rules: [{ http: { paths: [{ path: "/", backend: { serviceName: "s", servicePort: 80 } }] } }],
    },
  });
  kube.failNext({ method: "GET", path: "/apis/networking.k8s.io/v1", code: 404 });
  kube.requests.length = 0;
  const old = await watcher("team");
  const oldLines = await withLog(async () => {
    try {
      await old.start();
      assert.equal(old.apiVersion, "extensions/v1beta1");
      assert.deepEqual(old.ingresses(), [{
        apiVersion: "extensions/v1beta1",
        kind: "Ingress",
        metadata: { name: "old", namespace: "team", annotations: {} },
        spec: {
          rules: [{
            http: { paths: [{ path: "/", backend: { serviceName: "s", servicePort: 80 } }] },
          }],
        },
      }]);
      const paths = kube.requests.filter((r) => r.path.endsWith("/ingresses"));
      assert.ok(paths.length >= 1);
      for (const r of paths) {
        assert.equal(r.path, "/apis/extensions/v1beta1/namespaces/team/ingresses");
        if (!r.search.includes("watch")) {
          assert.equal(new URLSearchParams(r.search).get("limit"), "500");
        }
      }
    } finally {
      await old.stop();
    }
  });
  assert.deepEqual(oldLines, [
    "info default Ingress: watching extensions/v1beta1 ingresses; 1 selected",
  ]);

  // Errors name what could not be read.
  kube.failNext({ method: "GET", path: "/apis", code: 500, message: "apis down" });
  await assert.rejects(
    (await watcher()).start(),
    /^Error: Cannot read the API groups: apis down \(HTTP 500\)$/,
  );
  kube.failNext({ method: "GET", path: "/apis/networking.k8s.io/v1", code: 503, message: "busy" });
  await assert.rejects(
    (await watcher()).start(),
    /^Error: Cannot read the networking\.k8s\.io\/v1 API: busy \(HTTP 503\)$/,
  );
  kube.failNext({
    method: "GET",
    path: "/apis/networking.k8s.io/v1/namespaces/team/ingresses",
    code: 500,
    message: "etcd down",
  });
  const failing = await watcher("team");
  await assert.rejects(
    failing.start(),
    /^Error: Cannot start the Ingress watcher: cannot list ingresses \(networking\.k8s\.io\/v1\) in namespace team: etcd down \(HTTP 500\)$/,
  );
  await failing.stop();
  kube.failNext({
    method: "GET",
    path: "/apis/networking.k8s.io/v1/ingresses",
    code: 500,
    message: "etcd down",
  });
  const failingAll = await watcher();
  await assert.rejects(
    failingAll.start(),
    /^Error: Cannot start the Ingress watcher: cannot list ingresses \(networking\.k8s\.io\/v1\): etcd down \(HTTP 500\)$/,
  );
  await failingAll.stop();
  // Stopped before it started: start() then watches nothing.
  const early = await watcher();
  await early.stop();
  kube.requests.length = 0;
  await early.start();
  assert.ok(!kube.requests.some((r) => r.path.endsWith("/ingresses")));
  assert.equal(kube.watchCount, 0);
});

Deno.test("createIngressWatcher() relists on its resync period, dropping what the watch missed", async () => {
  await using kube = await startFakeKube();
  kube.upsert(ingress("a", "default", { cls: "mesh" }));
  kube.upsert(ingress("b", "default", { cls: "mesh" }));
  const w = await meshIngresses(kube.kubeconfigPath, "STRICT", { resyncMs: 100 });
  try {
    await w.start();
    assert.deepEqual(names(w.ingresses()), ["default/a", "default/b"]);
    kube.missEvents("ingresses");
    kube.remove("ingresses", "default", "a");
    await waitUntil(() => w.ingresses().length === 1, 5000, "the relist without a");
    assert.deepEqual(names(w.ingresses()), ["default/b"]);
  } finally {
    await w.stop();
  }
});

Deno.test("createIngressWatcher() tells no change when nothing is selected, and needs no kubeconfig when OFF", async () => {
  await using kube = await startFakeKube();
  kube.upsert(ingress("a", "default", { cls: "nginx" }));
  const w = await meshIngresses(kube.kubeconfigPath, "STRICT");
  let changes = 0;
  w.onChange(() => changes++);
  try {
    await w.start();
    assert.deepEqual(w.ingresses(), []);
    assert.equal(changes, 0);
  } finally {
    await w.stop();
  }
  const off = await meshIngresses("/nonexistent/kubeconfig", "OFF");
  await off.start();
  await off.stop();
  assert.equal(off.apiVersion, "");
});

Deno.test("createIngressWatcher() uses networking.k8s.io/v1 when the group serves older versions too", async () => {
  await using kube = await startFakeKube();
  // networking.k8s.io also served in v1beta1 (Kubernetes 1.19 to 1.21), here by a custom resource.
  kube.upsert({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "oldthings.networking.k8s.io" },
    spec: {
      group: "networking.k8s.io",
      scope: "Namespaced",
      names: { plural: "oldthings", singular: "oldthing", kind: "OldThing" },
      versions: [{ name: "v1beta1", served: true, storage: true }],
    },
  });
  kube.upsert(ingress("a", "default", { cls: "mesh" }));
  const w = await meshIngresses(kube.kubeconfigPath, "STRICT");
  try {
    await w.start();
    assert.equal(w.apiVersion, "networking.k8s.io/v1");
    assert.deepEqual(names(w.ingresses()), ["default/a"]);
  } finally {
    await w.stop();
  }
});

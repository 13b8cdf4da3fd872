import assert from "node:assert/strict";
import { type JsonObject, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { createIngressWatcher, ingressConfigObject } from "./ingress.ts";
import { normalizeIngress } from "../model/ingress.ts";

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

Deno.test("createIngressWatcher() keeps the Ingresses of the mesh class in STRICT mode and follows changes", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team"] });
  kube.upsert(ingress("a", "default", { cls: "mesh" }));
  kube.upsert(ingress("b", "team", { className: "mesh" }));
  kube.upsert(ingress("c", "default")); // no class: not in STRICT
  kube.upsert(ingress("d", "default", { cls: "nginx" }));
  const w = await createIngressWatcher({
    kubeconfigPath: kube.kubeconfigPath,
    resyncMs: 0,
    meshConfig: { ingressClass: "mesh", ingressControllerMode: "STRICT" },
  });
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
  const w = await createIngressWatcher({
    kubeconfigPath: kube.kubeconfigPath,
    appNamespace: "team",
    resyncMs: 0,
    meshConfig: { ingressClass: "mesh", ingressControllerMode: "DEFAULT" },
  });
  try {
    await w.start();
    assert.deepEqual(names(w.ingresses()), ["team/b"]);
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
  const w = await createIngressWatcher({
    kubeconfigPath: kube.kubeconfigPath,
    resyncMs: 0,
    meshConfig: { ingressClass: "mesh", ingressControllerMode: "OFF" },
  });
  await w.start();
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

import assert from "node:assert/strict";
import { type JsonObject, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { loadKubeConfig } from "../kube/mod.ts";
import { logFile } from "./_testutil.ts";
import { serviceAddresses, syncIngressStatus } from "./ingress_status.ts";

/** The gateway Service "gw" of `namespace`, with `status` when given. */
const gateway = (namespace: string, status?: JsonObject): JsonObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "gw", namespace },
  spec: { ports: [{ name: "http", port: 80 }] },
  ...(status ? { status } : {}),
});

Deno.test("serviceAddresses() takes the load balancer's ips and hostnames, else the external IPs", () => {
  assert.deepEqual(
    serviceAddresses({
      status: { loadBalancer: { ingress: [{ ip: "1.1.1.1" }, { hostname: "lb.example" }, {}] } },
      spec: { externalIPs: ["9.9.9.9"] },
    }),
    [{ ip: "1.1.1.1" }, { hostname: "lb.example" }],
  );
  assert.deepEqual(serviceAddresses({ spec: { externalIPs: ["9.9.9.9", "8.8.8.8"] } }), [
    { ip: "9.9.9.9" },
    { ip: "8.8.8.8" },
  ]);
  assert.deepEqual(serviceAddresses({ status: { loadBalancer: { ingress: [] } } }), []);
  assert.deepEqual(serviceAddresses({}), []);
});

const ingress = (name: string): JsonObject => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "Ingress",
  metadata: { name, namespace: "default" },
  spec: { rules: [{ host: `${name}.example.com` }] },
});

Deno.test("syncIngressStatus() writes the service's addresses into the Ingresses that differ, skips missing ones", async () => {
  await using kube = await startFakeKube();
  kube.upsert(gateway("mesh-system", { loadBalancer: { ingress: [{ ip: "10.1.1.1" }] } }));
  kube.upsert(ingress("web"));
  kube.upsert(ingress("api"));
  const kubeConfig = await loadKubeConfig(kube.kubeconfigPath);
  const opts = {
    kubeConfig,
    apiVersion: "networking.k8s.io/v1",
    service: { name: "gw", namespace: "mesh-system" },
    ingresses: [
      { name: "web", namespace: "default" },
      { name: "api", namespace: "default" },
      { name: "gone", namespace: "default" }, // 404: skipped quietly
    ],
  };
  const status = (name: string) =>
    (kube.get("ingresses", "default", name) as { status?: unknown } | undefined)?.status;
  assert.equal(await syncIngressStatus(opts), 2);
  assert.deepEqual(status("web"), { loadBalancer: { ingress: [{ ip: "10.1.1.1" }] } });
  assert.deepEqual(status("api"), { loadBalancer: { ingress: [{ ip: "10.1.1.1" }] } });
  assert.deepEqual(kube.get("ingresses", "default", "web")?.spec, ingress("web").spec);
  // already right: nothing written
  assert.equal(await syncIngressStatus(opts), 0);

  // no such service: a warning, nothing written
  const log = await logFile();
  try {
    assert.equal(
      await syncIngressStatus({ ...opts, service: { name: "nope", namespace: "x" } }),
      0,
    );
    assert.match(
      (await log.lines()).join("\n"),
      /^warn default Ingress status: cannot read service x\/nope: .*404/m,
    );
  } finally {
    await log.close();
  }
});

Deno.test("serviceAddresses() copes with a status without a load balancer", () => {
  assert.deepEqual(serviceAddresses({ status: {}, spec: { externalIPs: ["9.9.9.9"] } }), [
    { ip: "9.9.9.9" },
  ]);
  assert.deepEqual(serviceAddresses({ status: { loadBalancer: {} }, spec: {} }), []);
});

Deno.test("syncIngressStatus() clears addresses, skips what is right or gone, warns per Ingress it cannot update", async () => {
  await using kube = await startFakeKube();
  kube.upsert(gateway("mesh-system", {}));
  kube.upsert({ ...ingress("bare"), status: {} }); // no loadBalancer: nothing to clear
  kube.upsert({ ...ingress("empty"), status: { loadBalancer: {} } });
  kube.upsert({ ...ingress("old"), status: { loadBalancer: { ingress: [{ ip: "10.9.9.9" }] } } });
  kube.upsert({ ...ingress("stuck"), status: { loadBalancer: { ingress: [{ ip: "10.9.9.9" }] } } });
  kube.upsert(ingress("after"));
  const kubeConfig = await loadKubeConfig(kube.kubeconfigPath);
  const opts = {
    kubeConfig,
    apiVersion: "networking.k8s.io/v1",
    service: { name: "gw", namespace: "mesh-system" },
    ingresses: ["bare", "empty", "gone", "stuck", "old", "after"].map((name) => ({
      name,
      namespace: "default",
    })),
  };
  const log = await logFile();
  try {
    kube.failNext({
      method: "PUT",
      path: "/apis/networking.k8s.io/v1/namespaces/default/ingresses/stuck/status",
      code: 500,
      message: "etcd down",
    });
    kube.requests.length = 0;
    // The service has no address: "old" is cleared, "stuck" fails, the others are right already.
    assert.equal(await syncIngressStatus(opts), 1);
    assert.deepEqual(
      (kube.get("ingresses", "default", "old") as { status?: unknown }).status,
      { loadBalancer: { ingress: [] } },
    );
    assert.deepEqual(
      kube.requests.filter((r) => r.method === "PUT").map((r) => r.path.split("/").at(-2)),
      ["stuck", "old"],
    );
    const lines = await log.lines();
    assert.deepEqual(lines, [
      "warn default Ingress status: cannot update default/stuck: etcd down (HTTP 500)",
    ]);
  } finally {
    await log.close();
  }
});

Deno.test("syncIngressStatus() warns about a failure that is not an HTTP status", async () => {
  await using kube = await startFakeKube();
  kube.upsert(gateway("default"));
  const log = await logFile();
  try {
    // an API version without its version part: the client refuses before any request
    const written = await syncIngressStatus({
      kubeConfig: await loadKubeConfig(kube.kubeconfigPath),
      apiVersion: "networking.k8s.io",
      service: { name: "gw", namespace: "default" },
      ingresses: [{ name: "a", namespace: "default" }],
    });
    assert.equal(written, 0);
    assert.match(
      (await log.lines()).join("\n"),
      /^warn default Ingress status: cannot update default\/a: Required parameter version/m,
    );
  } finally {
    await log.close();
  }
});

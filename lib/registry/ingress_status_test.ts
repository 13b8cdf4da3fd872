import assert from "node:assert/strict";
import { type JsonObject, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { loadKubeConfig } from "../kube/mod.ts";
import { configureLogging, defaultLogOptions } from "../log/mod.ts";
import { serviceAddresses, syncIngressStatus } from "./ingress_status.ts";

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
  kube.upsert({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "gw", namespace: "mesh-system" },
    spec: { ports: [{ name: "http", port: 80 }] },
    status: { loadBalancer: { ingress: [{ ip: "10.1.1.1" }] } },
  });
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
  const dir = await Deno.makeTempDir();
  const logging = await configureLogging({
    ...defaultLogOptions(["default"]),
    targets: [`${dir}/out.log`],
  });
  try {
    assert.equal(
      await syncIngressStatus({ ...opts, service: { name: "nope", namespace: "x" } }),
      0,
    );
    await logging.dispose();
    const log = await Deno.readTextFile(`${dir}/out.log`);
    assert.match(log, /\twarn\tdefault\tIngress status: cannot read service x\/nope: .*404/);
  } finally {
    await logging.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});

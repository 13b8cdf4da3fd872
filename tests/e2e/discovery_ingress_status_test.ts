/**
 * End-to-end: `mesh-discovery --ingressStatus` against the fake API server sets
 * `status.loadBalancer` of the Ingresses of the mesh class from the ingress gateway service, and
 * follows a change of the service's addresses; other Ingresses are left alone, and without the
 * flag nothing is written.
 */
import assert from "node:assert/strict";
import { crdManifests } from "../../lib/model/mod.ts";
import { type JsonObject, startFakeKube } from "../harness/fake_kube.ts";
import { waitUntil, withTempDir } from "../harness/procs.ts";
import { startDiscovery } from "./discovery_harness.ts";

const ingress = (name: string, cls: string): JsonObject => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "Ingress",
  metadata: { name, namespace: "default", annotations: { "kubernetes.io/ingress.class": cls } },
  spec: {
    rules: [{
      host: `${name}.example.com`,
      http: {
        paths: [{
          path: "/",
          pathType: "Prefix",
          backend: { service: { name: "hello", port: { number: 80 } } },
        }],
      },
    }],
  },
});

const gateway = (ips: string[]): JsonObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "mesh-ingressgateway", namespace: "mesh-system" },
  spec: { type: "LoadBalancer", ports: [{ name: "http", port: 80 }] },
  status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
});

Deno.test("mesh-discovery --ingressStatus writes the gateway service's addresses into the mesh's Ingresses", async () => {
  await withTempDir(async (dir) => {
    await using kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
    kube.upsert(gateway(["203.0.113.7"]));
    kube.upsert(ingress("web", "mesh"));
    kube.upsert(ingress("other", "nginx"));
    await Deno.writeTextFile(`${dir}/mesh`, "ingressService: mesh-ingressgateway\n");
    const d = await startDiscovery([
      "--registries",
      "Orchestrator",
      "--orchconfig",
      kube.kubeconfigPath,
      "--meshConfig",
      `${dir}/mesh`,
      "--namespace",
      "mesh-system",
      "--ingressStatus",
    ]);
    const lb = (name: string) =>
      JSON.stringify(
        (kube.get("ingresses", "default", name) as JsonObject & {
          status?: { loadBalancer?: { ingress?: unknown } };
        })?.status?.loadBalancer?.ingress ?? [],
      );
    try {
      await waitUntil(() => lb("web") === '[{"ip":"203.0.113.7"}]', 15_000, "the status");
      assert.equal(lb("other"), "[]", "an Ingress of another class is left alone");
      // the gateway moves: the status follows (checked every 10 s)
      kube.upsert(gateway(["203.0.113.8", "203.0.113.9"]));
      await waitUntil(
        () => lb("web") === '[{"ip":"203.0.113.8"},{"ip":"203.0.113.9"}]',
        15_000,
        "the new status",
      );
    } finally {
      const status = await d.proc.stop();
      assert.equal(status.code, 0, d.proc.output().slice(-3000));
    }
  });
});

Deno.test("mesh-discovery --ingressStatus without the Orchestrator registry or an ingressService says why it is not started, and writes nothing", async () => {
  await withTempDir(async (dir) => {
    await using kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
    kube.upsert(gateway(["203.0.113.7"]));
    kube.upsert(ingress("web", "mesh"));
    await Deno.writeTextFile(`${dir}/mesh`, "ingressService: mesh-ingressgateway\n");
    await Deno.writeTextFile(`${dir}/no-service`, "ingressControllerMode: DEFAULT\n");
    const cases = [
      {
        args: ["--registries", "Mock", "--configDir", dir, "--meshConfig", `${dir}/mesh`],
        why: "needs the Orchestrator registry",
      },
      {
        args: [
          "--registries",
          "Orchestrator",
          "--orchconfig",
          kube.kubeconfigPath,
          "--meshConfig",
          `${dir}/no-service`,
        ],
        why: "the mesh config sets no ingressService",
      },
    ];
    for (const { args, why } of cases) {
      const d = await startDiscovery([...args, "--namespace", "mesh-system", "--ingressStatus"]);
      try {
        await d.proc.waitFor(`--ingressStatus: not started (${why})`, 30_000);
      } finally {
        const status = await d.proc.stop();
        assert.equal(status.code, 0, d.proc.output().slice(-3000));
      }
      const web = kube.get("ingresses", "default", "web") as JsonObject & { status?: unknown };
      assert.equal(JSON.stringify(web.status ?? {}), "{}", why);
    }
  });
});

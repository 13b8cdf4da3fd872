/**
 * Attribute generation on the orchestrator platform: mesh-policy with `--configStoreURL
 * orch://<kubeconfig>` looks pods up through the same orchestrator (no other setting), so a rule
 * created as a custom resource matches on the labels and service account of the calling pod.
 */

import assert from "node:assert/strict";
import { startOrchTestServer } from "../../servers/policy/_testutil.ts";
import { waitUntil } from "../harness/procs.ts";
import type { JsonObject } from "../harness/fake_kube.ts";
import { startKubeWithCrds } from "./_meshctl.ts";

const o = (kind: string, name: string, spec: JsonObject): JsonObject => ({
  apiVersion: "config.mesh.io/v1alpha2",
  kind,
  metadata: { name, namespace: "mesh-system" },
  spec,
});

const pod = (name: string, labels: Record<string, string>, sa: string): JsonObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "shop", labels },
  spec: { serviceAccountName: sa, containers: [{ name: "app", image: "app" }] },
  status: { phase: "Running", podIP: "10.9.0.1" },
});

Deno.test("kubernetesenv on orch:// finds pods through the config store's orchestrator", async () => {
  await using kube = await startKubeWithCrds();
  kube.upsert({ apiVersion: "v1", kind: "Namespace", metadata: { name: "shop" } });
  kube.upsert(pod("web-v1-abc", { app: "web", version: "v1" }, "web"));
  kube.upsert(pod("web-v2-def", { app: "web", version: "v2" }, "web-canary"));
  for (
    const x of [
      o("kubernetesenv", "handler", {}),
      o("kubernetes", "attributes", {
        source_uid: 'source.uid | ""',
        destination_uid: 'destination.uid | ""',
      }),
      o("rule", "kubeattrgenrulerule", {
        actions: [{ handler: "handler.kubernetesenv", instances: ["attributes.kubernetes"] }],
      }),
      o("denier", "canary", { status: { code: 7, message: "canaries may not call payments" } }),
      o("checknothing", "nothing", {}),
      o("rule", "no-canary-payments", {
        match: 'source.serviceAccount == "web-canary" && destination.service == "payments"',
        actions: [{ handler: "canary.denier", instances: ["nothing.checknothing"] }],
      }),
    ]
  ) kube.upsert(x);
  const client = await startOrchTestServer(kube.kubeconfigPath);
  const { handle, code: check } = client;
  try {
    await handle.ready;
    await waitUntil(
      async () =>
        (await check({
          "source.uid": "kubernetes://web-v2-def.shop",
          "destination.service": "payments",
        })) === 7,
      10_000,
      "the canary denied",
    );
    assert.deepEqual(handle.issues(), []);
    assert.equal(
      await check({
        "source.uid": "kubernetes://web-v1-abc.shop",
        "destination.service": "payments",
      }),
      0,
    );
    assert.ok(kube.requests.some((r) => r.path === "/api/v1/namespaces/shop/pods/web-v2-def"));
  } finally {
    await client.close();
  }
});

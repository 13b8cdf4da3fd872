/**
 * mesh-policy with `--configStoreURL orch://<kubeconfig>` against the fake Kubernetes API server
 * (CRDs installed): rules and handlers created as custom resources take effect, namespaced
 * rules apply to their destination namespace, and a bad object leaves the last good config.
 */

import assert from "node:assert/strict";
import { startOrchTestServer } from "../../servers/policy/_testutil.ts";
import { waitUntil } from "../harness/procs.ts";
import type { JsonObject } from "../harness/fake_kube.ts";
import { startKubeWithCrds } from "./_meshctl.ts";

const o = (kind: string, name: string, ns: string, spec: JsonObject): JsonObject => ({
  apiVersion: "config.mesh.io/v1alpha2",
  kind,
  metadata: { name, namespace: ns },
  spec,
});

Deno.test("mesh-policy reads rules, instances and handlers from orch:// and keeps the last good config", async () => {
  await using kube = await startKubeWithCrds();
  kube.upsert({ apiVersion: "v1", kind: "Namespace", metadata: { name: "shop" } });
  const client = await startOrchTestServer(kube.kubeconfigPath);
  const { handle, code: check } = client;
  try {
    await handle.ready;
    const shop = { "destination.service": "cart.shop.svc.cluster.local", "source.name": "web" };
    const other = { "destination.service": "cart.prod.svc.cluster.local", "source.name": "web" };
    assert.equal(await check(shop), 0);
    kube.upsert(o("listchecker", "allowed", "shop", { overrides: ["frontend"] }));
    kube.upsert(o("listentry", "src", "shop", { value: "source.name" }));
    kube.upsert(o("rule", "whitelist", "shop", {
      actions: [{ handler: "allowed.listchecker", instances: ["src.listentry"] }],
    }));
    await waitUntil(async () => (await check(shop)) === 5, 10_000, "the shop rule");
    assert.equal(await check(other), 0, "a shop rule does not apply to prod");
    assert.equal(await check({ ...shop, "source.name": "frontend" }), 0);
    kube.upsert(o("rule", "whitelist", "shop", {
      match: "source.name ==",
      actions: [{ handler: "allowed.listchecker", instances: ["src.listentry"] }],
    }));
    await waitUntil(() => handle.issues().length > 0, 10_000, "the rejection");
    assert.match(
      handle.issues()[0].message,
      /^rule\/shop\/whitelist: spec\.match: Unexpected end of expression \(at position 14\)/,
    );
    assert.equal(await check(shop), 5, "the last good rule stays");
  } finally {
    await client.close();
  }
});

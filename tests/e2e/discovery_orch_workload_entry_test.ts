/**
 * End-to-end: `mesh-discovery --registries Orchestrator` against the fake API server: a
 * WorkloadEntry custom resource whose labels a Service's selector selects becomes an endpoint of
 * that Service (at the Service's target port) next to its pods, and leaves when deleted.
 */

import assert from "node:assert/strict";
import { crdManifests } from "../../lib/model/mod.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { type JsonObject, startFakeKube } from "../harness/fake_kube.ts";
import { kubectlAvailable, runKubectl } from "../harness/kubectl.ts";
import { waitUntil } from "../harness/procs.ts";
import { adsClient, type Response } from "./_ads_client.ts";
import { dbServiceEntry, http, startDiscovery } from "./discovery_harness.ts";

const CLUSTER = "outbound|80||inventory.default.svc.cluster.local";

function addresses(r: Response | undefined): string[] {
  // deno-lint-ignore no-explicit-any
  return (r?.resources[0]?.endpoints ?? []).flatMap((l: any) =>
    // deno-lint-ignore no-explicit-any
    (l.lb_endpoints ?? []).map((e: any) =>
      `${e.endpoint.address.socket_address.address}:${e.endpoint.address.socket_address.port_value}`
    )
  ).sort();
}

Deno.test("mesh-discovery makes a WorkloadEntry an endpoint of the orchestrator Service that selects it", async () => {
  await using kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  kube.upsert({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "inventory", namespace: "default" },
    spec: {
      clusterIP: "10.96.0.20",
      selector: { app: "inventory" },
      ports: [{ name: "http", port: 80, targetPort: 8080 }],
    },
  });
  kube.upsert({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "inventory-1", namespace: "default", labels: { app: "inventory" } },
    spec: { serviceAccountName: "inventory", containers: [{ name: "app", image: "app" }] },
    status: { podIP: "10.1.0.1" },
  });
  kube.upsert({
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: { name: "inventory", namespace: "default" },
    subsets: [{
      addresses: [{ ip: "10.1.0.1", targetRef: { kind: "Pod", name: "inventory-1" } }],
      ports: [{ name: "http", port: 8080 }],
    }],
  });
  const d = await startDiscovery([
    "--registries",
    "Orchestrator",
    "--orchconfig",
    kube.kubeconfigPath,
  ]);
  const client = adsClient(d.grpc);
  const sidecar = client.open();
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 20_000);
    const node = { id: "sidecar~10.1.0.9~client.default~default.svc.cluster.local" };
    sidecar.send({ node, type_url: TYPE_URLS.endpoint, resource_names: [CLUSTER] });
    let eds = await sidecar.next(TYPE_URLS.endpoint, 10_000);
    assert.deepEqual(addresses(eds), ["10.1.0.1:8080"]);
    const ack = (r: Response) =>
      sidecar.send({
        type_url: TYPE_URLS.endpoint,
        resource_names: [CLUSTER],
        version_info: r.version_info,
        response_nonce: r.nonce,
      });
    ack(eds);

    const res = await fetch(
      `${kube.url}/apis/networking.mesh.io/v1alpha3/namespaces/default/workloadentries`,
      {
        method: "POST",
        headers: { ...kube.authHeaders, "content-type": "application/json" },
        body: JSON.stringify({
          apiVersion: "networking.mesh.io/v1alpha3",
          kind: "WorkloadEntry",
          metadata: { name: "inventory-vm", namespace: "default" },
          spec: { address: "10.5.0.1", labels: { app: "inventory", version: "vm" } },
        }),
      },
    );
    assert.ok(res.ok, await res.text());
    await waitUntil(
      async () => {
        eds = await sidecar.next(TYPE_URLS.endpoint, 10_000);
        ack(eds);
        return addresses(eds).length === 2;
      },
      20_000,
      "the WorkloadEntry's endpoint",
    );
    assert.deepEqual(addresses(eds), ["10.1.0.1:8080", "10.5.0.1:8080"]);

    // a second pod behind the Service: an orchestrator endpoint event naming the Service, whose
    // instances include the WorkloadEntry it selects
    kube.upsert({
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: { name: "inventory", namespace: "default" },
      subsets: [{
        addresses: [
          { ip: "10.1.0.1", targetRef: { kind: "Pod", name: "inventory-1" } },
          { ip: "10.1.0.2" },
        ],
        ports: [{ name: "http", port: 8080 }],
      }],
    });
    await waitUntil(
      async () => {
        eds = await sidecar.next(TYPE_URLS.endpoint, 10_000);
        ack(eds);
        return addresses(eds).includes("10.1.0.2:8080");
      },
      20_000,
      "the second pod's endpoint",
    );
    assert.deepEqual(addresses(eds), ["10.1.0.1:8080", "10.1.0.2:8080", "10.5.0.1:8080"]);

    const del = await fetch(
      `${kube.url}/apis/networking.mesh.io/v1alpha3/namespaces/default/workloadentries/inventory-vm`,
      { method: "DELETE", headers: kube.authHeaders },
    );
    assert.ok(del.ok, await del.text());
    await waitUntil(
      async () => {
        eds = await sidecar.next(TYPE_URLS.endpoint, 10_000);
        ack(eds);
        return addresses(eds).length === 2;
      },
      20_000,
      "the endpoint gone",
    );
    assert.deepEqual(addresses(eds), ["10.1.0.1:8080", "10.1.0.2:8080"]);
  } finally {
    await sidecar.close().catch(() => {});
    client.close();
    const status = await d.proc.stop();
    assert.equal(status.code, 0, d.proc.output().slice(-3000));
  }
});

/** `mesh_push_triggers{type}` of a running discovery. */
async function triggers(monitoring: string) {
  const text = (await http(`http://${monitoring}/metrics`)).body;
  const num = (t: string) =>
    Number(new RegExp(`^mesh_push_triggers\\{type="${t}"\\} (\\d+)`, "m").exec(text)?.[1] ?? 0);
  return { endpoint: num("endpoint"), service: num("service"), config: num("config") };
}

Deno.test("mesh-discovery takes a ServiceEntry kubectl-applied again with new endpoints as an endpoint change", async () => {
  if (!(await kubectlAvailable())) throw new Error("kubectl is required (Debian package kubectl)");
  await using kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  const d = await startDiscovery([
    "--registries",
    "Orchestrator",
    "--orchconfig",
    kube.kubeconfigPath,
  ]);
  const cluster = "outbound|5432||db.example.internal";
  const apply = async (text: string) => {
    const r = await runKubectl(kube.kubeconfigPath, ["apply", "-f", "-"], { stdin: text });
    assert.equal(r.code, 0, r.stderr);
  };
  const client = adsClient(d.grpc);
  const sidecar = client.open();
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 20_000);
    await apply(dbServiceEntry("10.6.0.1"));
    const node = { id: "sidecar~10.1.0.9~client.default~default.svc.cluster.local" };
    let eds: Response | undefined;
    await waitUntil(async () => {
      sidecar.send({ node, type_url: TYPE_URLS.endpoint, resource_names: [cluster] });
      eds = await sidecar.next(TYPE_URLS.endpoint, 5_000);
      return addresses(eds).length === 1;
    }, 20_000);
    sidecar.send({
      type_url: TYPE_URLS.endpoint,
      resource_names: [cluster],
      version_info: eds!.version_info,
      response_nonce: eds!.nonce,
    });
    const before = await triggers(d.monitoring);

    await apply(dbServiceEntry("10.6.0.2")); // kubectl rewrites its last-applied-configuration annotation too
    eds = await sidecar.next(TYPE_URLS.endpoint, 10_000);
    assert.deepEqual(addresses(eds), ["10.6.0.2:5432"]);
    const after = await triggers(d.monitoring);
    assert.ok(after.endpoint > before.endpoint, "an endpoint event");
    assert.deepEqual(
      [after.service, after.config],
      [before.service, before.config],
      "no configuration recomputed",
    );
  } finally {
    await sidecar.close().catch(() => {});
    client.close();
    await d.proc.stop();
  }
});

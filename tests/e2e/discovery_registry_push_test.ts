/**
 * End-to-end: pushes triggered by the service registry rather than by config files. A sidecar
 * that connects before the registry knows its own endpoint gets its inbound listener as soon as
 * the registry reports it: through the Orchestrator registry (fake Kubernetes API server, watch)
 * and through a polled registry (RegistryA, a fake Consul catalog).
 */

import assert from "node:assert/strict";
import { crdManifests } from "../../lib/model/mod.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { type JsonObject, startFakeKube } from "../harness/fake_kube.ts";
import { waitUntil } from "../harness/procs.ts";
import { adsClient, type AdsStream } from "./_ads_client.ts";
import { fakeConsul, http, type RunningDiscovery, startDiscovery } from "./discovery_harness.ts";

const LDS = TYPE_URLS.listener;

/**
 * Connects a sidecar with `ip`, checks its first LDS has no `<ip>_<port>` inbound listener, ACKs
 * it, runs `addEndpoint`, and returns the names of the next LDS response (within 10 s).
 */
async function inboundAfter(
  d: RunningDiscovery,
  ip: string,
  port: number,
  addEndpoint: () => void | Promise<void>,
): Promise<string[]> {
  await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
  const client = adsClient(d.grpc);
  const stream: AdsStream = client.open();
  try {
    stream.send({
      node: { id: `sidecar~${ip}~app-1.default~default.svc.cluster.local` },
      type_url: LDS,
    });
    const lds = await stream.next(LDS);
    const before = lds.resources.map((l) => l.name as string);
    assert.ok(before.includes("virtualOutbound"), before.join(","));
    assert.ok(!before.includes(`${ip}_${port}`), `inbound listener before the endpoint exists`);
    stream.send({ type_url: LDS, version_info: lds.version_info, response_nonce: lds.nonce });
    // Let the start-up events settle first (the config store's initial ServiceEntry list can
    // arrive after /ready and causes a full push; merged with the endpoint change by the
    // debouncer it would hide a missing refresh). A late one makes the test pass, never fail.
    await new Promise((r) => setTimeout(r, 1000));
    await addEndpoint();
    const lds2 = await stream.next(LDS, 10_000);
    return lds2.resources.map((l) => l.name as string);
  } finally {
    await stream.close();
    client.close();
  }
}

Deno.test("mesh-discovery pushes a sidecar its inbound listener when the Orchestrator registry reports its pod's endpoint", async () => {
  // A deployment scaling up: app-0 is ready; app-1 exists (same service account), its proxy
  // connects, and only then does its address join the Endpoints (readiness). That is an
  // endpoints-only change of the registry, not a service change.
  await using kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  kube.upsert({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "app", namespace: "default" },
    spec: {
      clusterIP: "10.96.0.20",
      selector: { app: "app" },
      ports: [{ name: "http", port: 80 }],
    },
  });
  const pod = (name: string, ip: string): JsonObject => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", labels: { app: "app" } },
    spec: { serviceAccountName: "app", containers: [{ name: "app", image: "app" }] },
    status: { podIP: ip },
  });
  const endpoints = (pods: [string, string][]): JsonObject => ({
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: { name: "app", namespace: "default" },
    subsets: [{
      addresses: pods.map(([name, ip]) => ({
        ip,
        targetRef: { kind: "Pod", name, namespace: "default" },
      })),
      ports: [{ name: "http", port: 8080 }],
    }],
  });
  kube.upsert(pod("app-0", "10.1.0.6"));
  kube.upsert(pod("app-1", "10.1.0.7"));
  kube.upsert(endpoints([["app-0", "10.1.0.6"]]));
  const d = await startDiscovery([
    "--registries",
    "Orchestrator",
    "--orchconfig",
    kube.kubeconfigPath,
  ]);
  try {
    const names = await inboundAfter(d, "10.1.0.7", 8080, () => {
      kube.upsert(endpoints([["app-0", "10.1.0.6"], ["app-1", "10.1.0.7"]]));
    });
    assert.ok(names.includes("10.1.0.7_8080"), names.join(","));
  } finally {
    await d.proc.stop();
  }
});

Deno.test("mesh-discovery pushes a sidecar its inbound listener when a polled registry (RegistryA) reports its endpoint", async () => {
  const instances: Record<string, unknown>[] = [
    { Node: "n1", Address: "10.0.0.1", ServicePort: 9080, NodeMeta: { protocol: "http" } },
  ];
  const { server: consul, args: consulArgs } = fakeConsul(() => instances);
  const dir = await Deno.makeTempDir({ prefix: "mesh-regpush-" });
  const d = await startDiscovery([
    "--configDir",
    dir,
    ...consulArgs,
  ]);
  try {
    const names = await inboundAfter(d, "10.0.0.7", 9080, () => {
      instances.push({
        Node: "n2",
        Address: "10.0.0.7",
        ServicePort: 9080,
        NodeMeta: { protocol: "http" },
      });
    });
    assert.ok(names.includes("10.0.0.7_9080"), names.join(","));
  } finally {
    await d.proc.stop();
    await consul.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

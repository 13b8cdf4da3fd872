/**
 * Real calls through a Sidecar's scope: proxyless gRPC clients (grpc-js-xds and gRPC C-core) of
 * namespace `default` call a service of their namespace (a ServiceEntry whose endpoint is a
 * WorkloadEntry) and one of namespace `finance`. With the Sidecar `default/default`
 * (`egress: ./*`) the first answers and the second is not found; once the Sidecar is deleted,
 * the second answers too.
 */

import assert from "node:assert/strict";
import { startWhoAmI, type WhoAmIBackend } from "../../cli/demo/whoami.ts";
import { type CallResult, startXdsClient, type XdsClientProcess } from "../harness/xds_client.ts";
import { waitUntil } from "../harness/procs.ts";
import { http, startDiscovery } from "./discovery_harness.ts";

const INVENTORY = "xds:///inventory.default.svc.cluster.local:7070";
const BILLING = "xds:///billing.finance.svc.cluster.local:7070";

const config = (inventory: WhoAmIBackend, billing: WhoAmIBackend) => ({
  "inventory.yaml": `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: inventory, namespace: default}
spec:
  hosts: [inventory.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  workloadSelector: {labels: {app: inventory}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: inventory-vm, namespace: default}
spec:
  address: 127.0.0.1
  ports: {grpc: ${inventory.port}}
  labels: {app: inventory, version: vm}
`,
  "billing.yaml": `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: billing, namespace: finance}
spec:
  hosts: [billing.finance.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  endpoints: [{address: 127.0.0.1, ports: {grpc: ${billing.port}}}]
`,
  "sidecar.yaml": `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: default}
spec:
  egress: [{hosts: ["./*"]}]
`,
});

const ok = (r: CallResult) => Object.keys(r.codes).every((c) => c === "0");
const failed = (r: CallResult) => !Object.keys(r.codes).includes("0");

Deno.test({
  name: "proxyless gRPC clients reach only what their namespace's Sidecar lets through",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-proxyless-sidecar-" });
  const backends: WhoAmIBackend[] = [];
  const clients: XdsClientProcess[] = [];
  let discovery: Awaited<ReturnType<typeof startDiscovery>> | undefined;
  try {
    const inventory = await startWhoAmI({ host: "127.0.0.1", port: 0, version: "inventory" });
    backends.push(inventory);
    const billing = await startWhoAmI({ host: "127.0.0.1", port: 0, version: "billing" });
    backends.push(billing);
    for (const [name, text] of Object.entries(config(inventory, billing))) {
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
    discovery = await startDiscovery(["--registries", "ServiceEntry", "--configDir", dir]);
    const d = discovery;
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 20_000);
    const grpcPort = Number(d.grpc.slice(d.grpc.lastIndexOf(":") + 1));
    for (const impl of ["grpc-js", "grpc-core"] as const) {
      clients.push(await startXdsClient({ grpcPort, id: `shop-${impl}`, impl }));
    }
    for (const c of clients) {
      const r = await c.callUntil(INVENTORY, ok, { n: 5, timeoutMs: 30_000 });
      assert.deepEqual(Object.keys(r.versions), ["inventory"], c.nodeId);
      const denied = await c.call(BILLING, { n: 3, deadlineMs: 5000 });
      assert.ok(failed(denied), `${c.nodeId} reached billing: ${JSON.stringify(denied)}`);
    }
    assert.equal(billing.served(), 0);

    await Deno.remove(`${dir}/sidecar.yaml`);
    for (const c of clients) {
      const r = await c.callUntil(BILLING, ok, { n: 5, timeoutMs: 30_000 });
      assert.deepEqual(Object.keys(r.versions), ["billing"], c.nodeId);
    }
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    if (discovery) await discovery.proc.stop();
    for (const b of backends) await b.shutdown();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

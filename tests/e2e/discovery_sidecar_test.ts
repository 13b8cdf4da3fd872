/**
 * End-to-end: `mesh-discovery --configDir` with a `Sidecar` and `WorkloadEntry` objects written
 * by `meshctl create` as Istio users write them (networking.istio.io/v1). A proxy of the
 * Sidecar's namespace is sent only the clusters its egress hosts allow (ADS and REST xDS), a
 * proxy of another namespace the whole mesh; the VM of a WorkloadEntry is the endpoint of the
 * ServiceEntry that selects it; deleting the Sidecar pushes the whole mesh to the scoped proxy.
 */

import assert from "node:assert/strict";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { waitUntil } from "../harness/procs.ts";
import { adsClient, type AdsStream } from "./_ads_client.ts";
import { http, post, startDiscovery } from "./discovery_harness.ts";
import { meshctlProcess, withDir } from "./_meshctl.ts";

const CONFIG = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: inventory, namespace: shop }
spec:
  hosts: [inventory.shop.example]
  location: MESH_INTERNAL
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  resolution: STATIC
  workloadSelector: { labels: { app: inventory-vm } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: inventory-vm-1, namespace: shop }
spec:
  address: 10.77.0.1
  labels: { app: inventory-vm }
  serviceAccount: inventory
  locality: eu-west/zone-1
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: billing, namespace: finance }
spec:
  hosts: [billing.finance.example]
  location: MESH_INTERNAL
  ports: [{ number: 9090, name: http, protocol: HTTP }]
  resolution: STATIC
  endpoints: [{ address: 10.88.0.1 }]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: { name: default, namespace: shop }
spec:
  egress:
  - hosts: ["./*"]
  outboundTrafficPolicy: { mode: REGISTRY_ONLY }
`;

const SHOP_NODE = "sidecar~10.1.0.7~web-1.shop~shop.svc.cluster.local";
const FINANCE_NODE = "sidecar~10.1.0.8~pay-1.finance~finance.svc.cluster.local";
const INVENTORY = "outbound|8080||inventory.shop.example";
const BILLING = "outbound|9090||billing.finance.example";

function outbound(resources: { name?: string }[]): string[] {
  return resources.map((r) => String(r.name)).filter((n) => n.startsWith("outbound|")).sort();
}

async function clusters(stream: AdsStream, node: string): Promise<string[]> {
  stream.send({ node: { id: node }, type_url: TYPE_URLS.cluster });
  return outbound((await stream.next(TYPE_URLS.cluster, 10_000)).resources);
}

Deno.test("mesh-discovery scopes a proxy by its namespace's Sidecar and serves WorkloadEntries as endpoints", async () => {
  await withDir(async (dir) => {
    const c = await meshctlProcess(["create", "-f", "-", "-p", "fs", "--configDir", dir], {
      stdin: CONFIG,
    });
    assert.equal(c.code, 0, c.stderr);
    const d = await startDiscovery(["--registries", "ServiceEntry", "--configDir", dir]);
    const client = adsClient(d.grpc);
    const shop = client.open();
    const finance = client.open();
    try {
      await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 20_000);
      // a proxy of namespace shop sees shop's services only
      assert.deepEqual(await clusters(shop, SHOP_NODE), [INVENTORY]);
      // one of finance (no Sidecar) sees the whole mesh
      assert.deepEqual(await clusters(finance, FINANCE_NODE), [INVENTORY, BILLING].sort());

      // the WorkloadEntry is the endpoint of the ServiceEntry that selects it
      shop.send({
        node: { id: SHOP_NODE },
        type_url: TYPE_URLS.endpoint,
        resource_names: [INVENTORY],
      });
      const eds = await shop.next(TYPE_URLS.endpoint, 10_000);
      const lb = eds.resources[0]?.endpoints?.[0];
      assert.equal(lb?.locality?.region, "eu-west");
      assert.equal(lb?.lb_endpoints?.[0]?.endpoint?.address?.socket_address?.address, "10.77.0.1");

      // REST xDS gives the same scoped view
      const rest = await post(`http://${d.http}/v3/discovery:clusters`, {
        node: { id: "sidecar~10.1.0.9~web-2.shop~shop.svc.cluster.local" },
      });
      assert.equal(rest.status, 200, rest.body);
      assert.deepEqual(outbound(JSON.parse(rest.body).resources), [INVENTORY]);

      // /debug/configz shows the Sidecar served (no status) and the kinds stored
      const configz = JSON.parse((await http(`http://${d.monitoring}/debug/configz`)).body) as {
        kind?: string;
        status?: unknown;
      }[];
      const sidecar = configz.find((o) => o.kind === "Sidecar");
      assert.ok(sidecar, "Sidecar in /debug/configz");
      assert.equal(sidecar.status, undefined);

      // deleting the Sidecar pushes the whole mesh to the shop proxy
      const del = await meshctlProcess(
        ["delete", "sidecar", "default", "-n", "shop", "-p", "fs", "--configDir", dir],
      );
      assert.equal(del.code, 0, del.stderr);
      await waitUntil(async () => {
        const r = await shop.next(TYPE_URLS.cluster, 10_000);
        return outbound(r.resources).includes(BILLING);
      }, 20_000);
    } finally {
      await shop.close().catch(() => {});
      await finance.close().catch(() => {});
      client.close();
      const status = await d.proc.stop();
      assert.equal(status.code, 0, d.proc.output().slice(-3000));
    }
  });
});

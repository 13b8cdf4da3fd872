/**
 * End-to-end: `mesh-discovery --configDir` given Istio YAML as Istio's samples write it: an
 * Ingress of the reference class (`kubernetes.io/ingress.class: istio`) is served like ours, and
 * `/debug/configz` says that legacy networking kinds are stored but not served.
 */

import assert from "node:assert/strict";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { waitUntil } from "../harness/procs.ts";
import { adsClient } from "./_ads_client.ts";
import { http, startDiscovery } from "./discovery_harness.ts";
import { ingressText, meshctlProcess, withDir } from "./_meshctl.ts";

const ROUTER_ID = "router~10.1.0.50~gateway-1.mesh-system~mesh-system.svc.cluster.local";

Deno.test("mesh-discovery --configDir serves an Ingress of class istio and says legacy kinds are not served", async () => {
  await withDir(async (dir) => {
    const text = ingressText("hello").replace(
      "kubernetes.io/ingress.class: mesh",
      "kubernetes.io/ingress.class: istio",
    ) +
      "---\n" + await Deno.readTextFile(new URL("./testdata/istio08/egress.yaml", import.meta.url));
    const c = await meshctlProcess(["create", "-f", "-", "-p", "fs", "--configDir", dir], {
      stdin: text,
    });
    assert.equal(c.code, 0, c.stderr);
    const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
    const client = adsClient(d.grpc);
    const router = client.open();
    try {
      await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
      router.send({
        node: {
          id: ROUTER_ID,
          metadata: {
            fields: {
              labels: { structValue: { fields: { mesh: { stringValue: "ingressgateway" } } } },
            },
          },
        },
        type_url: TYPE_URLS.listener,
      });
      const lds = await router.next(TYPE_URLS.listener, 5000);
      assert.ok(
        lds.resources.some((l) => l.address?.socket_address?.port_value === 80),
        `no port 80 listener for the istio-class Ingress: ${lds.resources.map((l) => l.name)}`,
      );

      const configz = JSON.parse((await http(`http://${d.monitoring}/debug/configz`)).body) as {
        kind?: string;
        status?: { served: boolean; message: string };
      }[];
      const egress = configz.filter((o) => o.kind === "EgressRule");
      assert.equal(egress.length, 2);
      for (const o of egress) {
        assert.equal(o.status?.served, false);
        assert.match(o.status!.message, /convert-networking-config/);
      }
    } finally {
      await router.close().catch(() => {});
      client.close();
      const status = await d.proc.stop();
      assert.equal(status.code, 0, d.proc.output().slice(-3000));
    }
  });
});

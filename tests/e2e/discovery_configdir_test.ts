/**
 * End-to-end: `mesh-discovery discovery --registries Mock --configDir <dir>` as a real process
 * with the directory written by `meshctl -p fs`: an Ingress of the mesh class gives a router its
 * gateway listener, and a file that breaks keeps its last good config in force until it is fixed.
 */

import assert from "node:assert/strict";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { waitUntil } from "../harness/procs.ts";
import { adsClient } from "./_ads_client.ts";
import { http, startDiscovery } from "./discovery_harness.ts";
import { ingressText, meshctlProcess, withDir } from "./_meshctl.ts";

const HELLO_80 = "outbound|80||hello.default.svc.cluster.local";

const ROUTER_ID = "router~10.1.0.50~gateway-1.mesh-system~mesh-system.svc.cluster.local";

Deno.test("mesh-discovery --configDir serves a router the gateway of an Ingress created by meshctl -p fs", async () => {
  await withDir(async (dir) => {
    const c = await meshctlProcess(["create", "-f", "-", "-p", "fs", "--configDir", dir], {
      stdin: ingressText("hello"), // the Mock registry's hello
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
      const l80 = lds.resources.find((l) => l.address?.socket_address?.port_value === 80);
      assert.ok(l80, `no port 80 listener: ${lds.resources.map((l) => l.name).join(",")}`);
      router.send({ type_url: TYPE_URLS.route, resource_names: ["80"] });
      const rds = await router.next(TYPE_URLS.route, 5000);
      const routes = rds.resources[0].virtual_hosts.flatMap((h: { routes: unknown[] }) =>
        h.routes
      ) as { match: Record<string, unknown>; route: { cluster: string } }[];
      assert.equal(routes.length, 1, JSON.stringify(routes));
      assert.equal(routes[0].route.cluster, HELLO_80);
      assert.equal(routes[0].match.path ?? routes[0].match.prefix, "/echo");
    } finally {
      await router.close().catch(() => {});
      client.close();
      const status = await d.proc.stop();
      assert.equal(status.code, 0, d.proc.output().slice(-3000));
    }
  });
});

const vs = (hosts: string) =>
  `apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata:
  name: hello
  namespace: default
spec:
  hosts: ${hosts}
  http:
    - route:
        - destination: { host: hello.default.svc.cluster.local }
`;

Deno.test("mesh-discovery --configDir keeps serving the last good config while a file is broken and applies it once fixed", async () => {
  await withDir(async (dir) => {
    const file = `${dir}/routes.yaml`;
    await Deno.writeTextFile(file, vs("[hello]"));
    const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
    const configz = async () => {
      const r = await http(`http://${d.monitoring}/debug/configz`);
      return (JSON.parse(r.body) as { kind?: string; spec?: { hosts?: string[] } }[])
        .filter((o) => o.kind === "VirtualService");
    };
    try {
      await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
      assert.deepEqual((await configz()).map((o) => o.spec?.hosts), [["hello"]]);

      // broken: hosts is not a list. The error is logged; the good version stays.
      await Deno.writeTextFile(file, vs("hello-broken"));
      await d.proc.waitFor(/routes\.yaml document 1: .*spec\.hosts: must be a list/, 5000);
      assert.deepEqual((await configz()).map((o) => o.spec?.hosts), [["hello"]]);

      // fixed, with a change: applied
      await Deno.writeTextFile(file, vs("[hello, hello.default]"));
      await waitUntil(
        async () =>
          JSON.stringify((await configz()).map((o) => o.spec?.hosts)) ===
            JSON.stringify([["hello", "hello.default"]]),
        5000,
        "the fixed file to apply",
      );
    } finally {
      const status = await d.proc.stop();
      assert.equal(status.code, 0, d.proc.output().slice(-3000));
    }
  });
});

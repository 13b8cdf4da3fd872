/**
 * The first-hour stumble of the integration procedure on files: a ServiceEntry whose port 80 is
 * named `tcp` (and has no address) takes the shared outbound listener 0.0.0.0_80 from the HTTP
 * services on port 80. mesh-discovery logs it once, counts it and shows it on /debug/conflictz.
 */
import assert from "node:assert/strict";
import { withTempDir } from "../harness/procs.ts";
import { http, startDiscovery } from "./discovery_harness.ts";

const entry = (name: string, portName: string, protocol: string) => `
apiVersion: networking.mesh.io/v1alpha3
kind: ServiceEntry
metadata: {name: ${name}, namespace: default}
spec:
  hosts: [${name}.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 80, name: ${portName}, protocol: ${protocol}}]
  endpoints: [{address: 127.0.20.1}]
`;

Deno.test("mesh-discovery reports a tcp port 80 taking 0.0.0.0_80 from an HTTP service: log once, gauge, /debug/conflictz", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/config/default/serviceentries`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/config/default/serviceentries/web.yaml`,
      entry("web", "http", "HTTP"),
    );
    await Deno.writeTextFile(
      `${dir}/config/default/serviceentries/legacy.yaml`,
      entry("legacy", "tcp", "TCP"),
    );
    const d = await startDiscovery([
      "--registries",
      "ServiceEntry",
      "--configDir",
      `${dir}/config`,
      "--httpAddress",
      "127.0.0.1",
    ]);
    try {
      assert.match(d.listening, /listening http=127\.0\.0\.1:\d+ .* monitoring=127\.0\.0\.1:\d+/);
      const deadline = Date.now() + 30_000;
      let page: unknown = [];
      while (Date.now() < deadline) {
        page = JSON.parse((await http(`http://${d.http}/debug/conflictz`)).body);
        if (Array.isArray(page) && page.length) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.deepEqual(page, [{
        listener: "0.0.0.0_80",
        port: 80,
        tcpHosts: ["legacy.default.svc.cluster.local"],
        httpHosts: ["web.default.svc.cluster.local"],
      }]);
      const metrics = (await http(`http://${d.monitoring}/metrics`)).body;
      assert.match(metrics, /^mesh_conflict_outbound_listener_tcp_over_current_http 1$/m);
      // a sidecar's 0.0.0.0_80 is the TCP one
      const lds = await http(`http://${d.http}/v3/discovery:listeners`, {
        method: "POST",
        body: JSON.stringify({
          node: { id: "sidecar~127.0.20.9~c.default~default.svc.cluster.local" },
        }),
      });
      const l80 = JSON.parse(lds.body).resources.find((l: { name: string }) =>
        l.name === "0.0.0.0_80"
      );
      assert.equal(l80.filter_chains[0].filters[0].name, "envoy.filters.network.tcp_proxy");
      await http(`http://${d.monitoring}/metrics`);
      const lines = d.proc.output().split("\n").filter((l) =>
        l.includes("Outbound listener 0.0.0.0_80")
      );
      assert.equal(lines.length, 1, d.proc.output());
      assert.match(
        lines[0],
        /TCP port 80 of legacy\.default\.svc\.cluster\.local .* HTTP port 80 of web\.default\.svc\.cluster\.local/,
      );
    } finally {
      await d.proc.stop();
    }
  });
});

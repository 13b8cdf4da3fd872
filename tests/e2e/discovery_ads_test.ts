/**
 * End-to-end: `mesh-discovery discovery --registries Mock --configDir <tmp>` as a real process,
 * driven as proxies and operators do: a grpc-js ADS client, REST xDS, the debug pages, /metrics,
 * the `debug` command, config file edits.
 */

import assert from "node:assert/strict";
import { runProgram, waitUntil } from "../harness/procs.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { adsClient } from "./_ads_client.ts";
import { DISCOVERY_SCRIPT, http, startDiscovery } from "./discovery_harness.ts";

const NODE = "sidecar~127.0.1.1~hello-v1.default~default.svc.cluster.local";

const VS = (timeout: string) =>
  `apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata:
  name: hello
  namespace: default
spec:
  hosts: [hello]
  http:
  - route:
    - destination:
        host: hello.default.svc.cluster.local
    timeout: ${timeout}
`;

Deno.test("mesh-discovery discovery serves ADS, REST, debug pages and metrics when run with the Mock registry", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
  const client = adsClient(d.grpc);
  const stream = client.open();
  try {
    assert.match(d.proc.output(), /Mesh configuration .* not found; using the default mesh/);

    // /ready turns 200 once synced.
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);

    // CDS (wildcard) → EDS → LDS → RDS, each ACKed.
    stream.send({ node: { id: NODE }, type_url: TYPE_URLS.cluster });
    const cds = await stream.next(TYPE_URLS.cluster);
    const names = cds.resources.map((c) => c.name);
    assert.ok(names.includes("outbound|80||world.default.svc.cluster.local"), names.join(","));
    stream.send({
      type_url: TYPE_URLS.cluster,
      version_info: cds.version_info,
      response_nonce: cds.nonce,
    });
    const edsNames = cds.resources.filter((c) => c.type === "EDS").map((c) => c.name);
    stream.send({ type_url: TYPE_URLS.endpoint, resource_names: edsNames });
    const eds = await stream.next(TYPE_URLS.endpoint);
    const world = eds.resources.find((c) =>
      c.cluster_name === "outbound|80||world.default.svc.cluster.local"
    );
    assert.ok(world, "no world assignment");
    assert.equal(world.endpoints[0].lb_endpoints.length, 2);
    stream.send({
      type_url: TYPE_URLS.endpoint,
      resource_names: edsNames,
      version_info: eds.version_info,
      response_nonce: eds.nonce,
    });
    stream.send({ type_url: TYPE_URLS.listener });
    const lds = await stream.next(TYPE_URLS.listener);
    assert.ok(lds.resources.some((l) => l.name === "0.0.0.0_80"));
    stream.send({
      type_url: TYPE_URLS.listener,
      version_info: lds.version_info,
      response_nonce: lds.nonce,
    });
    stream.send({ type_url: TYPE_URLS.route, resource_names: ["80"] });
    const rds = await stream.next(TYPE_URLS.route);
    assert.equal(rds.resources[0].name, "80");
    stream.send({
      type_url: TYPE_URLS.route,
      resource_names: ["80"],
      version_info: rds.version_info,
      response_nonce: rds.nonce,
    });

    // /debug/adsz shows the connection; ?proxyID filters; unknown proxy → 404.
    const adsz = JSON.parse((await http(`http://${d.monitoring}/debug/adsz`)).body);
    assert.equal(adsz.length, 1);
    assert.match(adsz[0].node, /^sidecar~127\.0\.1\.1~hello-v1\.default~/);
    assert.ok(adsz[0].clusters.some((c: { name: string }) => c.name.includes("world")));
    assert.equal((await http(`http://${d.http}/debug/adsz?proxyID=hello-v1.default`)).status, 200);
    assert.equal((await http(`http://${d.http}/debug/adsz?proxyID=nobody.default`)).status, 404);

    // /debug/syncz shows acked versions.
    await waitUntil(
      async () => {
        const s = JSON.parse((await http(`http://${d.monitoring}/debug/syncz`)).body);
        return s[0]?.rds?.acked === rds.version_info && s[0]?.cds?.acked === cds.version_info;
      },
      5000,
      "syncz to show the ACKs",
    );

    // Editing a VirtualService file pushes a new RDS version within a second.
    const t0 = Date.now();
    await Deno.writeTextFile(`${dir}/hello-vs.yaml`, VS("3s"));
    const rds2 = await stream.next(TYPE_URLS.route, 3000);
    assert.ok(Date.now() - t0 < 1000, `RDS push took ${Date.now() - t0} ms`);
    assert.notEqual(rds2.version_info, rds.version_info);
    const vhost = rds2.resources[0].virtual_hosts.find((v: { name: string }) =>
      v.name === "hello.default.svc.cluster.local:80"
    );
    assert.ok(vhost, "no hello vhost");
    assert.deepEqual(vhost.routes[0].route.timeout, { seconds: "3" });

    // A NACK shows up in syncz and in the metrics.
    stream.send({
      type_url: TYPE_URLS.route,
      resource_names: ["80"],
      version_info: rds.version_info,
      response_nonce: rds2.nonce,
      error_detail: { code: 3, message: "route rejected by test" },
    });
    await waitUntil(
      async () => {
        const s = JSON.parse(
          (await http(`http://${d.http}/debug/syncz?proxyID=hello-v1.default`)).body,
        );
        return s[0]?.rds?.nack?.error === "route rejected by test";
      },
      5000,
      "syncz to show the NACK",
    );
    const metrics = (await http(`http://${d.monitoring}/metrics`)).body;
    assert.match(metrics, /^mesh_xds_rejects\{type="rds"\} 1$/m);
    assert.match(metrics, /^mesh_xds 1$/m);
    assert.match(metrics, /^mesh_services 2$/m);
    assert.match(metrics, /^mesh_virt_services 1$/m);
    assert.match(metrics, /^mesh_xds_pushes\{type="cds"\} \d+$/m);
    assert.match(metrics, /^process_resident_memory_bytes \d+/m);
    // Every sample line parses as Prometheus text.
    for (const l of metrics.split("\n")) {
      if (l === "" || l.startsWith("# HELP ") || l.startsWith("# TYPE ")) continue;
      assert.match(l, /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+0-9.eEInfNa]+$/, l);
    }

    // REST xDS.
    const rest = await fetch(`http://${d.http}/v3/discovery:clusters`, {
      method: "POST",
      body: JSON.stringify({
        node: { id: NODE },
        resource_names: ["outbound|80||hello.default.svc.cluster.local"],
      }),
    });
    assert.equal(rest.status, 200);
    const restBody = await rest.json();
    assert.equal(restBody.resources.length, 1);
    assert.equal(restBody.resources[0]["@type"], TYPE_URLS.cluster);
    assert.equal(restBody.resources[0].connect_timeout, "1s");
    const bad = await fetch(`http://${d.http}/v3/discovery:listeners`, {
      method: "POST",
      body: JSON.stringify({ node: { id: "bogus" } }),
    });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /missing parts in the service node "bogus"/);

    // The debug command against this instance.
    const dbg = await runProgram(DISCOVERY_SCRIPT, ["debug", "all", "ads"], {
      env: { MESH_DISCOVERY_ADDR: d.monitoring },
    });
    assert.equal(dbg.code, 0, dbg.stderr);
    assert.match(dbg.stdout, /hello-v1\.default/);
    const nc = await runProgram(DISCOVERY_SCRIPT, ["debug", "nobody.default", "syncz"], {
      env: { MESH_DISCOVERY_ADDR: d.monitoring },
    });
    assert.equal(nc.code, 0);
    assert.match(nc.stderr, /proxy not connected to this discovery instance/);
    const badType = await runProgram(DISCOVERY_SCRIPT, ["debug", "all", "nope"], {
      env: { MESH_DISCOVERY_ADDR: d.monitoring },
    });
    assert.equal(badType.code, 2);
    assert.match(badType.stderr, /"nope" is not a supported debugging config type/);

    // A bad node id ends a new stream with INVALID_ARGUMENT.
    const badStream = client.open();
    badStream.send({ node: { id: "bogus~1" }, type_url: TYPE_URLS.cluster });
    const st = await badStream.status;
    assert.equal(st.code, 3);
    assert.match(st.details, /missing parts in the service node/);
  } finally {
    await stream.close().catch(() => {});
    client.close();
    const status = await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
    assert.equal(status.code, 0, d.proc.output().slice(-2000));
  }
});

/**
 * End-to-end: mesh-discovery (the program) sends each change only to the proxies whose output it
 * changes, and only the changed types: an endpoint change reaches only the EDS watchers of the
 * affected cluster; a mesh VirtualService change reaches the sidecar's RDS, not the router. A
 * ServiceEntry edit of its endpoints only, or a WorkloadEntry edit, is an endpoint change (no
 * configuration recomputed, as in Istio); a ServiceEntry edit of its ports is a config change.
 * Exact counts come from `/metrics` (`mesh_xds_pushes{type}`, `mesh_xds_push_time_count`,
 * `mesh_push_triggers{type}`).
 */

import assert from "node:assert/strict";
import { waitUntil } from "../harness/procs.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { adsClient, type AdsStream, type Response } from "./_ads_client.ts";
import {
  dbServiceEntry,
  http,
  type RunningDiscovery,
  startDiscovery,
} from "./discovery_harness.ts";

const { cluster: CDS, endpoint: EDS, listener: LDS, route: RDS } = TYPE_URLS;
const HELLO_80 = "outbound|80||hello.default.svc.cluster.local";
const DB_CLUSTER = "outbound|5432||db.example.internal";

/** A ServiceEntry selecting the WorkloadEntry `vm` (address `ip`). */
const vmEntries = (ip: string) =>
  `apiVersion: networking.mesh.io/v1alpha3
kind: ServiceEntry
metadata: {name: legacy, namespace: default}
spec:
  hosts: [legacy.example.internal]
  ports: [{number: 9000, name: tcp-legacy, protocol: TCP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: legacy}}
---
apiVersion: networking.mesh.io/v1alpha3
kind: WorkloadEntry
metadata: {name: vm, namespace: default}
spec: {address: ${ip}, labels: {app: legacy}}
`;
const LEGACY_CLUSTER = "outbound|9000||legacy.example.internal";

const meshVs = (timeout: string) =>
  `apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata: {name: hello, namespace: default}
spec:
  hosts: [hello]
  http:
  - route: [{destination: {host: hello.default.svc.cluster.local}}]
    timeout: ${timeout}
`;

const GATEWAY = `apiVersion: networking.mesh.io/v1alpha3
kind: Gateway
metadata: {name: public, namespace: default}
spec:
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata: {name: public, namespace: default}
spec:
  hosts: ["*"]
  gateways: [public]
  http: [{route: [{destination: {host: world.default.svc.cluster.local}}]}]
`;

async function writeAtomic(file: string, text: string) {
  await Deno.writeTextFile(file + ".tmp", text);
  await Deno.rename(file + ".tmp", file);
}

/** Pushes sent per type and completed pushes, from /metrics. */
async function counters(d: RunningDiscovery) {
  const text = (await http(`http://${d.monitoring}/metrics`)).body;
  const num = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  return {
    cds: num(/^mesh_xds_pushes\{type="cds"\} (\d+)/m),
    eds: num(/^mesh_xds_pushes\{type="eds"\} (\d+)/m),
    lds: num(/^mesh_xds_pushes\{type="lds"\} (\d+)/m),
    rds: num(/^mesh_xds_pushes\{type="rds"\} (\d+)/m),
    done: num(/^mesh_xds_push_time_count (\d+)/m),
    triggers: {
      endpoint: num(/^mesh_push_triggers\{type="endpoint"\} (\d+)/m),
      service: num(/^mesh_push_triggers\{type="service"\} (\d+)/m),
      config: num(/^mesh_push_triggers\{type="config"\} (\d+)/m),
    },
  };
}

/** Subscribes like Envoy (ACKing each response) and returns the first response per type. */
async function sync(s: AdsStream, nodeId: string, eds: string[], routes: string[]) {
  const ack = (r: Response, names?: string[]) =>
    s.send({
      type_url: r.type_url,
      version_info: r.version_info,
      response_nonce: r.nonce,
      ...(names ? { resource_names: names } : {}),
    });
  s.send({ node: { id: nodeId }, type_url: CDS });
  ack(await s.next(CDS));
  if (eds.length) {
    s.send({ type_url: EDS, resource_names: eds });
    ack(await s.next(EDS), eds);
  }
  s.send({ type_url: LDS });
  ack(await s.next(LDS));
  s.send({ type_url: RDS, resource_names: routes });
  ack(await s.next(RDS), routes);
}

async function settled(d: RunningDiscovery) {
  // Every push so far has completed and no new one started for a while (the debounce is 100 ms).
  let last = await counters(d);
  await waitUntil(
    async () => {
      const now = await counters(d);
      const same = JSON.stringify(now) === JSON.stringify(last);
      last = now;
      return same;
    },
    10_000,
    "pushes to settle",
    300,
  );
  return last;
}

Deno.test("mesh-discovery sends an endpoint change only as EDS of that cluster to its watchers", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-push-scope-" });
  await Deno.writeTextFile(`${dir}/db.yaml`, dbServiceEntry("10.5.0.1"));
  const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
  const client = adsClient(d.grpc);
  const a = client.open();
  const b = client.open();
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    await sync(a, "sidecar~10.9.0.1~a.default~default.svc.cluster.local", [DB_CLUSTER, HELLO_80], [
      "80",
    ]);
    await sync(b, "sidecar~10.9.0.2~b.default~default.svc.cluster.local", [HELLO_80], ["80"]);
    const before = await settled(d);

    await writeAtomic(`${dir}/db.yaml`, dbServiceEntry("10.5.0.2"));
    const eds = await a.next(EDS, 10_000);
    assert.deepEqual(eds.resources.map((r) => r.cluster_name), [DB_CLUSTER]);
    const after = await settled(d);
    assert.ok(after.done > before.done, "a push ran");
    assert.deepEqual(
      { cds: after.cds, eds: after.eds, lds: after.lds, rds: after.rds },
      { cds: before.cds, eds: before.eds + 1, lds: before.lds, rds: before.rds },
      "one EDS response in all, to the watcher of the cluster",
    );
    await assert.rejects(b.next(EDS, 200), /No .* response/, "b does not watch the cluster");
    assert.ok(after.triggers.endpoint > before.triggers.endpoint, "an endpoint event");
    assert.deepEqual(
      [after.triggers.service, after.triggers.config],
      [before.triggers.service, before.triggers.config],
      "the edit of the ServiceEntry's endpoints recomputed no configuration",
    );

    // a new port is a change of the service: a config push (the new cluster reaches the CDS)
    await writeAtomic(
      `${dir}/db.yaml`,
      dbServiceEntry("10.5.0.2", ", {number: 5433, name: tcp-db2, protocol: TCP}"),
    );
    const cds = await a.next(CDS, 10_000);
    assert.ok(cds.resources.some((c) => c.name === "outbound|5433||db.example.internal"));
    const edited = await settled(d);
    assert.ok(edited.triggers.config > after.triggers.config, "a config change");
    assert.ok(edited.triggers.service > after.triggers.service, "and a service event");

    // an endpoint's weight alone: an endpoint push that carries it
    await writeAtomic(
      `${dir}/db.yaml`,
      dbServiceEntry("10.5.0.2, weight: 7", ", {number: 5433, name: tcp-db2, protocol: TCP}"),
    );
    const weightOf = (r: { resources: Record<string, unknown>[] }) => {
      // deno-lint-ignore no-explicit-any
      const cla: any = r.resources.find((c) => c.cluster_name === DB_CLUSTER);
      return cla?.endpoints?.[0]?.lb_endpoints?.[0]?.load_balancing_weight?.value;
    };
    await waitUntil(async () => weightOf(await a.next(EDS, 10_000)) === 7, 10_000);
  } finally {
    await a.close();
    await b.close();
    client.close();
    await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mesh-discovery sends a mesh VirtualService change to the sidecar's RDS and nothing to a router", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-push-scope-" });
  await Deno.writeTextFile(`${dir}/hello-vs.yaml`, meshVs("5s"));
  await Deno.writeTextFile(`${dir}/gateway.yaml`, GATEWAY);
  const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
  const client = adsClient(d.grpc);
  const sidecar = client.open();
  const router = client.open();
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    await sync(sidecar, "sidecar~10.9.0.1~a.default~default.svc.cluster.local", [], ["80"]);
    await sync(router, "router~10.9.0.9~gw.default~default.svc.cluster.local", [], ["8080"]);
    const before = await settled(d);

    await writeAtomic(`${dir}/hello-vs.yaml`, meshVs("7s"));
    const rds = await sidecar.next(RDS, 10_000);
    const vh = rds.resources[0].virtual_hosts.find((v: { name: string }) =>
      v.name === "hello.default.svc.cluster.local:80"
    );
    assert.equal(vh.routes[0].route.timeout.seconds, "7");
    const after = await settled(d);
    assert.ok(after.done > before.done, "a push ran");
    assert.deepEqual(
      { cds: after.cds, eds: after.eds, lds: after.lds, rds: after.rds },
      { cds: before.cds, eds: before.eds, lds: before.lds, rds: before.rds + 1 },
      "one RDS response in all: the sidecar's",
    );
    await assert.rejects(router.next(RDS, 200), /No .* response/, "the router gets nothing");
  } finally {
    await sidecar.close();
    await router.close();
    client.close();
    await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mesh-discovery sends a WorkloadEntry's new address as EDS of the clusters that select it, with no config push", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-push-scope-" });
  await Deno.writeTextFile(`${dir}/legacy.yaml`, vmEntries("10.7.0.1"));
  const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
  const client = adsClient(d.grpc);
  const a = client.open();
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    await sync(a, "sidecar~10.9.0.1~a.default~default.svc.cluster.local", [LEGACY_CLUSTER], ["80"]);
    const before = await settled(d);

    await writeAtomic(`${dir}/legacy.yaml`, vmEntries("10.7.0.2"));
    const eds = await a.next(EDS, 10_000);
    assert.deepEqual(eds.resources.map((r) => r.cluster_name), [LEGACY_CLUSTER]);
    assert.equal(
      eds.resources[0].endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address,
      "10.7.0.2",
    );
    const after = await settled(d);
    assert.deepEqual(
      { cds: after.cds, eds: after.eds, lds: after.lds, rds: after.rds },
      { cds: before.cds, eds: before.eds + 1, lds: before.lds, rds: before.rds },
      "one EDS response in all",
    );
    assert.ok(after.triggers.endpoint > before.triggers.endpoint, "an endpoint event");
    assert.deepEqual(
      [after.triggers.service, after.triggers.config],
      [before.triggers.service, before.triggers.config],
      "no configuration recomputed",
    );
  } finally {
    await a.close();
    client.close();
    await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

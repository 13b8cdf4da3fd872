/**
 * mesh-discovery with `--workers 2`, as users run it: ADS clients, each on a connection of its
 * own (the kernel spreads connections over the worker isolates), get CDS, EDS, LDS and RDS; their
 * ACKs are taken; an endpoints-only change of a polled registry (a fake Consul catalog) reaches
 * the clients of both workers; /debug/adsz lists the streams of both.
 */
import assert from "node:assert/strict";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { waitUntil, withTempDir } from "../harness/procs.ts";
import { adsClient, type AdsStream, type Response } from "./_ads_client.ts";
import { http, startDiscovery } from "./discovery_harness.ts";

const { cluster: CDS, endpoint: EDS, listener: LDS, route: RDS } = TYPE_URLS;

// deno-lint-ignore no-explicit-any
type AnyObj = any;

/** Addresses of the endpoints of a ClusterLoadAssignment. */
function addresses(cla: AnyObj): string[] {
  return (cla.endpoints ?? []).flatMap((l: AnyObj) =>
    (l.lb_endpoints ?? []).map((e: AnyObj) => e.endpoint.address.socket_address.address)
  ).sort();
}

/** An ADS client that subscribed to every type and ACKed what it got. */
interface Sidecar {
  stream: AdsStream;
  close(): Promise<void>;
  /** The web cluster's EDS name. */
  cluster: string;
  eds: Response;
}

const ack = (s: AdsStream, r: Response, names?: string[]) =>
  s.send({
    type_url: r.type_url,
    version_info: r.version_info,
    response_nonce: r.nonce,
    ...(names ? { resource_names: names } : {}),
  });

/** Connects a sidecar (`ip`), reads CDS, EDS, LDS and RDS and ACKs each. */
async function sidecar(grpc: string, ip: string): Promise<Sidecar> {
  // a client of its own (no shared subchannel): a connection of its own
  const client = adsClient(grpc, undefined, { "grpc.use_local_subchannel_pool": 1 });
  const stream = client.open();
  const close = async () => {
    await stream.close();
    client.close();
  };
  try {
    stream.send({
      node: { id: `sidecar~${ip}~app-${ip}.default~default.svc.cluster.local` },
      type_url: CDS,
    });
    const cds = await stream.next(CDS, 30_000);
    const cluster = cds.resources.map((c) => c.name as string).find((n) => n.includes("web"));
    assert.ok(cluster, cds.resources.map((c) => c.name).join(","));
    ack(stream, cds);
    stream.send({ type_url: EDS, resource_names: [cluster] });
    const eds = await stream.next(EDS, 30_000);
    assert.deepEqual(eds.resources.map((r) => r.cluster_name), [cluster]);
    ack(stream, eds, [cluster]);
    stream.send({ type_url: LDS });
    const lds = await stream.next(LDS, 30_000);
    assert.ok(lds.resources.length > 0);
    ack(stream, lds);
    const routes = ["9080"];
    stream.send({ type_url: RDS, resource_names: routes });
    const rds = await stream.next(RDS, 30_000);
    assert.deepEqual(rds.resources.map((r) => r.name), routes);
    ack(stream, rds, routes);
    return { stream, close, cluster, eds };
  } catch (e) {
    await close();
    throw e;
  }
}

Deno.test("mesh-discovery --workers 2: clients on both workers get CDS, EDS, LDS, RDS, their ACKs are taken, and an endpoint change reaches every one", async () => {
  const instances: Record<string, unknown>[] = [
    { Node: "n1", Address: "10.0.0.1", ServicePort: 9080, NodeMeta: { protocol: "http" } },
  ];
  const consul = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/v1/catalog/services") return Response.json({ web: [] });
    if (path === "/v1/catalog/service/web") return Response.json(instances);
    return new Response("not found", { status: 404 });
  });
  const sidecars: Sidecar[] = [];
  try {
    await withTempDir(async (dir) => {
      const d = await startDiscovery([
        "--configDir",
        dir,
        "--registries",
        "RegistryA",
        "--regaserverURL",
        `http://127.0.0.1:${consul.addr.port}`,
        "--regaserverInterval",
        "100ms",
        "--workers",
        "2",
        "--log_output_level",
        Deno.env.get("DEBUG_WORKERS") ? "ads:debug,default:debug" : "default:info",
      ]);
      try {
        await d.proc.waitFor(/served by 2 worker isolates/, 60_000);
        await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 30_000);
        // Connect until both workers hold streams (each connection goes to one of them).
        const workersOf = async () => {
          const conns = JSON.parse((await http(`http://${d.http}/debug/adsz`)).body) as {
            addr: string;
          }[];
          return new Set(conns.map((c) => c.addr));
        };
        for (let i = 1; i <= 6 || (await workersOf()).size < 2; i++) {
          assert.ok(i <= 40, "40 connections, all to one worker");
          sidecars.push(await sidecar(d.grpc, `10.2.0.${i}`));
        }
        await waitUntil(
          async () => (await workersOf()).size === 2,
          30_000,
          "both workers' streams in /debug/adsz",
        );
        for (const s of sidecars) assert.deepEqual(addresses(s.eds.resources[0]), ["10.0.0.1"]);

        // ACKs are taken: without a change nothing is sent again.
        for (const t of [CDS, LDS]) {
          await assert.rejects(sidecars[0].stream.next(t, 500), /No .* response within/);
        }
        // An endpoints-only change: each sidecar gets the new assignment.
        instances.push({
          Node: "n2",
          Address: "10.0.0.2",
          ServicePort: 9080,
          NodeMeta: { protocol: "http" },
        });
        for (const s of sidecars) {
          for (;;) {
            const eds = await s.stream.next(EDS, 30_000);
            assert.equal(eds.resources[0].cluster_name, s.cluster);
            if (addresses(eds.resources[0]).length === 2) {
              assert.deepEqual(addresses(eds.resources[0]), ["10.0.0.1", "10.0.0.2"]);
              ack(s.stream, eds, [s.cluster]);
              break;
            }
          }
        }
        const metrics = (await http(`http://${d.monitoring}/metrics`)).body;
        const xds = /^mesh_xds (\d+)$/m.exec(metrics);
        assert.equal(Number(xds?.[1]), sidecars.length, metrics.slice(0, 2000));
        for (const s of sidecars.splice(0)) await s.close();
        assert.equal((await d.proc.stop()).code, 0);
      } catch (e) {
        console.error(d.proc.output().slice(-6000));
        throw e;
      } finally {
        await d.proc.stop();
      }
    });
  } finally {
    for (const s of sidecars) await s.close();
    await consul.shutdown();
  }
});

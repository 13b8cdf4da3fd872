/**
 * mesh-discovery with `--workers 2`, as users run it: ADS clients, each on a connection of its
 * own (the kernel spreads connections over the worker isolates), get CDS, EDS, LDS and RDS; their
 * ACKs are taken; an endpoints-only change of a polled registry (a fake Consul catalog) reaches
 * the clients of both workers; /debug/adsz lists the streams of both.
 */
import assert from "node:assert/strict";
import { FrameType } from "../../lib/grpc/h2/frames.ts";
import { RawClient, servedClient } from "../../lib/grpc/testing.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { assertServed, fingerprintOf, makeTestPki, servedFingerprint } from "../harness/certs.ts";
import { fdLimit, keptAlive } from "../harness/fd_limit.ts";
import { holdSharablePort, waitUntil, withTempDir } from "../harness/procs.ts";
import { adsClient, type AdsStream, type Response, tlsCreds } from "./_ads_client.ts";
import { readMeshCerts } from "../../servers/discovery/certs.ts";
import { fakeConsul, http, startDiscovery } from "./discovery_harness.ts";

const { cluster: CDS, endpoint: EDS, listener: LDS, route: RDS } = TYPE_URLS;
const { DATA, SETTINGS } = FrameType;

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
  /** Its node id. */
  node: string;
}

const ack = (s: AdsStream, r: Response, names?: string[]) =>
  s.send({
    type_url: r.type_url,
    version_info: r.version_info,
    response_nonce: r.nonce,
    ...(names ? { resource_names: names } : {}),
  });

/** Connects a sidecar (`ip`), reads CDS, EDS, LDS and RDS and ACKs each. */
async function sidecar(grpc: string, ip: string, service = "web"): Promise<Sidecar> {
  // a client of its own (no shared subchannel): a connection of its own
  const client = adsClient(grpc, undefined, { "grpc.use_local_subchannel_pool": 1 });
  const stream = client.open();
  const close = async () => {
    await stream.close();
    client.close();
  };
  const node = `sidecar~${ip}~app-${ip}.default~default.svc.cluster.local`;
  try {
    stream.send({ node: { id: node }, type_url: CDS });
    const cds = await stream.next(CDS, 30_000);
    const cluster = cds.resources.map((c) => c.name as string).find((n) =>
      n.startsWith("outbound|") && n.includes(service)
    );
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
    const routes = [service === "web" ? "9080" : "80"];
    stream.send({ type_url: RDS, resource_names: routes });
    const rds = await stream.next(RDS, 30_000);
    assert.deepEqual(rds.resources.map((r) => r.name), routes);
    ack(stream, rds, routes);
    return { stream, close, cluster, eds, node };
  } catch (e) {
    await close();
    throw e;
  }
}

Deno.test("mesh-discovery --workers 2: clients on both workers get CDS, EDS, LDS, RDS, their ACKs are taken, and an endpoint change reaches every one", async () => {
  const instances: Record<string, unknown>[] = [
    { Node: "n1", Address: "10.0.0.1", ServicePort: 9080, NodeMeta: { protocol: "http" } },
  ];
  const { server: consul, args: consulArgs } = fakeConsul(() => instances);
  const sidecars: Sidecar[] = [];
  try {
    await withTempDir(async (dir) => {
      const d = await startDiscovery([
        "--configDir",
        dir,
        ...consulArgs,
        "--workers",
        "2",
        "--log_output_level",
        Deno.env.get("DEBUG_WORKERS") ? "ads:debug,default:debug" : "default:info",
      ]);
      try {
        await d.proc.waitFor(/served by 2 worker isolates/, 60_000);
        // Each worker listens on the shared port, reading through node:net by default.
        const listening = d.proc.output().match(/ADS: listening on [^\n]*/g) ?? [];
        assert.equal(listening.length, 2, d.proc.output());
        for (const line of listening) assert.match(line, /\(port \d+, plaintext\)$/);
        await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 30_000);
        // Connect until both workers hold streams (each connection goes to one of them).
        const workersOf = async () => {
          const conns = JSON.parse((await http(`http://${d.http}/debug/adsz`)).body) as {
            addr: string;
          }[];
          return new Set(conns.map((c) => /worker \d+/.exec(c.addr)?.[0]));
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
        // /debug/adsz shows each worker stream's clusters (its per-type state, asked of the workers)
        const adsz = JSON.parse((await http(`http://${d.http}/debug/adsz`)).body) as {
          node: string;
          addr: string;
          clusters: unknown[];
        }[];
        assert.equal(adsz.length, sidecars.length);
        for (const c of adsz) {
          assert.match(c.addr, /^ipv4:127\.0\.0\.1:\d+ \(worker [01]\)$/);
          assert.ok(c.clusters.length > 0, JSON.stringify(c));
        }
        // /debug/mirrorz: both workers hold maps, entries and their bytes
        const mirrorz = JSON.parse((await http(`http://${d.http}/debug/mirrorz`)).body) as {
          worker: number;
          maps: number;
          entries: number;
          bytes: number;
        }[];
        assert.deepEqual(mirrorz.map((m) => m.worker), [0, 1]);
        for (const m of mirrorz) {
          assert.ok(m.maps > 0 && m.entries > 0 && m.bytes > 0, JSON.stringify(m));
        }

        // A node id that names no proxy is refused by the worker that took the stream, as by
        // the one isolate: INVALID_ARGUMENT with the reason.
        const bad = adsClient(d.grpc, undefined, { "grpc.use_local_subchannel_pool": 1 });
        try {
          const stream = bad.open();
          stream.send({ node: { id: "gateway~10.9.0.1~x~y" }, type_url: CDS });
          let ended: { code: number; details: string } | undefined;
          void stream.status.then((s) => ended = s);
          await waitUntil(() => ended !== undefined, 10_000, "the stream to be refused");
          const status = ended!;
          assert.equal(status.code, 3, status.details);
          assert.match(status.details, /invalid node type/);
        } finally {
          bad.close();
        }

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
        // An instance at a sidecar's own address (its workload joined the service): the proxy
        // is found by address among the workers' streams and sent listeners for it.
        const own = sidecars.at(-1)!;
        const ownIp = /~([\d.]+)~/.exec(own.node)![1];
        instances.push({
          Node: "n3",
          Address: ownIp,
          ServicePort: 9080,
          NodeMeta: { protocol: "http" },
        });
        const lds = await own.stream.next(LDS, 30_000);
        assert.ok(
          lds.resources.some((l) => JSON.stringify(l.address ?? {}).includes(ownIp)),
          lds.resources.map((l) => l.name).join(","),
        );
        ack(own.stream, lds);
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

Deno.test("mesh-discovery --workers 2: a worker that dies is started again, and its clients reconnect and are served", async () => {
  const { start } = await import("../../servers/discovery/mod.ts");
  type AdsWorkers = import("../../servers/discovery/workers/mod.ts").AdsWorkers;
  await withTempDir(async (dir) => {
    const config = await workersConfig(dir);
    let workers: AdsWorkers | undefined;
    const d = await start(config, {
      onAdsWorkers: (w) => workers = w,
      workerRestartDelayMs: 50,
      debounceAfterMs: 10,
    });
    const sidecars: Sidecar[] = [];
    try {
      await d.ready;
      const byWorker = () => {
        const m = new Map<string, number>();
        for (const c of workers!.control.connections()) {
          const w = /worker \d+/.exec(c.peer)![0];
          m.set(w, (m.get(w) ?? 0) + 1);
        }
        return m;
      };
      for (let i = 1; i <= 6 || byWorker().size < 2; i++) {
        assert.ok(i <= 40, "40 connections, all to one worker");
        sidecars.push(await sidecar(d.addresses.grpc, `10.3.0.${i}`, "hello"));
      }
      await waitUntil(() => byWorker().size === 2, 30_000, "streams on both workers");
      const before = byWorker().get("worker 0")!;
      assert.ok(before > 0);
      workers!.pool!.kill(0, "killed by the test");
      // forgotten at once, before its clients notice and before its restart
      assert.equal(byWorker().get("worker 0"), undefined);
      assert.equal(workers!.control.connectionCount, sidecars.length - before);
      // worker 0's clients see their stream end; they reconnect (to either worker) and are served
      const ended: Sidecar[] = [];
      for (const s of sidecars) void s.stream.status.then(() => ended.push(s));
      await waitUntil(() => ended.length >= before, 30_000, "worker 0's streams ending");
      await new Promise((r) => setTimeout(r, 200)); // no other stream ends
      assert.equal(ended.length, before);
      await waitUntil(
        () => byWorker().get("worker 0") === undefined,
        30_000,
        "worker 0's streams forgotten",
      );
      for (const [i, s] of ended.entries()) {
        await s.close();
        sidecars.splice(
          sidecars.indexOf(s),
          1,
          await sidecar(d.addresses.grpc, `10.3.1.${i}`, "hello"),
        );
      }
      // the restarted worker serves new connections too
      for (let i = 1; byWorker().get("worker 0") === undefined; i++) {
        assert.ok(i <= 40, "40 new connections, none to the restarted worker");
        sidecars.push(await sidecar(d.addresses.grpc, `10.3.2.${i}`, "hello"));
      }
      assert.equal(workers!.control.connectionCount, sidecars.length);
      // the workers' health in /metrics: both serve again, one restart (the front: never died)
      const metrics = await (await fetch(`http://${d.addresses.monitoring}/metrics`)).text();
      assert.deepEqual(metrics.split("\n").filter((l) => l.startsWith("mesh_worker_")).sort(), [
        'mesh_worker_isolates{pool="ADS worker"} 2',
        'mesh_worker_isolates{pool="HTTP front"} 1',
        'mesh_worker_restarts_total{pool="ADS worker"} 1',
        'mesh_worker_restarts_total{pool="HTTP front"} 0',
      ]);
      // a shutdown ends every worker's stream as the one isolate does: UNAVAILABLE, saying why
      const statuses = Promise.all(sidecars.map((s) => s.stream.status));
      await d.shutdown();
      for (const status of await statuses) {
        assert.deepEqual(status, { code: 14, details: "Server is shutting down" });
      }
    } finally {
      for (const s of sidecars) await s.close();
      await d.shutdown();
    }
    // shut down: the workers no longer hold the port
    const port = Number(d.addresses.grpc.split(":").at(-1));
    await assert.rejects(
      Deno.connect({ hostname: "127.0.0.1", port }),
      Deno.errors.ConnectionRefused,
    );
  });
});

Deno.test("mesh-discovery --workers 2 --grpcMaxConnections 3: the cap is the port's, over both workers, and workers started again start from what they hold", async () => {
  await withWorkers({ grpcMaxConnections: 3 }, async ({ d, workers, port, clients }) => {
    const open = () => servedClient(port, clients);
    // 12 connections: the kernel gives each worker some (each alone would serve 3)
    const served: boolean[] = [];
    for (let i = 0; i < 12; i++) served.push(await open());
    assert.deepEqual(served, [true, true, true, ...Array(9).fill(false)]);
    await waitUntil(
      () => workers.control.transport().refused === 9,
      10_000,
      "the workers' refusals summed in the control isolate",
    );
    const metrics = await (await fetch(`http://${d.addresses.monitoring}/metrics`)).text();
    assert.match(metrics, /^mesh_xds_refused_connections 9$/m);
    // both workers die with what they hold; their successors start from nothing held
    await killBoth(workers, clients);
    const again: boolean[] = [];
    for (let i = 0; i < 4; i++) again.push(await open());
    assert.deepEqual(again, [true, true, true, false]);
  });
});

Deno.test("mesh-discovery --workers 2 --grpcMaxConnectionsPerAddress 3: the bound is the port's, over both workers, per address, and workers started again forget what the dead held", async () => {
  await withWorkers({ grpcMaxConnectionsPerAddress: 3 }, async ({ workers, port, clients }) => {
    const open = async (localAddress: string) => {
      const c = await RawClient.connect(port, { localAddress });
      clients.push(c);
      await c.send(SETTINGS, 1, 0);
      return await c.roundTrip(5000);
    };
    const openMany = async (n: number, from: string) => {
      const served: boolean[] = [];
      for (let i = 0; i < n; i++) served.push(await open(from));
      return served;
    };
    // 8 connections from one address: the kernel gives each worker some (each alone would
    // serve 3)
    assert.deepEqual(await openMany(8, "127.0.0.1"), [true, true, true, ...Array(5).fill(false)]);
    // another address has a bound of its own
    assert.deepEqual(await openMany(4, "127.0.0.2"), [true, true, true, false]);
    await waitUntil(
      () => workers.control.transport().refused === 6,
      10_000,
      "the workers' refusals summed in the control isolate",
    );
    // a connection closed gives its place back, whichever worker held it
    await clients[8].close();
    await waitUntil(() => open("127.0.0.2"), 10_000, "a place of 127.0.0.2 given back");
    // both workers die with what they hold; their successors start from nothing held
    await killBoth(workers, clients);
    assert.deepEqual(await openMany(4, "127.0.0.1"), [true, true, true, false]);
  });
});

Deno.test("mesh-discovery --workers 2 --secureGrpcAddr: TLS clients are served by both workers, and workers started again serve the TLS port with the certificates of now", async () => {
  const pki = await makeTestPki();
  const certDir = await Deno.makeTempDir({ prefix: "mesh-certs-" });
  try {
    const server = await pki.issue("discovery", { ips: ["127.0.0.1"], dns: ["localhost"] });
    await Deno.copyFile(server.cert, `${certDir}/cert-chain.pem`);
    await Deno.copyFile(server.key, `${certDir}/key.pem`);
    await Deno.copyFile(pki.caCert, `${certDir}/root-cert.pem`);
    const { certs } = await readMeshCerts(certDir);
    await withWorkers(
      { secureGrpcAddr: "127.0.0.1:0" },
      async ({ d, workers }) => {
        const port = Number(d.addresses.secureGrpc!.split(":")[1]);
        await assertServed(port, server.cert);
        // TLS streams live in the workers, as the plaintext ones
        // each with a mesh certificate: the workers report the verified identity of each stream
        const identity = "spiffe://cluster.local/ns/default/sa/a";
        const client = await pki.issue("client", { uris: [identity] });
        const creds = await tlsCreds(pki.caCert, client.cert, client.key);
        const streams: AdsStream[] = [];
        const clients: { close(): void }[] = [];
        try {
          const byWorker = () =>
            new Set(workers.control.connections().map((c) => /worker \d+/.exec(c.peer)?.[0]));
          for (let i = 1; i <= 4 || byWorker().size < 2; i++) {
            assert.ok(i <= 40, "40 TLS connections, all to one worker");
            const client = adsClient(d.addresses.secureGrpc!, creds, {
              "grpc.ssl_target_name_override": "localhost",
              "grpc.use_local_subchannel_pool": 1,
            });
            clients.push(client);
            const stream = client.open();
            streams.push(stream);
            stream.send({
              node: { id: `sidecar~10.6.0.${i}~a.default~default.svc.cluster.local` },
              type_url: CDS,
            });
            await stream.next(CDS, 10_000);
          }
          assert.deepEqual([...byWorker()].sort(), ["worker 0", "worker 1"]);
          assert.equal(workers.control.connectionCount, streams.length);
          await workers.control.refreshConnections();
          for (const c of workers.control.connections()) {
            assert.deepEqual(c.peerIdentities, [identity], c.peer);
          }
        } finally {
          for (const st of streams) await st.close();
          for (const c of clients) c.close();
        }
        // rotated files: every worker serves the new certificate, and so do workers started again
        const next = await pki.issue("discovery-2", { ips: ["127.0.0.1"], dns: ["localhost"] });
        await Deno.copyFile(next.cert, `${certDir}/cert-chain.pem`);
        await Deno.copyFile(next.key, `${certDir}/key.pem`);
        const nextPrint = await fingerprintOf(next.cert);
        await waitUntil(
          async () => await servedFingerprint(port) === nextPrint,
          10_000,
          "the rotated certificate served",
        );
        await assertServed(port, next.cert);
        await killBoth(workers, []);
        await assertServed(port, next.cert);
      },
      { MESH_CERT_DIR: certDir },
      { certs, certPollMs: 100 },
    );
  } finally {
    await pki.remove();
    await Deno.remove(certDir, { recursive: true });
  }
});

Deno.test("mesh-discovery --workers 2 --grpcMaxFailedConnectionRate 1: an address whose connections keep failing is held or refused by the worker that takes it, and /metrics counts both workers' throttling", async () => {
  await withWorkers({ grpcMaxFailedConnectionRate: 1 }, async ({ d, workers, port, clients }) => {
    // A connection that fails: a DATA frame on stream 0 is a connection error (PROTOCOL_ERROR).
    const failing = async () => {
      const c = await RawClient.connect(port);
      clients.push(c);
      await c.send(DATA, 0, 0, new Uint8Array(1));
      return c;
    };
    // Well after the start, whose push made the workers send their state: a throttled
    // connection changes no stream.
    await new Promise((r) => setTimeout(r, 1500));
    // Batches of 8 at once: each worker takes some, sees more than 1 failure a second from
    // 127.0.0.1 and holds (or refuses) that address's next connections.
    await waitUntil(
      async () => {
        const batch = await Promise.all(Array.from({ length: 8 }, failing));
        await Promise.all(batch.map((c) => c.until(() => c.isClosed, 5000)));
        return workers.control.transport().throttled > 0;
      },
      30_000,
      "a throttled connection counted in the control isolate",
    );
    const throttled = workers.control.transport().throttled;
    const metrics = await (await fetch(`http://${d.addresses.monitoring}/metrics`)).text();
    const line = /^mesh_xds_throttled_connections (\d+)$/m.exec(metrics);
    assert.ok(line && Number(line[1]) >= throttled, metrics.slice(0, 2000));
  });
});

for (const workers of [1, 2]) {
  Deno.test(`mesh-discovery${workers > 1 ? " --workers 2" : ""}: out of file descriptors, /ready answers 503 naming ADS and mesh_xds_accepting is 0; both recover once descriptors are back`, async () => {
    const { start } = await import("../../servers/discovery/mod.ts");
    await withTempDir(async (dir) => {
      const d = await start(await workersConfig(dir, { workers }), {});
      const limit = fdLimit();
      // Connections opened before: reading them takes no new descriptor.
      const ready = await keptAlive(d.addresses.http);
      const metrics = await keptAlive(d.addresses.monitoring);
      const accepting = async () =>
        /^mesh_xds_accepting (\d)$/m.exec((await metrics.get("/metrics")).body)?.[1];
      try {
        await d.ready;
        await waitUntil(async () => (await ready.get("/ready")).status === 200, 10_000, "ready");
        assert.equal(await accepting(), "1");
        limit.exhaust();
        try {
          // The listeners' accept checks cannot connect (each worker's: its own check fails). The
          // config directory's poll cannot read it either: /ready tells every reason.
          let last = { status: 0, body: "" };
          await waitUntil(
            async () =>
              /ADS cannot accept connections/.test((last = await ready.get("/ready")).body),
            20_000,
            "/ready to say that ADS cannot accept",
          );
          assert.equal(last.status, 503);
          assert.match(
            last.body,
            /^not ready: .*ADS cannot accept connections \(out of file descriptors\?\)/,
          );
          assert.equal(await accepting(), "0");
        } finally {
          limit.restore();
        }
        await waitUntil(async () => (await ready.get("/ready")).status === 200, 20_000, "ready");
        assert.equal(await accepting(), "1");
      } finally {
        limit.dispose();
        ready.close();
        metrics.close();
        await d.shutdown();
      }
    });
  });
}

Deno.test("mesh-discovery --workers 2 refuses a --grpcAddr port already in use, even by a listener that allows sharing", async () => {
  const { start } = await import("../../servers/discovery/mod.ts");
  const held = await holdSharablePort();
  const port = held.port;
  try {
    await withTempDir(async (dir) => {
      const config = await workersConfig(dir, { grpcAddr: `127.0.0.1:${port}` });
      await assert.rejects(
        start(config, {}),
        new RegExp(`Cannot listen on --grpcAddr 127\\.0\\.0\\.1:${port}: .*in use`),
      );
    });
  } finally {
    await held.close();
  }
});

/**
 * mesh-discovery started in this process with `--workers 2` and `over`, its workers' pool, the
 * port they share and the raw clients `fn` opens (closed after it, as the server is).
 */
async function withWorkers(
  over: Partial<typeof FLAGS>,
  fn: (w: {
    d: import("../../servers/discovery/mod.ts").DiscoveryHandle;
    workers: import("../../servers/discovery/workers/mod.ts").AdsWorkers;
    port: number;
    clients: RawClient[];
  }) => Promise<void>,
  env: Record<string, string> = {},
  deps: Partial<import("../../servers/discovery/mod.ts").DiscoveryDeps> = {},
): Promise<void> {
  const { start } = await import("../../servers/discovery/mod.ts");
  await withTempDir(async (dir) => {
    type AdsWorkers = import("../../servers/discovery/workers/mod.ts").AdsWorkers;
    let workers: AdsWorkers | undefined;
    const d = await start(await workersConfig(dir, over, env), {
      ...deps,
      onAdsWorkers: (w) => workers = w,
      workerRestartDelayMs: 50,
    });
    const clients: RawClient[] = [];
    try {
      await d.ready;
      const port = Number(d.addresses.grpc.split(":").at(-1));
      await fn({ d, workers: workers!, port, clients });
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await d.shutdown();
    }
  });
}

/** Kills both workers; resolves once their clients' connections closed and both run again. */
async function killBoth(
  workers: import("../../servers/discovery/workers/mod.ts").AdsWorkers,
  clients: RawClient[],
): Promise<void> {
  const open = clients.filter((c) => !c.isClosed);
  workers.pool!.kill(0, "killed by the test");
  workers.pool!.kill(1, "killed by the test");
  for (const c of open) assert.ok(await c.until(() => c.isClosed), "still open");
  await waitUntil(() => workers.pool!.running === 2, 30_000, "both workers started again");
}

/** mesh-discovery's config with `--workers 2`, its config dir `dir`, and `over`. */
async function workersConfig(
  dir: string,
  over: Partial<typeof FLAGS> & { workers?: number } = {},
  env: Record<string, string> = {},
) {
  const { toConfig } = await import("../../servers/discovery/mod.ts");
  return toConfig(
    { ...FLAGS, configDir: dir, meshConfig: `${dir}/none`, workers: 2, ...over },
    env,
  );
}

const FLAGS = {
  appNamespace: "",
  platformcConfig: "",
  clusterRegistriesConfigMap: "",
  clusterRegistriesNamespace: "",
  configDir: "",
  regaserverInterval: 2000,
  regaserverURL: "",
  regbserverInterval: 2000,
  regbserverURL: "",
  discovery_cache: true,
  domain: "cluster.local",
  grpcAddr: "127.0.0.1:0",
  secureGrpcAddr: "",
  grpcMaxConcurrentStreams: 100,
  grpcMaxConnections: 0,
  grpcMaxConnectionsPerAddress: 0,
  grpcMaxFailedConnectionRate: 0,
  keepaliveInterval: 30_000,
  keepaliveTimeout: 10_000,
  keepaliveMinTime: 5_000,
  keepaliveMaxServerConnectionAge: 0,
  orchconfig: "",
  meshConfig: "",
  monitoringPort: 0,
  httpAddress: "127.0.0.1",
  namespace: "",
  port: 0,
  profile: false,
  ingressStatus: false,
  registries: ["Mock"],
  resync: 60_000,
  webhookEndpoint: "",
  ctrlz_address: "127.0.0.1",
  ctrlz_port: 0,
};

Deno.test("mesh-discovery --workers 2 --grpcReusedReads: each worker reads into reused buffers and serves", async () => {
  await withTempDir(async (dir) => {
    const d = await startDiscovery([
      "--registries",
      "Mock",
      "--configDir",
      dir,
      "--workers",
      "2",
      "--grpcReusedReads",
    ]);
    const sidecars: Sidecar[] = [];
    try {
      await d.proc.waitFor(/served by 2 worker isolates/, 60_000);
      const listening = d.proc.output().match(/ADS: listening on [^\n]*/g) ?? [];
      assert.equal(listening.length, 2, d.proc.output());
      for (const line of listening) assert.match(line, /plaintext, reused read buffers\)$/);
      await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 30_000);
      for (let i = 1; i <= 4; i++) sidecars.push(await sidecar(d.grpc, `10.4.0.${i}`, "hello"));
      for (const s of sidecars) assert.equal(s.eds.resources[0].cluster_name, s.cluster);
    } finally {
      for (const s of sidecars) await s.close();
      await d.proc.stop();
    }
  });
});

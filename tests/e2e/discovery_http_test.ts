/**
 * End-to-end: the HTTP side of `mesh-discovery discovery` run as a program — debug-registry
 * additions (`POST /debug/registryz|endpointz?svc=`), `--profile`, `--discovery_cache` with
 * `/cache_stats`, `--webhookEndpoint`, `/ready` before the registries sync,
 * `meshctl proxy-config discovery`, and ControlZ changing the `ads` log scope at run time.
 */

import { startFakeKube } from "../harness/fake_kube.ts";
import assert from "node:assert/strict";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { runProgram, waitUntil } from "../harness/procs.ts";
import { adsClient } from "./_ads_client.ts";
import { http, post, startDiscovery } from "./discovery_harness.ts";

const NODE = "sidecar~127.0.1.1~hello-v1.default~default.svc.cluster.local";
const DEBUG_HOST = "debug.example.svc.cluster.local";

Deno.test("mesh-discovery adds services and instances to its debug registry through POST /debug/registryz and /debug/endpointz", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    const base = `http://${d.http}`;

    // Bad requests: 400 with a one-line reason.
    const cases: [string, unknown, RegExp][] = [
      [`/debug/registryz`, { ports: [] }, /svc: required/],
      [`/debug/registryz?svc=${DEBUG_HOST}`, "{nope", /not valid JSON/],
      [`/debug/registryz?svc=${DEBUG_HOST}`, "", /want a JSON object, got nothing/],
      [
        `/debug/registryz?svc=${DEBUG_HOST}`,
        { ports: [] },
        /Service ports: must be a non-empty list/,
      ],
      [
        `/debug/registryz?svc=${DEBUG_HOST}`,
        { ports: [{ name: "http", port: 70000 }] },
        /ports\[0\]\.port: must be a port from 1 to 65535, got 70000/,
      ],
      [`/debug/registryz?svc=bad_host!`, { ports: [{ port: 80 }] }, /not a valid hostname/],
      [
        `/debug/registryz?svc=${DEBUG_HOST}`,
        { ports: [{ port: 80 }], colour: 1 },
        /unknown field colour/,
      ],
      [`/debug/endpointz?svc=${DEBUG_HOST}`, { address: "10.9.0.1" }, /no such service/],
    ];
    for (const [path, body, want] of cases) {
      const r = await post(base + path, body);
      assert.equal(r.status, 400, `${path}: ${r.body}`);
      assert.match(r.body, want);
      assert.equal(r.body.trim().split("\n").length, 1);
    }

    // Add a service: it is listed, with the debug registry as its source.
    const svc = await post(`${base}/debug/registryz?svc=${DEBUG_HOST}`, {
      address: "10.9.0.100",
      ports: [{ name: "http", port: 8080, protocol: "HTTP" }],
    });
    assert.equal(svc.status, 200, svc.body);
    const listed = JSON.parse(svc.body).find((s: { hostname?: string }) =>
      s.hostname === DEBUG_HOST
    );
    assert.equal(listed.registry, "memAdapter");
    assert.equal(listed.address, "10.9.0.100");

    // An instance with a bad port name, then a good one.
    const badPort = await post(`${base}/debug/endpointz?svc=${DEBUG_HOST}`, {
      address: "10.9.0.1",
      servicePort: "grpc",
    });
    assert.equal(badPort.status, 400);
    assert.match(badPort.body, /servicePort "grpc": not a port of debug\.example/);
    const inst = await post(`${base}/debug/endpointz?svc=${DEBUG_HOST}`, {
      address: "10.9.0.1",
      port: 18080,
      servicePort: "http",
      labels: { version: "v1" },
    });
    assert.equal(inst.status, 200, inst.body);
    const ep = JSON.parse(inst.body).find((e: { svc: string }) => e.svc === `${DEBUG_HOST}:http`);
    assert.equal(ep.ep.length, 2, "one instance, then {}");
    assert.equal(ep.ep[0].address, "10.9.0.1");

    // The full listing (GET) has it too, as JSON and as brief text lines.
    const listing = await fetch(`${base}/debug/endpointz`);
    assert.equal(listing.status, 200);
    const group = (await listing.json()).find((e: { svc: string }) =>
      e.svc === `${DEBUG_HOST}:http`
    );
    assert.equal(group.ep[0].address, "10.9.0.1");
    const brief = await fetch(`${base}/debug/endpointz?brief=1`);
    assert.equal(brief.status, 200);
    assert.match(await brief.text(), /^debug\.example\S*:http .*10\.9\.0\.1:18080/m);

    // Proxies see it, once pushed (the context in force takes the change a few ms later): a
    // cluster and its endpoint.
    await waitUntil(async () => {
      const cds = await post(`${base}/v3/discovery:clusters`, { node: { id: NODE } });
      return JSON.parse(cds.body).resources.some((c: { name: string }) =>
        c.name === `outbound|8080||${DEBUG_HOST}`
      );
    }, 10_000);
    await waitUntil(async () => {
      const eds = await post(`${base}/v3/discovery:endpoints`, {
        node: { id: NODE },
        resource_names: [`outbound|8080||${DEBUG_HOST}`],
      });
      const cla = JSON.parse(eds.body).resources[0];
      return cla?.endpoints?.[0]?.lb_endpoints?.[0]?.endpoint.address.socket_address
        .port_value === 18080;
    }, 10_000);
  } finally {
    const status = await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
    assert.equal(status.code, 0, d.proc.output().slice(-2000));
  }
});

Deno.test("mesh-discovery serves profiles with --profile, caches REST responses with --discovery_cache and passes them through --webhookEndpoint", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  let webhookMode: "rewrite" | "fail" = "rewrite";
  const webhookCalls: string[] = [];
  const webhook = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    webhookCalls.push(path);
    const body = await req.json();
    if (webhookMode === "fail") return new Response("webhook broke", { status: 500 });
    return Response.json({ ...body, resources: body.resources.slice(0, 1), rewritten: path });
  });
  const d = await startDiscovery([
    "--registries",
    "Mock",
    "--configDir",
    dir,
    "--profile",
    "--discovery_cache",
    "--webhookEndpoint",
    `http://127.0.0.1:${webhook.addr.port}`,
  ]);
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    const base = `http://${d.monitoring}`;

    // Heap snapshot and CPU profile (Chrome DevTools formats).
    const heap = await http(`${base}/debug/pprof/heap`);
    assert.equal(heap.status, 200);
    const snap = JSON.parse(heap.body);
    assert.ok(snap.snapshot && Array.isArray(snap.nodes) && snap.nodes.length > 0);
    const t0 = Date.now();
    const prof = await http(`${base}/debug/pprof/profile?seconds=1`);
    assert.equal(prof.status, 200);
    assert.ok(Date.now() - t0 >= 900, "the profile covers about a second");
    assert.ok(Array.isArray(JSON.parse(prof.body).nodes));
    // Where it allocated for half a second (a sampling heap profile, `.heapprofile`).
    const allocs = await http(`${base}/debug/pprof/allocs?seconds=0.5`);
    assert.equal(allocs.status, 200);
    const sampled = JSON.parse(allocs.body);
    assert.ok(
      sampled.head?.callFrame && Array.isArray(sampled.samples),
      "a V8 sampling heap profile",
    );
    for (const bad of ["abc", "0", "601", "-1"]) {
      const r = await http(`${base}/debug/pprof/profile?seconds=${bad}`);
      assert.equal(r.status, 400, bad);
      assert.match(r.body, /Bad seconds/);
    }
    // A client that asks for ten minutes and leaves: the recording ends with it (through the
    // HTTP front to the serving isolate), and the next profile is recorded at once, not 409.
    const conn = await Deno.connect({
      hostname: "127.0.0.1",
      port: Number(d.monitoring.split(":")[1]),
    });
    await conn.write(
      new TextEncoder().encode("GET /debug/pprof/profile?seconds=600 HTTP/1.1\r\nhost: x\r\n\r\n"),
    );
    await new Promise((r) => setTimeout(r, 300));
    conn.close();
    await waitUntil(
      async () => (await http(`${base}/debug/pprof/profile?seconds=0.1`)).status === 200,
      10_000,
      "a profile recorded after the client of the ten-minute one left",
    );

    // REST cache: a miss, then hits; a change (a new debug-registry service) clears it.
    const clusters = (id: string) => post(`${base}/v3/discovery:clusters`, { node: { id } });
    const stats = async () => JSON.parse((await http(`${base}/cache_stats`)).body).cache_stats;
    const first = await clusters(NODE);
    assert.equal(first.status, 200);
    assert.deepEqual((await stats()).cds, { hit: 0, miss: 1 });
    await clusters(NODE);
    await clusters(NODE);
    assert.deepEqual((await stats()).cds, { hit: 2, miss: 1 });
    const add = await post(`${base}/debug/registryz?svc=${DEBUG_HOST}`, {
      ports: [{ name: "http", port: 8080 }],
    });
    assert.equal(add.status, 200);
    await clusters(NODE);
    assert.deepEqual((await stats()).cds, { hit: 2, miss: 2 }, "the change invalidated the cache");
    assert.equal((await post(`${base}/cache_stats_delete`, "")).status, 200);
    assert.deepEqual(await stats(), {});

    // The webhook rewrote every cluster response (one call per miss, none for hits).
    assert.deepEqual(webhookCalls, ["/v3/discovery:clusters", "/v3/discovery:clusters"]);
    const rewritten = JSON.parse(first.body);
    assert.equal(rewritten.rewritten, "/v3/discovery:clusters");
    assert.equal(rewritten.resources.length, 1);
    // EDS is not sent to the webhook.
    const eds = await post(`${base}/v3/discovery:endpoints`, {
      node: { id: NODE },
      resource_names: ["outbound|80||hello.default.svc.cluster.local"],
    });
    assert.equal(JSON.parse(eds.body).rewritten, undefined);
    assert.equal(webhookCalls.length, 2);

    // A failing webhook: the unmodified response, and the error is counted.
    webhookMode = "fail";
    const other = "sidecar~127.0.1.2~hello-v2.default~default.svc.cluster.local";
    const plain = JSON.parse((await clusters(other)).body);
    assert.equal(plain.rewritten, undefined);
    assert.ok(plain.resources.length > 1);
    assert.match(d.proc.output(), /Webhook failed, serving the unmodified response: .*status 500/);
    const metrics = (await http(`${base}/metrics`)).body;
    assert.match(metrics, /^mesh_discovery_webhook_errors\{type="cds"\} 1$/m);
    assert.match(metrics, /^mesh_discovery_webhook_calls\{type="cds"\} 3$/m);
    assert.match(metrics, /^mesh_discovery_cache_hit\{type="cds"\} 2$/m);
  } finally {
    const status = await d.proc.stop();
    await webhook.shutdown();
    await Deno.remove(dir, { recursive: true });
    assert.equal(status.code, 0, d.proc.output().slice(-2000));
  }
});

Deno.test("mesh-discovery answers /ready 503 until a slow registry has synced, and 404 on /debug/pprof without --profile", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  const { promise: released, resolve: release } = Promise.withResolvers<void>();
  let asked = false;
  const consul = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    asked = true;
    await released;
    const path = new URL(req.url).pathname;
    return Response.json(path === "/v1/catalog/services" ? {} : []);
  });
  const d = await startDiscovery([
    "--registries",
    "RegistryA",
    "--regaserverURL",
    `http://127.0.0.1:${consul.addr.port}`,
    "--configDir",
    dir,
  ]);
  try {
    await waitUntil(() => asked, 10_000, "discovery to poll the registry");
    const before = await http(`http://${d.http}/ready`);
    assert.equal(before.status, 503);
    assert.match(before.body, /not ready/);
    release();
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    const pprof = await http(`http://${d.monitoring}/debug/pprof/heap`);
    assert.equal(pprof.status, 404);
    assert.match(pprof.body, /Profiling is off/);
  } finally {
    release();
    const status = await d.proc.stop();
    await consul.shutdown();
    await Deno.remove(dir, { recursive: true });
    assert.equal(status.code, 0, d.proc.output().slice(-2000));
  }
});

Deno.test("mesh-discovery prints ads debug lines after ControlZ sets the ads scope to debug, and meshctl proxy-config shows its proxies", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-disc-" });
  const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
  const client = adsClient(d.grpc);
  const streams: ReturnType<typeof client.open>[] = [];
  const connect = async (id: string) => {
    const s = client.open();
    streams.push(s);
    s.send({ node: { id }, type_url: TYPE_URLS.cluster });
    await s.next(TYPE_URLS.cluster);
  };
  const adsDebug = /\tdebug\tads\t/;
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    // At the default level (info) a connection and a push print no ads debug lines.
    await connect(NODE);
    assert.equal((await http(`http://${d.http}/debug/adsz?push=1`)).body, "Pushed to 1 servers\n");
    await d.proc.waitFor(/ADS: new sotw connection/, 5000);
    assert.doesNotMatch(d.proc.output(), adsDebug);

    const scope = await http(`http://${d.ctrlz}/scopej/ads`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ output_level: "debug" }),
    });
    assert.equal(scope.status, 200, scope.body);
    assert.equal(JSON.parse(scope.body).output_level, "debug");
    const cut = d.proc.output().length;
    await connect("sidecar~127.0.1.2~hello-v2.default~default.svc.cluster.local");
    await http(`http://${d.http}/debug/adsz?push=1`);
    await d.proc.waitFor((out) => adsDebug.test(out.slice(cut)), 5000);
    assert.match(d.proc.output().slice(cut), /\tdebug\tads\tADS: push .*clients=2/);
    // Other scopes stay at info.
    assert.doesNotMatch(d.proc.output(), /\tdebug\tdefault\t/);

    // meshctl proxy-config on the fs platform asks this instance (MESH_DISCOVERY_ADDR).
    const r = await runProgram(
      "meshctl",
      ["proxy-config", "discovery", "mesh", "ads", "-p", "fs"],
      {
        env: { MESH_DISCOVERY_ADDR: d.monitoring },
      },
    );
    assert.equal(r.code, 0, r.stderr);
    const adsz = JSON.parse(r.stdout);
    assert.deepEqual(
      adsz.map((c: { node: string }) => c.node.split("~")[2]).sort(),
      ["hello-v1.default", "hello-v2.default"],
    );
    const one = await runProgram("meshctl", [
      "proxy-config",
      "discovery",
      "nobody",
      "ads",
      "-p",
      "fs",
    ], {
      env: { MESH_DISCOVERY_ADDR: d.monitoring },
    });
    assert.equal(one.code, 0);
    assert.match(one.stderr, /proxy not connected to this discovery instance/);

    // On the orch platform meshctl finds the discovery pod (app=mesh-discovery in the mesh
    // namespace) and asks it at its pod IP and named monitoring port.
    await using kube = await startFakeKube();
    const monitoringPort = Number(d.monitoring.split(":")[1]);
    kube.upsert({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "mesh-discovery-0",
        namespace: "mesh-system",
        labels: { app: "mesh-discovery" },
      },
      spec: {
        containers: [{
          name: "discovery",
          image: "mesh/discovery",
          ports: [{ name: "http-monitoring", containerPort: monitoringPort }],
        }],
      },
      status: { podIP: "127.0.0.1" },
    });
    const orch = await runProgram(
      "meshctl",
      ["proxy-config", "discovery", "hello-v1", "ads", "-c", kube.kubeconfigPath],
    );
    assert.equal(orch.code, 0, orch.stderr);
    assert.equal(orch.stderr, "", orch.stderr);
    // the proxy's own clusters: only a connected hello sidecar has an inbound cluster of hello
    assert.match(orch.stdout, /"name": "inbound\|7070\|\|hello\.default\.svc\.cluster\.local"/);
    const orchNobody = await runProgram(
      "meshctl",
      ["proxy-config", "discovery", "nobody", "ads", "-c", kube.kubeconfigPath],
    );
    assert.equal(orchNobody.code, 0, orchNobody.stderr);
    assert.equal(orchNobody.stdout, "");
    assert.match(orchNobody.stderr, /proxy not connected to this discovery instance/);
  } finally {
    for (const s of streams) await s.close().catch(() => {});
    client.close();
    const status = await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
    assert.equal(status.code, 0, d.proc.output().slice(-2000));
  }
});

import assert from "node:assert/strict";
import {
  discoveryApp,
  type HttpDeps,
  isLocalPeer,
  isLoopbackAddress,
  MAX_REQUEST_BYTES,
  MAX_RESOURCE_NAMES,
} from "./http.ts";
import {
  type DeltaDiscoveryResponse,
  MemoryStream,
  ResourceCache,
  XDS_TYPES,
  XdsServer,
} from "../../lib/xds/server/mod.ts";
import { DebugRegistry } from "./debug_registry.ts";
import { quiet, testModel } from "./_test_util.ts";

/** The mux over deps no test here reaches (the answers come before any of them is used). */
function app() {
  return discoveryApp({ logger: quiet } as unknown as HttpDeps);
}

const peer = (hostname: string) => ({ remoteAddr: { transport: "tcp", hostname, port: 40000 } });

Deno.test("isLoopbackAddress() accepts 127.0.0.0/8, ::1 and ::ffff:127.x and nothing else", () => {
  for (const h of ["127.0.0.1", "127.0.0.2", "127.255.1.9", "::1", "0:0:0:0:0:0:0:1", "[::1]"]) {
    assert.equal(isLoopbackAddress(h), true, h);
  }
  assert.equal(isLoopbackAddress("::ffff:127.0.0.1"), true);
  for (const h of ["10.0.0.1", "0.0.0.0", "128.0.0.1", "127.0.0.256", "::", "::2", "fe80::1"]) {
    assert.equal(isLoopbackAddress(h), false, h);
  }
  assert.equal(isLoopbackAddress("::ffff:10.0.0.1"), false);
  assert.equal(isLoopbackAddress("localhost"), false, "names are not resolved");
  assert.equal(isLocalPeer({ remoteAddr: { transport: "unix", path: "/run/x.sock" } }), true);
  assert.equal(isLocalPeer(undefined), false, "an unknown peer is not local");
});

Deno.test("discoveryApp() refuses debug changes, pushes and cache resets from a non-loopback peer", async () => {
  const a = app();
  const svc = "x.default.svc.cluster.local";
  const cases: [string, { method?: string; body?: string }][] = [
    [`/debug/registryz?svc=${svc}`, { method: "POST", body: '{"ports":[{"port":80}]}' }],
    [`/debug/endpointz?svc=${svc}`, { method: "POST", body: '{"address":"10.0.0.1"}' }],
    [`/debug/endpointz/?svc=${svc}`, { method: "POST", body: "{}" }],
    ["/debug/adsz?push=1", {}],
    ["/debug/edsz?push=1", {}],
    ["/cache_stats_delete", { method: "POST" }],
  ];
  for (const [path, init] of cases) {
    for (const env of [peer("10.1.2.3"), peer("::ffff:192.168.0.1"), undefined]) {
      const res = await a.request(path, init, env);
      assert.equal(res.status, 403, `${path} from ${JSON.stringify(env)}`);
      assert.equal(await res.text(), "debug changes are accepted from localhost only\n");
    }
  }
});

Deno.test("discoveryApp() answers 405 with Allow: POST for other methods on POST-only paths", async () => {
  const a = app();
  for (
    const path of ["/v3/discovery:clusters", "/v3/discovery:endpoints/", "/cache_stats_delete"]
  ) {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const res = await a.request(path, { method });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get("allow"), "POST");
      assert.match(
        await res.text(),
        new RegExp(`^Method ${method} not allowed on .*: use POST\\n$`),
      );
    }
  }
  const other = await a.request("/v3/discovery:secrets");
  assert.equal(other.status, 404);
  await other.body?.cancel();
});

Deno.test("discoveryApp() answers 413 to request bodies over MAX_REQUEST_BYTES without reading them whole", async () => {
  const calls: string[] = [];
  const a = discoveryApp({
    logger: quiet,
    metrics: { restCall: (t: string, ok: boolean) => calls.push(`${t} ${ok}`) },
  } as unknown as HttpDeps);
  const big = "x".repeat(MAX_REQUEST_BYTES + 1);
  const declared = await a.request("/v3/discovery:routes", { method: "POST", body: big });
  assert.equal(declared.status, 413);
  assert.equal(
    await declared.text(),
    `Request body: more than the ${MAX_REQUEST_BYTES}-byte limit\n`,
  );
  // streamed without a length: cut once past the limit
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (sent > 2 * MAX_REQUEST_BYTES) return ctl.close();
      sent += 1 << 20;
      ctl.enqueue(new Uint8Array(1 << 20));
    },
  });
  const streamed = await a.request("/debug/registryz?svc=x", { method: "POST", body: stream }, {
    remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 1 },
  });
  assert.equal(streamed.status, 413);
  await streamed.body?.cancel();
  assert.ok(sent <= MAX_REQUEST_BYTES + (2 << 20), `read ${sent} bytes`);
  assert.deepEqual(calls, ["rds false"]);
});

Deno.test("discoveryApp() answers 400 to more than MAX_RESOURCE_NAMES names in one request", async () => {
  const a = discoveryApp({ logger: quiet, metrics: { restCall() {} } } as unknown as HttpDeps);
  const res = await a.request("/v3/discovery:routes", {
    method: "POST",
    body: JSON.stringify({
      node: { id: "sidecar~10.0.0.1~a.default~default.svc.cluster.local" },
      resource_names: Array.from({ length: MAX_RESOURCE_NAMES + 1 }, (_, i) => `r${i}`),
    }),
  });
  assert.equal(res.status, 400);
  assert.equal(
    await res.text(),
    `DiscoveryRequest: resource_names has ${MAX_RESOURCE_NAMES + 1} names, at most ` +
      `${MAX_RESOURCE_NAMES} per request (split the request)\n`,
  );
});

Deno.test("discoveryApp() /ready answers 503 naming the reason while the config pipeline is stalled", async () => {
  let stalled: string | undefined = 'Cannot read config directory "/x": No such file';
  const a = discoveryApp({
    logger: quiet,
    isReady: () => true,
    stalled: () => stalled,
  } as unknown as HttpDeps);
  const res = await a.request("/ready");
  assert.equal(res.status, 503);
  assert.equal(await res.text(), `not ready: ${stalled}\n`);
  stalled = undefined;
  const ok = await a.request("/ready");
  assert.equal(ok.status, 200);
  assert.equal(await ok.text(), "ready\n");
});

Deno.test("/debug/syncz shows a delta NACK beside the last acked version and nonce", async () => {
  const cache = new ResourceCache();
  cache.set(XDS_TYPES.cluster, "c1", new TextEncoder().encode("a"));
  const server = new XdsServer<{ id: string }>({
    parseNode: (n) => ({ id: n.id.split("~")[2] }),
    resourcesFor: (_p, t, names) => cache.select(t, names),
    debounceAfter: 0,
    logger: quiet,
  });
  const a = discoveryApp({ logger: quiet, server } as unknown as HttpDeps);
  const s = new MemoryStream<DeltaDiscoveryResponse>();
  const h = server.openDelta(s);
  const CDS = XDS_TYPES.cluster;
  h.receive({
    node: { id: "sidecar~10.0.0.1~a.default~default.svc.cluster.local" },
    type_url: CDS,
  });
  const d1 = await s.next();
  h.receive({ type_url: CDS, response_nonce: d1.nonce });
  cache.set(CDS, "c1", new TextEncoder().encode("b"));
  server.push({ kind: "config", types: [CDS] });
  await server.flush();
  const d2 = await s.next();
  h.receive({ type_url: CDS, response_nonce: d2.nonce, error_detail: { message: "rejected" } });
  await server.flush();
  const res = await a.request("/debug/syncz?proxyID=a.default");
  assert.equal(res.status, 200);
  const [sync] = await res.json();
  assert.equal(sync.mode, "delta");
  assert.deepEqual({ ...sync.cds, nack: { ...sync.cds.nack, time: "t" } }, {
    sent: d2.system_version_info,
    sentNonce: d2.nonce,
    acked: d1.system_version_info,
    ackedNonce: d1.nonce,
    resources: 1,
    nack: { version: d2.system_version_info, nonce: d2.nonce, error: "rejected", time: "t" },
  });
  server.close();
  await s.waitEnded();
});

Deno.test("GET /debug/registryz and /debug/endpointz list what was POSTed to the debug registry before it is pushed", async () => {
  const debugRegistry = new DebugRegistry();
  // no router: the context in force is never rebuilt nor given new instances here
  const model = await testModel({ registry: debugRegistry });
  const a = discoveryApp(
    { logger: quiet, model, registry: debugRegistry, debugRegistry } as unknown as HttpDeps,
  );
  const local = peer("127.0.0.1");
  const post = async (path: string, body: string) => {
    const res = await a.request(path, { method: "POST", body }, local);
    assert.equal(res.status, 200, await res.text());
  };
  const [host, other] = ["debug.default.svc.cluster.local", "other.default.svc.cluster.local"];
  await post(`/debug/registryz?svc=${host}`, '{"ports":[{"name":"http","port":8080}]}');
  await post(
    `/debug/endpointz?svc=${host}`,
    '{"address":"10.9.0.1","port":18080,"servicePort":"http"}',
  );
  await post(`/debug/registryz?svc=${other}`, '{"ports":[{"port":80}]}');
  assert.deepEqual(model.context().services.map((s) => s.hostname), [host]);
  assert.deepEqual(model.context().instances, []);
  const services = await (await a.request("/debug/registryz")).json();
  assert.deepEqual(services.map((s: { hostname?: string }) => s.hostname), [
    host,
    other,
    undefined,
  ]);
  const listing = await (await a.request("/debug/endpointz")).json();
  const group = listing.find((g: { svc: string }) => g.svc === `${host}:http`);
  assert.equal(group.ep[0].address, "10.9.0.1");
  assert.match(await (await a.request("/debug/endpointz?brief=1")).text(), /10\.9\.0\.1:18080/);
});

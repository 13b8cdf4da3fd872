import assert from "node:assert/strict";
import { discoveryApp, type HttpDeps, isLocalPeer, isLoopbackAddress } from "./http.ts";
import {
  type DeltaDiscoveryResponse,
  MemoryStream,
  ResourceCache,
  XDS_TYPES,
  XdsServer,
} from "../../lib/xds/server/mod.ts";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

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

import assert from "node:assert/strict";
import { discoveryApp, type HttpDeps, isLocalPeer, isLoopbackAddress } from "./http.ts";

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

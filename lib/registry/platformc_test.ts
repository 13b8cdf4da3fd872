import assert from "node:assert/strict";
import { makeTestPki } from "../../tests/harness/certs.ts";
import { createPlatformCRegistry, parsePlatformCConfig } from "./platformc.ts";

Deno.test("parsePlatformCConfig() names the field of every mistake", () => {
  const ok = parsePlatformCConfig(
    "platformc:\n  address: 127.0.0.1:9000\n  poll_interval: 1m30s\nservice_port: 8080\n",
    "pc.yaml",
  );
  assert.equal(ok.address, "https://127.0.0.1:9000");
  assert.equal(ok.pollIntervalMs, 90_000);
  assert.throws(() => parsePlatformCConfig("platformc: {}\n", "pc.yaml"), {
    message: "pc.yaml: platformc.address: missing required field",
  });
  assert.throws(
    () => parsePlatformCConfig("platformc:\n  address: a:1\n  poll_interval: 1x\n", "pc.yaml"),
    /pc\.yaml: platformc\.poll_interval: /,
  );
  assert.throws(
    () => parsePlatformCConfig("platformc:\n  address: a:1\n  adress: b\n", "pc.yaml"),
    { message: "pc.yaml: platformc.adress: unknown field" },
  );
  assert.throws(
    () => parsePlatformCConfig("platformc:\n  address: a:1\nservice_port: 70000\n", "pc.yaml"),
    /service_port: must be a port number/,
  );
});

Deno.test("createPlatformCRegistry() polls routes and internal routes over TLS", async () => {
  const pki = await makeTestPki();
  const server = await pki.issue("platformc", { ips: ["127.0.0.1"] });
  const client = await pki.issue("discovery");
  const httpd = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(server.cert),
    key: await Deno.readTextFile(server.key),
    onListen() {},
  }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/v1/routes") {
      return Response.json({
        backends: {
          "shop.apps.internal": {
            backends: [{ address: "10.255.0.1", port: 61001, app_guid: "g-1" }],
          },
        },
      });
    }
    if (path === "/v1/internal-routes") {
      return Response.json({
        internal_routes: [{
          hostname: "db.apps.internal",
          vip: "127.128.0.1",
          backends: { backends: [{ address: "10.255.0.2", port: 61002 }] },
        }],
      });
    }
    return new Response("", { status: 404 });
  });
  const cfg = parsePlatformCConfig(
    [
      "platformc:",
      `  address: 127.0.0.1:${httpd.addr.port}`,
      `  server_ca_cert_path: ${pki.caCert}`,
      `  client_cert_path: ${client.cert}`,
      `  client_key_path: ${client.key}`,
      "  poll_interval: 1h",
      "service_port: 8080",
    ].join("\n"),
    "pc.yaml",
  );
  const reg = await createPlatformCRegistry(cfg);
  try {
    await reg.start();
    assert.deepEqual(
      reg.services().map((s) => [s.hostname, s.address, s.ports[0].name, s.ports[0].protocol]),
      [
        ["shop.apps.internal", "0.0.0.0", "http", "HTTP"],
        ["db.apps.internal", "127.128.0.1", "tcp", "TCP"],
      ],
    );
    assert.deepEqual(reg.instances()[0].labels, { cfapp: "g-1" });
    assert.equal(reg.instances()[1].port, 61002);
  } finally {
    await reg.stop();
    await httpd.shutdown();
    await pki.remove();
  }
});

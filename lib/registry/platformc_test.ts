import assert from "node:assert/strict";
import https from "node:https";
import { makeTestPki } from "../../tests/harness/certs.ts";
import { convertPlatformC, createPlatformCRegistry, parsePlatformCConfig } from "./platformc.ts";

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

/** A PlatformC API over HTTPS that requires a client certificate signed by the test CA. */
async function startMtlsApi(pki: Awaited<ReturnType<typeof makeTestPki>>) {
  const server = await pki.issue("platformc", { ips: ["127.0.0.1"] });
  const peers: string[] = [];
  const httpd = https.createServer({
    cert: await Deno.readTextFile(server.cert),
    key: await Deno.readTextFile(server.key),
    ca: await Deno.readTextFile(pki.caCert),
    requestCert: true,
    rejectUnauthorized: true,
  }, (req, res) => {
    // deno-lint-ignore no-explicit-any
    peers.push((req.socket as any).getPeerCertificate()?.subject?.CN ?? "");
    res.setHeader("content-type", "application/json");
    if (req.url === "/v1/routes") {
      res.end(JSON.stringify({
        backends: {
          "shop.apps.internal": {
            backends: [{ address: "10.255.0.1", port: 61001, app_guid: "g-1" }],
          },
        },
      }));
    } else if (req.url === "/v1/internal-routes") {
      res.end(JSON.stringify({
        internal_routes: [{
          hostname: "db.apps.internal",
          vip: "127.128.0.1",
          backends: { backends: [{ address: "10.255.0.2", port: 61002 }] },
        }],
      }));
    } else {
      res.statusCode = 404;
      res.end("{}");
    }
  });
  await new Promise<void>((resolve) => httpd.listen(0, "127.0.0.1", resolve));
  const port = (httpd.address() as { port: number }).port;
  return {
    port,
    peers,
    close: () => new Promise<void>((resolve) => httpd.close(() => resolve())),
  };
}

function config(port: number, ca: string, client?: { cert: string; key: string }): string {
  return [
    "platformc:",
    `  address: 127.0.0.1:${port}`,
    `  server_ca_cert_path: ${ca}`,
    ...(client ? [`  client_cert_path: ${client.cert}`, `  client_key_path: ${client.key}`] : []),
    "  poll_interval: 1h",
    "service_port: 8080",
  ].join("\n");
}

Deno.test("createPlatformCRegistry() polls routes and internal routes over mutual TLS", async () => {
  const pki = await makeTestPki();
  const client = await pki.issue("discovery");
  const api = await startMtlsApi(pki);
  const reg = await createPlatformCRegistry(
    parsePlatformCConfig(config(api.port, pki.caCert, client), "pc.yaml"),
  );
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
    // The API saw our client certificate on every request.
    assert.deepEqual([...new Set(api.peers)], ["discovery"]);
  } finally {
    await reg.stop();
    await api.close();
    await pki.remove();
  }
});

Deno.test("createPlatformCRegistry() gets nothing from an API that wants a client certificate it lacks", async () => {
  const pki = await makeTestPki();
  const api = await startMtlsApi(pki);
  const reg = await createPlatformCRegistry(
    parsePlatformCConfig(config(api.port, pki.caCert), "pc.yaml"),
  );
  try {
    await assert.rejects(reg.pollNow());
    assert.deepEqual(reg.services(), []);
    assert.deepEqual(api.peers, []);
  } finally {
    await reg.stop();
    await api.close();
    await pki.remove();
  }
});

Deno.test("parsePlatformCConfig() refuses each malformed file with a one-line error naming the field", () => {
  const bad: [string, string][] = [
    ["- a\n", "pc.yaml: expected a YAML mapping"],
    ["just text\n", "pc.yaml: expected a YAML mapping"],
    ["", "pc.yaml: expected a YAML mapping"],
    ["platformc:\n  address: a:1\nextra: 1\n", "pc.yaml: extra: unknown field"],
    ["service_port: 80\n", "pc.yaml: platformc: missing required field"],
    ["platformc: text\n", "pc.yaml: platformc: missing required field"],
    ["platformc:\n  address: null\n", "pc.yaml: platformc.address: missing required field"],
    ["platformc:\n  address: 7\n", "pc.yaml: platformc.address: must be a string"],
    [
      "platformc:\n  address: 'http://a b'\n",
      'pc.yaml: platformc.address: invalid address "http://a b"',
    ],
    [
      "platformc:\n  address: a:1\n  poll_interval: 0s\n",
      "pc.yaml: platformc.poll_interval: must be > 0",
    ],
    [
      "platformc:\n  address: a:1\nservice_port: '80'\n",
      "pc.yaml: service_port: must be a port number between 1 and 65535",
    ],
    [
      "platformc:\n  address: a:1\nservice_port: 1.5\n",
      "pc.yaml: service_port: must be a port number between 1 and 65535",
    ],
    [
      "platformc:\n  address: a:1\nservice_port: 0\n",
      "pc.yaml: service_port: must be a port number between 1 and 65535",
    ],
    [
      "platformc:\n  address: a:1\nservice_port: 65536\n",
      "pc.yaml: service_port: must be a port number between 1 and 65535",
    ],
    [
      "platformc:\n  address: a:1\n  client_key_path: k.pem\n",
      "pc.yaml: platformc.client_cert_path and platformc.client_key_path must be given together",
    ],
  ];
  for (const [text, message] of bad) {
    assert.throws(() => parsePlatformCConfig(text, "pc.yaml"), { message }, JSON.stringify(text));
  }
  // the limits themselves are fine; http:// is kept, anything else becomes https://; slashes go
  const edge = parsePlatformCConfig(
    "copilot:\n  address: http://pc.local:9000//\nservice_port: 65535\n",
    "pc.yaml",
  );
  assert.equal(edge.address, "http://pc.local:9000");
  assert.equal(edge.servicePort, 65535);
  assert.equal(edge.pollIntervalMs, 30_000);
  assert.equal(
    parsePlatformCConfig("platformc:\n  address: pc:1\nservice_port: 1\n", "p").address,
    "https://pc:1",
  );
  assert.equal(
    parsePlatformCConfig("platformc:\n  address: xhttp://pc:1\n", "p").address,
    "https://xhttp://pc:1",
  );
});

Deno.test("convertPlatformC() builds whole services and instances, sorted, skipping unusable entries", () => {
  const snap = convertPlatformC(
    {
      backends: {
        "b.apps.internal": { backends: [{ address: "10.0.0.2", port: 61001 }] },
        "a.apps.internal": {
          backends: [
            { address: "10.0.0.1", port: 61000, app_guid: "g-1" },
            { address: "", port: 1 }, // no address
            { address: "10.0.0.9" }, // no port
          ],
        },
        "c.apps.internal": {}, // no backends: a service without instances
      },
    },
    {
      internal_routes: [
        {
          hostname: "db.internal",
          vip: "127.128.0.1",
          backends: { backends: [{ address: "10.1.0.1", port: 5432 }] },
        },
        { hostname: "novip.internal" },
        { vip: "127.128.0.2" }, // no hostname: skipped
      ],
    },
    8080,
  );
  const http = { name: "http", port: 8080, protocol: "HTTP" };
  const tcp = { name: "tcp", port: 8080, protocol: "TCP" };
  const service = (hostname: string, address: string, port: unknown) => ({
    hostname,
    address,
    ports: [port],
    namespace: "",
    meshExternal: false,
    resolution: "ClientSideLB",
    serviceAccounts: [],
    registry: "PlatformC",
  });
  assert.deepEqual(snap.services, [
    service("a.apps.internal", "0.0.0.0", http),
    service("b.apps.internal", "0.0.0.0", http),
    service("c.apps.internal", "0.0.0.0", http),
    service("db.internal", "127.128.0.1", tcp),
    service("novip.internal", "0.0.0.0", tcp),
  ]);
  assert.deepEqual(snap.instances, [
    {
      hostname: "a.apps.internal",
      servicePort: http,
      address: "10.0.0.1",
      port: 61000,
      labels: { cfapp: "g-1" },
      locality: "",
      serviceAccount: "",
    },
    {
      hostname: "b.apps.internal",
      servicePort: http,
      address: "10.0.0.2",
      port: 61001,
      labels: {},
      locality: "",
      serviceAccount: "",
    },
    {
      hostname: "db.internal",
      servicePort: tcp,
      address: "10.1.0.1",
      port: 5432,
      labels: {},
      locality: "",
      serviceAccount: "",
    },
  ]);
  assert.deepEqual(convertPlatformC(null, null, 8080), { services: [], instances: [] });
});

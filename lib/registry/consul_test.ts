import assert from "node:assert/strict";
import { convertConsulService, createConsulRegistry } from "./consul.ts";
import { logFile } from "./_testutil.ts";

/** A fake Consul catalog speaking the real HTTP API shape (`/v1/catalog/...`). */
function fakeConsul(catalog: Record<string, unknown[]>) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/v1/catalog/services") {
      return Response.json(Object.fromEntries(Object.keys(catalog).map((k) => [k, []])));
    }
    const m = url.pathname.match(/^\/v1\/catalog\/service\/(.+)$/);
    if (m) return Response.json(catalog[decodeURIComponent(m[1])] ?? []);
    return new Response("not found", { status: 404 });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, server };
}

Deno.test("createConsulRegistry() maps catalog services, tags and node metadata", async () => {
  const catalog: Record<string, unknown[]> = {
    productpage: [
      {
        Node: "n1",
        Address: "10.0.0.1",
        Datacenter: "dc1",
        ServiceAddress: "172.16.0.5",
        ServicePort: 9080,
        ServiceTags: ["version|v1", "plain-tag"],
        NodeMeta: { protocol: "http" },
      },
      {
        Node: "n2",
        Address: "10.0.0.2",
        Datacenter: "dc2",
        ServiceAddress: "",
        ServicePort: 9080,
        ServiceTags: ["version|v2"],
        NodeMeta: null,
      },
    ],
    db: [{ Node: "n3", Address: "10.0.0.3", ServicePort: 5432, NodeMeta: { protocol: "tcp" } }],
  };
  const fake = fakeConsul(catalog);
  const reg = createConsulRegistry(fake.url, 60_000);
  try {
    await reg.start();
    const svcs = reg.services();
    assert.deepEqual(svcs.map((s) => s.hostname), [
      "db.service.consul",
      "productpage.service.consul",
    ]);
    const pp = svcs[1];
    assert.deepEqual(pp.ports, [{ name: "http", port: 9080, protocol: "HTTP" }]);
    assert.equal(pp.address, "0.0.0.0");
    assert.equal(svcs[0].ports[0].protocol, "TCP");
    const insts = reg.instances().filter((i) => i.hostname === "productpage.service.consul");
    assert.deepEqual(
      insts.map((i) => [i.address, i.port, i.labels, i.locality]),
      [["172.16.0.5", 9080, { version: "v1" }, "dc1"], [
        "10.0.0.2",
        9080,
        { version: "v2" },
        "dc2",
      ]],
    );
    // A change in the catalog is seen on the next poll and reported as an endpoint change.
    let seen = "";
    reg.onChange((k) => seen = k);
    (catalog.productpage[1] as { ServicePort: number; Address: string }).Address = "10.0.0.9";
    await reg.pollNow();
    assert.equal(seen, "endpoints");
    assert.ok(reg.instances().some((i) => i.address === "10.0.0.9"));
  } finally {
    await reg.stop();
    await fake.server.shutdown();
  }
});

Deno.test("createConsulRegistry() keeps the last good view when the catalog fails", async () => {
  let fail = false;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    if (fail) return new Response("boom", { status: 500 });
    const url = new URL(req.url);
    if (url.pathname === "/v1/catalog/services") return Response.json({ a: [] });
    return Response.json([{ Address: "10.1.1.1", ServicePort: 80 }]);
  });
  const reg = createConsulRegistry(`http://127.0.0.1:${server.addr.port}`, 60_000);
  try {
    await reg.start();
    assert.equal(reg.instances().length, 1);
    fail = true;
    await assert.rejects(reg.pollNow(), /HTTP 500: boom/);
    assert.equal(reg.instances().length, 1);
  } finally {
    await reg.stop();
    await server.shutdown();
  }
});

Deno.test("convertConsulService() marks node-meta external services and reports odd tags", () => {
  const snap = convertConsulService("payments", [
    {
      Address: "10.0.0.7",
      ServicePort: 443,
      ServiceTags: ["primary", "zone|a"],
      NodeMeta: { external: "payments", protocol: "https" },
    },
  ]);
  assert.equal(snap.services[0].meshExternal, true);
  assert.equal(snap.services[0].resolution, "Passthrough");
  assert.deepEqual(snap.services[0].ports, [{ name: "https", port: 443, protocol: "HTTPS" }]);
  assert.deepEqual(snap.instances[0].labels, { zone: "a" });
  assert.deepEqual(snap.ignoredTags, ["primary"]);
});

Deno.test("convertConsulService() builds the whole service: ports sorted, first protocol kept, entries without a port skipped", () => {
  const snap = convertConsulService("web", [
    { Address: "10.0.0.1", ServicePort: 9090, NodeMeta: { protocol: "grpc" } },
    { Address: "10.0.0.2", ServicePort: 8080 }, // no protocol: http
    { Address: "10.0.0.3", ServicePort: 9090, NodeMeta: { protocol: "tcp" }, Datacenter: "dc2" },
    { Address: "10.0.0.4" } as { Address: string }, // no port: skipped
    { ServicePort: 7000, ServiceTags: ["|x", "v|1"] },
    { ServicePort: 7000, ServiceTags: ["|x"] }, // the same odd tag: reported once
  ]);
  const sa = "spiffe://cluster.local/ns/default/sa/default";
  assert.deepEqual(snap.services, [{
    hostname: "web.service.consul",
    address: "0.0.0.0",
    ports: [
      { name: "http", port: 7000, protocol: "HTTP" },
      { name: "http", port: 8080, protocol: "HTTP" },
      { name: "grpc", port: 9090, protocol: "GRPC" },
    ],
    namespace: "",
    meshExternal: false,
    resolution: "ClientSideLB",
    serviceAccounts: [sa],
    registry: "RegistryA",
  }]);
  assert.deepEqual(
    snap.instances.map((i) => [i.address, i.port, i.servicePort.protocol, i.locality, i.labels]),
    [
      ["10.0.0.1", 9090, "GRPC", "", {}],
      ["10.0.0.2", 8080, "HTTP", "", {}],
      ["10.0.0.3", 9090, "GRPC", "dc2", {}],
      ["", 7000, "HTTP", "", { v: "1" }],
      ["", 7000, "HTTP", "", {}],
    ],
  );
  assert.ok(snap.instances.every((i) => i.serviceAccount === sa));
  assert.deepEqual(snap.ignoredTags, ["|x"]);
});

Deno.test("createConsulRegistry() refuses catalog answers of the wrong shape and keeps the last good view", async () => {
  let services: unknown = { a: [] };
  let entries: unknown = [{ Address: "10.1.1.1", ServicePort: 80 }];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/v1/catalog/services") return Response.json(services);
    if (url.pathname === "/v1/catalog/service/a") return Response.json(entries);
    return new Response("not found", { status: 404 });
  });
  // A trailing slash on the URL is fine.
  const reg = createConsulRegistry(`http://127.0.0.1:${server.addr.port}//`, 60_000);
  try {
    await reg.start();
    assert.deepEqual(reg.services().map((s) => s.hostname), ["a.service.consul"]);
    for (const bad of [["a"], null, "a"]) {
      services = bad;
      await assert.rejects(reg.pollNow(), /catalog\/services: expected a JSON object/);
    }
    services = { a: [] };
    entries = { Address: "10.1.1.1" };
    await assert.rejects(reg.pollNow(), /catalog\/service\/a: expected a JSON array/);
    assert.deepEqual(reg.instances().map((i) => i.address), ["10.1.1.1"]);
  } finally {
    await reg.stop();
    await server.shutdown();
  }
});

Deno.test("createConsulRegistry() warns once per service and odd tag, and once per outage", async () => {
  const log = await logFile();
  let fail = false;
  const fake = fakeConsul({
    a: [{ Address: "10.0.0.1", ServicePort: 80, ServiceTags: ["primary", "v|1"] }],
    b: [
      { Address: "10.0.0.2", ServicePort: 80, ServiceTags: ["primary"] },
      { Address: "10.0.0.3", ServicePort: 80, ServiceTags: ["primary", "canary"] },
    ],
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    if (fail) return new Response("down", { status: 503 });
    const url = new URL(req.url);
    return fetch(`${fake.url}${url.pathname}`);
  });
  const reg = createConsulRegistry(`http://127.0.0.1:${server.addr.port}`, 60_000);
  try {
    await reg.start();
    await reg.pollNow(); // the same tags again: no new warning
    fail = true;
    for (let i = 0; i < 3; i++) await assert.rejects(reg.pollNow(), /HTTP 503/);
    fail = false;
    await reg.pollNow();
    const lines = await log.lines();
    assert.deepEqual(lines, [
      'warn default RegistryA: service a: tag "primary" is not of the form key|value; ignored',
      'warn default RegistryA: service b: tag "primary" is not of the form key|value; ignored',
      'warn default RegistryA: service b: tag "canary" is not of the form key|value; ignored',
      `warn default RegistryA registry poll failed: GET http://127.0.0.1:${server.addr.port}` +
      "/v1/catalog/services: HTTP 503: down",
      "info default RegistryA registry reachable again",
    ]);
  } finally {
    await log.close();
    await reg.stop();
    await server.shutdown();
    await fake.server.shutdown();
  }
});

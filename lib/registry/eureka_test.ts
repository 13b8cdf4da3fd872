import assert from "node:assert/strict";
import { convertEurekaApps, createEurekaRegistry } from "./eureka.ts";

const apps = {
  applications: {
    application: [
      {
        name: "REVIEWS",
        instance: [
          {
            hostName: "reviews.eureka",
            ipAddr: "10.0.1.1",
            status: "UP",
            port: { $: 9080, "@enabled": "true" },
            securePort: { $: 9443, "@enabled": "false" },
            metadata: {
              "@class": "java.util.Collections$EmptyMap",
              "mesh.protocol": "http",
              version: "v1",
            },
          },
          {
            hostName: "reviews.eureka",
            ipAddr: "10.0.1.2",
            status: "DOWN",
            port: { $: 9080, "@enabled": "true" },
          },
        ],
      },
      {
        name: "RATINGS",
        // Eureka sends a single instance as an object, not an array.
        instance: {
          hostName: "ratings.eureka",
          ipAddr: "10.0.2.1",
          status: "UP",
          port: { $: 7000, "@enabled": "true" },
          securePort: { $: 7443, "@enabled": "true" },
          metadata: {},
        },
      },
    ],
  },
};

Deno.test("convertEurekaApps() keeps UP instances, enabled ports and metadata labels", () => {
  const snap = convertEurekaApps(apps);
  assert.deepEqual(snap.services.map((s) => [s.hostname, s.ports]), [
    ["ratings.eureka", [
      { name: "7000", port: 7000, protocol: "TCP" },
      { name: "7443", port: 7443, protocol: "TCP" },
    ]],
    ["reviews.eureka", [{ name: "9080", port: 9080, protocol: "HTTP" }]],
  ]);
  const reviews = snap.instances.filter((i) => i.hostname === "reviews.eureka");
  assert.equal(reviews.length, 1);
  assert.deepEqual(reviews[0].labels, { version: "v1" });
});

Deno.test("createEurekaRegistry() polls /eureka/v2/apps with Accept: application/json", async () => {
  const accepts: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    accepts.push(req.headers.get("accept") ?? "");
    if (new URL(req.url).pathname !== "/eureka/v2/apps") return new Response("", { status: 404 });
    return Response.json(apps);
  });
  const reg = createEurekaRegistry(`http://127.0.0.1:${server.addr.port}/`, 60_000);
  try {
    await reg.start();
    assert.equal(reg.services().length, 2);
    assert.equal(accepts[0], "application/json");
  } finally {
    await reg.stop();
    await server.shutdown();
  }
});

Deno.test("convertEurekaApps() builds whole services: ports sorted and in range, first protocol kept, one app or many", () => {
  const port = (n: unknown, enabled: unknown = "true") => ({ $: n, "@enabled": enabled });
  const snap = convertEurekaApps({
    applications: {
      // a single application (not in an array), as Eureka's JSON gives it
      application: {
        instance: [
          {
            hostName: "web.local",
            ipAddr: "10.0.0.1",
            status: "UP",
            port: port(9090, true), // a JSON boolean works too
            securePort: port(65536), // out of range: ignored
            metadata: { "mesh.protocol": "grpc", version: "v1" },
          },
          {
            hostName: "web.local",
            ipAddr: "10.0.0.2",
            status: "UP",
            port: port(8080),
            securePort: port(9090), // same port, other protocol: the first one is kept
            metadata: { "istio.protocol": "http" },
          },
          { hostName: "web.local", ipAddr: "10.0.0.3", status: "UP", port: port(0) },
          { hostName: "web.local", ipAddr: "10.0.0.4", status: "UP", port: port(65535) },
          { hostName: "web.local", ipAddr: "10.0.0.5", status: "UP", port: port(7000, "false") },
        ],
      },
    },
  });
  assert.deepEqual(snap.services, [{
    hostname: "web.local",
    address: "0.0.0.0",
    ports: [
      { name: "8080", port: 8080, protocol: "HTTP" },
      { name: "9090", port: 9090, protocol: "GRPC" },
      { name: "65535", port: 65535, protocol: "TCP" },
    ],
    namespace: "",
    meshExternal: false,
    resolution: "ClientSideLB",
    serviceAccounts: [],
    registry: "RegistryB",
  }]);
  assert.deepEqual(
    snap.instances.map((
      i,
    ) => [i.address, i.port, i.servicePort.protocol, i.labels, i.locality, i.serviceAccount]),
    [
      ["10.0.0.1", 9090, "GRPC", { version: "v1" }, "", ""],
      ["10.0.0.2", 8080, "HTTP", {}, "", ""],
      ["10.0.0.2", 9090, "GRPC", {}, "", ""],
      ["10.0.0.4", 65535, "TCP", {}, "", ""],
    ],
  );
  assert.deepEqual(convertEurekaApps({}), { services: [], instances: [] });
});

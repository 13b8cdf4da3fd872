import assert from "node:assert/strict";
import { carryEndpoints, serviceAsServiceEntry } from "./_service_fs.ts";
import type { ServiceEntrySpec } from "./_registration.ts";

const SERVICE = {
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "echo", labels: { app: "echo" } },
  spec: {
    selector: { app: "echo" },
    ports: [{ port: 80, targetPort: 8081, protocol: "TCP", name: "http" }],
  },
};

Deno.test("serviceAsServiceEntry() turns the procedure's Service into a mesh-internal static ServiceEntry", () => {
  const r = serviceAsServiceEntry(SERVICE, "default", "stdin document 1");
  assert.ok("entry" in r);
  assert.deepEqual(r.entry, {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "ServiceEntry",
    metadata: { name: "echo", namespace: "default", labels: { app: "echo" } },
    spec: {
      hosts: ["echo.default.svc.cluster.local"],
      ports: [{ number: 80, protocol: "HTTP", name: "http" }],
      location: "MESH_INTERNAL",
      resolution: "STATIC",
      endpoints: [],
    },
  });
  assert.deepEqual(r.fromService, { targetPorts: { 80: 8081 } });
  const tcp = serviceAsServiceEntry(
    { ...SERVICE, spec: { ports: [{ port: 80, targetPort: 8081, name: "tcp" }] } },
    "default",
    "x",
  );
  assert.ok("entry" in tcp);
  assert.deepEqual((tcp.entry.spec as ServiceEntrySpec).ports, [
    { number: 80, protocol: "TCP", name: "tcp" },
  ]);
});

Deno.test("serviceAsServiceEntry() names each bad field", () => {
  const bad = (ports: unknown) =>
    serviceAsServiceEntry({ ...SERVICE, spec: { ports } }, "default", "f document 2");
  assert.deepEqual(bad([]), {
    problems: ["f document 2: Service spec.ports: at least one port is needed"],
  });
  assert.deepEqual(bad([{ port: 80, targetPort: "web", name: "http" }]), {
    problems: [
      "f document 2: Service spec.ports[0].targetPort: must be a port number on the fs platform " +
      '(no containers name ports there), got "web"',
    ],
  });
  const two = bad([{ port: 80, name: "http" }, { port: 81 }, { port: 70000, name: "x" }]);
  assert.ok("problems" in two);
  assert.match(two.problems[0], /spec\.ports\[1\]\.name: must be a DNS-1123 label/);
  assert.match(two.problems[1], /spec\.ports\[2\]\.port: must be a port number/);
});

Deno.test("carryEndpoints() keeps registered instances, renaming their ports and moving them to the target port", () => {
  const stored: ServiceEntrySpec = {
    hosts: ["echo.default.svc.cluster.local"],
    ports: [{ number: 80, protocol: "HTTP", name: "http" }, {
      number: 90,
      protocol: "TCP",
      name: "admin",
    }],
    endpoints: [{ address: "10.0.0.5", ports: { http: 8081, admin: 9090 }, labels: { v: "1" } }],
  };
  const next: ServiceEntrySpec = {
    hosts: ["echo.default.svc.cluster.local"],
    ports: [{ number: 80, protocol: "TCP", name: "tcp" }, {
      number: 90,
      protocol: "TCP",
      name: "admin",
    }, { number: 99, protocol: "TCP", name: "new" }],
    endpoints: [],
  };
  assert.deepEqual(carryEndpoints(next, stored, { targetPorts: { 99: 9999 } }).endpoints, [
    { address: "10.0.0.5", ports: { tcp: 8081, admin: 9090, new: 9999 }, labels: { v: "1" } },
  ]);
  assert.deepEqual(
    carryEndpoints(next, stored, { targetPorts: { 80: 8082 } }).endpoints?.[0].ports,
    { tcp: 8082, admin: 9090, new: 99 },
  );
  assert.deepEqual(carryEndpoints(next, undefined, { targetPorts: {} }).endpoints, []);
});

Deno.test("serviceAsServiceEntry() gives the entry the Service's clusterIP as its address", () => {
  const r = serviceAsServiceEntry(
    { ...SERVICE, spec: { ...SERVICE.spec, clusterIP: "10.96.0.20" } },
    "default",
    "x",
  );
  assert.ok("entry" in r);
  assert.deepEqual((r.entry.spec as { addresses?: string[] }).addresses, ["10.96.0.20"]);
  const bad = serviceAsServiceEntry(
    { ...SERVICE, spec: { ...SERVICE.spec, clusterIP: "ten" } },
    "default",
    "x",
  );
  assert.deepEqual(bad, {
    problems: ['x: Service spec.clusterIP: must be an IP address, got "ten"'],
  });
});

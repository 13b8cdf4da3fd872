import assert from "node:assert/strict";
import type { ConfigObject } from "../../model/types.ts";
import { model } from "../testdata/model.ts";
import { parseNodeId } from "../node.ts";
import { buildListeners } from "./listeners.ts";
import { describeConflict, outboundListenerConflicts } from "./listener_conflicts.ts";

const entry = (name: string, ports: unknown[], addresses?: string[]): ConfigObject => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "ServiceEntry",
  metadata: { name, namespace: "default" },
  spec: {
    hosts: [`${name}.example.com`],
    ...(addresses ? { addresses } : {}),
    ports,
    location: "MESH_INTERNAL",
    resolution: "STATIC",
    endpoints: [{ address: "10.9.9.9" }],
  },
});
const client = parseNodeId("sidecar~10.0.7.7~client.other~other.svc.cluster.local");

Deno.test("outboundListenerConflicts() reports a TCP port without an address taking 0.0.0.0_80 from the HTTP services", () => {
  const ctx = model({
    serviceEntries: [entry("legacy", [{ number: 80, name: "tcp", protocol: "TCP" }])],
  });
  const conflicts = outboundListenerConflicts(ctx);
  assert.deepEqual(conflicts, [{
    listener: "0.0.0.0_80",
    port: 80,
    tcpHosts: ["legacy.example.com"],
    httpHosts: ["hello.default.svc.cluster.local", "world.default.svc.cluster.local"],
  }]);
  // The rule is the generator's: the listener 0.0.0.0_80 a sidecar gets is the TCP one.
  const l = buildListeners(ctx, client).find((l) => l.name === "0.0.0.0_80");
  assert.equal(l?.filter_chains[0].filters[0].name, "envoy.filters.network.tcp_proxy");
  assert.match(
    describeConflict(conflicts[0]),
    /^Outbound listener 0\.0\.0\.0_80: TCP port 80 of legacy\.example\.com .* HTTP port 80 of hello\.default\.svc\.cluster\.local, world/,
  );
});

Deno.test("outboundListenerConflicts() reports nothing for a TCP port with its own address, or on a port no HTTP service uses", () => {
  const ctx = model({
    serviceEntries: [
      entry("vip", [{ number: 80, name: "tcp", protocol: "TCP" }], ["10.7.7.7"]),
      entry("other", [{ number: 5432, name: "tcp", protocol: "TCP" }]),
    ],
  });
  assert.deepEqual(outboundListenerConflicts(ctx), []);
  const l = buildListeners(ctx, client).find((l) => l.name === "0.0.0.0_80");
  assert.equal(
    l?.filter_chains[0].filters[0].name,
    "envoy.filters.network.http_connection_manager",
  );
});

Deno.test("describeConflict() names at most 5 hosts of a side and counts the rest", () => {
  const hosts = Array.from({ length: 8 }, (_, i) => `h${i}.example.com`);
  const line = describeConflict({
    listener: "0.0.0.0_80",
    port: 80,
    tcpHosts: ["t.example.com"],
    httpHosts: hosts,
  });
  assert.match(line, /HTTP port 80 of h0\.example\.com, h1.*h4\.example\.com and 3 more gets no/);
});

/**
 * The shared generator and proxyless gRPC nodes: server listeners by name (bad names are absent,
 * never an error), live mesh configuration, and proxyless clusters kept apart from Envoy's.
 */

import assert from "node:assert/strict";
import { defaultMeshConfig } from "../../lib/model/mod.ts";
import {
  decodeAny,
  GRPC_SERVER_LISTENER_PREFIX,
  loadXdsProtos,
  parseNodeId,
  type Proxy,
  TYPE_URLS,
} from "../../lib/xds/mod.ts";
import { model } from "../../lib/xds/testdata/model.ts";
import { DiscoveryModel } from "./model.ts";
import { testModel } from "./_test_util.ts";

await loadXdsProtos();

// deno-lint-ignore no-explicit-any
type Any = any;

async function newModel() {
  const ctx = model();
  return await testModel({
    registry: { services: () => ctx.services, instances: () => ctx.instances },
  });
}

const grpcNode = (ip: string): Proxy =>
  parseNodeId(`sidecar~${ip}~a.default~default.svc.cluster.local`, { GENERATOR: "grpc" });
const server = (addr: string) => GRPC_SERVER_LISTENER_PREFIX + addr;

function listener(m: DiscoveryModel, proxy: Proxy, name: string): Any {
  const e = m.resourcesFor(proxy, TYPE_URLS.listener, [name]).get(name);
  return e && decodeAny({ type_url: TYPE_URLS.listener, value: e.bytes });
}

Deno.test("DiscoveryModel serves a server listener by name and leaves out malformed addresses and unknown ports", async () => {
  const m = await newModel();
  const p = grpcNode("10.0.1.1");
  const names = [
    server("10.0.1.1:7070"),
    server("10.0.1.1:7071"),
    server("10.0.1.1"),
    server("not-an-ip:7070"),
    server("[::1:7070"),
  ];
  const got = m.resourcesFor(p, TYPE_URLS.listener, names);
  assert.deepEqual([...got.keys()], [server("10.0.1.1:7070")]);
  assert.deepEqual(
    m.resourceObjects(p, TYPE_URLS.listener, names).map((l) => l.name),
    [server("10.0.1.1:7070")],
  );
});

Deno.test("DiscoveryModel.setMeshConfig() switches server listeners and proxyless clusters to mTLS", async () => {
  const m = await newModel();
  const p = grpcNode("10.0.1.1");
  assert.equal(
    listener(m, p, server("10.0.1.1:7070")).filter_chains[0].transport_socket,
    undefined,
  );
  const mc = defaultMeshConfig();
  mc.authPolicy = "MUTUAL_TLS";
  m.setMeshConfig(mc);
  const tls = listener(m, p, server("10.0.1.1:7070")).filter_chains[0].transport_socket;
  assert.equal(tls.name, "envoy.transport_sockets.tls");
  const cluster = "outbound|7070||hello.default.svc.cluster.local";
  const grpc = m.resourcesFor(grpcNode("10.9.9.9"), TYPE_URLS.cluster, [cluster]).get(cluster)!;
  const envoy = m.resourcesFor(
    parseNodeId("sidecar~10.9.9.9~b.default~default.svc.cluster.local"),
    TYPE_URLS.cluster,
    [cluster],
  ).get(cluster)!;
  // the two kinds of client get different clusters (provider TLS vs certificate files)
  assert.notEqual(grpc.version, envoy.version);
});

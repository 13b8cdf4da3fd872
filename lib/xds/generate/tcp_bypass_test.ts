/**
 * The spec's "TCP bypass" with mesh mutual TLS on: an authentication Policy (0.8) targeting the
 * service's `tcp` port without peers exempts that port from mesh mTLS, on both ends (the server
 * sidecar's inbound listener and the client sidecars' outbound cluster); the `http` port stays
 * mutual TLS.
 */
import assert from "node:assert/strict";
import type { ConfigObject } from "../../model/types.ts";
import { parseNodeId } from "../node.ts";
import { model } from "../testdata/model.ts";
import { buildClusters } from "./clusters.ts";
import { buildListeners } from "./listeners.ts";

const BYPASS: ConfigObject = {
  apiVersion: "authentication.mesh.io/v1alpha1",
  kind: "Policy",
  metadata: { name: "hello-tcp-bypass", namespace: "default" },
  spec: { targets: [{ name: "hello", ports: [{ name: "tcp" }] }] },
};
const ctx = model({ mesh: { authPolicy: "MUTUAL_TLS" }, configs: { policies: [BYPASS] } });
const server = parseNodeId("sidecar~10.0.1.1~hello-v1.default~default.svc.cluster.local");
const client = parseNodeId("sidecar~10.0.7.7~client.other~other.svc.cluster.local");

Deno.test("buildListeners(): with MUTUAL_TLS, the Policy-exempted tcp port's inbound listener takes plain TCP, the http port requires client certificates", () => {
  const ls = buildListeners(ctx, server);
  const tcp = ls.find((l) => l.name === "10.0.1.1_9000");
  const http = ls.find((l) => l.name === "10.0.1.1_8080");
  assert.equal(tcp?.filter_chains.length, 1);
  assert.equal(tcp.filter_chains[0].transport_socket, undefined);
  assert.equal(tcp.filter_chains[0].filters[0].name, "envoy.filters.network.tcp_proxy");
  assert.equal(
    http?.filter_chains[0].transport_socket?.typed_config.require_client_certificate?.value,
    true,
  );
});

Deno.test("buildClusters(): with MUTUAL_TLS, clients reach the Policy-exempted tcp port without TLS and the http port with their certificates", () => {
  const cs = buildClusters(ctx, client);
  const byName = (n: string) => cs.find((c) => c.name === n);
  assert.equal(
    byName("outbound|9000||hello.default.svc.cluster.local")?.transport_socket,
    undefined,
  );
  const http = byName("outbound|80||hello.default.svc.cluster.local");
  assert.ok(http?.transport_socket?.typed_config.common_tls_context.tls_certificates);
  // the other service's tcp port is not exempted
  assert.ok(byName("outbound|9000||world.default.svc.cluster.local")?.transport_socket);
});

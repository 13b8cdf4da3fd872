import assert from "node:assert/strict";
import { parseNodeId } from "../node.ts";
import { DB_ENTRIES, model, WORLD_GRPC_PERMISSIVE } from "../testdata/model.ts";
import { buildListeners, cidrRange } from "./listeners.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const CLIENT = parseNodeId("sidecar~10.9.9.9~c.default~default.svc.cluster.local");

function tcpCluster(chain: Any): string {
  return chain.filters[0].typed_config.cluster;
}

Deno.test("buildListeners() gives each CIDR address its own filter chain on 0.0.0.0_<port>", () => {
  const ls = buildListeners(model({ serviceEntries: DB_ENTRIES }), CLIENT);
  const wild = ls.find((l) => l.name === "0.0.0.0_3306")!;
  assert.deepEqual(
    wild.filter_chains.map((c: Any) => [c.filter_chain_match?.prefix_ranges, tcpCluster(c)]),
    [
      [[cidrRange("172.16.0.0/12")], "outbound|3306||mariadb.internal"],
      [[cidrRange("192.168.0.0/16")], "outbound|3306||mysql.internal"],
      [undefined, "BlackHoleCluster"],
    ],
  );
  assert.deepEqual(cidrRange("192.168.0.0/16"), {
    address_prefix: "192.168.0.0",
    prefix_len: { value: 16 },
  });
  // The plain IP of mysql gets its own listener matching /32.
  const vip = ls.find((l) => l.name === "10.20.0.5_3306")!;
  assert.deepEqual(vip.filter_chains[0].filter_chain_match.prefix_ranges, [{
    address_prefix: "10.20.0.5",
    prefix_len: { value: 32 },
  }]);
});

Deno.test("buildListeners() sends other traffic on a CIDR port to PassthroughCluster with ALLOW_ANY", () => {
  const ctx = model({ serviceEntries: DB_ENTRIES, mesh: { outboundTrafficPolicy: "ALLOW_ANY" } });
  const wild = buildListeners(ctx, CLIENT).find((l) => l.name === "0.0.0.0_3306")!;
  const last = wild.filter_chains.at(-1);
  assert.equal(last.filter_chain_match, undefined);
  assert.equal(tcpCluster(last), "PassthroughCluster");
});

Deno.test("buildListeners() matches PERMISSIVE mesh mTLS by ALPN and leaves other TLS to the plain chain", () => {
  const ctx = model({ configs: { policies: [WORLD_GRPC_PERMISSIVE] } });
  const proxy = parseNodeId("sidecar~10.0.2.1~world-v1.default~default.svc.cluster.local");
  const l = buildListeners(ctx, proxy).find((x) => x.name === "10.0.2.1_7070")!;
  assert.deepEqual(l.listener_filters.map((f: Any) => f.name), [
    "envoy.filters.listener.tls_inspector",
  ]);
  const [mtls, plain] = l.filter_chains;
  assert.deepEqual(mtls.filter_chain_match, { application_protocols: ["istio"] });
  assert.deepEqual(mtls.transport_socket.typed_config.require_client_certificate, { value: true });
  // No transport_protocol anywhere: an application's own TLS (ALPN h2, http/1.1...) must reach
  // the catch-all chain, which has no TLS context, instead of being terminated by the sidecar.
  assert.equal(plain.filter_chain_match, undefined);
  assert.equal(plain.transport_socket, undefined);
  assert.equal(l.filter_chains.length, 2);
});

/**
 * Direct tests of rules otherwise guarded only by the golden files: the load-balancer policy of a
 * DestinationRule (top level and per port), the mesh's outbound traffic policy, and the SANs an
 * upstream TLS context checks.
 */

import assert from "node:assert/strict";
import { helloV1 } from "../testdata/scenarios.ts";
import { model } from "../testdata/model.ts";
import { BLACKHOLE_CLUSTER, buildClusters, PASSTHROUGH_CLUSTER } from "./clusters.ts";
import { buildListeners } from "./listeners.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const WORLD = "world.default.svc.cluster.local";
const WORLD_SA = "spiffe://cluster.local/ns/default/sa/world";

const dr = (trafficPolicy: Record<string, unknown>) => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "DestinationRule",
  metadata: { name: "world", namespace: "default" },
  spec: { host: "world", trafficPolicy },
});

/** The outbound clusters of world, by port, for a sidecar, given DestinationRule traffic policy. */
function worldClusters(
  trafficPolicy?: Record<string, unknown>,
  mesh: Record<string, unknown> = {},
): Record<number, Any> {
  const ctx = model({
    configs: { destinationRules: trafficPolicy ? [dr(trafficPolicy)] : [] },
    mesh,
  });
  const out: Record<number, Any> = {};
  for (const c of buildClusters(ctx, helloV1())) {
    const m = /^outbound\|(\d+)\|\|(.*)$/.exec(c.name);
    if (m && m[2] === WORLD) out[Number(m[1])] = c;
  }
  return out;
}

Deno.test("DestinationRule loadBalancer.simple sets the cluster's lb_policy (LEAST_CONN is LEAST_REQUEST)", () => {
  assert.equal(worldClusters()[80].lb_policy ?? "ROUND_ROBIN", "ROUND_ROBIN");
  for (
    const [simple, policy] of [
      ["LEAST_CONN", "LEAST_REQUEST"],
      ["RANDOM", "RANDOM"],
      ["ROUND_ROBIN", "ROUND_ROBIN"],
    ]
  ) {
    const c = worldClusters({ loadBalancer: { simple } });
    for (const port of [80, 7070, 9000]) {
      assert.equal(c[port].lb_policy, policy, `${simple} on ${port}`);
      assert.equal(c[port].type, "EDS");
    }
  }
});

Deno.test("DestinationRule loadBalancer PASSTHROUGH makes an ORIGINAL_DST cluster without EDS", () => {
  const c = worldClusters({ loadBalancer: { simple: "PASSTHROUGH" } })[80];
  assert.equal(c.type, "ORIGINAL_DST");
  assert.equal(c.lb_policy, "CLUSTER_PROVIDED");
  assert.equal(c.eds_cluster_config, undefined);
  assert.equal(c.load_assignment, undefined);
});

Deno.test("DestinationRule portLevelSettings override the top-level loadBalancer for their port only", () => {
  const c = worldClusters({
    loadBalancer: { simple: "RANDOM" },
    portLevelSettings: [
      { port: { number: 7070 }, loadBalancer: { simple: "LEAST_CONN" } },
      { port: { name: "tcp" }, loadBalancer: { consistentHash: { useSourceIp: true } } },
    ],
  });
  assert.equal(c[80].lb_policy, "RANDOM");
  assert.equal(c[7070].lb_policy, "LEAST_REQUEST");
  assert.equal(c[9000].lb_policy, "RING_HASH");
});

Deno.test("outboundTrafficPolicy sends unmatched traffic of virtualOutbound to PassthroughCluster (ALLOW_ANY) or BlackHoleCluster (REGISTRY_ONLY)", () => {
  const target = (outboundTrafficPolicy?: string) => {
    const ctx = model({ mesh: outboundTrafficPolicy ? { outboundTrafficPolicy } as Any : {} });
    const l = buildListeners(ctx, helloV1()).find((l) => l.name === "virtualOutbound")!;
    const chains = l.filter_chains as Any[];
    assert.equal(chains.length, 1);
    return chains[0].filters[0].typed_config.cluster;
  };
  assert.equal(target("ALLOW_ANY"), PASSTHROUGH_CLUSTER);
  assert.equal(target("REGISTRY_ONLY"), BLACKHOLE_CLUSTER);
  assert.equal(target(), BLACKHOLE_CLUSTER, "the default is REGISTRY_ONLY");
});

/** The exact URI SANs an upstream TLS context of `cluster` checks (undefined: no TLS). */
function sans(cluster: Any): string[] | undefined {
  const ts = cluster.transport_socket;
  if (!ts) return undefined;
  const vc = ts.typed_config.common_tls_context.validation_context;
  return (vc?.match_typed_subject_alt_names ?? []).map((m: Any) => {
    assert.equal(m.san_type, "URI");
    return m.matcher.exact;
  });
}

Deno.test("upstream mesh mTLS checks the service's accounts as SANs unless the DestinationRule names its own", () => {
  // Mesh-wide mutual TLS: the service account of world.
  assert.deepEqual(sans(worldClusters(undefined, { authPolicy: "MUTUAL_TLS" })[80]), [WORLD_SA]);
  assert.equal(sans(worldClusters()[80]), undefined, "no mTLS, no TLS context");
  // ISTIO_MUTUAL: the service accounts, or subjectAltNames when given.
  assert.deepEqual(sans(worldClusters({ tls: { mode: "ISTIO_MUTUAL" } })[80]), [WORLD_SA]);
  const own = ["spiffe://cluster.local/ns/default/sa/other", "spiffe://x/y"];
  assert.deepEqual(
    sans(worldClusters({ tls: { mode: "ISTIO_MUTUAL", subjectAltNames: own } })[80]),
    own,
  );
  // DISABLE wins over mesh-wide mTLS.
  assert.equal(
    sans(worldClusters({ tls: { mode: "DISABLE" } }, { authPolicy: "MUTUAL_TLS" })[80]),
    undefined,
  );
});

Deno.test("upstream SIMPLE and MUTUAL TLS check exactly the DestinationRule's subjectAltNames", () => {
  const names = ["spiffe://example.com/backend"];
  for (const mode of ["SIMPLE", "MUTUAL"]) {
    const c = worldClusters({
      tls: {
        mode,
        caCertificates: "/etc/certs/ca.pem",
        clientCertificate: "/etc/certs/cert.pem",
        privateKey: "/etc/certs/key.pem",
        subjectAltNames: names,
      },
    })[80];
    assert.deepEqual(sans(c), names, mode);
    const vc = c.transport_socket.typed_config.common_tls_context.validation_context;
    assert.deepEqual(vc.trusted_ca, { filename: "/etc/certs/ca.pem" });
  }
  // Without subjectAltNames nothing but the CA is checked.
  const plain = worldClusters({ tls: { mode: "SIMPLE", caCertificates: "/ca.pem" } })[80];
  assert.deepEqual(sans(plain), []);
});

Deno.test("a port-level ROUND_ROBIN and the LEAST_REQUEST/MESH_MUTUAL spellings override what the top level sets", () => {
  const c = worldClusters({
    loadBalancer: { simple: "RANDOM" },
    portLevelSettings: [
      { port: { number: 80 }, loadBalancer: { simple: "ROUND_ROBIN" } },
      { port: { number: 7070 }, loadBalancer: { simple: "LEAST_REQUEST" } },
      { port: { number: 9000 }, tls: { mode: "MESH_MUTUAL" } },
    ],
  });
  assert.equal(c[80].lb_policy, "ROUND_ROBIN");
  assert.equal(c[7070].lb_policy, "LEAST_REQUEST");
  assert.deepEqual(sans(c[9000]), [WORLD_SA]);
});

Deno.test("a DestinationRule's SIMPLE or MUTUAL TLS is kept under mesh-wide mutual TLS", () => {
  for (const mode of ["SIMPLE", "MUTUAL"]) {
    const c = worldClusters({
      tls: {
        mode,
        caCertificates: "/ca.pem",
        clientCertificate: "/cert.pem",
        privateKey: "/key.pem",
      },
    }, { authPolicy: "MUTUAL_TLS" })[80];
    const common = c.transport_socket.typed_config.common_tls_context;
    assert.deepEqual(common.validation_context.trusted_ca, { filename: "/ca.pem" }, mode);
    assert.equal(common.alpn_protocols, undefined, `${mode}: not the mesh's ALPN`);
  }
});

Deno.test("connectionPool and outlierDetection set only the fields they name", () => {
  const c = worldClusters({
    connectionPool: { tcp: { maxConnections: 10 } },
    outlierDetection: { http: { consecutiveErrors: 5 } }, // Istio 0.8's shape
  })[80];
  assert.deepEqual(c.circuit_breakers, { thresholds: [{ max_connections: { value: 10 } }] });
  assert.deepEqual(c.outlier_detection, { consecutive_5xx: { value: 5 } });
  const plain = worldClusters({ connectionPool: { http: {} }, outlierDetection: { http: {} } })[80];
  assert.equal(plain.circuit_breakers, undefined);
  assert.deepEqual(plain.outlier_detection, {});
  const http = worldClusters({ connectionPool: { http: { http2MaxRequests: 7, maxRetries: 2 } } });
  assert.deepEqual(http[80].circuit_breakers, {
    thresholds: [{ max_requests: { value: 7 }, max_retries: { value: 2 } }],
  });
});

Deno.test("zero or absent values leave Envoy's defaults: ring size 0, maxRequestsPerConnection 0, no connectTimeout", () => {
  const defaults = worldClusters()[80];
  const c = worldClusters({
    loadBalancer: { consistentHash: { httpHeaderName: "x-user", minimumRingSize: 0 } },
    connectionPool: { http: { maxRequestsPerConnection: 0 }, tcp: { maxConnections: 1 } },
  })[80];
  assert.equal(c.lb_policy, "RING_HASH");
  assert.equal(c.ring_hash_lb_config, undefined);
  assert.ok(!JSON.stringify(c).includes("max_requests_per_connection"));
  const three = worldClusters({ connectionPool: { http: { maxRequestsPerConnection: 3 } } })[80];
  assert.ok(JSON.stringify(three).includes('"max_requests_per_connection":{"value":3}'));
  assert.deepEqual(c.connect_timeout, defaults.connect_timeout);
  assert.ok(defaults.connect_timeout, "clusters have a default connect timeout");
});

Deno.test("ISTIO_MUTUAL subjectAltNames are kept under mesh-wide mutual TLS", () => {
  const own = ["spiffe://cluster.local/ns/default/sa/other"];
  const c = worldClusters(
    { tls: { mode: "ISTIO_MUTUAL", subjectAltNames: own } },
    { authPolicy: "MUTUAL_TLS" },
  );
  assert.deepEqual(sans(c[80]), own);
});

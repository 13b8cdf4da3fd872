/**
 * Golden xDS of today's security API: PeerAuthentication → the mTLS of inbound listeners,
 * clients' clusters and proxyless server listeners; AuthorizationPolicy and RequestAuthentication
 * → the JWT authn and RBAC filters of sidecars and proxyless servers.
 */

import assert from "node:assert/strict";
import * as path from "node:path";
import { checkGolden as checkGoldenFile } from "../../../tests/harness/golden.ts";
import { GRPC_SERVER_LISTENER_PREFIX } from "../grpc_bootstrap.ts";
import { loadXdsProtos, TYPE_URLS } from "../mod.ts";
import { model, RBAC_BINDING, RBAC_ROLE, WORLD_TCP_PLAINTEXT } from "../testdata/model.ts";
import { roundTripProblems } from "../testdata/roundtrip.ts";
import { pgvProblems } from "../pgv.ts";
import { ENVOY_1_27, GRPC_CORE_1_51, helloV1, withClient } from "../testdata/scenarios.ts";
import {
  AP_ALLOW_GRPC,
  AP_ALLOW_HELLO,
  AP_AUDIT_POSTS,
  AP_DENY_ADMIN,
  AP_EVERY_FIELD,
  AP_WORLD_ONLY,
  PA_HELLO_STRICT,
  PA_MESH_STRICT,
  PA_NS_PERMISSIVE,
  PA_OTHER_NS,
  PA_WORLD_V1,
  RA_EVERY_FIELD,
  RA_HELLO,
} from "../testdata/security.ts";
import type { Proxy, XdsResource } from "../types.ts";
import { buildClusters } from "./clusters.ts";
import { buildServerListener } from "./grpc_server.ts";
import { buildListeners } from "./listeners.ts";
import { parseNodeId } from "../node.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const TESTDATA = new URL("../testdata", import.meta.url).pathname;

async function checkGolden(name: string, listeners: XdsResource[], clusters: XdsResource[]) {
  await loadXdsProtos();
  const problems = [
    ...listeners.flatMap((r) => roundTripProblems(TYPE_URLS.listener, r)),
    ...clusters.flatMap((r) => roundTripProblems(TYPE_URLS.cluster, r)),
  ];
  assert.deepEqual(problems, [], "every resource encodes without losing fields");
  const pgv = [
    ...listeners.flatMap((r) => pgvProblems("envoy.config.listener.v3.Listener", r, r.name)),
    ...clusters.flatMap((r) => pgvProblems("envoy.config.cluster.v3.Cluster", r, r.name)),
  ];
  assert.deepEqual(pgv, [], "every resource passes Envoy's validation rules");
  const text = JSON.stringify({ listeners, clusters }, null, 2) + "\n";
  await checkGoldenFile(path.join(TESTDATA, `${name}.json`), text, {
    equal: (got, want) =>
      assert.deepEqual(JSON.parse(got), JSON.parse(want), `${name}.json differs (UPDATE_GOLDEN=1)`),
  });
}

const worldV1 = (): Proxy =>
  withClient(
    parseNodeId("sidecar~10.0.2.1~world-v1.default~default.svc.cluster.local"),
    ENVOY_1_27,
  );
const grpcServer = (ip: string): Proxy =>
  withClient(
    parseNodeId(`sidecar~${ip}~hello-v1.default~default.svc.cluster.local`, { GENERATOR: "grpc" }),
    GRPC_CORE_1_51,
  );

const PEER_CTX = () =>
  model({
    configs: {
      peerAuthentications: [
        PA_MESH_STRICT,
        PA_NS_PERMISSIVE,
        PA_WORLD_V1,
        PA_HELLO_STRICT,
        PA_OTHER_NS,
      ],
      // a 0.8 Policy asking plaintext for world's tcp port: PeerAuthentication wins
      policies: [WORLD_TCP_PLAINTEXT],
    },
  });

const modeOfChain = (l: Any): string => {
  if (l.filter_chains.length > 1) return "PERMISSIVE";
  const ts = l.filter_chains[0].transport_socket;
  return ts ? (ts.typed_config.require_client_certificate ? "STRICT" : "TLS") : "NONE";
};

Deno.test("buildListeners() gives world v1 the workload's port-level, workload and namespace modes of its PeerAuthentications", () => {
  const ls = buildListeners(PEER_CTX(), worldV1()).filter((l) => l.name.startsWith("10.0.2.1_"));
  const modes = Object.fromEntries(ls.map((l) => [l.name, modeOfChain(l)]));
  assert.deepEqual(modes, {
    "10.0.2.1_8080": "NONE", // workload DISABLE
    "10.0.2.1_7070": "NONE", // port UNSET inherits the workload's DISABLE
    "10.0.2.1_9000": "STRICT", // port-level STRICT over workload DISABLE and the 0.8 Policy
  });
});

Deno.test("builders match peer_authn.json for PeerAuthentication at mesh, namespace and workload scope", async () => {
  const ctx = PEER_CTX();
  const listeners = [
    ...buildListeners(ctx, worldV1()).filter((l) => l.name.startsWith("10.0.2.1_")),
    buildServerListener(
      ctx,
      grpcServer("10.0.1.1"),
      `${GRPC_SERVER_LISTENER_PREFIX}10.0.1.1:7070`,
    )!,
    buildServerListener(
      ctx,
      grpcServer("10.0.2.2"),
      `${GRPC_SERVER_LISTENER_PREFIX}10.0.2.2:7070`,
    )!,
  ];
  const clusters = buildClusters(ctx, withClient(helloV1(), ENVOY_1_27)).filter((c) =>
    c.name.startsWith("outbound|") && c.name.includes("world")
  );
  await checkGolden("peer_authn", listeners, clusters);
});

Deno.test("builders match authz_policy.json for AuthorizationPolicy and RequestAuthentication on a sidecar and a proxyless server", async () => {
  const ctx = model({
    configs: {
      authorizationPolicies: [
        AP_DENY_ADMIN,
        AP_EVERY_FIELD,
        AP_ALLOW_HELLO,
        AP_ALLOW_GRPC,
        AP_AUDIT_POSTS,
        AP_WORLD_ONLY,
        AP_EVERY_FIELD,
      ],
      requestAuthentications: [RA_HELLO, RA_EVERY_FIELD],
      serviceRoles: [RBAC_ROLE],
      serviceRoleBindings: [RBAC_BINDING],
    },
  });
  const listeners = [
    ...buildListeners(ctx, withClient(helloV1(), ENVOY_1_27)).filter((l) =>
      l.name === "10.0.1.1_8080"
    ),
    buildServerListener(
      ctx,
      grpcServer("10.0.1.1"),
      `${GRPC_SERVER_LISTENER_PREFIX}10.0.1.1:7070`,
    )!,
  ];
  await checkGolden("authz_policy", listeners, []);
});

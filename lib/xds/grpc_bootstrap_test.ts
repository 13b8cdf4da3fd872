import assert from "node:assert/strict";
import {
  GRPC_SERVER_LISTENER_PREFIX,
  GRPC_SERVER_LISTENER_TEMPLATE,
  grpcBootstrap,
} from "./grpc_bootstrap.ts";

const BASE = {
  serverUri: "10.0.0.9:15010",
  nodeId: "sidecar~10.0.0.1~web-1.shop~shop.svc.cluster.local",
  cluster: "web",
  certDir: "/var/run/mesh/certs/",
};

Deno.test("grpcBootstrap() writes insecure creds, the marked node and a file watcher over the cert dir", () => {
  assert.deepEqual(
    grpcBootstrap({
      ...BASE,
      metadata: { NAMESPACE: "shop", GENERATOR: "envoy" },
      locality: { region: "eu", zone: "" },
    }),
    {
      xds_servers: [{
        server_uri: "10.0.0.9:15010",
        channel_creds: [{ type: "insecure" }],
        server_features: ["xds_v3"],
      }],
      node: {
        id: "sidecar~10.0.0.1~web-1.shop~shop.svc.cluster.local",
        cluster: "web",
        // the marker wins over a MESH_META_GENERATOR of the environment
        metadata: { NAMESPACE: "shop", GENERATOR: "grpc" },
        locality: { region: "eu" },
      },
      certificate_providers: {
        default: {
          plugin_name: "file_watcher",
          config: {
            certificate_file: "/var/run/mesh/certs/cert-chain.pem",
            private_key_file: "/var/run/mesh/certs/key.pem",
            ca_certificate_file: "/var/run/mesh/certs/root-cert.pem",
            refresh_interval: "10s",
          },
        },
      },
      server_listener_resource_name_template: "grpc/server?xds.resource.listening_address=%s",
    },
  );
});

Deno.test("grpcBootstrap() uses tls channel creds over the certificate files when tls is set", () => {
  const doc = grpcBootstrap({ ...BASE, tls: true, refreshIntervalMs: 1500 }) as {
    xds_servers: { channel_creds: unknown[] }[];
    node: { locality: unknown };
  };
  assert.deepEqual(doc.xds_servers[0].channel_creds, [{
    type: "tls",
    config: {
      certificate_file: "/var/run/mesh/certs/cert-chain.pem",
      private_key_file: "/var/run/mesh/certs/key.pem",
      ca_certificate_file: "/var/run/mesh/certs/root-cert.pem",
      refresh_interval: "1.500s",
    },
  }]);
  // grpc-js-xds refuses a node without a locality
  assert.deepEqual(doc.node.locality, {});
});

Deno.test("GRPC_SERVER_LISTENER_PREFIX is the template without its placeholder", () => {
  assert.equal(GRPC_SERVER_LISTENER_PREFIX + "%s", GRPC_SERVER_LISTENER_TEMPLATE);
});

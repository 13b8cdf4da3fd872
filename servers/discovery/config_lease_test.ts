import assert from "node:assert/strict";
import { ConfigError, type DiscoveryFlags, toConfig } from "./config.ts";

const FLAGS = {
  appNamespace: "",
  platformcConfig: "",
  clusterRegistriesConfigMap: "",
  clusterRegistriesNamespace: "",
  configDir: "/tmp/unused-config-dir",
  regaserverInterval: 2000,
  regaserverURL: "",
  regbserverInterval: 2000,
  regbserverURL: "",
  discovery_cache: true,
  domain: "cluster.local",
  grpcAddr: ":15010",
  secureGrpcAddr: "",
  grpcMaxConcurrentStreams: 100,
  grpcMaxConnections: 0,
  grpcMaxConnectionsPerAddress: 0,
  grpcMaxFailedConnectionRate: 0,
  keepaliveInterval: 30_000,
  keepaliveTimeout: 10_000,
  keepaliveMinTime: 5_000,
  keepaliveMaxServerConnectionAge: 0,
  orchconfig: "",
  meshConfig: "/etc/mesh/config/mesh",
  monitoringPort: 9093,
  namespace: "",
  port: 8080,
  profile: false,
  ingressStatus: false,
  registries: ["Mock"],
  resync: 60_000,
  webhookEndpoint: "",
  ctrlz_address: "127.0.0.1",
  ctrlz_port: 9876,
} satisfies DiscoveryFlags;

Deno.test("toConfig() Lease: defaults from --namespace/POD_NAMESPACE and POD_NAME, else the host name", () => {
  assert.deepEqual(toConfig(FLAGS, { HOSTNAME: "host-1" }).lease, {
    name: "mesh-discovery-leader",
    namespace: "mesh-system",
    identity: "host-1",
    durationMs: 15_000,
  });
  assert.deepEqual(
    toConfig(FLAGS, { POD_NAMESPACE: "mesh-prod", POD_NAME: "disc-7f", HOSTNAME: "h" }).lease,
    {
      name: "mesh-discovery-leader",
      namespace: "mesh-prod",
      identity: "disc-7f",
      durationMs: 15_000,
    },
  );
  assert.deepEqual(
    toConfig({
      ...FLAGS,
      leaseName: "l",
      leaseNamespace: "ns",
      leaseDuration: 3000,
      leaderIdentity: "me",
    }, { POD_NAME: "p" }).lease,
    { name: "l", namespace: "ns", identity: "me", durationMs: 3000 },
  );
});

Deno.test("toConfig() refuses a Lease duration under 1s and an empty Lease name", () => {
  assert.throws(
    () => toConfig({ ...FLAGS, leaseDuration: 500, leaseName: "" }, {}),
    new ConfigError([
      "Invalid value for --leaseDuration: must be at least 1s",
      "Invalid value for --leaseName: must not be empty",
    ]),
  );
});

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

Deno.test("toConfig() --workers: 1 when absent, 0 (one per core) to 256 kept", () => {
  assert.equal(toConfig(FLAGS, {}).workers, 1);
  assert.equal(toConfig({ ...FLAGS, workers: 0 }, {}).workers, 0);
  assert.equal(toConfig({ ...FLAGS, workers: 4 }, {}).workers, 4);
});

Deno.test("toConfig() --workers: a negative, fractional or too large count is a usage error naming the flag", () => {
  for (const workers of [-1, 1.5, 257]) {
    assert.throws(
      () => toConfig({ ...FLAGS, workers }, {}),
      (e) =>
        e instanceof ConfigError &&
        /Invalid value for --workers: must be 0 \(one per core\) to 256/.test(e.message),
    );
  }
});

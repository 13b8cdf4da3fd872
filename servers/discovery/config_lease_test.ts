import assert from "node:assert/strict";
import { ConfigError, toConfig } from "./config.ts";
import { discoveryFlags } from "./_test_util.ts";

const FLAGS = discoveryFlags({
  clusterRegistriesNamespace: "",
  configDir: "/tmp/unused-config-dir",
  discovery_cache: true,
  secureGrpcAddr: "",
  grpcMaxConnectionsPerAddress: 0,
  grpcMaxFailedConnectionRate: 0,
  keepaliveMinTime: 5_000,
  registries: ["Mock"],
});

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

import assert from "node:assert/strict";
import {
  ConfigError,
  type DiscoveryFlags,
  parseListenAddress,
  parseWebhook,
  toConfig,
} from "./config.ts";
import { discoveryFlags } from "./_test_util.ts";

const FLAGS: DiscoveryFlags = discoveryFlags();

/** In a cluster: in-cluster orchestrator configuration is available. */
const IN_CLUSTER = { KUBERNETES_SERVICE_HOST: "10.96.0.1" };

Deno.test("toConfig() returns a frozen config with the spec defaults", () => {
  const c = toConfig(FLAGS, IN_CLUSTER);
  assert.ok(Object.isFrozen(c));
  assert.deepEqual(c.grpcAddr, { host: "", port: 15010 });
  assert.deepEqual(c.secureGrpcAddr, { host: "", port: 15012 });
  assert.deepEqual(c.registries, ["Orchestrator"]);
  assert.equal(c.certDir, "/etc/certs/");
  assert.equal(c.webhook, null);
});

Deno.test("toConfig() falls back to POD_NAMESPACE and MESH_CERT_DIR when flags are unset", () => {
  const c = toConfig(FLAGS, {
    ...IN_CLUSTER,
    POD_NAMESPACE: "mesh-system",
    MESH_CERT_DIR: "/certs",
  });
  assert.equal(c.namespace, "mesh-system");
  assert.equal(c.certDir, "/certs");
  assert.equal(
    toConfig({ ...FLAGS, namespace: "x" }, { ...IN_CLUSTER, POD_NAMESPACE: "y" }).namespace,
    "x",
  );
});

Deno.test("toConfig() disables the TLS port when --secureGrpcAddr is empty", () => {
  assert.equal(toConfig({ ...FLAGS, secureGrpcAddr: "" }, IN_CLUSTER).secureGrpcAddr, null);
});

Deno.test("toConfig() maps the gRPC transport flags to the transport limits", () => {
  const c = toConfig({
    ...FLAGS,
    grpcMaxConcurrentStreams: 10,
    grpcMaxConnections: 5000,
    grpcMaxConnectionsPerAddress: 100,
    grpcMaxFailedConnectionRate: 50,
    keepaliveMaxServerConnectionAge: 1_800_000,
  }, IN_CLUSTER);
  assert.deepEqual(c.grpc, {
    limits: {
      maxConcurrentStreams: 10,
      keepaliveIntervalMs: 30_000,
      keepaliveTimeoutMs: 10_000,
      keepaliveMinTimeMs: 15_000,
      maxConnectionAgeMs: 1_800_000,
    },
    maxConnections: 5000,
    maxConnectionsPerAddress: 100,
    maxFailedConnectionsPerSecond: 50,
  });
});

Deno.test("toConfig() reads --grpcReusedReads (off unless given)", () => {
  assert.equal(toConfig(FLAGS, IN_CLUSTER).grpcReusedReads, false);
  assert.equal(toConfig({ ...FLAGS, grpcReusedReads: true }, IN_CLUSTER).grpcReusedReads, true);
});

Deno.test("toConfig() rejects gRPC transport flags out of range, naming each", () => {
  assert.throws(
    () =>
      toConfig({
        ...FLAGS,
        grpcMaxConcurrentStreams: 0,
        grpcMaxConnections: -1,
        grpcMaxConnectionsPerAddress: -1,
        grpcMaxFailedConnectionRate: -1,
        keepaliveTimeout: 0,
      }, IN_CLUSTER),
    new ConfigError([
      "Invalid value for --grpcMaxConcurrentStreams: must be at least 1",
      "Invalid value for --grpcMaxConnections: must not be negative (0: no cap)",
      "Invalid value for --grpcMaxConnectionsPerAddress: must not be negative (0: no bound)",
      "Invalid value for --grpcMaxFailedConnectionRate: must not be negative (0: off)",
      "Invalid value for --keepaliveTimeout: must be greater than 0s",
    ]),
  );
});

Deno.test("toConfig() lists every problem when several flags are bad", () => {
  try {
    toConfig({
      ...FLAGS,
      grpcAddr: "15010",
      port: 70000,
      registries: ["RegistryA", "Nope"],
      webhookEndpoint: "ftp://x",
    }, IN_CLUSTER);
    assert.fail("no error");
  } catch (e) {
    assert.ok(e instanceof ConfigError);
    assert.equal(e.problems.length, 4, e.message);
    assert.match(e.message, /Invalid value for --grpcAddr: "15010": want ":<port>"/);
    assert.match(e.message, /Invalid value for --port: 70000/);
    assert.match(e.message, /Service registry Nope is not supported/);
    assert.match(e.message, /Invalid value for --webhookEndpoint: "ftp:\/\/x"/);
  }
});

Deno.test("toConfig() names the missing flag of a registry that needs one", () => {
  assert.throws(
    () => toConfig({ ...FLAGS, registries: ["RegistryA", "RegistryB", "PlatformC"] }),
    /RegistryA needs --regaserverURL; Registry RegistryB needs --regbserverURL; Registry PlatformC needs --platformcConfig/,
  );
});

Deno.test("toConfig() skips a duplicate registry with a warning", () => {
  const c = toConfig({ ...FLAGS, registries: ["Mock", "Mock"] }, IN_CLUSTER);
  assert.deepEqual(c.registries, ["Mock"]);
  assert.equal(c.warnings.length, 1);
});

Deno.test("parseListenAddress() accepts :port, host:port and [v6]:port", () => {
  assert.deepEqual(parseListenAddress(":0", "x"), { host: "", port: 0 });
  assert.deepEqual(parseListenAddress("127.0.0.1:15010", "x"), { host: "127.0.0.1", port: 15010 });
  assert.deepEqual(parseListenAddress("[::1]:80", "x"), { host: "::1", port: 80 });
  assert.throws(() => parseListenAddress("host", "grpcAddr"), /--grpcAddr: "host"/);
  assert.throws(() => parseListenAddress(":99999", "grpcAddr"), /port 99999 > 65535/);
});

Deno.test("parseWebhook() accepts http://host and unix:///abs/path only", () => {
  assert.deepEqual(parseWebhook("http://hook:8080"), { kind: "http", url: "http://hook:8080" });
  assert.deepEqual(parseWebhook("unix:///run/hook.sock"), { kind: "unix", path: "/run/hook.sock" });
  assert.throws(() => parseWebhook("unix://rel.sock"), /absolute socket path/);
  assert.throws(() => parseWebhook("http://hook/path"), /no path/);
});

Deno.test("toConfig() outside a cluster names --orchconfig and --configDir when the orchestrator is needed", () => {
  assert.throws(() => toConfig({ ...FLAGS, registries: ["Mock"] }), {
    message: "the config store (no --configDir) reads an orchestrator API server, but there is " +
      "no --orchconfig and no in-cluster configuration (KUBERNETES_SERVICE_HOST is not set): " +
      "give --orchconfig <kubeconfig>, or --configDir <dir> to read config from files",
  });
  assert.throws(
    () => toConfig({ ...FLAGS, configDir: "/cfg" }),
    /^ConfigError: the Orchestrator registry \(--registries\) reads .*, or --registries ServiceEntry \(services from ServiceEntries only\)$/,
  );
  assert.equal(toConfig({ ...FLAGS, registries: ["Mock"], configDir: "/cfg" }).configDir, "/cfg");
  assert.equal(toConfig({ ...FLAGS, orchconfig: "/kc" }).orchconfig, "/kc");
});

Deno.test("toConfig() reads the Mock endpoint port offset from MESH_MOCK_PORT_OFFSET", () => {
  const flags = { ...FLAGS, registries: ["Mock"], configDir: "/cfg" };
  assert.equal(toConfig(flags).mockPortOffset, 10000);
  assert.equal(toConfig(flags, { MESH_MOCK_PORT_OFFSET: "20000" }).mockPortOffset, 20000);
  assert.throws(
    () => toConfig(flags, { MESH_MOCK_PORT_OFFSET: "70000" }),
    /Invalid value for MESH_MOCK_PORT_OFFSET: "70000": want a whole number from 1 to 56535/,
  );
});

Deno.test("toConfig() accepts --registries ServiceEntry with --configDir and no orchestrator", () => {
  const c = toConfig({ ...FLAGS, registries: ["ServiceEntry"], configDir: "/cfg" });
  assert.deepEqual(c.registries, ["ServiceEntry"]);
});

Deno.test("toConfig() binds the HTTP listeners on --httpAddress, every interface by default", () => {
  const flags = { ...FLAGS, orchconfig: "/kc" };
  assert.equal(toConfig(flags).httpAddress, "0.0.0.0");
  assert.equal(toConfig({ ...flags, httpAddress: "127.0.0.1" }).httpAddress, "127.0.0.1");
});
